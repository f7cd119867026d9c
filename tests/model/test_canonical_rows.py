"""Rows renamed ahead of training (`renaming.canonical_rows`, `python -m dragon_model.renaming`): a
machine without TVM trains under `--canonical-names all` on rows renamed elsewhere, and gets the
examples it would have renamed itself; rows renamed already are refused by a run that would train
them as plain rows.

Data: the llvm corpus' training rows (a layer norm, an improvement row, one of each family)."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from dragon_model.data import load_rows
from dragon_model.renaming import CANONICAL, canonical_row_example, canonical_row_examples, canonical_rows, main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows() -> list:
    every = load_rows(ROOT / "data" / "corpus" / "llvm", splits=["train"], target_kind="llvm")
    picked = {}
    for r in every:  # one construction and one improvement row of each family
        picked.setdefault((r["family"], r["task"]), r)
    return list(picked.values())[:12]


def test_renamed_rows_give_the_examples_training_would_make(rows):
    renamed = canonical_rows(rows, jobs=1)
    assert [canonical_row_example(r) for r in renamed] == canonical_row_examples(rows, jobs=1)
    assert all(r["names"] == CANONICAL for r in renamed)
    # the other fields stay: the split and script decide what training reads
    assert [(r["split"], r["script"], r["id"]) for r in renamed] == [(r["split"], r["script"], r["id"]) for r in rows]
    assert any(r["task"] == "improvement" for r in renamed)


def test_the_command_writes_rows_load_rows_reads(rows, tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]), encoding="utf-8")
    out = tmp_path / "canonical" / "rows.jsonl.xz"
    assert main([str(src), "-o", str(out), "--jobs", "1"]) == 0
    lzma.decompress(out.read_bytes())  # a real xz file
    back = load_rows(out.parent, splits=["train"], target_kind="llvm")
    assert [r["prompt"] for r in back] == [canonical_row_example(r)["prompt"] for r in rows[:3]]
    assert "q0" in back[0]["prompt"] or "p0" in back[0]["prompt"]


def test_the_command_refuses_a_folder_without_rows(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path), "-o", str(tmp_path / "out.jsonl")])
    assert exc.value.code == 2
    assert "no training rows" in capsys.readouterr().err


def test_renamed_rows_are_not_trained_as_plain_rows(rows, tmp_path):
    from dragon_model.train import _training_sets

    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in canonical_rows(rows[:2], jobs=1)), encoding="utf-8")
    with pytest.raises(ValueError, match="--canonical-names all"):
        _training_sets(
            src,
            target="llvm",
            size="toy",
            base=None,
            lora=False,
            max_length=512,
            seed=0,
            limit=0,
            compact=True,
            renamed=None,
            canonical_names=False,
        )
