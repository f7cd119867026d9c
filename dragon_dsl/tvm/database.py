"""MetaSchedule JSON databases -> workloads and traces, read with TVM's own JSONDatabase."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dragon_dsl.tvm.errors import tvm_message
from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics, tensor_intrin_names


class DatabaseError(ValueError):
    """A MetaSchedule database that cannot be read (missing file, bad JSON, TVM rejects a record)."""


@dataclass
class TunedRecord:
    workload_key: str  # a short stable name derived from the workload's structural hash
    module: object  # IRModule
    trace: list  # the raw on-disk trace JSON (Split's bools as 1/0)
    target: object  # dict
    mean_latency_us: float | None  # None when unmeasured or failed
    failed: bool = False  # MetaSchedule recorded a failed build or run for it


#: MetaSchedule records a failed candidate with run seconds of 1e10
FAILED_RUN_S = 1e9


def _json_lines(path: Path) -> list:
    """The JSON values of a JSON-lines file; DatabaseError with the line number for a bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatabaseError(f"{path}: cannot read: {exc.strerror or exc}") from None
    from dragon_dsl.language.files import json_lines

    try:
        return json_lines(text.splitlines(), str(path))
    except ValueError as exc:
        raise DatabaseError(str(exc)) from None


def _mean_us(run_secs) -> tuple:
    """(mean latency in us or None, failed) of a record's run seconds: None when unmeasured or when
    MetaSchedule marked a build or run failure."""
    secs = [float(s) for s in (run_secs or []) if s is not None]
    failed = any(s >= FAILED_RUN_S for s in secs)
    return (sum(secs) / len(secs) * 1e6 if secs and not failed else None), failed


def record_latencies(folder_or_records: str | Path) -> list[tuple[list, float | None]]:
    """(trace JSON as on disk, mean latency in us or None) of every tuning record of a JSONDatabase,
    in file order, read as plain JSON: no TVM (the evaluation picks its best valid record so)."""
    p = Path(folder_or_records)
    path = p / "database_tuning_record.json" if p.is_dir() else p
    return [(body[0], _mean_us(body[1])[0]) for _widx, body in _json_lines(path)]


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
    raw = _json_lines(records_path)
    workloads = _json_lines(workloads_path)
    names = set().union(*(tensor_intrin_names(body[0]) for _, body in raw if body))
    if names:
        # TVM's reader needs the intrinsics a record tensorizes with registered (wmma, mma...: seconds)
        register_tensor_intrinsics(names)
    try:
        db = ms.database.JSONDatabase(path_workload=str(workloads_path), path_tuning_record=str(records_path))
    except Exception as exc:  # TVM reports a record it cannot parse as its own error type
        raise DatabaseError(f"{records_path}: TVM could not read the database: {tvm_message(exc)}") from None
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
        mean, failed = _mean_us(run_secs)
        out.append(TunedRecord(f"workload_{whash[-8:]}", mod, trace, target, mean, failed))
    out.sort(key=lambda r: (r.workload_key, r.mean_latency_us if r.mean_latency_us is not None else float("inf")))
    return out
