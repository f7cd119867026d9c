"""Device time of a CUDA kernel, launch overhead left out: the timing behind a blocking kernel.

TVM's time_evaluator records a CUDA event, launches the kernel `number` times from the host
and records a second event. A kernel shorter than a launch (a few microseconds) leaves the GPU
idle between launches, so the figure is the host's launch rate, which moves with the load on the
host's cores: five repeats of one 5 us kernel spread over 4.4-15 us in a measuring run, and two
runs agreed within 5% on 2-29% of such kernels (benchmarks/results/gpu_measure).

`BlockedTimer` first launches a kernel that only spins (one thread, a chain of dependent
multiply-adds: `spin`), then records the first event, launches the `number` calls and records the
second. All of them queue behind the spin, so the GPU runs them back to back and the events
measure the kernels alone (nvbench's "blocking kernel"). The spin lasts longer than the host takes
to queue the calls (1.5x the largest average launch cost of the last batches, at most 20 ms; a
batch whose queueing outlasted its spin is measured again behind a spin that long). As with
time_evaluator: one discarded warm-up call, `number` grown until a repeat lasts `min_repeat_ms`
(at most 256 calls) or fixed, an optional L2 flush (a device copy of `flush_bytes`) before each
repeat, and latencies per call in microseconds. `CudaStream` is the GPU side; the tests drive the
timer with a simulated stream (tests/engine/test_gpu_timer.py).

Events and launches share the legacy default stream of the device's primary context, which TVM's
CUDA runtime launches on. The events come from NVIDIA's `cuda-bindings` (the driver API); where
it is missing, `available()` says why and the engine times with time_evaluator.

On an RPC server the same timer runs in the server's process: `register_remote()` registers
`dragon.engine.time_blocked` there (`dragon rpc-server` does so before serving); a client whose
server lacks it times with time_evaluator and says so (`timer` in each result).
"""

from __future__ import annotations

import json
import math
import time

REMOTE_FUNC = "dragon.engine.time_blocked"
# calls in one repeat: well under the launches CUDA queues before the host blocks, so that a
# repeat's calls are all queued behind its spin; a kernel of a few microseconds then repeats for
# about half a millisecond, not min_repeat_ms (the events resolve half a microsecond)
MAX_NUMBER = 256
SPIN_MARGIN = 1.5  # the spin lasts this many times the host's expected queueing of the calls
SPIN_EXTRA_US = 50.0
SPIN_MAX_US = 20_000.0  # however slow the host was: a launch that blocks (a full queue) is no idle GPU


