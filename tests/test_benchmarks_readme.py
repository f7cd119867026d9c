"""benchmarks/README.md names every script under benchmarks/ (results/ holds figures, not scripts), and
every script it names exists: a benchmark added, moved or deleted must be listed, or unlisted, there."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = (".py", ".sh")


def _scripts() -> set:
    return {
        p.relative_to(BENCHMARKS).as_posix()
        for p in BENCHMARKS.rglob("*")
        if p.is_file() and p.suffix in SCRIPTS and "results" not in p.relative_to(BENCHMARKS).parts
    }


def _named() -> set:
    """Every `path.py` / `path.sh` the README names in backticks, relative to benchmarks/."""
    text = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|sh))`", text)}


def test_every_script_under_benchmarks_is_in_the_readme():
    missing = sorted(_scripts() - _named())
    assert not missing, (
        f"benchmarks/README.md does not list {missing}: say what each measures, against what, how to run it"
    )


def test_every_script_the_readme_names_exists():
    assert _scripts(), "no script found under benchmarks/"
    root = BENCHMARKS.parent
    gone = sorted(n for n in _named() if not (BENCHMARKS / n).is_file() and not (root / n).is_file())
    assert not gone, f"benchmarks/README.md names scripts that are neither under benchmarks/ nor in the tree: {gone}"
