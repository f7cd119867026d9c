"""Fixtures of the model tests: a toy corpus from the fixture traces and a toy model trained on it
(session-scoped: the training commands run once, at toy size, on the CPU)."""

from __future__ import annotations

import pytest

# no importorskip: CI installs the model extras (README's test command), and a missing
# torch/transformers/xgrammar must fail the run rather than skip the pipeline's tests
import torch  # noqa: F401
import transformers  # noqa: F401
import xgrammar  # noqa: F401


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory):
    from dragon_model.toy_corpus import build

    out = tmp_path_factory.mktemp("corpus")
    build(out, "llvm")
    return out


@pytest.fixture(scope="session")
def toy_model(toy_corpus, tmp_path_factory):
    """`dragon train sft` at toy size, through the CLI."""
    from dragon_dsl.cli.main import main

    out = tmp_path_factory.mktemp("model") / "sft"
    rc = main(
        [
            "train",
            "sft",
            str(toy_corpus),
            "-o",
            str(out),
            "--size",
            "toy",
            "--max-steps",
            "4",
            "--max-length",
            "384",
            "--batch-size",
            "2",
            "--limit",
            "12",
        ]
    )
    assert rc == 0
    return out
