"""Identities: a workload's text and structural hash, a trace's hash, a cache key.

The structural hash is TVM's (`tvm_ffi.structural_hash` of the IRModule), so two
spellings of the same workload share results; the trace hash is the sha256 of the
trace's canonical JSON (sorted keys, no spaces).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def trace_hash(trace: Any) -> str:
    return hashlib.sha256(canonical_json(trace).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Workload:
    """A workload as the engine passes it around: printed TVMScript plus its structural hash, and
    TVM's estimate of its floating-point operations (0.0: none; what a reference costs to run)."""

    text: str
    hash: str
    flops: float = 0.0

    @property
    def seed(self) -> int:
        """The verifier's base seed: derived from the structural hash, so it is the same everywhere."""
        return int(hashlib.sha256(self.hash.encode()).hexdigest()[:8], 16)


def load(source) -> Workload:
    """TVMScript text, a `.tvmscript` path or an IRModule -> Workload (raises WorkloadError)."""
    import tvm
    import tvm_ffi

    from dragon_dsl.tvm.workload import load_workload

    if isinstance(source, tvm.IRModule):
        mod = source
        text = mod.script()
    elif isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".tvmscript")):
        mod = load_workload(source)
        text = Path(source).read_text(encoding="utf-8")
    else:
        mod = load_workload(source)
        text = str(source)
    from dragon_dsl.tvm.workload import estimate_flops

    return Workload(
        text=text, hash=f"{tvm_ffi.structural_hash(mod) & 0xFFFFFFFFFFFFFFFF:016x}", flops=estimate_flops(mod)
    )
