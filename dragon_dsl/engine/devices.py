"""Where a device worker loads and runs a built library: this machine, or a TVM RPC server.

Local: `tvm.runtime.load_module`. A library built where no GPU was (so it holds CUDA
source) comes with the cubin the builder's nvcc made: the worker hands TVM that cubin
through TVM's compile hook (`tvm_callback_cuda_compile`, looked up by a hash of the
source) instead of letting the runtime compile the source again at load time. A
library built on a GPU machine already holds the binary and needs neither.

A local GPU is used by one run at a time, across processes too: several engines on one
machine (shards of a search, an evaluation, the language server) take the GPU's lock
file (`flock`, released when the holder exits, even by a kill) around each stretch of a
candidate's GPU work (staging, a run and its read-back, the timing: `GpuHold`), so that
timings never share the GPU; the comparison of outputs on the CPU runs without it. The lock names the physical GPU
(through CUDA_VISIBLE_DEVICES); its folder is $DRAGON_GPU_LOCK_DIR, else
<tmp>/dragon-gpu-locks.

Remote: a TVM RPC tracker (`python -m tvm.exec.rpc_tracker`) lends a server
registered under a key (`python -m tvm.exec.rpc_server --tracker HOST:PORT --key KEY`).
A session (with a session timeout) serves the tasks of its first half-timeout: each uploads its
library, loads it there and runs it there; the tensors live on the remote device.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
from pathlib import Path

_PRECOMPILED: dict = {}
_counters = {"cubin_hits": 0, "cubin_misses": 0}


def install_cubin_hook() -> None:
    import tvm_ffi

    original = tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True)

    def compile_hook(code, *rest):
        blob = _PRECOMPILED.pop(hashlib.sha256(str(code).encode()).hexdigest(), None)
        if blob is not None:
            _counters["cubin_hits"] += 1
            return bytearray(blob)
        _counters["cubin_misses"] += 1
        return original(code, *rest)

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", compile_hook, override=True)


def counters() -> dict:
    return dict(_counters)


def physical_gpu(index: int) -> str:
    """The name of the GPU a process sees as `index` (CUDA_VISIBLE_DEVICES maps it)."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def gpu_lock_path(index: int) -> Path:
    import tempfile

    folder = Path(os.environ.get("DRAGON_GPU_LOCK_DIR") or Path(tempfile.gettempdir()) / "dragon-gpu-locks")
    folder.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in physical_gpu(index))
    return folder / f"gpu-{name}.lock"


@contextlib.contextmanager
def gpu_lock(index: int):
    """Hold GPU INDEX's lock once (a process that is not a device worker: a vendor library's run)."""
    lock = GpuHold(index)
    try:
        with lock.hold():
            yield
    finally:
        lock.close()


class GpuHold:
    """The GPU's lock for one device worker, taken for each stretch of a candidate's GPU work
    (staging, a run and its read-back, a timing) and released between them, so that another
    process's candidate uses the GPU while this one compares outputs on the CPU. `hold()`
    calls `on_wait` before it blocks (another process holds the GPU) and `on_held` once it
    holds it; `waited` sums the seconds spent blocked."""

    def __init__(self, index: int, on_wait=lambda: None, on_held=lambda: None):
        self.path = gpu_lock_path(index)
        self.on_wait, self.on_held = on_wait, on_held
        self.waited = 0.0
        self._handle = None

    @contextlib.contextmanager
    def hold(self):
        import fcntl
        import time

        if self._handle is None:
            self._handle = open(self.path, "a+")
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.on_wait()
            t0 = time.perf_counter()
            fcntl.flock(self._handle, fcntl.LOCK_EX)
            self.waited += time.perf_counter() - t0
        self.on_held()
        try:
            yield
        finally:
            fcntl.flock(self._handle, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class LocalDevice:
    def __init__(self, device_type: str, index: int = 0):
        self.device_type = device_type
        self.index = index

    def hold(self, on_wait, on_held) -> GpuHold | None:
        """The GPU's lock for this worker's candidates (None for the CPU: its worker is alone by design)."""
        return GpuHold(self.index, on_wait, on_held) if self.device_type != "cpu" else None

    def device(self):
        import tvm

        return tvm.runtime.device(self.device_type, self.index)

    def load(self, artifact: str):
        """(module, device, None) for a built library."""
        import tvm

        cubin = Path(artifact).with_suffix(".cubin")
        if cubin.exists():
            _PRECOMPILED[Path(artifact).with_suffix(".cuhash").read_text().strip()] = cubin.read_bytes()
        return tvm.runtime.load_module(artifact), self.device(), None

    def count(self) -> int:
        import tvm

        if self.device_type == "cpu":
            return 1
        return sum(1 for i in range(64) if tvm.runtime.device(self.device_type, i).exist)


class RemoteDevice:
    """The GPUs (or CPUs) of a TVM RPC tracker. A session the tracker lends is kept for the next
    tasks while it is young: the server ends every session SESSION_TIMEOUT after it began (so that
    a hung kernel holds it no longer), and a task started in the first half of that always has
    time to finish. Tasks in one session also share the references staged on its device
    (worker.py), instead of copying every input set over the socket for every candidate."""

    _names = itertools.count()

    def __init__(self, host: str, port: int, key: str, device_type: str, session_timeout: float):
        self.host, self.port, self.key = host, port, key
        self.device_type = device_type
        self.session_timeout = session_timeout
        self._session = None
        self._since = 0.0

    def hold(self, on_wait, on_held) -> None:
        return None  # the tracker lends each server to one session at a time

    def session(self):
        """The session for the next task: the kept one while young, else a new one from the tracker."""
        import time

        from tvm import rpc

        if self._session is not None and time.monotonic() - self._since < self.session_timeout / 2:
            return self._session
        self._session = None  # the old session goes back to the tracker before the next is asked for
        tracker = rpc.connect_tracker(self.host, self.port)
        self._session = tracker.request(self.key, priority=1, session_timeout=int(self.session_timeout) + 1)
        self._since = time.monotonic()
        return self._session

    def load(self, artifact: str):
        """(module, device, session): the session must stay referenced while the module is used."""
        session = self.session()
        name = f"dragon_{os.getpid()}_{next(self._names)}.so"
        session.upload(artifact, target=name)
        module = session.load_module(name)
        return module, session.device(self.device_type, 0), session


# what a kernel run reports when the RPC server forked its session's process after CUDA was
# initialised in the parent (TVM's default): the server must start sessions with --no-fork
_FORKED_AFTER_CUDA = "cudaErrorInitializationError"


def explain_remote(message: str) -> str:
    """A failure on a remote device, with what to change where the server's set-up is the cause."""
    if _FORKED_AFTER_CUDA in message:
        return (
            message + " (the RPC server forked the session after CUDA was initialised: "
            "start it with --no-fork, docs/MEASURE.md)"
        )
    return message


def count_servers(host: str, port: int, key: str) -> int:
    """Servers the tracker knows under `key` (free or busy)."""
    from tvm import rpc

    summary = rpc.connect_tracker(host, port).summary()
    return sum(1 for item in summary.get("server_info", []) if str(item.get("key", "")).split(":")[-1] == key)
