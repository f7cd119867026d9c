"""A predicated reduction block that never runs for some of its slices, which another block then
reads (`compile.unreached_iterations`), is refused: by the compile check (dragon-check --level
build, the engine's builds) and by the decoder, at the statement that makes it.

Data: tests/data/unreached_slices/ (two answers the verifier rejected on the H200 and a dlight
schedule that must be kept; its README says where they come from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_model.generate import statements_of
from dragon_model.replay_state import replay_prefix

DATA = Path(__file__).resolve().parent.parent / "data" / "unreached_slices"
ANSWERS = sorted(DATA.glob("*.answer.dragon"))
POOL = DATA / "pool2d_typed_c16_dtypef16_h16_kernel3_layoutNHWC_n1_opavg_stride2_w16.tvmscript"


def _workload(answer: Path) -> Path:
    return DATA / answer.name.replace(".answer.dragon", ".tvmscript")


def _scheduled(answer: Path):
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.compile import schedule
    from dragon_dsl.tvm.workload import load_workload

    workload = _workload(answer) if answer.name.endswith(".answer.dragon") else _workload_of(answer)
    return schedule(load_workload(workload), {"trace": to_trace_json(answer.read_text(encoding="utf-8"))}, None)


def test_the_data_is_there():
    assert len(ANSWERS) == 2


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda p: p.name.split(".")[0])
def test_unreached_iterations_finds_the_seven_unwritten_slices(answer):
    from dragon_dsl.tvm.compile import unreached_iterations

    found = unreached_iterations(_scheduled(answer))
    assert [(block, never, extent, reader) for block, _, never, extent, reader in found] == [
        ("Y_rf", [1, 2, 3, 4, 5, 6, 7], 8, "Y")
    ]


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda p: p.name.split(".")[0])
def test_the_compile_check_rejects_the_answer(answer):
    from dragon_model.api import compile_problem

    problem = compile_problem(answer.read_text(encoding="utf-8"), _workload(answer), "cuda")
    assert problem is not None and "block 'Y_rf' never runs for" in problem and "block 'Y' reads them" in problem, (
        problem
    )


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda p: p.name.split(".")[0])
def test_the_decoder_refuses_the_rfactor(answer):
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(_workload(answer))
    stmts = list(statements_of(answer.read_text(encoding="utf-8").split("\n\n", 1)[1]))
    at = next(i for i, s in enumerate(stmts) if "rfactor(" in s)
    env, why = replay_prefix("".join(stmts[:at]), mod, "cuda")
    assert env is not None, why
    env, why = replay_prefix("".join(stmts[: at + 1]), mod, "cuda")
    assert env is None and "never runs for" in why, why


def test_dlight_pooling_initialises_its_slices_elsewhere_and_is_kept():
    """dlight's rfactor block for this pooling window of 9 over 16 threads never runs for slices
    9-15 either, but a block of its own with no predicate sets them to zero first."""
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import schedule, unreached_iterations
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.workload import load_workload

    scheduled = schedule(load_workload(POOL), {"baseline": "dlight"}, tvm_target(resolve_target("cuda").spec))
    assert unreached_iterations(scheduled) == []
    assert (
        "S_rf_init" in scheduled.script()
        and "T.where(ax3_ax4_fused_0 * 16 + ax3_ax4_fused_1 < 9)" in scheduled.script()
    )


UNIT_RFACTOR = DATA / "reduction_axis0_m1_n5120_opsum.unit_rfactor.dragon"


def test_a_block_with_no_reduction_left_counts_too():
    """The rfactor of a 1-long reduction split by [None, 1024] (a 1 x 5120 column sum's answer,
    which verified on an H100 by chance): its rfactor stage has no reduction iterator left, writes
    slice 0 of 1,024 under the split's predicate, and the write-back sums all of them. The compile
    check finds it, and the decoder refuses the script."""
    from dragon_dsl.tvm.compile import unreached_iterations

    found = unreached_iterations(_scheduled(UNIT_RFACTOR))
    assert [(f[0], f[4]) for f in found] == [("Y_rf", "Y")]
    body = "".join(statements_of(UNIT_RFACTOR.read_text(encoding="utf-8").split("\n\n", 1)[1]))
    env, why = replay_prefix(body, str(_workload_of(UNIT_RFACTOR)), "cuda")
    assert env is None and "never runs" in why


def _workload_of(script: Path) -> Path:
    return DATA / f"{script.name.split('.')[0]}.tvmscript"
