"""Schedules whose blocks read or write outside a buffer with no condition around the access are
refused (`compile.out_of_bounds`: DRG604 at `dragon-check --level replay`, and the decoder resamples
the statement); accesses a `where` predicate or an `if_then_else` guards are not, though TVM's own
out-of-bounds checker flags them (tests/data/out_of_bounds/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data" / "out_of_bounds"
CASES = {"cuda_conv1d_reindexed_padding": True, "cuda_matmul_guarded": False, "llvm_conv2d_transpose_guarded": False}


def _replayed(name: str):
    from dragon_dsl import check_text
    from dragon_dsl.tvm.replay import replay

    program, _ = check_text((DATA / f"{name}.dragon").read_text(encoding="utf-8"))
    result = replay(program, DATA / f"{name}.tvmscript")
    assert result.ok, result.diagnostics
    return result.schedule.mod


@pytest.mark.parametrize("name,outside", sorted(CASES.items()))
def test_out_of_bounds_counts_only_unguarded_accesses(name, outside):
    from tvm.s_tir import analysis

    from dragon_dsl.tvm.compile import out_of_bounds

    mod = _replayed(name)
    with pytest.raises(Exception, match="Out of bounds"):  # TVM's checker flags all three
        analysis.OOBChecker()(mod)
    found = out_of_bounds(mod)
    assert bool(found) == outside, found
    if outside:
        assert "buffer inputs dimension 1" in found[0] and "[-3, 1026]" in found[0]


@pytest.mark.parametrize("name,outside", sorted(CASES.items()))
def test_dragon_check_reports_drg604_at_replay(name, outside):
    from dragon_dsl.levels import check_text_at_level

    path = DATA / f"{name}.dragon"
    report = check_text_at_level(path.read_text(encoding="utf-8"), str(path), level="replay")
    codes = [d.code for d in report.diagnostics if d.severity.name == "ERROR"]
    assert codes == (["DRG604"] if outside else []), report.diagnostics


def test_the_decoder_refuses_the_statement_that_reads_outside():
    """The reindex after the inlined padding is refused where it is written; the script before it
    is accepted."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.generate import statements_of
    from dragon_model.replay_state import replay_prefix

    text = (DATA / "cuda_conv1d_reindexed_padding.dragon").read_text(encoding="utf-8")
    stmts = list(statements_of(text.split("\n\n", 1)[1]))
    at = next(i for i, s in enumerate(stmts) if "reindex(" in s)
    mod = load_workload(DATA / "cuda_conv1d_reindexed_padding.tvmscript")
    env, why = replay_prefix("".join(stmts[:at]), mod, "cuda")
    assert env is not None, why
    env, why = replay_prefix("".join(stmts[: at + 1]), mod, "cuda")
    assert env is None and "outside a buffer" in why
