"""The toy corpus reads the fixtures from a folder it is given, so an installed package (which has no
tests/data) can build it from a checkout's fixtures, and says what is missing otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dragon_model import toy_corpus

FIXTURES = Path(__file__).resolve().parents[1] / "data"


def test_the_fixtures_folder_is_a_parameter(tmp_path, monkeypatch):
    monkeypatch.setattr(toy_corpus, "FIXTURES", tmp_path / "not-installed")  # as in a wheel
    with pytest.raises(ValueError, match="--fixtures"):
        toy_corpus.build(tmp_path / "a")
    manifest = toy_corpus.build(tmp_path / "b", "llvm", fixtures=FIXTURES)
    rows = (tmp_path / "b" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert manifest["rows"] == len(rows) > 0 and json.loads(rows[0])["workload_text"]


def test_a_folder_without_traces_is_named(tmp_path):
    with pytest.raises(ValueError, match="no traces/sampled.jsonl") as e:
        toy_corpus.build(tmp_path / "out", fixtures=tmp_path)
    assert str(tmp_path) in str(e.value) and "installed" not in str(e.value)
