"""The decoder refuses a statement after which reductions re-run (under loops their iterators do not
use) to more than REPEATED_WORK_FACTOR times the program's work, and keeps the training label that
re-runs the most.

Data: tests/data/repeated_work/ (a verified answer 6,000x slower than the program; its README says
where it comes from)."""

from __future__ import annotations

from pathlib import Path

from dragon_model.generate import statements_of
from dragon_model.replay_state import replay_prefix

DATA = Path(__file__).resolve().parent.parent / "data" / "repeated_work"
ANSWER = (DATA / "softmax_answer.dragon").read_text(encoding="utf-8")
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def test_the_decoder_refuses_the_statement_that_reruns_the_row_maxima():
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(DATA / "softmax_m6975_n16.tvmscript")
    stmts = list(statements_of(ANSWER))
    at = next(i for i, s in enumerate(stmts) if s.startswith("reverse_compute_at(b38, l33"))
    env, why = replay_prefix("".join(stmts[:at]), mod, "llvm")
    assert env is not None, why
    env, why = replay_prefix("".join(stmts[: at + 1]), mod, "llvm")
    assert env is None
    assert "'T_softmax_maxelem' runs its whole reduction 111,600 times" in why and "27,900x" in why, why


def test_repeated_reductions_counts_the_loops_a_block_does_not_use():
    from dragon_dsl import check_text
    from dragon_dsl.tvm.compile import block_instances, repeated_reductions
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(DATA / "softmax_m6975_n16.tvmscript")
    assert repeated_reductions(mod) == []
    assert block_instances(mod) == 4 * 6975 * 16  # max, exp, sum, norm: each over every element
    program, _ = check_text("".join(list(statements_of(ANSWER))[:20]))
    result = replay(program, mod)
    assert result.ok
    assert repeated_reductions(result.schedule.mod) == [("T_softmax_maxelem", 111600, 111600 * 6975 * 16)]


def test_the_training_label_that_reruns_the_most_is_kept():
    """Of the llvm and CUDA training labels, one layer norm re-runs a reduction the most: its
    variance once per output element, 21x the program's block instances (checked over all 1,210
    training rows when the rule was written)."""
    import pyarrow.parquet as pq

    from dragon_dsl import check_text
    from dragon_dsl.tvm.compile import REPEATED_WORK_FACTOR, block_instances, repeated_reductions, repeated_work_message
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.workload import load_workload

    rows = pq.read_table(
        str(CORPUS / "llvm" / "data" / "train.parquet"),
        columns=["id", "script", "workload_text"],
        filters=[("id", "=", "layer_norm_m16_n2048_rms0/construction")],
    ).to_pylist()
    assert len(rows) == 1
    mod = load_workload(rows[0]["workload_text"])
    program, _ = check_text(rows[0]["script"])
    result = replay(program, mod)
    assert result.ok
    found = repeated_reductions(result.schedule.mod)
    ratio = sum(f[2] for f in found) / block_instances(mod)
    assert 20 < ratio < REPEATED_WORK_FACTOR
    assert repeated_work_message(result.schedule.mod, mod) is None
    env, why = replay_prefix(rows[0]["script"], mod, "llvm")
    assert env is not None, why
