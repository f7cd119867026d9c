"""The inputs of an evaluation: the `.tvmscript` workloads of a folder, their families, and
the existing `.dragon` scripts beside them (the improvement task); and a report's workloads written
again (`rebuilt_workload`, the one function here that builds through TVM).

Family of a workload: the `family` of its row in the folder's `manifest.jsonl` (written by
`dragon workloads`) when there is one, else its file name up to the first part that starts
with a digit (`c2d_0` -> `c2d`, `matmul_31x31x17` -> `matmul`).

A `.dragon` script belongs to the workload its header names (`workload "x.tvmscript"`,
relative to the script's folder); scripts without a header, or naming a file that is not
one of the folder's workloads, are reported and left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


class EvalInputError(ValueError):
    """The evaluation's inputs are unusable (no workloads, a malformed manifest)."""


@dataclass
class WorkloadEntry:
    name: str
    path: Path
    family: str
    params: dict = field(default_factory=dict)
    scripts: list = field(default_factory=list)  # existing .dragon scripts (Paths), sorted


def family_from_name(stem: str) -> str:
    parts = stem.split("_")
    kept = []
    for p in parts:
        if p[:1].isdigit():
            break
        kept.append(p)
    return "_".join(kept) or stem


def _manifest(folder: Path) -> dict:
    """{name: row} of the folder's manifest (`dragon_dsl.corpus.manifest`); none is fine: families
    then come from the file names."""
    from dragon_dsl.corpus.manifest import ManifestError, read_manifest

    try:
        rows = read_manifest(folder, fields=("name",), missing_ok=True, check_files=False)
    except ManifestError as exc:
        raise EvalInputError(str(exc)) from None
    return {str(row["name"]): row for row in rows}


_HEADER = re.compile(r'^\s*workload\s+"([^"]+)"', re.M)


def _script_workload(text: str) -> str | None:
    """The workload a script's header names (the parser's header directive; read without TVM)."""
    from dragon_dsl import check_text

    program, _ = check_text(text)
    if program is not None and getattr(program, "workload", None):
        return str(program.workload)
    m = _HEADER.search(text)
    return m.group(1) if m else None


def discover(folder, limit: int | None = None) -> tuple[list, list]:
    """(workloads sorted by name, problems as strings). Raises EvalInputError without workloads."""
    root = Path(folder)
    if not root.is_dir():
        raise EvalInputError(f"{root}: not a folder")
    files = sorted(root.glob("*.tvmscript"))
    if not files:
        raise EvalInputError(f"{root}: no .tvmscript workloads")
    manifest = _manifest(root)
    entries = {}
    for f in files:
        row = manifest.get(f.stem, {})
        entries[f.resolve()] = WorkloadEntry(
            f.stem, f, str(row.get("family") or family_from_name(f.stem)), dict(row.get("params") or {})
        )
    problems = []
    for script in sorted(root.glob("*.dragon")):
        named = _script_workload(script.read_text(encoding="utf-8"))
        if not named:
            problems.append(f"{script.name}: no workload in its header; not used")
            continue
        entry = entries.get((script.parent / named).resolve())
        if entry is None:
            problems.append(f"{script.name}: its workload {named!r} is not a .tvmscript of {root}; not used")
            continue
        entry.scripts.append(script)
    out = sorted(entries.values(), key=lambda e: e.name)
    return (out[:limit] if limit else out), problems


def rebuilt_workload(entry: dict, folder: Path) -> Path:
    """A report's workload entry (its `workloads` list: name, family, params) written again as
    FOLDER/NAME.tvmscript, rebuilt by the generator from its family and parameters (kept when the
    file is there already): reports name workload files of the machine that ran them."""
    from dragon_dsl.corpus.generator import WorkloadSpec
    from dragon_dsl.tvm.workload import workload_text

    path = folder / f"{entry['name']}.tvmscript"
    if not path.exists():
        params = entry["params"]
        if set(params) == {"task"}:  # a real network's task (`dragon workloads --tasks`): its text by id
            text = network_task_text(str(params["task"]))
        else:
            text = workload_text(WorkloadSpec(entry["family"], tuple(sorted(params.items()))).build())
        path.write_text(text, encoding="utf-8")
    return path


def network_task_text(task_id: str) -> str:
    """The TVMScript of a real network's task by its id (data/tasks/tasks.jsonl.gz); KeyError for an
    id the file does not hold."""
    from dragon_model.held_out import TASKS_FILE

    text = _task_texts(str(TASKS_FILE)).get(task_id)
    if text is None:
        raise KeyError(f"task {task_id}: not in {TASKS_FILE}")
    return text


@lru_cache(maxsize=1)
def _task_texts(path: str) -> dict:
    from dragon_dsl.corpus.networks.driver import read_tasks

    return {str(t["id"]): t["text"] for t in read_tasks(path)}
