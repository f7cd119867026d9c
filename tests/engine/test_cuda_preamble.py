"""The CUDA source a GPU machine's build compiles with NVRTC loses TVM's type-traits block when
nothing uses it (`nvcc.trim_preamble`), and only then. Compiled on a GPU host, the trimmed sources
of every CUDA corpus family gave byte-identical kernel code (docs/MEASURE.md)."""

from __future__ import annotations

import pytest

from dragon_dsl.engine import Engine
from dragon_dsl.engine.nvcc import trim_preamble

from .engine_helpers import H100, fixture_traces, workload

BLOCK_START = "#include <cuda/std/type_traits>"


@pytest.fixture(scope="module")
def tvm_source():
    import tvm

    from dragon_dsl.tvm.compile import checked_schedule, compile_scheduled
    from dragon_dsl.tvm.workload import load_workload

    target = tvm.target.Target(H100)
    phases: dict = {}
    trace = fixture_traces("matmul_64", H100, limit=1)[0]
    scheduled = checked_schedule(load_workload(workload("matmul_64")), {"trace": trace}, target, phases)
    executable = compile_scheduled(scheduled, target, phases["lowered"])
    return next(m for m in executable.mod.imports if m.kind == "cuda").inspect_source()


def test_tvms_source_loses_the_traits_block_and_nothing_else(tvm_source):
    import difflib

    assert BLOCK_START in tvm_source
    trimmed = trim_preamble(tvm_source)
    diff = list(difflib.ndiff(tvm_source.splitlines(), trimmed.splitlines()))
    removed = [ln[2:].strip() for ln in diff if ln.startswith("- ")]
    assert not [ln for ln in diff if ln.startswith("+ ")]
    assert removed[:2] == [BLOCK_START, "namespace std {"] and removed[-1] == "}"
    assert all(ln.startswith("using cuda::std::") for ln in removed[2:-1]) and len(removed) > 4
    assert "#include <cuda/std/cstdint>" in trimmed and 'extern "C" __global__' in trimmed


@pytest.mark.parametrize(
    "use",
    [
        "  bool same = std::is_same<float, T>::value;",
        "  typename std::enable_if<true, int>::type x = 0;",
        "  constexpr bool v = is_same_v<int, int>;",
        "  cuda::std::numeric_limits<float>::max();",
    ],
)
def test_a_source_that_uses_a_trait_or_libcu_is_left_as_written(tvm_source, use):
    body = tvm_source.replace('extern "C" __global__', use + '\nextern "C" __global__', 1)
    assert trim_preamble(body) == body


def test_a_source_without_the_block_is_left_as_written():
    source = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n'
    assert trim_preamble(source) == source


def test_the_engine_takes_trimmed_or_full_only():
    with pytest.raises(ValueError, match="cuda_preamble must be 'trimmed' or 'full'"):
        Engine(H100, workers=1, cache=False, cuda_preamble="short")