def available() -> str | None:
    """None when the blocked timer can run here, else why not."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError as exc:
        return f"NVIDIA's cuda-bindings are not installed ({exc})"
    return None


def _check(result):
    """cuda-bindings returns (error, values...): raise on an error, else the values."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        from cuda.bindings import driver

        _e, name = driver.cuGetErrorName(err)
        raise RuntimeError(f"CUDA driver call failed: {name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else values


def spin_program():
    """`spin(A, n)`: n dependent multiply-adds on A[0], by one GPU thread."""
    import tvm
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def spin(A: T.Buffer((1,), "float32"), n: T.int32):
        T.func_attr({"tirx.noalias": True, "global_symbol": "spin"})
        for bx in T.thread_binding(1, thread="blockIdx.x"):  # noqa: B007 - TVMScript names the loop
            for tx in T.thread_binding(1, thread="threadIdx.x"):  # noqa: B007 - TVMScript names the loop
                for _i in range(n):
                    with T.sblock("spin"):
                        A[0] = A[0] * T.float32(0.9999999) + T.float32(1e-7)

    return tvm.IRModule({"spin": spin})


def spin_module(arch: str):
    """The spin program built for the CUDA architecture ARCH (e.g. "sm_90")."""
    import tvm

    return tvm.compile(spin_program(), target=tvm.target.Target({"kind": "cuda", "arch": arch}))


class CudaStream:
    """What the timer asks of the GPU: the spin kernel, two events on the legacy default stream,
    a cache flush (a device copy) and a synchronisation. `BlockedTimer` takes any object with
    these methods (the tests give it a simulated GPU)."""

    def __init__(self, dev):
        import tvm
        from cuda.bindings import driver

        self.dev = dev
        self.driver = driver
        major, minor = (int(v) for v in str(dev.compute_version).split("."))
        self._spin = spin_module(f"sm_{major}{minor}")["spin"]
        self._cell = tvm.runtime.empty((1,), "float32", dev)
        self._spin(self._cell, 1)  # loads the module, makes the primary context current on this thread
        dev.sync()
        self._events = [_check(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DEFAULT)) for _ in range(2)]
        self._flush: list = []

    def spin(self, iterations: int) -> None:
        self._spin(self._cell, int(iterations))

    def record(self, index: int) -> None:
        _check(self.driver.cuEventRecord(self._events[index], self.driver.CUstream(0)))

    def elapsed_us(self) -> float:
        """Microseconds from event 0 to event 1, once event 1 has happened."""
        _check(self.driver.cuEventSynchronize(self._events[1]))
        return float(_check(self.driver.cuEventElapsedTime(self._events[0], self._events[1]))) * 1000.0

    def flush(self, nbytes: int) -> None:
        import tvm

        words = max(1, nbytes // 4)
        if not self._flush or self._flush[0].shape[0] != words:
            self._flush = []  # the old pair goes before the new one is allocated
            self._flush = [tvm.runtime.empty((words,), "int32", self.dev) for _ in range(2)]
        self._flush[0].copyfrom(self._flush[1])

    def sync(self) -> None:
        self.dev.sync()


class BlockedTimer:
    """Per process and device: the stream's spin kernel and its rate (see the module's doc).
    CLOCK: the host's clock in seconds."""

    def __init__(self, stream, clock=time.perf_counter):
        self.stream = stream
        self.clock = clock
        # the spin's rate: iterations per microsecond, from a spin of about a millisecond
        self.per_us = 1000.0
        for _ in range(2):
            iters = int(self.per_us * 1000)
            stream.record(0)
            stream.spin(iters)
            stream.record(1)
            self.per_us = iters / max(stream.elapsed_us(), 1e-3)

    def _blocked(self, func, tensors, number: int, queue_us: float) -> tuple:
        """(device microseconds of NUMBER calls, host microseconds spent queueing them, whether the
        spin outlasted the queueing), behind a spin sized for a queueing of QUEUE_US."""
        spin_us = min(SPIN_MAX_US, SPIN_MARGIN * queue_us + SPIN_EXTRA_US)
        self.stream.spin(max(1, int(spin_us * self.per_us)))
        self.stream.record(0)
        t0 = self.clock()
        for _ in range(number):
            func(*tensors)
        queued = (self.clock() - t0) * 1e6
        self.stream.record(1)
        return self.stream.elapsed_us(), queued, queued <= spin_us

    def time(
        self, func, tensors, *, repeat: int, number: int | None, min_repeat_ms: float, flush_bytes: int = 0
    ) -> list:
        """Per-call latencies in microseconds, one per repeat."""
        func(*tensors)  # warm-up, discarded
        self.stream.sync()
        # the host's cost of a launch: the largest average of the last batches of 8 or more calls
        # (one launch can take a scheduler's time slice; an average over many, less so); before
        # any, a guess
        seen: list = []

        def expected_us(calls: int) -> float:
            return calls * (max(seen[-4:]) if seen else 10.0)

        def saw(queued: float, calls: int) -> None:
            if calls >= 8:
                seen.append(queued / calls)

        if number is None:
            # grown as time_evaluator grows it, until one repeat lasts min_repeat_ms
            number, total = 1, 0.0
            while True:
                total, queued, _covered = self._blocked(func, tensors, number, expected_us(number))
                saw(queued, number)
                if total >= min_repeat_ms * 1000.0 or number >= MAX_NUMBER:
                    break
                per_call = max(total / number, 1e-3)
                number = min(
                    MAX_NUMBER, max(int(math.ceil(min_repeat_ms * 1000.0 / per_call * 1.05)), int(number * 1.618) + 1)
                )
        out = []
        for _ in range(repeat):
            queue_us = expected_us(number)
            for _attempt in range(4):  # again, behind a spin as long as the queueing that outlasted it
                if flush_bytes:
                    self.stream.flush(flush_bytes)
                total, queued, covered = self._blocked(func, tensors, number, queue_us)
                saw(queued, number)
                if covered or queue_us >= SPIN_MAX_US:
                    break
                queue_us = max(queued, queue_us * 2)
            out.append(total / number)
        return out


_TIMERS: dict = {}


def timer_for(dev) -> BlockedTimer:
    key = (int(dev.dlpack_device_type()), int(dev.index))
    if key not in _TIMERS:
        _TIMERS[key] = BlockedTimer(CudaStream(dev))
    return _TIMERS[key]


def time_module(
    module, dev, tensors, *, entry: str, repeat: int, number: int | None, min_repeat_ms: float, flush_bytes: int = 0
) -> list:
    return timer_for(dev).time(
        module[entry], tensors, repeat=repeat, number=number, min_repeat_ms=min_repeat_ms, flush_bytes=flush_bytes
    )


def register_remote() -> None:
    """Registers `dragon.engine.time_blocked(module, entry, settings_json, *tensors) -> JSON list` in
    this process, for an RPC server's sessions (the tensors live on the server's device)."""
    import tvm_ffi

    def remote(module, entry, settings, *tensors):
        s = json.loads(settings)
        dev = tensors[0].device
        return json.dumps(
            time_module(
                module,
                dev,
                list(tensors),
                entry=str(entry),
                repeat=int(s["repeat"]),
                number=s.get("number"),
                min_repeat_ms=float(s["min_repeat_ms"]),
                flush_bytes=int(s.get("flush_bytes", 0)),
            )
        )

    tvm_ffi.register_global_func(REMOTE_FUNC, remote, override=True)
