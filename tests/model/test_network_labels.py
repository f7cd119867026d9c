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


def test_the_readmes_label_figures_come_from_the_committed_files(tmp_path):
    from dragon_model.label_report import label_speeds, summary
    from dragon_model.records import merged_records, read_measured

    with tarfile.open(CUDA / "records-networks.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    rows = label_speeds(
        merged_records([str(tmp_path / "pre-net")]), read_measured([str(CUDA / "labels-networks-h100.jsonl.xz")])
    )
    figures = summary(rows)
    assert (figures["workloads"], figures["with_dlight"], figures["label_is_dlight"]) == (506, 505, 117)
    assert figures["geomean_over_dlight"] == 1.172 and figures["median_over_dlight"] == 1.048
    assert figures["wins_by_source"] == {"dlight": 117, "cuda": 388, "cuda-tensorcore": 1}
    readme = (ROOT / "data" / "pretrain" / "README.md").read_text(encoding="utf-8")
    assert "**1.17x as fast as dlight**" in readme and "median 1.05x" in readme

    with gzip.open(ROOT / "data" / "tasks" / "tasks.jsonl.gz", "rt", encoding="utf-8") as f:
        split = {str(t["id"]): t["split"] for t in map(json.loads, f)}
    ids = [p.stem.rsplit("-", 1)[1] for p in (tmp_path / "pre-net" / "records").glob("*.json")]
    assert len(ids) == 708 and {split[i] for i in ids} == {"train"}
