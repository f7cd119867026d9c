"""An evaluation's results files: their schema (SCHEMA), writing one (`write_results`), what each
method measured (`methods_info`), and the results of an evaluation's shards merged into one
(`merge_shards`) or counted (`shard_count`)."""

from __future__ import annotations

import json
from pathlib import Path

from dragon_dsl.eval.metrics import summarize
from dragon_dsl.language.files import write_json

SCHEMA = 1


SHARD_FILE = r"results-shard-(\d+)-of-(\d+)\.json"


def merge_shards(out_dir, command: tuple = ()) -> dict:
    """The results dict of every shard file in OUT_DIR (`results-shard-I-of-N.json`), merged without
    measuring anything: for a report while measurements are still deferred, or when the machine that
    measured is gone. `deferred` and `missing_shards` say what the figures do not yet include; the
    metrics are computed again over the merged rows. Raises EvalInputError for no shard files, shard
    files of different shard counts, or a file that is not a results file."""
    from dragon_dsl.eval.discover import EvalInputError

    out_dir = Path(out_dir)
    found = _shard_files(out_dir)
    if not found:
        raise EvalInputError(f"{out_dir}: no shard results (results-shard-I-of-N.json) to merge")
    if len(found) > 1:
        raise EvalInputError(
            f"{out_dir}: shard results of {' and '.join(str(n) for n in sorted(found))} shards: "
            "remove the stale ones, then merge again"
        )
    ((n, files),) = found.items()
    parts = []
    for _i, path in sorted(files.items()):
        try:
            part = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvalInputError(f"{path}: not a results file: {exc}") from None
        if not isinstance(part, dict) or part.get("schema") != SCHEMA or not isinstance(part.get("measurements"), list):
            raise EvalInputError(f"{path}: not a results file of schema {SCHEMA}")
        parts.append(part)
    rows = [row for part in parts for row in part["measurements"]]
    first = parts[0]
    results = {
        **first,
        "command": _without_shard_options(first["command"]),
        "merge_command": list(command),
        "merged_from": [files[i].name for i in sorted(files)],
        "missing_shards": [i for i in range(n) if i not in files],
        "settings": {**first["settings"], "shard": None, "stop_after_s": None},
        "startup_s": max(part["startup_s"] for part in parts),
        "wall_s": max(part["wall_s"] for part in parts),
        "cache": {
            "path": first["cache"]["path"],
            "rows_before": min(part["cache"]["rows_before"] for part in parts),
            "rows_after": max(part["cache"]["rows_after"] for part in parts),
        },
        "problems": sorted({p for part in parts for p in part["problems"]}),
        "methods": methods_info(rows),
        "workloads": sorted((w for part in parts for w in part["workloads"]), key=lambda w: w["name"]),
        "measurements": rows,
        "deferred": [d for part in parts for d in part["deferred"]],
        "shards": n,
    }
    results["metrics"] = summarize(results)
    return results


def _without_shard_options(command: list) -> list:
    """A shard's command as the one run without --shard and --stop-after (the report's command)."""
    out, skip = [], False
    for word in command:
        if skip:
            skip = False
        elif word in ("--shard", "--stop-after"):
            skip = True
        else:
            out.append(word)
    return out


def _shard_files(out_dir: Path) -> dict:
    """{shard count n: {shard i: path}} of the `results-shard-i-of-n.json` files in OUT_DIR."""
    import re

    found: dict = {}
    for path in out_dir.glob("results-shard-*-of-*.json"):
        if mt := re.fullmatch(SHARD_FILE, path.name):
            found.setdefault(int(mt.group(2)), {})[int(mt.group(1))] = path
    return found


def shard_count(out_dir: Path) -> int | None:
    """How many shard processes measured into OUT_DIR (from their results files), None for none."""
    return max(_shard_files(out_dir), default=None)


def methods_info(rows: list) -> dict:
    """Per method: measured on how many tasks, and why it was not where it was not."""
    info: dict = {}
    for r in rows:
        entry = info.setdefault(r["method"], {"measured": 0, "not_available": 0, "not_applicable": 0, "reasons": []})
        entry[r["status"]] += 1
        if r["status"] != "measured" and r["reason"] and r["reason"] not in entry["reasons"]:
            entry["reasons"].append(r["reason"])
    return info


def write_results(results: dict, out_dir, name: str = "results.json") -> Path:
    return write_json(Path(out_dir) / name, results, default=str)
