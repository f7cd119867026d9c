"""How an engine's workers start: forked from a fork server that imported TVM, except where the
target is a GPU (CUDA does not survive a fork: on an H100 host every CUDA compile of a forked build
worker failed with cudaErrorInitializationError) or where DRAGON_WORKER_START=spawn asks for it."""

from __future__ import annotations

import pytest

from dragon_dsl.engine import pool as P

CASES = [
    # (target, DRAGON_WORKER_START, the start method of its pools' workers)
    ("llvm", None, "forkserver"),
    ({"kind": "llvm", "num-cores": 2}, None, "forkserver"),
    ("llvm", "spawn", "spawn"),
    ("nvidia/nvidia-h100", None, "spawn"),
    ({"kind": "cuda", "arch": "sm_90"}, None, "spawn"),
    ("nvidia/nvidia-h100", "forkserver", "spawn"),
]


@pytest.mark.parametrize("target,env,method", CASES)
def test_workers_start_by_target(monkeypatch, target, env, method):
    from dragon_dsl.engine.targets import resolve_target

    if env is None:
        monkeypatch.delenv("DRAGON_WORKER_START", raising=False)
    else:
        monkeypatch.setenv("DRAGON_WORKER_START", env)
    monkeypatch.setattr(P, "_FORKSERVER_FAILED", False)
    if method == "forkserver":
        # the fork server itself is multiprocessing's: started or not, it is asked for here
        monkeypatch.setattr("multiprocessing.forkserver.ensure_running", lambda: None)
    assert P.worker_context(resolve_target(target).is_gpu).get_start_method() == method


def test_an_unknown_start_method_is_refused(monkeypatch):
    monkeypatch.setenv("DRAGON_WORKER_START", "fork")
    with pytest.raises(ValueError, match="DRAGON_WORKER_START='fork'"):
        P.worker_context()


def test_an_engine_for_a_gpu_spawns_its_build_workers(tmp_path, monkeypatch):
    from dragon_dsl.engine import Engine

    monkeypatch.delenv("DRAGON_WORKER_START", raising=False)
    engine = Engine("nvidia/nvidia-h100", workers=1, cache=False)
    try:
        assert engine._builders._ctx.get_start_method() == "spawn"
    finally:
        engine.close()
