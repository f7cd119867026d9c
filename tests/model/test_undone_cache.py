"""The decoder refuses a statement that inlines a cache the script made (DRG106), and accepts what dlight's script
does there instead.

Data: tests/data/undone_cache/ (a shown answer that did it; its README says where it comes from)."""

from __future__ import annotations

from pathlib import Path

from dragon_dsl import check_text
from dragon_model.generate import statements_of
from dragon_model.replay_state import replay_prefix

DATA = Path(__file__).resolve().parent.parent / "data"
ANSWER = (DATA / "undone_cache" / "linear_answer.dragon").read_text(encoding="utf-8")
WORKLOAD = DATA / "replay_prefix" / "linear_dtypef16_epiloguenone_k4096_m128_n4096.tvmscript"


def test_the_answer_is_flagged_where_it_inlines_its_shared_cache():
    _, diags = check_text(ANSWER)
    flagged = [d for d in diags if d.code == "DRG106"]
    assert [(d.span.line, d.severity.value) for d in flagged] == [(57, "warning")]
    assert "cache_read" in flagged[0].message and '"shared"' in flagged[0].message
    assert flagged[0].related and flagged[0].related[0].span.line == 33  # b38 = cache_read(...)


def test_the_decoder_refuses_the_statement_and_accepts_dlights_next_one():
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(WORKLOAD)
    stmts = list(statements_of(ANSWER))
    at = next(i for i, s in enumerate(stmts) if s.strip() == "compute_inline(b38)")
    before = "".join(stmts[:at])
    env, why = replay_prefix(before, mod, "cuda")
    assert env is not None, why
    env, why = replay_prefix(before + stmts[at], mod, "cuda")
    assert env is None and why.startswith("DRG106"), why
    # A's reindex block (b76) is inlined already; dlight's script goes on with B's cache: its
    # producer, B's reindex block, is inlined next
    env, why = replay_prefix(before + "b78 = get_producers(b57)\ncompute_inline(b78)\n", mod, "cuda")
    assert env is not None, why


def test_inlining_what_a_cache_reads_from_is_not_flagged():
    script = 'b0 = get_sblock("C")\nb1 = cache_read(b0, 0, "shared")\nb2 = get_producers(b1)\ncompute_inline(b2)\n'
    assert [d.code for d in check_text(script)[1]] == []


def test_no_corpus_script_has_a_warning_the_decoder_refuses():
    """The rules hold the training data: no measured corpus script (CUDA, llvm), their starting
    scripts included, inlines a cache it made (DRG106) or moves one to another scope (DRG107)."""
    import pyarrow.parquet as pq

    from dragon_model.replay_state import REFUSED_WARNINGS

    root = Path(__file__).resolve().parents[2] / "data" / "corpus"
    checked = 0
    for file in sorted(root.glob("*/data/*.parquet")):
        for row in pq.read_table(str(file), columns=["id", "script", "prompt_script"]).to_pylist():
            for text in (row["script"], row["prompt_script"]):
                if text:
                    checked += 1
                    assert not REFUSED_WARNINGS & {d.code for d in check_text(text)[1]}, row["id"]
    assert checked > 2000
