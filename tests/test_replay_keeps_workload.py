"""Replaying a script never changes the workload it was replayed on. TVM 0.27's schedule changes
the module it was made from in place once the root block (here one that holds an intermediate buffer) is annotated; workloads are parsed once
and shared in a process (`load_workload`), so a later replay (the decoder's next statement, the next
candidate of an engine worker) would start from an already scheduled workload."""

from __future__ import annotations

import pytest

from dragon_dsl import check_text

WORKLOAD = """# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(X: T.Buffer((64, 48), "float32"), Y: T.Buffer((64, 48), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        total = T.sblock_alloc_buffer((64,))
        for i, k in T.grid(64, 48):
            with T.sblock("total"):
                v_i, v_k = T.axis.remap("SR", [i, k])
                T.reads(X[v_i, v_k])
                T.writes(total[v_i])
                with T.init():
                    total[v_i] = T.float32(0.0)
                total[v_i] = total[v_i] + X[v_i, v_k]
        for i, j in T.grid(64, 48):
            with T.sblock("Y"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(X[v_i, v_j], total[v_i])
                T.writes(Y[v_i, v_j])
                Y[v_i, v_j] = X[v_i, v_j] / total[v_i]
"""

ROOT_THEN_SPLIT = """b0 = get_sblock("Y")
b1 = get_sblock("root")
annotate(b1, "meta_schedule.unroll_explicit", 16)
l2, l3 = get_loops(b0)
l4, l5 = split(l3, [6, 8])
"""


@pytest.mark.parametrize("how", ["replay", "replay_steps", "decoder"])
def test_a_replay_that_annotates_the_root_leaves_the_shared_workload_unscheduled(how):
    from dragon_dsl.tvm.replay import replay, replay_steps
    from dragon_dsl.tvm.workload import load_workload

    text = WORKLOAD + f"# {how}\n"          # a parse of its own: the cache is shared by the tests
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

    env, why = replay_prefix('b0 = get_sblock("Y")\n', mod, "llvm")
    assert why is None and env.blocks["b0"]["loops"] == 2
