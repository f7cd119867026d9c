"""Build workers run below the engine's CPU priority (engine.BUILD_NICE) when kernels are timed on
a local GPU while they compile: a kernel's launches come from the device worker's core, and on a
machine whose every core compiles, a timed kernel of a few microseconds must not wait behind a
compiler. Anywhere else builds keep the engine's priority: a niced build only loses its core to
other work and runs into its timeout."""

from __future__ import annotations

import os
import time

import psutil

from dragon_dsl.engine import engine as E


def _nice_once_started(pool) -> list:
    """Each worker's nice value once it has said it is ready (it lowers its priority before)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not all(w.ready for w in pool.workers):
        for w in pool.workers:
            if not w.ready and w.conn.poll(0.2):
                assert w.conn.recv().get("ready"), "a worker could not start"
                w.ready = True
    assert all(w.ready for w in pool.workers), "workers did not start"
    return [psutil.Process(w.proc.pid).nice() for w in pool.workers]


def test_builds_for_a_local_gpu_run_niced_and_cpu_builds_do_not(monkeypatch):
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    engine = E.Engine({"kind": "llvm", "num-cores": 2}, workers=1, cache=False)
    try:
        assert _nice_once_started(engine._builders) == [mine]
        assert _nice_once_started(engine._device_pool()) == [mine]
    finally:
        engine.close()
    monkeypatch.setattr(E, "local_gpus", lambda: ("NVIDIA H200",))  # a GPU host, as far as builds go
    engine = E.Engine("nvidia/nvidia-h100", workers=2, cache=False)
    try:
        assert _nice_once_started(engine._builders) == [min(19, mine + E.BUILD_NICE)] * 2
    finally:
        engine.close()
    engine = E.Engine("nvidia/nvidia-h100", device="rpc://127.0.0.1:9190/h200", workers=1, cache=False)
    try:  # kernels timed elsewhere
        assert _nice_once_started(engine._builders) == [mine]
    finally:
        engine.close()
