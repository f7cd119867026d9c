"""The committed labels of the real networks' training tasks (data/pretrain/README.md): the
figures the README gives are what the label report computes from the committed files, and no
task of a held-out network is among them."""

from __future__ import annotations

import gzip
import json
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUDA = ROOT / "data" / "pretrain" / "cuda"
LLVM = ROOT / "data" / "pretrain" / "llvm"
README = ROOT / "data" / "pretrain" / "README.md"


def _figures(archive: Path, run: Path, *labels: Path) -> dict:
    """The label report's figures of a committed records archive (unpacked to RUN's parent) and its
    measured labels (one file or several)."""
    from dragon_model.label_report import label_speeds, summary
    from dragon_model.records import merged_records, read_measured

    with tarfile.open(archive) as tar:
        tar.extractall(run.parent, filter="data")
    return summary(label_speeds(merged_records([str(run)]), read_measured([str(p) for p in labels])))


def _splits_of(run: Path) -> tuple:
    """(how many records RUN holds, the set of the committed manifest's splits of their tasks)."""
    with gzip.open(ROOT / "data" / "tasks" / "tasks.jsonl.gz", "rt", encoding="utf-8") as f:
        split = {str(t["id"]): t["split"] for t in map(json.loads, f)}
    ids = [p.stem.rsplit("-", 1)[1] for p in (run / "records").glob("*.json")]
    return len(ids), {split[i] for i in ids}


def test_the_readmes_label_figures_come_from_the_committed_files(tmp_path):
    figures = _figures(CUDA / "records-networks.tar.xz", tmp_path / "pre-net", CUDA / "labels-networks-h100.jsonl.xz")
    assert (figures["workloads"], figures["with_dlight"], figures["label_is_dlight"]) == (506, 505, 117)
    assert figures["geomean_over_dlight"] == 1.172 and figures["median_over_dlight"] == 1.048
    assert figures["wins_by_source"] == {"dlight": 117, "cuda": 388, "cuda-tensorcore": 1}
    readme = README.read_text(encoding="utf-8")
    assert "**1.17x as fast as dlight**" in readme and "median 1.05x" in readme
    assert _splits_of(tmp_path / "pre-net") == (2823, {"train"})


def test_the_second_label_run_adds_its_measurements_to_the_first(tmp_path):
    """labels-networks-h100-2: 5,600 more candidates of the same records, measured in a later run;
    the README's figures are those of both files together."""
    figures = _figures(
        CUDA / "records-networks.tar.xz",
        tmp_path / "pre-net",
        CUDA / "labels-networks-h100.jsonl.xz",
        CUDA / "labels-networks-h100-2.jsonl.xz",
    )
    assert (figures["workloads"], figures["with_dlight"], figures["label_is_dlight"]) == (1460, 1456, 303)
    assert (figures["geomean_over_dlight"], figures["median_over_dlight"]) == (1.184, 1.039)
    readme = README.read_text(encoding="utf-8")
    assert "**1.18x as fast as dlight**" in readme and "median 1.04x" in readme


def test_rows_are_refused_for_a_record_of_a_held_out_networks_task(tmp_path, capsys):
    """Training rows come from the train split only: `records --out` refuses a run holding a record of
    a task the committed manifest holds out (a run resumed from an older tasks file once did)."""
    import pytest

    from dragon_model.held_out import held_out_records
    from dragon_model.records import main

    with gzip.open(ROOT / "data" / "tasks" / "tasks.jsonl.gz", "rt", encoding="utf-8") as f:
        first = {}
        for t in map(json.loads, f):
            first.setdefault(t["split"], t)
    run = tmp_path / "pre-net" / "records"
    run.mkdir(parents=True)
    for split in ("train", "test"):
        t = first[split]
        name = f"{t['name'][:80]}-{t['id']}"
        (run / f"{name}.json").write_text(json.dumps({"name": name, "params": {"task": str(t["id"])}, "scripts": []}))
    held = f"{first['test']['name'][:80]}-{first['test']['id']}"
    assert held_out_records([str(tmp_path / "pre-net")], ROOT / "data" / "tasks" / "tasks.jsonl.gz") == [held]
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "pre-net"), "--out", str(tmp_path / "rows")])
    assert exc.value.code == 2
    assert "1 record(s) of tasks outside the train split of" in capsys.readouterr().err
    assert not (tmp_path / "rows").exists()
    with pytest.raises(SystemExit):
        main([str(tmp_path / "pre-net"), "--out", str(tmp_path / "rows"), "--tasks", str(tmp_path / "none.jsonl")])
    assert "no such file, and 2 record(s) are of real networks' tasks" in capsys.readouterr().err


def test_the_llvm_labels_of_the_networks_come_from_the_committed_files(tmp_path):
    """data/pretrain/llvm/*-networks: the llvm design space's samples of the networks' training
    tasks, timed on a 2-core CPU against the program as written; the README's figures are the label
    report's, and every record is of a training task."""
    run = tmp_path / "pre-llvm-net"
    figures = _figures(LLVM / "records-cpu-networks.tar.xz", run, LLVM / "labels-cpu-networks.jsonl.xz")
    assert (figures["workloads"], figures["with_unscheduled"]) == (1327, 1323)
    assert figures["wins_by_source"] == {"llvm": 983, "unscheduled": 344}
    assert (figures["geomean_over_unscheduled"], figures["median_over_unscheduled"]) == (2.001, 1.864)
    readme = README.read_text(encoding="utf-8")
    assert "geometric mean **2.00x**, median 1.86x" in readme
    assert _splits_of(run) == (1598, {"train"})


def test_the_llvm_labels_for_this_machines_cpu_come_from_the_committed_files(tmp_path):
    """labels-cpu-networks-host: the same candidates built for the CPU that timed them ("mcpu")."""
    run = tmp_path / "pre-llvm-net"
    figures = _figures(LLVM / "records-cpu-networks.tar.xz", run, LLVM / "labels-cpu-networks-host.jsonl.xz")
    assert figures["workloads"] == figures["with_unscheduled"] == 1372
    assert figures["wins_by_source"] == {"llvm": 1001, "unscheduled": 371}
    assert (figures["geomean_over_unscheduled"], figures["median_over_unscheduled"]) == (2.587, 1.978)
    readme = README.read_text(encoding="utf-8")
    assert "geometric mean **2.59x**, median 1.98x" in readme
