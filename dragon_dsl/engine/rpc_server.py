"""`dragon rpc-server`: TVM's RPC server, with the engine's CUDA timer in every session.

The same server as `python -m tvm.exec.rpc_server` (same options, registered with a TVM RPC
tracker under a key), except that each session's process registers `gpu_timer.REMOTE_FUNC`
before it serves, so that the engine times kernels there behind a blocking kernel as it does
on a local GPU. A client whose server is the stock one times with TVM's time_evaluator (each
result's `timer` says which).

How: TVM starts every session in a new process running `tvm.rpc.server._serve_loop` (forked,
or spawned with `--no-fork`, as GPU servers must be started). The server's own process, before it
listens (TVM's `server_init_callback`), points that name at `_serve_loop` here, which registers
the timer and then runs TVM's. A spawned session imports this module afresh, so this package must
be importable where the server runs (it is, when the server is started by this command).
"""

from __future__ import annotations

import argparse
import importlib
import logging

_tvm_serve_loop = None  # TVM's own, kept where this process replaced it (forked sessions inherit it)


def _serve_loop(sock, load_library, work_path):
    from dragon_dsl.engine import gpu_timer

    gpu_timer.register_remote()
    original = _tvm_serve_loop or importlib.import_module("tvm.rpc.server")._serve_loop
    if original is _serve_loop:  # cannot happen: a spawned session's module is TVM's, unchanged
        raise RuntimeError("TVM's RPC session loop was not kept")
    original(sock, load_library, work_path)


def install() -> None:
    """In the server's process: sessions start in `_serve_loop` above."""
    global _tvm_serve_loop
    server = importlib.import_module("tvm.rpc.server")
    if not callable(getattr(server, "_serve_loop", None)):
        raise RuntimeError(
            "this TVM's RPC server has no _serve_loop: start `python -m tvm.exec.rpc_server` "
            "instead (kernels are then timed with time_evaluator)"
        )
    if server._serve_loop is not _serve_loop:
        _tvm_serve_loop = server._serve_loop
        server._serve_loop = _serve_loop


def add_arguments(p: argparse.ArgumentParser) -> None:
    """tvm.exec.rpc_server's options."""
    p.add_argument("--host", default="0.0.0.0", help="the address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=9090, help="the first port to try (default 9090)")
    p.add_argument("--port-end", type=int, default=9199, help="the last port to try (default 9199)")
    p.add_argument("--tracker", help="the RPC tracker, HOST:PORT")
    p.add_argument("--key", default="", help="the key this server registers under with the tracker")
    p.add_argument("--custom-addr", help="the address to report to the tracker")
    p.add_argument("--load-library", help="more libraries to load (colon-separated)")
    p.add_argument(
        "--no-fork",
        action="store_true",
        help="start every session in a fresh process (GPU servers need it: CUDA does not survive a fork)",
    )
    p.add_argument("--silent", action="store_true", help="log only warnings and errors")


def serve(args: argparse.Namespace) -> int:
    from tvm import rpc

    tracker: tuple | None = None
    if args.tracker:
        host, _, port = args.tracker.rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"error: --tracker {args.tracker!r}: expected HOST:PORT")
        if not args.key:
            raise SystemExit("error: --tracker needs --key (what the clients ask the tracker for)")
        tracker = (host, int(port))
    logging.basicConfig(level=logging.WARNING if args.silent else logging.INFO)
    # this module by its name, also when it runs as __main__ (`python -m`): a spawned session finds
    # the functions it was handed by that name
    named = importlib.import_module("dragon_dsl.engine.rpc_server")
    server = rpc.Server(
        args.host,
        args.port,
        args.port_end,
        key=args.key,
        tracker_addr=tracker,
        load_library=args.load_library,
        custom_addr=args.custom_addr,
        silent=args.silent,
        no_fork=args.no_fork,
        server_init_callback=named.install,
    )
    server.proc.join()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="dragon rpc-server", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return serve(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
