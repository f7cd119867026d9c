"""The extraction run over the zoo: resumable, one record file per network, then one merged task file.

    run("out/", ["llama3.2-1b", "resnet50"])   # out/networks/NAME.json, each written atomically
    merge("out/")                               # out/tasks.jsonl: one line per distinct task

A network is done exactly when its record file exists; a rerun skips it, so a killed run resumes
where it stopped. With `isolate`, each network runs in its own Python process: a crash or the memory
of one network ends with it, and the run goes on (the network stays undone, to be tried again).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from dragon_dsl.corpus.networks.registry import lookup
from dragon_dsl.corpus.networks.zoo import NETWORKS, full_run
from dragon_dsl.language.files import stray_temporaries, write_json, write_text

RECORDS = "networks"
TASKS = "tasks.jsonl"


def record_path(out, name: str) -> Path:
    return Path(out) / RECORDS / f"{name}.json"


def run(out, names=None, *, isolate: bool = False, retry_failed: bool = False, log=print) -> dict:
    """Extract every named network (default: the full run) not yet done under OUT; with RETRY_FAILED,
    a network one of whose variants failed is extracted again too. Returns
    {"done": [...], "skipped": [...], "failed": {name: reason}} for this call."""
    networks = lookup(NETWORKS, names) if names else full_run()
    folder = Path(out) / RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    for stray in stray_temporaries(folder):
        stray.unlink(missing_ok=True)
    summary: dict = {"done": [], "skipped": [], "failed": {}}
    for network in networks:
        path = record_path(out, network.name)
        if path.exists() and not (retry_failed and _has_failures(path)):
            summary["skipped"].append(network.name)
            continue
        started = time.monotonic()
        failure = _run_isolated(out, network.name, retry_failed) if isolate else _run_here(network, path, log)
        if failure:
            summary["failed"][network.name] = failure
            log(f"{network.name}: FAILED ({failure})")
        else:
            summary["done"].append(network.name)
            log(f"{network.name}: done in {time.monotonic() - started:.1f} s")
    return summary


def _has_failures(path: Path) -> bool:
    return any(v["error"] for v in json.loads(path.read_text(encoding="utf-8"))["variants"])


def _run_here(network, path: Path, log) -> str:
    from dragon_dsl.corpus.networks.extract import extract_network

    record = extract_network(network, log=log)
    write_json(path, record, indent=None)
    return ""


def _run_isolated(out, name: str, retry_failed: bool) -> str:
    command = [
        sys.executable,
        "-m",
        "dragon_dsl.corpus.networks",
        "--out",
        str(out),
        "--networks",
        name,
        "--in-process",
        "--no-merge",
        *(["--retry-failed"] if retry_failed else []),
    ]
    result = subprocess.run(command, check=False)
    if result.returncode != 0:
        return f"exit status {result.returncode}"
    return "" if record_path(out, name).exists() else "no record written"


def read_records(out) -> list:
    """Every network record under OUT, by network name."""
    folder = Path(out) / RECORDS
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def merge(out, split_of: dict | None = None) -> Path:
    """OUT/tasks.jsonl from every record: one line per distinct task id, sorted by id, with the networks
    and variants it occurs in, its total call count and every fused name it was given; with SPLIT_OF
    ({network: split}, a manifest), each task's split too (`splits.assign`)."""
    merged: dict = {}
    for record in read_records(out):
        for task in record["tasks"]:
            entry = merged.setdefault(
                task["id"],
                {
                    "id": task["id"],
                    "name": task["name"],
                    "names": [],
                    "networks": [],
                    "occurrences": [],
                    "count": 0,
                    "dtype": task["dtype"],
                    "dtypes": task["dtypes"],
                    "flops": task["flops"],
                    "text": task["text"],
                },
            )
            if task["name"] not in entry["names"]:
                entry["names"].append(task["name"])
            if record["network"] not in entry["networks"]:
                entry["networks"].append(record["network"])
            for occ in task["occurrences"]:
                entry["occurrences"].append({"network": record["network"], **occ})
                entry["count"] += occ["count"]
    for entry in merged.values():
        entry["networks"].sort()
    if split_of is not None:
        from dragon_dsl.corpus.networks.splits import assign

        for task_id, split in assign(merged.values(), split_of).items():
            merged[task_id]["split"] = split
    lines = [json.dumps(merged[key], sort_keys=False) for key in sorted(merged)]
    return write_text(Path(out) / TASKS, "\n".join(lines))


def read_tasks(path) -> list:
    """The tasks of a merged tasks.jsonl (gzipped when its name ends in .gz); a line that is not
    JSON is a ValueError naming the file, line and column."""
    from dragon_dsl.language.files import read_json_lines

    return read_json_lines(path)


def summary_table(out) -> str:
    """One line per finished network (seconds, distinct tasks, failed variants), then the totals."""
    rows, ids, seconds = [], set(), 0.0
    records = read_records(out)
    for record in records:
        failed = [v["variant"] for v in record["variants"] if v["error"]]
        ids |= {t["id"] for t in record["tasks"]}
        seconds += record["seconds"]
        rows.append(
            f"{record['network']:<22} {record['seconds']:>8.1f} s  {len(record['tasks']):>4} tasks"
            + (f"  failed: {', '.join(failed)}" if failed else "")
        )
    rows.append(f"{len(records)} networks, {len(ids)} distinct tasks, {seconds:.0f} s")
    return "\n".join(rows)
