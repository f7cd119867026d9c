"""dlight's normal form of GEMM-like blocks while decoding.

After `reindex` of a GEMM-like block's two inputs and its output, dlight writes each reindexed
buffer's layout and then the block's with lambdas its own analysis gives (`inspect.gemm_layouts`).
The decoder offers exactly those lambdas there; the tensor-core design space, which transforms
the block's own buffers and the reindex blocks' iteration domains instead, keeps its grammar.
Each case is checked against dlight's own script of the workload, not against a copy of it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.model.test_constrained import _matcher_for

WORKLOADS = Path(__file__).resolve().parent.parent / "data" / "workloads"
REINDEX = re.compile(r"(b\d+) = reindex\((b\d+), (read|write)\((\d)\)\)")


def _dlight_lines(name: str):
    from dragon_dsl.engine import resolve_target
    from dragon_model.api import dlight_script
    from dragon_model.data import body_of_text

    text = (WORKLOADS / f"{name}.tvmscript").read_text(encoding="utf-8")
    body = body_of_text(dlight_script(text, resolve_target("cuda").spec, name))
    return text, body.splitlines(keepends=True)


def _state(text: str, lines: list):
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix("".join(lines), load_workload(text), "cuda")
    assert why is None, why
    return env


@pytest.mark.parametrize("name", ["conv2d_nchw_16", "matmul_64", "conv2d_nchw_bias_bn_relu_16"])
def test_reindexed_layouts_take_only_dlights_lambdas(name):
    text, lines = _dlight_lines(name)
    reindex = [i for i, line in enumerate(lines) if REINDEX.match(line)]
    assert len(reindex) == 3, "dlight's Matmul rule reindexes A, B and C"
    first = reindex[-1] + 1
    steps = lines[first : first + 4]
    assert [s.split("(")[0] for s in steps] == ["transform_layout"] * 3 + ["transform_block_layout"]
    for k, stmt in enumerate(steps):
        accepts = _matcher_for(_state(text, lines[: first + k]))
        assert accepts(stmt, complete=True), stmt
        # the same statement with another lambda body: refused (the first digit changed, or a 0 added)
        head, lam = stmt.split("lambda", 1)
        other = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), lam, count=1)
        other = other if other != lam else lam.replace(": (", ": (0, ", 1)
        assert not accepts(head + "lambda" + other, complete=True), other
        if k < 3:  # the reindex block's buffer takes its lambda once
            after = _state(text, lines[: first + k + 1])
            assert not _matcher_for(after)(stmt, complete=True)


def test_the_tensor_core_space_keeps_its_layouts():
    """MetaSchedule's tensor-core tiling reindexes too, then transforms the block's own buffers
    and the reindex blocks' domains: still accepted after the three reindexes."""
    text = (WORKLOADS / "matmul_64.tvmscript").read_text(encoding="utf-8")
    prefix = [
        'b0 = get_sblock("C")\n',
        "b1 = reindex(b0, write(0))\n",
        "b2 = reindex(b0, read(0))\n",
        "b3 = reindex(b0, read(1))\n",
    ]
    env = _state(text, prefix)
    assert "b0" in env.gemm_layouts
    i, j, k = env.block_iters["b0"]
    accepts = _matcher_for(env)
    assert accepts(
        f"transform_layout(b0, read(0), lambda {i}, {k}: ({i}, {k}), assume_injective_transform=True)\n", complete=True
    )
    assert accepts(f"transform_block_layout(b1, lambda {i}, {j}: ({i}, {j}))\n", complete=True)
    assert accepts(f"transform_block_layout(b0, lambda {i}, {j}, {k}: ({i}, {j}, {k}))\n", complete=True)
