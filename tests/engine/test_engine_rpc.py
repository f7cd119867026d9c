"""Remote devices through TVM's own RPC: a tracker and two servers on loopback, started
here as `python -m tvm.exec.rpc_tracker` and `dragon rpc-server` (TVM's server, whose sessions
also serve the engine's CUDA timer; the tracker needs tornado)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from dragon_dsl.engine import Engine

from .engine_helpers import LLVM, fixture_traces, float16_accumulator, partial_write, workload

KEY = "dragon-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args) -> subprocess.Popen:
    # a session of its own: TVM's tracker and server run in child processes that must end with them
    return subprocess.Popen(
        [sys.executable, "-m", *args, "--silent"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def tracker():
    import importlib.util

    assert importlib.util.find_spec("tornado"), "TVM's RPC tracker needs the tornado package"
    from dragon_dsl.engine.devices import count_servers

    port = _free_port()
    procs = [_start(["tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1)])]
    try:
        for fork in (True, False):  # the second as GPU servers must run: a fresh process per session
            sp = _free_port()
            procs.append(
                _start(
                    [
                        "dragon_dsl.engine.rpc_server",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(sp),
                        "--port-end",
                        str(sp + 1),
                        "--tracker",
                        f"127.0.0.1:{port}",
                        "--key",
                        KEY,
                    ]
                    + ([] if fork else ["--no-fork"])
                )
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                if count_servers("127.0.0.1", port, KEY) == 2:
                    break
            except Exception:  # the tracker is not listening yet
                pass
            assert time.monotonic() < deadline, "the RPC tracker and servers did not come up in 60 s"
            assert all(p.poll() is None for p in procs), procs[0].stderr.read().decode()[-2000:]
            time.sleep(0.3)
        yield f"rpc://127.0.0.1:{port}/{KEY}"
    finally:
        for p in procs:
            _stop(p)


def _verdicts(results):
    return [(r.status, r.n_checked, r.max_abs_err, r.max_rel_err) for r in results]


def test_remote_verification_equals_local(tracker, llvm_engine):
    cases = [
        ("matmul_64", fixture_traces("matmul_64", LLVM) + [float16_accumulator()]),
        ("softmax_64", fixture_traces("softmax_64", LLVM, limit=1)),
        ("partial_write", [partial_write()]),
    ]
    seen = set()
    with Engine(LLVM, device=tracker, workers=2, cache=False) as remote:
        assert len(remote._device_pool().workers) == 2  # one device worker per registered server
        for name, traces in cases:
            here = llvm_engine.measure(workload(name), traces, level="verify", use_cache=False)
            there = remote.measure(workload(name), traces, level="verify")
            assert _verdicts(there) == _verdicts(here), name
            seen |= {r.status.value for r in there}
        (timed,) = remote.measure(workload("matmul_64"), fixture_traces("matmul_64", LLVM, limit=1), level="time")
        assert timed.ok and len(timed.latencies_us) == 5
    assert seen == {"ok", "numeric_mismatch", "unwritten_output"}


def test_a_session_serves_the_next_tasks_only_while_young(tracker):
    """A session is kept for the next tasks during the first half of its timeout (the server ends
    it at the timeout, whatever runs), then a new one is asked for."""
    from dragon_dsl.engine.devices import RemoteDevice

    host, port = tracker[len("rpc://") :].split("/")[0].split(":")
    young = RemoteDevice(host, int(port), KEY, "cpu", session_timeout=120.0)
    first = young.session()
    assert young.session() is first
    del first, young  # the server goes back to the tracker
    old = RemoteDevice(host, int(port), KEY, "cpu", session_timeout=0.0)
    old.session()
    began = old._since
    old.session()
    assert old._since > began  # a new session: the old one went back before it was asked for


@pytest.mark.parametrize(
    "message, hint",
    [
        ("CUDA Runtime Error: cudaErrorInitializationError (3): initialization error", True),
        ("CUDA Runtime Error: cudaErrorIllegalAddress (700): an illegal memory access was encountered", False),
        ("", False),
    ],
)
def test_a_forked_gpu_server_is_explained(message, hint):
    from dragon_dsl.engine.devices import explain_remote

    said = explain_remote(message)
    assert said.startswith(message)
    assert ("--no-fork" in said) is hint


def test_every_session_serves_the_engine_timer(tracker):
    """Both servers (forked sessions, and fresh processes with --no-fork, as GPU servers run)
    register the blocked timer in the session's own process, where the engine calls it."""
    from tvm import rpc

    from dragon_dsl.engine.gpu_timer import REMOTE_FUNC

    host, port = tracker[len("rpc://") :].split("/")[0].split(":")
    client = rpc.connect_tracker(host, int(port))
    sessions = [client.request(KEY, session_timeout=30) for _ in range(2)]  # one of each server
    for session in sessions:
        assert session.get_function(REMOTE_FUNC) is not None
    with pytest.raises(Exception, match="no function"):
        sessions[0].get_function("dragon.engine.no_such_function")


def test_cpu_results_say_time_evaluator_timed_them(tracker):
    with Engine(LLVM, device=tracker, workers=1, cache=False) as remote:
        (timed,) = remote.measure(workload("matmul_64"), fixture_traces("matmul_64", LLVM, limit=1), level="time")
    assert timed.ok and timed.timer == "evaluator"
