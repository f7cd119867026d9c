"""MetaSchedule JSON databases -> workloads and traces, read with TVM's own JSONDatabase."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class TunedRecord:
    workload_key: str  # a short stable name derived from the workload's structural hash
    module: object  # IRModule
    trace: list  # the raw on-disk trace JSON (Split's bools as 1/0)
    target: object  # dict
    mean_latency_us: float | None


def _raw_records(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_database(folder_or_records: str | Path, workload_file: str | Path | None = None) -> list[TunedRecord]:
    """Records of a MetaSchedule JSONDatabase, best first within each workload.

    The traces are taken from `database_tuning_record.json` as written on disk, so
    importing keeps exactly what MetaSchedule stored; the workloads come from
    TVM's JSONDatabase reader.
    """
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    p = Path(folder_or_records)
    records_path = p / "database_tuning_record.json" if p.is_dir() else p
    workloads_path = Path(workload_file) if workload_file else records_path.with_name("database_workload.json")
    db = ms.database.JSONDatabase(path_workload=str(workloads_path), path_tuning_record=str(records_path))
    raw = _raw_records(records_path)
    workloads = [json.loads(line) for line in workloads_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    modules = {}
    for rec in db.get_all_tuning_records():
        modules[str(tvm_ffi.structural_hash(rec.workload.mod))] = rec.workload.mod
    out = []
    for widx, body in raw:
        trace, run_secs, target = body[0], body[1], body[2]
        whash = str(workloads[widx][0])
        mod = modules.get(whash)
        if mod is None:  # fall back: the only workload of a single-workload database
            mod = next(iter(modules.values()))
        secs = [float(s) for s in (run_secs or []) if s is not None]
        mean = sum(secs) / len(secs) * 1e6 if secs else None
        out.append(TunedRecord(f"workload_{whash[-8:]}", mod, trace, target, mean))
    out.sort(key=lambda r: (r.workload_key, r.mean_latency_us if r.mean_latency_us is not None else float("inf")))
    return out
