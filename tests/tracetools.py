"""Helpers for tests over real TVM traces: loading fixtures and comparing traces.

Index maps inside traces are JSON-graph strings that carry TVM's version and
source spans; two traces are equal when everything else is equal as plain JSON
with types (1 is not True, 1 is not 1.0) and the index maps are structurally equal.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from conftest import DATA, read_jsonl

from dragon_dsl.language.codec.equal import is_graph, traces_equal  # noqa: F401  (the tests' names for them)


def tvm_graphs_equal(a: str, b: str) -> bool:
    """TVM's own verdict on two index-map graphs."""
    import tvm
    import tvm_ffi

    return bool(tvm_ffi.structural_equal(tvm.ir.load_json(a), tvm.ir.load_json(b), map_free_vars=True))


def graphs(trace):
    if is_graph(trace):
        yield trace
    elif isinstance(trace, list):
        for x in trace:
            yield from graphs(x)


def fixture_lines() -> list[dict]:
    out = []
    for path in sorted((DATA / "traces").glob("*.jsonl*")):
        out += read_jsonl(path)
    return out


def tuning_records() -> list[dict]:
    """Raw lines of MetaSchedule's database_tuning_record.json (Split's bools as 1/0)."""
    out = []
    for db in sorted((DATA / "tuning").glob("*/database_tuning_record.json")):
        for line in db.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out.append(
                    {
                        "workload": db.parent.name,
                        "db": db.parent,
                        "trace": rec[1][0],
                        "target": {"kind": "llvm", "num-cores": 2},
                        "source": "tuned",
                    }
                )
    return out


@cache
def workload_module(name: str):
    from dragon_dsl.tvm.workload import load_workload

    return load_workload(DATA / "workloads" / f"{name}.tvmscript")


@cache
def database_module(db_dir: Path):
    """The workload a tuning database was tuned on (one per database here)."""
    from tvm.s_tir import meta_schedule as ms

    db = ms.database.JSONDatabase(
        path_workload=str(db_dir / "database_workload.json"),
        path_tuning_record=str(db_dir / "database_tuning_record.json"),
    )
    return db.get_all_tuning_records()[0].workload.mod


_INTRIN_LOADED = []


def ensure_tensor_intrin():
    if not _INTRIN_LOADED:
        from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics

        register_tensor_intrinsics()  # TVM's import of its wmma/mma/dot intrinsics, in seconds (intrinsics.py)

        _INTRIN_LOADED.append(True)
