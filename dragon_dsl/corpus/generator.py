"""The workload generator: distinct `.tvmscript` workloads drawn from operator families.

    specs = generate(5000, seed=0)             # deterministic; no TVM needed
    written = write(specs, "out/")             # builds, deduplicates by structural hash, writes files

A spec is a family and its parameters; its name is derived from them. Generation
draws specs until `count` distinct ones exist (or the draws run out); writing
builds each with TVM's te, prints and parses it once (stable names), and drops a
workload whose structural hash was already written. `manifest.jsonl` records
name, family, parameters and hash of every file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dragon_dsl.corpus.families import ALL_FAMILIES, FAMILIES
from dragon_dsl.corpus.manifest import read_manifest


@dataclass(frozen=True)
class WorkloadSpec:
    family: str
    params: tuple  # sorted (key, value) pairs

    @property
    def name(self) -> str:
        parts = [self.family] + [f"{k}{v}" for k, v in self.params]
        return "_".join(str(p).replace("float", "f").replace("-", "") for p in parts)

    def build(self):
        """The IRModule (function `main`), printed and parsed once so that names are stable."""
        from dragon_dsl.tvm.workload import module_of

        return module_of(ALL_FAMILIES[self.family].build(**dict(self.params)))


def generate(count: int, seed: int = 0, families: Iterable[str] | None = None, max_draws: int | None = None) -> list:
    """`count` distinct specs, spread round-robin over the families (deterministic for a seed)."""
    names = sorted(families or FAMILIES)
    unknown = [n for n in names if n not in ALL_FAMILIES]
    if unknown:
        raise ValueError(f"unknown families: {', '.join(unknown)}; known: {', '.join(sorted(ALL_FAMILIES))}")
    rng = random.Random(seed)
    seen: set = set()
    out: list = []
    draws = 0
    limit = max_draws or count * 50
    while len(out) < count and draws < limit:
        family = names[draws % len(names)]
        draws += 1
        spec = WorkloadSpec(family, tuple(sorted(ALL_FAMILIES[family].sample(rng).items())))
        if spec not in seen:
            seen.add(spec)
            out.append(spec)
    return out


def write(
    specs: Iterable[WorkloadSpec], out_dir: str | Path, max_flops: float | None = None, max_bytes: float | None = None
) -> list[dict]:
    """Build and write each distinct workload; returns the manifest rows written.

    `max_flops` leaves out workloads whose TVM-estimated floating-point work is larger, and
    `max_bytes` those whose parameter buffers take more bytes in all (the verifier runs the
    unscheduled program on several input sets as its reference: a CPU corpus wants it fast
    and small)."""
    from dragon_dsl.tvm.workload import estimate_flops, param_bytes, structural_hash

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "manifest.jsonl"
    # resuming: keep what is there
    hashes = {row["hash"] for row in read_manifest(out, fields=("name", "hash"), missing_ok=True, check_files=False)}
    rows = []
    with manifest.open("a", encoding="utf-8") as f:
        for spec in specs:
            mod = spec.build()
            h = structural_hash(mod)
            if h in hashes:
                continue
            flops = estimate_flops(mod, strict=True)
            if max_flops is not None and flops > max_flops:
                continue
            nbytes = param_bytes(mod)
            if max_bytes is not None and nbytes > max_bytes:
                continue
            hashes.add(h)
            (out / f"{spec.name}.tvmscript").write_text(mod.script(), encoding="utf-8")
            row = {
                "name": spec.name,
                "family": spec.family,
                "params": dict(spec.params),
                "hash": h,
                "flops": flops,
                "bytes": nbytes,
            }
            f.write(json.dumps(row) + "\n")
            f.flush()
            rows.append(row)
    return rows
