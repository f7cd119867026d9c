"""The TVM RPC tracker and servers `bench_measure.py --rpc` measures through, started on loopback
(`start_rpc`) and stopped (`stop_rpc`), and the tails of their logs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

RPC_KEY = "dragon-bench"


# --- RPC on loopback ------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_rpc(n_servers: int, env_for, log_dir: Path, no_fork: bool = False) -> tuple:
    """A tracker and N servers on loopback: (device string, processes). Each process's output goes
    to LOG_DIR/rpc-*.log (a pipe nobody reads would stall a server once full). NO_FORK: the servers
    start every session in a fresh process (`--no-fork`), as GPU servers must (see docs/MEASURE.md)."""
    from dragon_dsl.engine.devices import count_servers

    port = _free_port()
    names = ["tracker"] + [f"server-{i}" for i in range(n_servers)]
    logs = [log_dir / f"rpc-{name}.log" for name in names]

    def spawn(args: list, log: Path, env=None) -> subprocess.Popen:
        with log.open("wb") as fh:  # the child has its own copy of the descriptor
            return subprocess.Popen(
                [sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=fh, start_new_session=True, env=env
            )

    procs = [
        spawn(
            [
                "tvm.exec.rpc_tracker",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--port-end",
                str(port + 1),
                "--silent",
            ],
            logs[0],
        )
    ]
    listening = time.monotonic() + 30  # servers that find no tracker retry only every 5 s
    while time.monotonic() < listening and procs[0].poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    for i in range(n_servers):
        sp = _free_port()
        procs.append(
            spawn(
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
                    RPC_KEY,
                ]
                + (["--no-fork"] if no_fork else []),
                logs[i + 1],
                env={**os.environ, **env_for(i)},
            )
        )
    deadline = time.monotonic() + 120
    while True:
        try:
            if count_servers("127.0.0.1", port, RPC_KEY) == n_servers:
                break
        except Exception:
            pass
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            died = [(name, p.poll()) for name, p in zip(names, procs)]
            stop_rpc(procs)
            said = []
            for (name, code), log in zip(died, logs):
                tail = log_tail(log, 3)
                said.append(
                    f"{name}: "
                    + ("exited with code %s" % code if code is not None else "still running")
                    + (" (" + " | ".join(tail) + ")" if tail else "")
                )
            raise RpcUnavailable("the RPC tracker and servers did not come up within 120 s: " + "; ".join(said))
        time.sleep(0.3)
    return f"rpc://127.0.0.1:{port}/{RPC_KEY}", procs


class RpcUnavailable(RuntimeError):
    """The loopback tracker or its servers did not start (what each process said is in the message)."""


def log_tail(path: Path, n: int) -> list:
    return path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-n:] if path.exists() else []


def stop_rpc(procs) -> None:
    for proc in procs:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
