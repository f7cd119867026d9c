"""Where the model's weights come from: not from the wheel of the language tools (34 MB
the language tools do not need), but from the checkout or a folder the user names."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_model import candidates

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_does_not_ship_the_weights():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert not any("weights" in pattern for patterns in data.values() for pattern in patterns)


def test_a_checkout_finds_its_weights(monkeypatch):
    monkeypatch.delenv(candidates.MODEL_DIR_ENV, raising=False)
    assert candidates.default_model_path("llvm") == ROOT / "model" / "weights" / "llvm"


def test_the_folder_the_user_names_comes_first(monkeypatch, tmp_path):
    (tmp_path / "llvm").mkdir()
    (tmp_path / "llvm" / "config.json").write_text("{}")
    monkeypatch.setenv(candidates.MODEL_DIR_ENV, str(tmp_path))
    assert candidates.default_model_path("llvm") == tmp_path / "llvm"
    assert candidates.default_model_path("cuda") == ROOT / "model" / "weights" / "cuda"  # not there: the checkout's


def test_no_model_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv(candidates.MODEL_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(candidates, "WEIGHTS", tmp_path / "none")
    message = candidates.no_model_message("llvm")
    assert f"none in {tmp_path / 'llvm'} or {tmp_path / 'none' / 'llvm'}" in message
    assert "--model DIR" in message and "DRAGON_MODEL_DIR" in message and "pip install -e '.[model]'" in message
