"""`tvm.compile.mixed_loops`: a loop that iterates both spatial and reduction iterators of one block.

TVM's `fuse` takes a row sum's row loop and its reduction loop together. Run serially the result
is right (the block's init runs where the reduction iterator is 0); bound to threads or run in
parallel, the threads add into the same outputs at once: the seventh CUDA model's answers of this
shape built and left 3 of 4 to 127 of 128 outputs unwritten. TVM refuses `parallel` on such a loop
but binds it to threadIdx (as it binds a cross-thread reduction's loop); the build check refuses
the bound ones; the decoder refuses any statement that leaves such a loop (no training
script writes one).
"""

from __future__ import annotations

import pytest

import dragon_dsl
from dragon_dsl.tvm.compile import BuildError, ReplayError, check_scheduled, mixed_loops, schedule
from dragon_dsl.tvm.workload import load_workload

from .engine_helpers import H100, LLVM, WORKLOADS

ROW_SUM = WORKLOADS / "row_sum_64x256.tvmscript"  # row_sum[i] += A[i, k], 64 x 256
FUSED = 'b0 = get_sblock("row_sum")\nl1, l2 = get_loops(b0)\nl3 = fuse(l1, l2)\nl4, l5 = split(l3, [None, 1024])\n'

# (script, target, what the build check says: None when it passes)
CASES = [
    (
        FUSED + 'bind(l4, "threadIdx.x")\n',
        H100,
        "loop i_k_fused_0 (bound to threadIdx.x) iterates both spatial and reduction",
    ),
    (FUSED, LLVM, None),  # serial: right, if slow
    ('b0 = get_sblock("row_sum")\nl1, l2 = get_loops(b0)\nparallel(l1)\n', LLVM, None),  # rows in parallel
]


def _scheduled(script: str):
    return schedule(load_workload(ROW_SUM), {"trace": dragon_dsl.to_trace_json(script)}, None)


@pytest.mark.parametrize("script, target, says", CASES, ids=["bound", "serial", "rows"])
def test_a_loop_of_both_kinds_is_refused_where_its_threads_race(script, target, says):
    from dragon_dsl.tvm.target import tvm_target

    scheduled = _scheduled(script)
    if says is None:
        check_scheduled(scheduled, tvm_target(target))
        return
    with pytest.raises(BuildError, match="race on the block's outputs") as err:
        check_scheduled(scheduled, tvm_target(target))
    assert str(err.value).startswith(says)


def test_mixed_loops_names_the_block_the_loops_and_how_they_run():
    assert mixed_loops(_scheduled(FUSED)) == [("row_sum", "i_k_fused_0", ""), ("row_sum", "i_k_fused_1", "")]
    with pytest.raises(ReplayError, match="not a data parallel block iter"):  # TVM refuses parallel itself
        _scheduled(FUSED + "parallel(l4)\n")
    assert mixed_loops(_scheduled('b0 = get_sblock("row_sum")\nl1, l2 = get_loops(b0)\n')) == []


@pytest.mark.parametrize("kind", ["cuda", "llvm"])
def test_the_decoder_refuses_the_fuse_that_mixes_them(kind):
    from dragon_model.replay_state import replay_prefix

    prefix = 'b0 = get_sblock("row_sum")\nl1, l2 = get_loops(b0)\n'
    env, why = replay_prefix(prefix, load_workload(ROW_SUM), kind)
    assert why is None, why
    env, why = replay_prefix(prefix + "l3 = fuse(l1, l2)\n", load_workload(ROW_SUM), kind)
    assert env is None and why.startswith(
        "loop i_k_fused (serial) iterates both spatial and reduction iterators of block 'row_sum'"
    )
