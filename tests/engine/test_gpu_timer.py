"""The blocked CUDA timer (gpu_timer.BlockedTimer) on a simulated GPU stream: a host that pays for
every launch (and waits when the launch queue is full), and a GPU that runs what was queued in
order. What the timer must give is the kernel's own time, however slow or uneven the host's
launches are; time_evaluator's way (events around launches, no spin) gives the launch rate."""

from __future__ import annotations

import random

import pytest

from dragon_dsl.engine.gpu_timer import MAX_NUMBER, SPIN_MAX_US, BlockedTimer


class SimStream:
    """Times in microseconds. LAUNCH_US: the host's cost of a launch (a number, or a function of
    the launch's index); QUEUE: launches queued before the host blocks."""

    def __init__(self, kernel_us: float, launch_us, queue: int = 1024, spin_per_us: float = 440.0):
        self.kernel_us, self.queue, self.spin_per_us = kernel_us, queue, spin_per_us
        self.launch = launch_us if callable(launch_us) else (lambda _i: launch_us)
        self.host = 0.0
        self.free = 0.0  # when the GPU has run everything queued so far
        self.starts: list = []  # start times of queued work (the launch queue)
        self.events = [0.0, 0.0]
        self.launches = 0
        self.spins: list = []  # each spin's length

    def _enqueue(self, duration: float) -> None:
        self.starts = [s for s in self.starts if s > self.host]
        if len(self.starts) >= self.queue:  # a full queue: the host waits for the next start
            self.host = min(self.starts)
            self.starts.remove(self.host)
        self.host += self.launch(self.launches)
        self.launches += 1
        start = max(self.free, self.host)
        self.free = start + duration
        self.starts.append(start)

    def kernel(self, *_tensors) -> None:
        self._enqueue(self.kernel_us)

    def spin(self, iterations: int) -> None:
        self.spins.append(iterations / self.spin_per_us)
        self._enqueue(iterations / self.spin_per_us)

    def record(self, index: int) -> None:
        self.host += 0.5
        self.events[index] = self.free = max(self.free, self.host)

    def elapsed_us(self) -> float:
        self.host = max(self.host, self.events[1])
        return self.events[1] - self.events[0]

    def flush(self, nbytes: int) -> None:
        self._enqueue(nbytes / 4e6)

    def sync(self) -> None:
        self.host = max(self.host, self.free)

    def clock(self) -> float:
        return self.host / 1e6


def blocked(stream: SimStream, **kw) -> list:
    timer = BlockedTimer(stream, clock=stream.clock)
    settings = dict(repeat=5, number=None, min_repeat_ms=5.0) | kw
    return timer.time(stream.kernel, [], **settings)


def evaluator_way(stream: SimStream, number: int = 200) -> float:
    """Events around NUMBER launches with nothing ahead of them (time_evaluator), per call."""
    stream.sync()
    stream.record(0)
    for _ in range(number):
        stream.kernel()
    stream.record(1)
    return stream.elapsed_us() / number


@pytest.mark.parametrize("kernel_us, launch_us", [(2.0, 5.0), (1.0, 12.0), (4.0, 4.5)])
def test_a_launch_bound_kernel_gets_its_own_time(kernel_us, launch_us):
    assert evaluator_way(SimStream(kernel_us, launch_us)) == pytest.approx(launch_us, rel=0.02)
    assert blocked(SimStream(kernel_us, launch_us)) == pytest.approx([kernel_us] * 5, rel=1e-9)


def test_an_uneven_host_changes_nothing():
    rng = random.Random(7)
    jitter = [rng.choice([3.0, 4.0, 6.0, 30.0, 200.0]) for _ in range(200_000)]
    stream = SimStream(2.0, lambda i: jitter[i % len(jitter)])
    assert blocked(stream) == pytest.approx([2.0] * 5, rel=1e-9)


def test_a_long_kernel_is_timed_as_before():
    assert evaluator_way(SimStream(100.0, 5.0), number=50) == pytest.approx(100.0, rel=1e-3)
    assert blocked(SimStream(100.0, 5.0)) == pytest.approx([100.0] * 5, rel=1e-9)


def test_a_repeat_takes_at_most_max_number_calls_and_a_fixed_number_is_kept():
    stream = SimStream(0.5, 3.0)
    blocked(stream)
    assert stream.launches <= 2 + 12 * (MAX_NUMBER + 1) + 20  # warm-up, growth, 5 repeats (+ retries)
    stream = SimStream(0.5, 3.0)
    assert blocked(stream, number=7, repeat=3) == pytest.approx([0.5] * 3, rel=1e-9)


def test_a_full_launch_queue_does_not_grow_the_spin():
    """A launch that waits for a full queue is no idle GPU: the spin stays bounded (an earlier
    revision grew it with every such wait, and one candidate ran into its 60 s timeout)."""
    stream = SimStream(20.0, 2.0, queue=16)
    out = blocked(stream)
    assert out == pytest.approx([20.0] * 5, rel=1e-9)  # GPU-bound: the queue never drains
    assert max(stream.spins) <= SPIN_MAX_US
    assert stream.host < 2e6  # well under two (simulated) seconds


def test_the_l2_flush_runs_before_each_repeat_and_outside_the_events():
    stream = SimStream(2.0, 5.0)
    flushes = []
    stream.flush = lambda nbytes: flushes.append(nbytes)
    assert blocked(stream, flush_bytes=1 << 20) == pytest.approx([2.0] * 5, rel=1e-9)
    assert flushes == [1 << 20] * 5
