"""The evaluation's shared files: JSON objects that several shards of one evaluation (`--shard`)
update at once, under an exclusive lock, and the wall times of method runs kept across reruns.

When the engine answers from its results cache the verify wall time is not a measurement, so
the time recorded when it was measured is read back from `WallTimes` (a JSON file beside the
cache).
"""

from __future__ import annotations

import json
from pathlib import Path

from dragon_dsl.language.files import write_json


def update_json(path: Path, updates: dict) -> dict:
    """Merge `updates` into the JSON object stored at `path`, under an exclusive lock, and return the
    merged object: several shards of one evaluation (`--shard`) write the same cache files."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data.update(updates)
        write_json(path, data, sort_keys=True)
    return data


class WallTimes:
    """Wall times of method runs, by key, kept across reruns (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.data = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}

    def resolve(self, key: str, measured_s: float, fresh: bool) -> float:
        """The wall time of a run: the one just measured when it was real work, else the stored one."""
        if fresh or key not in self.data:
            self.data = update_json(self.path, {key: measured_s})
        return self.data[key]
