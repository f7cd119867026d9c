"""Replaying a script never changes the workload it was replayed on. TVM 0.27's schedule changes
the module it was made from in place once the root block (one that holds an intermediate buffer)
is annotated; workloads are parsed once and shared in a process (`load_workload`), so a later
replay (the decoder's next statement, the next candidate of an engine worker) would start from an
already scheduled workload."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_dsl import check_text

#: a root block that holds an intermediate buffer (the case where TVM changes the module)
WORKLOAD = (Path(__file__).parent / "data" / "workloads" / "mean_center_64x128.tvmscript").read_text()

ROOT_THEN_SPLIT = """b0 = get_sblock("center")
b1 = get_sblock("root")
annotate(b1, "meta_schedule.unroll_explicit", 16)
l2, l3 = get_loops(b0)
l4, l5 = split(l3, [16, 8])
"""


@pytest.mark.parametrize("how", ["replay", "replay_steps", "decoder"])
def test_a_replay_that_annotates_the_root_leaves_the_shared_workload_unscheduled(how):
    from dragon_dsl.tvm.replay import replay, replay_steps
    from dragon_dsl.tvm.workload import load_workload

    text = WORKLOAD + f"# {how}\n"  # a parse of its own: the cache is shared by the tests
    mod = load_workload(text)
    before = mod.script()
    program, _ = check_text(ROOT_THEN_SPLIT)
    if how == "replay":
        assert replay(program, mod).ok
    elif how == "replay_steps":
        replay_steps(program, mod)
    else:
        from dragon_model.replay_state import replay_prefix

        env, why = replay_prefix(ROOT_THEN_SPLIT, mod, "llvm")
        assert why is None
    assert load_workload(text) is mod and mod.script() == before
    # and the state a decoder reads next is the workload's own: the block still has two loops
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix('b0 = get_sblock("center")\n', mod, "llvm")
    assert why is None and env.blocks["b0"]["loops"] == 2
