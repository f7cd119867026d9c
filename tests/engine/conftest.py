"""Engines shared by the engine tests: worker pools are started once per session."""

from __future__ import annotations

import pytest

from .engine_helpers import LLVM


@pytest.fixture(scope="session")
def llvm_engine(tmp_path_factory):
    from dragon_dsl.engine import Engine

    engine = Engine(LLVM, workers=2, timeout_s=60.0, cache=tmp_path_factory.mktemp("cache") / "results.sqlite")
    yield engine
    engine.close()
