"""Shared fixtures and the hypothesis profile (derandomized in CI)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") or os.environ.get("DRAGON_DERANDOMIZE", "1") == "1" else "dev")

UPDATE_GOLDEN = os.environ.get("DRAGON_UPDATE_GOLDEN") == "1"


def script_lines(text: str) -> list[str]:
    """The statements of a script, without comments and blank lines."""
    return [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def read_jsonl(path: Path) -> list[dict]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def workloads_dir() -> Path:
    return DATA / "workloads"
