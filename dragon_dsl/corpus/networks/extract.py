"""Extraction of one network: every variant built on the meta device, exported with `torch.export`, cut
into fused TensorIR tasks by the bridge (`dragon_dsl.tvm.relax_tasks`), deduplicated by structural hash.

    record = extract_network(NETWORKS["llama3.2-1b"])

The record holds, per variant, its time, task count, skipped functions and any error (a variant that
torch.export or TVM refuses is recorded, not fatal), and per distinct task its id (structural hash),
fused name, dtypes, FLOPs, workload text and occurrences (variant, number of calls in `main`).
"""

from __future__ import annotations

import time
import traceback


def export_variant(network, variant):
    """The `torch.export` program of NETWORK in VARIANT (built on the meta device: no weights)."""
    import torch

    if network.builder == "hf":
        from dragon_dsl.corpus.networks.hf_models import build
    else:
        from dragon_dsl.corpus.networks.convnets import build
    module, args = build(network, variant)
    with torch.no_grad():
        return torch.export.export(module, args, strict=False)


def extract_network(network, *, log=None) -> dict:
    """The record of NETWORK's extraction (see the module docstring)."""
    started = time.monotonic()
    tasks: dict = {}
    variants = []
    for variant in network.variants:
        variants.append(_extract_variant(network, variant, tasks))
        if log:
            v = variants[-1]
            status = f"error at {v['stage']}: {v['error']}" if v["error"] else f"{v['tasks']} tasks"
            log(f"{network.name} {variant.name}: {status} ({v['seconds']:.1f} s)")
    return {
        "network": network.name,
        "family": network.family,
        "kind": network.kind,
        "seconds": round(time.monotonic() - started, 2),
        "variants": variants,
        "tasks": list(tasks.values()),
    }


def _extract_variant(network, variant, tasks: dict) -> dict:
    from dragon_dsl.tvm.relax_tasks import fused_tasks

    started = time.monotonic()
    entry = {
        "variant": variant.name,
        "dtype": variant.dtype,
        "quant": variant.quant,
        "tasks": 0,
        "skipped": {},
        "error": None,
        "stage": None,
    }
    stage = "export"
    try:
        program = export_variant(network, variant)
        stage = "relax"
        found, skipped = fused_tasks(program)
    except Exception as exc:  # a variant the exporter or TVM refuses is a finding, not a crash
        entry["error"] = _one_line(exc)
        entry["stage"] = stage
        entry["trace"] = traceback.format_exc(limit=-8)
    else:
        entry["tasks"], entry["skipped"] = len(found), skipped
        for task in found:
            _add(tasks, task, variant.name)
    entry["seconds"] = round(time.monotonic() - started, 2)
    return entry


def _add(tasks: dict, task, variant: str) -> None:
    if task.hash not in tasks:
        tasks[task.hash] = {
            "id": task.hash,
            "name": task.name,
            "dtype": task.dtype,
            "dtypes": task.dtypes,
            "flops": task.flops,
            "text": task.text,
            "occurrences": [],
        }
    tasks[task.hash]["occurrences"].append({"variant": variant, "count": task.count})


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    message = lines[-1] if lines else ""
    return f"{type(exc).__name__}: {message}"[:500]
