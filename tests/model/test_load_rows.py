"""`data.load_rows` reads a corpus folder's JSON Lines, plain or xz-compressed (the committed llvm
fine-tuning rows), and names the file, line and column of a line that is not JSON."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from dragon_model.data import load_rows

ROOT = Path(__file__).resolve().parents[2]


def _rows():
    return load_rows(ROOT / "data" / "corpus" / "llvm", splits=["train"], target_kind="llvm")[:5]


def test_compressed_and_plain_rows_read_the_same(tmp_path):
    rows = _rows()
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "rows.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "xz" / "sft").mkdir(parents=True)
    with lzma.open(tmp_path / "xz" / "sft" / "rows.jsonl.xz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    assert load_rows(tmp_path / "xz") == load_rows(tmp_path / "plain") == rows
    assert load_rows(tmp_path / "xz" / "sft" / "rows.jsonl.xz", tasks=["improvement"]) == [
        r for r in rows if r["task"] == "improvement"
    ]


def test_a_line_that_is_not_json_is_named(tmp_path):
    rows = _rows()
    with lzma.open(tmp_path / "rows.jsonl.xz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(rows[0]) + "\n\n" + '{"id": 3,' + "\n")
    with pytest.raises(ValueError, match=r"rows\.jsonl\.xz:3:\d+: not JSON"):
        load_rows(tmp_path)
