"""A stand-in measurement engine with the real one's API: every candidate passes; its latency is
derived from the trace (deterministic, 10 to 99 us), the unscheduled baseline takes 1000 us, and a
schedule annotated with the key `stub.slow` takes 500 us (a current schedule that every rewrite
beats)."""

from __future__ import annotations

import json
import os
import time
import zlib
from dataclasses import dataclass, field


@dataclass
class Result:
    status: str = "ok"
    message: str = ""
    latency_us: float | None = None
    latencies_us: list = field(default_factory=list)


class Engine:
    instances = 0

    def __init__(self, target, device: str = "local", workers=None, timeout_s: float = 60.0, cache=None):
        self.target, self.device = target, device
        Engine.instances += 1

    def measure(self, workload, traces, level: str = "time", seeds: int = 3, **timing):
        delay = float(os.environ.get("STUB_ENGINE_DELAY", "0"))
        out = []
        for t in traces:
            time.sleep(delay)
            text = json.dumps(t, sort_keys=True)
            lat = 500.0 if '"stub.slow"' in text else 10.0 + zlib.crc32(text.encode()) % 90
            out.append(Result("ok", "", lat if level == "time" else None, [lat] * 3 if level == "time" else []))
        return out

    def baseline(self, workload, kind: str = "unscheduled", level: str = "time", **timing):
        if kind != "unscheduled":
            raise ValueError("the dlight baseline needs a GPU target")
        return Result("ok", "", 1000.0, [1000.0])

    def close(self):
        pass
