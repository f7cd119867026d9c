"""Training data never holds a task of a held-out network: the split manifest (data/tasks/splits.json,
applied in data/tasks/tasks.jsonl.gz) holds whole networks out, and `records --out` refuses rows of
any record of a task it does not put in the train split (`train_only`). The sampler keeps
its own runs to one split (`dragon_dsl.corpus.pretrain`); this is the second guard, where records
of several runs, carried between machines, become training rows."""

from __future__ import annotations

import json
from pathlib import Path

#: the real networks' tasks and their splits (data/tasks/README.md)
TASKS_FILE = Path(__file__).resolve().parent.parent / "data" / "tasks" / "tasks.jsonl.gz"


def held_out_records(pre_dirs: list, tasks_path) -> list:
    """The names of the records (of runs PRE_DIRS) of real networks' tasks (`params.task`) that the
    tasks file TASKS_PATH does not put in the train split, sorted; a ValueError when there are such
    records and no tasks file to check them against."""
    ids = {}
    for d in pre_dirs:
        for p in (Path(d) / "records").glob("*.json"):
            task = json.loads(p.read_text(encoding="utf-8")).get("params", {}).get("task")
            if task is not None:
                ids[p.stem] = str(task)
    if not ids:
        return []
    if not Path(tasks_path).exists():
        raise ValueError(f"--tasks {tasks_path}: no such file, and {len(ids)} record(s) are of real networks' tasks")
    from dragon_dsl.language.files import read_json_lines

    train = {str(t["id"]) for t in read_json_lines(tasks_path) if t.get("split") == "train"}
    return sorted(name for name, task in ids.items() if task not in train)


def train_only(pre_dirs: list, tasks_path) -> None:
    """Raises ValueError naming the first record of PRE_DIRS that `held_out_records` finds."""
    held = held_out_records(pre_dirs, tasks_path)
    if held:
        raise ValueError(
            f"{len(held)} record(s) of tasks outside the train split of {tasks_path} (first: {held[0]}); "
            "training rows come from the train split only"
        )
