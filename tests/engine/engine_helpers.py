"""Shared data for the engine tests: fixture traces and hand-made candidates.

The bad candidates are real TVM schedules, not test hooks in the engine:
  * `float16_accumulator` - matmul_64 with `cache_write` then `unsafe_set_dtype(float16)`
    on the block that accumulates: replays, builds, computes a wrong result;
  * `partial_write` - data/partial_write.tvmscript, where the producer writes B[i] and
    B[i + 32]; `unsafe_hide_buffer_access` hides the second write, so
    `reverse_compute_at` gives the consumer only the loop of the first: C[32:64]
    is never written;
  * `endless_loop` - data/hang_loop.tvmscript counts an int32 to 40000 in a while
    loop; `unsafe_set_dtype(int16)` makes the counter wrap, so the generated
    code loops forever (LLVM keeps the loop);
  * `wild_read` - data/oob_read.tvmscript adds 100 to an int32 400 times and reads
    A[(sum - 40000) * 30000 + j], i.e. A[j]; with the sum in int16 it wraps to
    -25536 and the read lands ~8 GB before A: a segmentation fault;
  * `too_many_threads` - matmul_64 fused and split by 2048 onto threadIdx.x (the
    H100 tag allows 1024 threads per block).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "tests" / "data" / "workloads"
TRACES = ROOT / "tests" / "data" / "traces"
DATA = Path(__file__).resolve().parent / "data"
LLVM = {"kind": "llvm", "num-cores": 2}
H100 = "nvidia/nvidia-h100"


def workload(name: str) -> str:
    path = DATA / f"{name}.tvmscript"
    return str(path if path.exists() else WORKLOADS / f"{name}.tvmscript")


@cache
def _lines(source: str) -> tuple:
    with open(TRACES / f"{source}.jsonl", encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def fixture_traces(name: str, target, source: str = "sampled", limit: int = 2) -> list:
    return [rec["trace"] for rec in _lines(source) if rec["workload"] == name and rec["target"] == target][:limit]


def _schedule(name: str, edit) -> list:
    from tvm import s_tir

    from dragon_dsl.tvm.trace import trace_json
    from dragon_dsl.tvm.workload import load_workload

    sch = s_tir.Schedule(load_workload(workload(name)))
    edit(sch)
    return trace_json(sch)


def float16_accumulator() -> list:
    def edit(sch):
        block = sch.get_sblock("C")
        sch.cache_write(block, 0, "global")
        sch.unsafe_set_dtype(block, 0, "float16")

    return _schedule("matmul_64", edit)


def partial_write() -> list:
    def edit(sch):
        producer, consumer = sch.get_sblock("P"), sch.get_sblock("C")
        sch.unsafe_hide_buffer_access(producer, "write", [1])
        (loop,) = sch.get_loops(producer)
        sch.reverse_compute_at(consumer, loop)

    return _schedule("partial_write", edit)


def endless_loop() -> list:
    return _schedule("hang_loop", lambda sch: sch.unsafe_set_dtype(sch.get_sblock("count"), 0, "int16"))


def wild_read() -> list:
    return _schedule("oob_read", lambda sch: sch.unsafe_set_dtype(sch.get_sblock("offset"), 0, "int16"))


def plain_schedule(name: str, block: str) -> list:
    """A trivially correct schedule: the outer loop of `block` split by 2."""

    def edit(sch):
        sch.split(sch.get_loops(sch.get_sblock(block))[0], [None, 2])

    return _schedule(name, edit)


def too_many_threads() -> list:
    def edit(sch):
        block = sch.get_sblock("C")
        i, j, _ = sch.get_loops(block)
        outer, inner = sch.split(sch.fuse(i, j), [None, 2048])
        sch.bind(outer, "blockIdx.x")
        sch.bind(inner, "threadIdx.x")

    return _schedule("matmul_64", edit)


MISSING_BLOCK = [[["GetSBlock", [], ["no_such_block", "main"], ["b0"]]], []]
