"""The bridge's judgement of a fused function: a task, or dropped for a symbolic shape or for having
nothing to schedule."""

from __future__ import annotations

import pytest

pytest.importorskip("tvm")

from dragon_dsl.tvm.relax_tasks import task_of, why_unschedulable
from dragon_dsl.tvm.workload import load_workload

HEAD = "# from tvm.script import tirx as T\n\n@T.prim_func(s_tir=True)\n"

CASES = {
    "static": (
        HEAD
        + """def main(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
    for i in range(T.int64(4)):
        with T.sblock("B"):
            vi = T.axis.spatial(T.int64(4), i)
            B[vi] = A[vi] * T.float32(2.0)
""",
        "",
    ),
    "symbolic": (
        HEAD
        + """def main(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.sblock("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi]
""",
        "dynamic",
    ),
    "scalar parameter": (
        HEAD
        + """def main(A: T.Buffer((T.int64(4),), "float32"), s: T.float32):
    for i in range(T.int64(4)):
        with T.sblock("A"):
            vi = T.axis.spatial(T.int64(4), i)
            A[vi] = s
""",
        "dynamic",
    ),
    "no block": (HEAD + 'def main(A: T.Buffer((1,), "float32")):\n    A[0] = T.float32(1.0)\n', "no_blocks"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_why_a_fused_function_is_no_task(case):
    text, reason = CASES[case]
    assert why_unschedulable(load_workload(text)["main"]) == reason


def test_a_task_is_a_workload_named_main_without_the_fusion_s_attributes():
    func = load_workload(CASES["static"][0])["main"].with_attr("op_pattern", 0).with_attr("global_symbol", "fused_x")
    task = task_of("fused_multiply", func, count=3)
    assert task.name == "fused_multiply" and task.count == 3 and task.dtype == "float32" and task.flops == 4.0
    assert "op_pattern" not in task.text and "@T.prim_func(s_tir=True)" in task.text and "def main(" in task.text
    assert load_workload(task.text).script() == task.text
