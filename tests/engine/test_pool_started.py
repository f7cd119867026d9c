"""The pool's "started" message: a device worker sends it once it holds the GPU's lock, and the
job's timeout counts from then, so that waiting for another process's candidate (a kernel that
hangs until its own timeout) never times out this one."""

from __future__ import annotations

from dragon_dsl.engine import pool as P


class _Conn:
    def __init__(self, messages):
        self.messages = list(messages)

    def recv(self):
        return self.messages.pop(0)


def _worker(messages, deadline):
    replies = []
    job = P._Job({"op": "run"}, 30.0, replies.append)
    w = P._Worker(0, proc=object(), conn=_Conn(messages), ready=True, job=job, deadline=deadline)
    return w, replies


def test_started_restarts_the_clock_and_keeps_the_job(monkeypatch):
    monkeypatch.setattr(P.time, "monotonic", lambda: 1000.0)
    w, replies = _worker([{"started": True}, {"status": "ok"}], deadline=900.0)  # waited 100 s for the lock
    d = P.Dispatcher([])
    d._receive(None, w)
    assert w.job is not None and w.deadline == 1030.0 and replies == []
    d._receive(None, w)
    assert w.job is None and replies == [{"status": "ok"}]


def test_a_late_started_for_no_job_is_ignored(monkeypatch):
    monkeypatch.setattr(P.time, "monotonic", lambda: 1000.0)
    w, replies = _worker([{"started": True}], deadline=0.0)
    w.job = None
    P.Dispatcher([])._receive(None, w)
    assert w.job is None and w.deadline == 0.0 and replies == []
