"""The decoder refuses a statement that moves a cache the script made to another storage scope
(DRG107), and accepts the statement the model's construction answer wrote there instead.

Data: tests/data/cache_scope/ (a shown answer that did it; its README says where it comes from)."""

from __future__ import annotations

from pathlib import Path

from dragon_dsl import check_text
from dragon_model.generate import statements_of
from dragon_model.replay_state import replay_prefix

DATA = Path(__file__).resolve().parent.parent / "data"
ANSWER = (DATA / "cache_scope" / "linear_improvement_answer.dragon").read_text(encoding="utf-8")
WORKLOAD = DATA / "replay_prefix" / "linear_dtypef16_epiloguenone_k4096_m128_n4096.tvmscript"


def test_the_answer_is_flagged_where_it_moves_its_accumulator():
    _, diags = check_text(ANSWER)
    flagged = [d for d in diags if d.code == "DRG107"]
    assert [(d.span.line, d.severity.value) for d in flagged] == [(57, "warning")]
    assert '"local"' in flagged[0].message and '"shared"' in flagged[0].message
    assert flagged[0].related and flagged[0].related[0].span.line == 28  # b26 = cache_write(b1, 0, "local")


def test_the_decoder_refuses_the_statement_and_accepts_the_construction_answers_next_one():
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(WORKLOAD)
    stmts = list(statements_of(ANSWER))
    at = next(i for i, s in enumerate(stmts) if s.strip().startswith("set_scope("))
    before = "".join(stmts[:at])
    env, why = replay_prefix(before, mod, "cuda")
    assert env is not None, why
    env, why = replay_prefix(before + stmts[at], mod, "cuda")
    assert env is None and why.startswith("DRG107"), why
    env, why = replay_prefix(before + stmts[at + 1], mod, "cuda")  # b78 = get_sblock("root")
    assert env is not None, why


def test_set_scope_of_a_buffer_no_cache_made_is_not_flagged():
    """dlight's reductions move their own intermediate buffers to shared memory (12,846 of the
    CUDA records' set_scope statements): a block's output, not a copy a cache made."""
    for script in (
        'b0 = get_sblock("C")\nb1 = cache_read(b0, 0, "shared")\nset_scope(b0, 0, "shared")\n',
        'b0 = get_sblock("C")\nb1 = cache_write(b0, 0, "local")\nset_scope(b1, 0, "shared")\n',
        'b0 = get_sblock("C")\nset_scope(b0, 0, "shared")\n',
    ):
        assert "DRG107" not in [d.code for d in check_text(script)[1]], script


# that no corpus script is flagged: tests/model/test_undone_cache.py (every warning the decoder refuses)
