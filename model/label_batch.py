"""The labelling batch: every pretraining record's scripts (and its baselines) as candidates of a
`dragon measure` batch, and the measured results read back into each record's label, the fastest
verified script. `records` builds the training rows from these labels and re-exports every name here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def candidate_id(name: str, text: str) -> str:
    """The id of one record script in a labelling batch (and its results): stable across merges."""
    import hashlib

    return f"{name}|{hashlib.sha256(text.encode()).hexdigest()[:16]}"


#: the sources of a labelling batch's baselines: always measured, whatever --per-space keeps
BASELINES = ("dlight", "unscheduled")


def record_scripts(record: dict) -> list:
    """(source, text) of every script of a record: its samples, then dlight's."""
    out = [(s["space"], s["text"]) for s in record["scripts"]]
    if record.get("dlight"):
        out.append(("dlight", record["dlight"]["text"]))
    return out


def label_candidates(record: dict) -> list:
    """(source, text) of what a labelling batch measures of a record: `record_scripts`, and on a CPU
    target the program as written too (the record's header alone, source "unscheduled"): there it
    is the floor a label must beat, as dlight's script is on a GPU; a workload where no sample beats
    it (a quarter of the llvm corpus' best-of-8 answers do not) gets no fine-tuning row."""
    from dragon_dsl.engine import resolve_target

    out = record_scripts(record)
    if out and not resolve_target(record["target"]).is_gpu:
        out.append(("unscheduled", out[0][1].split("\n\n", 1)[0] + "\n\n"))
    return out


def write_batch(
    records: list,
    path,
    max_flops: float | None = None,
    min_flops: float | None = None,
    require_space: str | None = None,
    per_space: int | None = None,
    skip=frozenset(),
    max_bytes: float | None = None,
    families: Iterable | None = None,
    jobs: int = 1,
) -> int:
    """A `dragon measure` batch of every record's scripts (workloads as .tvmscript files beside
    it), smallest workloads first. With MAX_FLOPS, larger workloads are left out: the verifier's
    reference runs the unscheduled program on a CPU, minutes for the largest (4e11 FLOPs); with
    MIN_FLOPS, smaller ones (launch-bound kernels, where every schedule measures alike); with
    MAX_BYTES, those whose parameter buffers take more bytes (the reference keeps every input set
    and output: a batch of 255 GEMMs up to 2e10 FLOPs filled a 64 GB disk with them). With
    REQUIRE_SPACE, only workloads with a script of that design space (e.g. `cuda-tensorcore`: the
    ones where tensor cores may win); PER_SPACE keeps at most that many scripts of each space per
    workload (the baselines always: dlight's script; on a CPU the program as written,
    `label_candidates`). With FAMILIES, only the records of those families. Candidates whose id is
    in SKIP (measured before) are left out. JOBS processes parse the workloads (`workload_size`:
    3,384 records took 5 minutes in one)."""
    from dragon_dsl.language.files import write_text
    from dragon_model.data import spawned_map

    path = Path(path)
    wl_dir = path.parent / "workloads"
    wl_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    if require_space:
        records = [r for r in records if any(s["space"] == require_space for s in r["scripts"])]
    if families is not None:
        families = set(families)
        records = [r for r in records if r.get("family") in families]
    sizes = spawned_map(workload_size, [r["workload"] for r in records], jobs, parallel_from=2)
    sized = sorted(((f, r["name"], r, b) for (f, b), r in zip(sizes, records)), key=lambda x: x[:2])
    for flops, _name, r, nbytes in sized:
        if (max_flops is not None and flops > max_flops) or (min_flops is not None and flops < min_flops):
            continue
        if max_bytes is not None and nbytes > max_bytes:
            continue
        kept: dict = {}
        mine = []
        for source, text in label_candidates(r):
            kept[source] = kept.get(source, 0) + 1
            cid = candidate_id(r["name"], text)
            if (per_space is None or source in BASELINES or kept[source] <= per_space) and cid not in skip:
                mine.append(json.dumps({"id": cid, "workload": f"workloads/{r['name']}.tvmscript", "script": text}))
        if mine:
            write_text(wl_dir / f"{r['name']}.tvmscript", r["workload"])
            lines += mine
    write_text(path, "".join(x + "\n" for x in lines))
    return len(lines)


def workload_size(text: str) -> tuple:
    """(FLOPs, bytes of parameter buffers) of a workload's TVMScript (no FLOPs known: 0.0)."""
    from dragon_dsl.tvm.workload import estimate_flops, load_workload, param_bytes

    mod = load_workload(text)
    return float(estimate_flops(mod) or 0.0), param_bytes(mod)


def read_measured(paths: Iterable) -> dict:
    """id -> latency in microseconds (None: measured, not verified) from `dragon measure` results
    (a .xz file is read compressed, as the shipped labels are)."""
    import lzma

    out: dict = {}
    for p in paths:
        p = Path(p)
        text = lzma.decompress(p.read_bytes()).decode("utf-8") if p.suffix == ".xz" else p.read_text(encoding="utf-8")
        for line in text.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            key = str(row.get("id"))
            lat = row.get("latency_us") if row.get("status") == "ok" else None
            if lat is not None and out.get(key) is not None:
                lat = min(lat, out[key])  # measured twice: the faster verified time
            if lat is not None or key not in out:
                out[key] = lat
    return out


def measured_label(record: dict, measured: dict) -> tuple:
    """(label, ranked): the record's fastest verified script as {"body", "source", "latency_us",
    "dlight_us"}, or None when none of its scripts was measured; and the other measured scripts'
    texts, slowest first (failures first of all: they lose to any verified script)."""
    from dragon_model.data import body_of_text

    ids = [(candidate_id(record["name"], t), src, t) for src, t in label_candidates(record)]
    seen = [(measured[i], src, t) for i, src, t in ids if i in measured]
    ok = sorted((lat, src, t) for lat, src, t in seen if lat is not None)
    if not ok:
        return None, []
    lat, src, text = ok[0]
    dl = next((x for x, s, _t in seen if s == "dlight"), None)
    label = {
        "body": body_of_text(text),
        "source": src,
        "latency_us": lat,
        "dlight_us": dl,
        "unscheduled_us": next((x for x, s, _t in seen if s == "unscheduled"), None),
    }
    ranked = [t for _l, _s, t in seen if _l is None] + [t for _l, _s, t in reversed(ok[1:])]
    return label, ranked
