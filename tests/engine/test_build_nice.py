"""Build workers run below the engine's CPU priority (engine.BUILD_NICE), device workers at it: a
kernel's launches come from the device worker's core, and on a machine whose every core compiles,
a timed kernel of a few microseconds must not wait behind a compiler."""

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


def test_build_workers_run_niced_and_device_workers_do_not():
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    engine = E.Engine({"kind": "llvm", "num-cores": 2}, workers=2, cache=False)
    try:
        assert _nice_once_started(engine._builders) == [min(19, mine + E.BUILD_NICE)] * 2
        assert _nice_once_started(engine._device_pool()) == [mine]
    finally:
        engine.close()
