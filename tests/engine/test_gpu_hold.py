"""The GPU's lock is held for each stretch of a candidate's GPU work and released while its
outputs are compared on the CPU (devices.GpuHold, run.verify), so that a second device worker
uses the GPU meanwhile; a worker that must wait says so ("waiting") and the pool gives the job
`waiting_timeout` instead of letting the wait count against its own timeout."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np

from dragon_dsl.engine import pool as P
from dragon_dsl.engine.devices import GpuHold
from dragon_dsl.engine.inputs import input_sets
from dragon_dsl.engine.signature import Arg


def test_a_second_holder_waits_says_so_and_counts_the_wait(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAGON_GPU_LOCK_DIR", str(tmp_path))
    events: list = []
    first = GpuHold(0)
    second = GpuHold(0, on_wait=lambda: events.append("waiting"), on_held=lambda: events.append("held"))
    other_gpu = GpuHold(1, on_wait=lambda: events.append("waited for another GPU"))
    with first.hold():
        thread = threading.Thread(target=lambda: second.hold().__enter__())
        thread.start()
        time.sleep(0.3)
        with other_gpu.hold():  # another physical GPU has its own lock
            pass
        assert events == ["waiting"]
    thread.join(10)
    assert events == ["waiting", "held"]
    assert 0.2 < second.waited < 10 and first.waited == 0.0


def _reference():
    from dragon_dsl.engine.reference import Reference

    args = [Arg("A", (4,), "float32", "input"), Arg("B", (4,), "float32", "output")]
    return Reference(args, [(name, values, {"B": values["A"] * 2}) for name, values in input_sets(args, 7, 3)])


def test_verify_compares_outputs_without_the_gpu():
    import tvm

    from dragon_dsl.engine import compare
    from dragon_dsl.engine.run import Staged, verify

    state = {"held": False, "stretches": 0, "compared_holding": 0, "compared": 0}

    @contextlib.contextmanager
    def gpu():
        state["held"], state["stretches"] = True, state["stretches"] + 1
        try:
            yield
        finally:
            state["held"] = False

    real = compare.Expected.compare

    def watched(self, got):
        state["compared"] += 1
        state["compared_holding"] += state["held"]
        return real(self, got)

    def double(a, b):
        assert state["held"], "the kernel ran without the GPU's lock"
        b.copyfrom(a.numpy() * 2)

    ref = _reference()
    compare.Expected.compare = watched
    try:
        assert verify(double, Staged(tvm.cpu(0), ref), gpu)["status"] == "ok"
    finally:
        compare.Expected.compare = real
    assert state["stretches"] == len(ref.sets) == state["compared"] and state["compared_holding"] == 0


def _worker(messages, deadline):
    class Conn:
        def recv(self):
            return messages.pop(0)

    replies: list = []
    job = P._Job({"op": "run"}, 30.0, replies.append)
    return P._Worker(0, proc=object(), conn=Conn(), ready=True, job=job, deadline=deadline), replies


def test_waiting_gives_the_job_the_waiting_timeout_and_started_restarts_its_clock(monkeypatch):
    monkeypatch.setattr(P.time, "monotonic", lambda: 1000.0)
    w, replies = _worker([{"started": True}, {"waiting": True}, {"started": True}, {"status": "ok"}], 1010.0)
    d = P.Dispatcher([])
    d._receive(None, w)
    assert w.deadline == 1030.0
    d._receive(None, w)
    assert w.deadline == 1000.0 + P.waiting_timeout(30.0) and P.waiting_timeout(30.0) > 2 * 30.0
    d._receive(None, w)
    assert w.deadline == 1030.0 and replies == []
    d._receive(None, w)
    assert w.job is None and replies == [{"status": "ok"}]


def test_the_staged_outputs_are_read_back_inside_the_stretch():
    """read_outputs copies to the host before the lock is released: a tensor read after release
    could hold another stretch's data if the worker reused it (it does: outputs are refilled)."""
    import tvm

    from dragon_dsl.engine.run import Staged, verify

    ref = _reference()
    staged = Staged(tvm.cpu(0), ref)
    seen: list = []

    @contextlib.contextmanager
    def gpu():
        yield
        seen.append(np.isnan(staged.tensors(0)[1].numpy()).all())  # refilled after the stretch

    def double(a, b):
        b.copyfrom(a.numpy() * 2)

    assert verify(double, staged, gpu)["status"] == "ok" and all(seen)
