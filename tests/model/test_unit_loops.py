"""add_unit_loop while decoding.

dlight's GEMV rule alone gives one block two unit loops (its normal form: the vector chunk's
loop and the batch loop); its Reduction, GeneralReduction and Fallback rules add one, to a
block, and MetaSchedule's design spaces never write the instruction. The decoder offers a
block's second unit loop only where dlight's GEMV analysis accepts the block, and never a
loop's. Each case starts from dlight's own script of the workload, not from a copy of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.model.test_constrained import _matcher_for
from tests.model.test_gemm_layouts import _dlight_lines, _state

WORKLOADS = Path(__file__).resolve().parent.parent / "data" / "workloads"


def _up_to_first_unit_loop(name: str):
    text, lines = _dlight_lines(name)
    first = next(i for i, line in enumerate(lines) if "add_unit_loop(" in line)
    return text, lines, first


@pytest.mark.parametrize("name, units", [("gemv_64x256", 2), ("row_sum_64x256", 1), ("row_sum_1x15244", 1)])
def test_dlights_unit_loops_are_written_and_no_more(name, units):
    text, lines, first = _up_to_first_unit_loop(name)
    assert sum("add_unit_loop(" in line for line in lines) == units
    block = lines[first].split("(")[1].split(")")[0]
    for k in range(units):  # dlight's own statements are accepted
        assert _matcher_for(_state(text, lines[: first + k]))(lines[first + k], complete=True), lines[first + k]
    after = _state(text, lines[: first + units])
    nxt = f"l{after.counter} = add_unit_loop({block})\n"
    # a GEMV's third unit loop and a row sum's second: refused
    assert not _matcher_for(after)(nxt, complete=True), nxt


def test_a_row_sum_is_not_given_the_gemv_normal_form():
    """A CUDA model wrote a GEMV's two unit loops for row sums of one input (then a cache
    read of a vector they do not have): the second one is refused, its GEMV twin's accepted."""
    verdicts = {}
    for name in ("gemv_64x256", "row_sum_64x256"):
        text, lines, first = _up_to_first_unit_loop(name)
        env = _state(text, lines[: first + 1])
        block = lines[first].split("(")[1].split(")")[0]
        assert env.unit_looped == {block: 1}
        verdicts[name] = _matcher_for(env)(f"l{env.counter} = add_unit_loop({block})\n", complete=True)
    assert verdicts == {"gemv_64x256": True, "row_sum_64x256": False}


def test_a_loop_takes_no_unit_loop():
    text, lines, first = _up_to_first_unit_loop("row_sum_64x256")
    env = _state(text, lines[:first])
    loop = next(iter(env.loops))
    accepts = _matcher_for(env)
    assert accepts(lines[first], complete=True)
    assert not accepts(f"l{env.counter} = add_unit_loop({loop})\n", complete=True)
