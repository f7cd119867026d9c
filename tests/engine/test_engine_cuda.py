"""CUDA candidates: built and checked on this CPU machine (TVM's GPU limits, nvcc), and
verified on a GPU where there is one."""

from __future__ import annotations

import pytest

from dragon_dsl.engine import Engine, EngineError, Status
from dragon_dsl.engine.nvcc import NvccError, compile_cubin, find_nvcc
from dragon_dsl.engine.targets import local_gpus

from .engine_helpers import H100, fixture_traces, too_many_threads, workload

needs_gpu = pytest.mark.skipif(not local_gpus(), reason="needs a CUDA device (nvidia-smi lists none here)")


@pytest.fixture(scope="module")
def cuda_engine(tmp_path_factory):
    engine = Engine(H100, workers=2, timeout_s=120.0, cache=tmp_path_factory.mktemp("cuda") / "r.sqlite")
    yield engine
    engine.close()


def test_nvcc_is_installed():
    assert find_nvcc() is not None, "the engine's CUDA build check needs nvcc (PATH or /usr/local/cuda/bin)"


def test_fixture_cuda_schedules_build_through_nvcc(cuda_engine):
    traces = fixture_traces("matmul_64", H100) + fixture_traces("softmax_64", H100, limit=1)
    results = cuda_engine.measure(workload("matmul_64"), traces[:2], level="build")
    results += cuda_engine.measure(workload("softmax_64"), traces[2:], level="build")
    assert [r.status for r in results] == [Status.OK] * 3, [r.message for r in results]


def test_grouped_cuda_builds_compile_one_translation_unit_and_keep_each_verdict(tmp_path):
    """A group of CUDA candidates (one nvcc call) with one that breaks the GPU's limits: that
    one is still a build error of its own, the others build, from one cubin beside one library."""
    traces = fixture_traces("matmul_64", H100) + [too_many_threads()]
    engine = Engine(H100, workers=1, timeout_s=120.0, cache=False, build_group=8)
    try:
        results = engine.measure(workload("matmul_64"), traces, level="build")
        assert engine.stats()["build_jobs"] == 1
    finally:
        engine.close()
    assert [r.status for r in results] == [Status.OK, Status.OK, Status.BUILD_ERROR], [r.message for r in results]
    assert results[2].message.startswith("GPU constraint(s) violated: Used threads per block (2048)")


def test_too_many_threads_per_block_is_a_build_error(cuda_engine):
    (r,) = cuda_engine.measure(workload("matmul_64"), [too_many_threads()], level="build")
    assert r.status is Status.BUILD_ERROR
    assert r.message == (
        "GPU constraint(s) violated: Used threads per block (2048) is greater than the allowed maximum (1024)"
    )


def test_unscheduled_cuda_build_has_no_kernel(cuda_engine):
    r = cuda_engine.baseline(workload("matmul_64"), kind="unscheduled", level="build")
    assert r.status is Status.BUILD_ERROR and "no GPU kernel" in r.message
    dlight = cuda_engine.baseline(workload("matmul_64"), kind="dlight", level="build")
    assert dlight.ok, dlight.message


def test_nvcc_errors_become_messages():
    import tvm

    with pytest.raises(NvccError) as err:
        compile_cubin('extern "C" __global__ void k(float* a) { a[0] = undefined_name; }', tvm.target.Target(H100))
    assert "undefined_name" in str(err.value) and str(err.value).startswith("nvcc: ")


@pytest.mark.skipif(bool(local_gpus()), reason="checks the message on machines without a GPU")
def test_verifying_without_a_gpu_is_refused(cuda_engine):
    with pytest.raises(EngineError, match="no GPU"):
        cuda_engine.measure(workload("matmul_64"), fixture_traces("matmul_64", H100, limit=1), level="verify")


@needs_gpu
def test_fixture_cuda_schedules_verify_and_time_on_the_gpu(cuda_engine):
    results = cuda_engine.measure(workload("matmul_64"), fixture_traces("matmul_64", H100), level="time")
    for r in results:
        assert r.ok, r.message
        assert r.n_checked == 5 and r.latency_us > 0
    # the binary came from the build (TVM's NVRTC on a GPU machine, or our nvcc cubin): the
    # device worker never compiled CUDA source itself
    assert cuda_engine.stats()["cubin_misses"] == 0


@needs_gpu
def test_too_many_threads_is_caught_before_the_gpu(cuda_engine):
    (r,) = cuda_engine.measure(workload("matmul_64"), [too_many_threads()], level="time")
    assert r.status is Status.BUILD_ERROR


@needs_gpu
def test_grouped_cuda_candidates_verify_and_time_each_through_its_own_entry():
    traces = fixture_traces("matmul_64", H100) + fixture_traces("softmax_64", H100, limit=2)
    alone = Engine(H100, workers=1, timeout_s=120.0, cache=False)
    grouped = Engine(H100, workers=1, timeout_s=120.0, cache=False, build_group=8)
    try:
        for name, part in (("matmul_64", traces[:2]), ("softmax_64", traces[2:])):
            expected = alone.measure(workload(name), part, level="time")
            got = grouped.measure(workload(name), part, level="time")
            assert [(r.status, r.n_checked) for r in got] == [(r.status, r.n_checked) for r in expected]
            assert all(r.ok and r.latency_us > 0 for r in got), [r.message for r in got]
        assert grouped.stats()["build_jobs"] == 2 and grouped.stats()["cubin_misses"] == 0
    finally:
        alone.close()
        grouped.close()
