"""A workload folder's `manifest.jsonl`: one JSON row per workload (`name`, `family`, `params`,
`hash`), written by the workload generator (`dragon workloads`, `corpus/generator.py`) and read
here for the search driver and the evaluation.

    rows = read_manifest("workloads/")                      # every field, every .tvmscript there
    rows = read_manifest(folder, fields=("name",), missing_ok=True, check_files=False)  # lenient
"""

from __future__ import annotations

import json
from pathlib import Path

FIELDS = ("name", "family", "params", "hash")


class ManifestError(ValueError):
    """The manifest is missing or a row of it is unusable (the message names file and line)."""


def read_manifest(folder, *, fields=FIELDS, missing_ok: bool = False, check_files: bool = True) -> list[dict]:
    """The rows of `folder/manifest.jsonl`, in order, checked: JSON objects with `fields`, a name
    that is a plain file name, each listed once and (`check_files`) with its `.tvmscript` beside
    it. `missing_ok`: a folder without a manifest has no rows."""
    folder = Path(folder)
    path = folder / "manifest.jsonl"
    if not path.is_file():
        if missing_ok:
            return []
        raise ManifestError(f"{folder}: no manifest.jsonl (make one with `dragon workloads -o {folder}`)")
    rows, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{path}:{n}: not JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise ManifestError(f"{path}:{n}: not a manifest row (a JSON object)")
        missing = [k for k in fields if k not in row]
        if missing:
            raise ManifestError(f"{path}:{n}: missing {', '.join(missing)}")
        name = str(row["name"])
        if not name or "/" in name or name.startswith("."):
            raise ManifestError(f"{path}:{n}: bad workload name {name!r}")
        if name in seen:
            raise ManifestError(f"{path}:{n}: workload {name!r} listed twice")
        if check_files and not (folder / f"{name}.tvmscript").is_file():
            raise ManifestError(f"{path}:{n}: {name}.tvmscript is missing")
        seen.add(name)
        rows.append(row)
    return rows
