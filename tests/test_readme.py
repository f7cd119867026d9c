"""The README's examples do what it says: its Python runs as written, its script checks against its
workload, the mistake it shows gives the diagnostic it quotes, and it names every command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.S | re.M)


def _block(lang: str, marker: str) -> str:
    hits = [body for tag, body in BLOCKS if tag == lang and marker in body]
    assert len(hits) == 1, f"one ```{lang} block with {marker!r} expected, found {len(hits)}"
    return hits[0]


PYTHON = _block("python", "import dragon_dsl")
WORKLOAD = _block("python", "@I.ir_module")
SCRIPT = _block("dragon", "workload ")


def test_the_python_example_runs_as_written(tmp_path):
    """In a fresh interpreter, in an empty folder: nothing it needs may come from the test or the
    repository's working directory."""
    r = subprocess.run([sys.executable, "-c", PYTHON], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert 'b0 = get_sblock("C")' in r.stdout  # format_text's script
    assert "T.sblock" in r.stdout and "meta_schedule" in r.stdout  # the scheduled TensorIR


def _check(tmp_path, script: str, *args: str) -> subprocess.CompletedProcess:
    name = re.search(r'^workload "([^"]+)"', SCRIPT, re.M).group(1)
    (tmp_path / name).write_text(WORKLOAD)
    (tmp_path / "matmul.dragon").write_text(script)
    return subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.check", "matmul.dragon", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_script_is_about_ten_lines_canonical_and_replays_on_its_workload(tmp_path):
    assert 8 <= len(SCRIPT.strip().splitlines()) <= 12
    from dragon_dsl import format_text

    assert format_text(SCRIPT) == SCRIPT
    r = _check(tmp_path, SCRIPT, "--level", "replay", "--strict")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_workload_is_the_one_dragon_workload_writes():
    tvm = pytest.importorskip("tvm")
    from dragon_dsl.tvm.workload import load_workload, make_workload

    assert "dragon workload 'matmul(128,128,128)'" in README
    tvm.ir.assert_structural_equal(load_workload(WORKLOAD), make_workload("matmul(128,128,128)"))


def test_the_mistake_shown_gives_the_diagnostic_quoted(tmp_path):
    m = re.search(r"`(split\(c, [^`]*\))` gives\s+`([^`]+)`", README)
    assert m, "the README shows a mistake and its diagnostic"
    wrong, quoted = m.group(1), " ".join(m.group(2).split())
    original = next(ln for ln in SCRIPT.splitlines() if "split(" in ln)
    script = SCRIPT.replace(original, original.split("=")[0] + "= " + wrong, 1)
    r = _check(tmp_path, script)
    assert r.returncode == 1
    assert quoted in r.stdout, r.stdout


def test_every_command_is_in_the_table():
    import argparse

    from dragon_dsl.cli.main import build_parser

    subs = next(a.choices for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    table = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    missing = [
        name
        for name in subs
        if name not in ("fmt", "check") and f"| `dragon {name}" not in table and f"/ `dragon {name}" not in table
    ]
    assert missing == []
    assert "| `dragon-fmt" in table and "| `dragon-check" in table


def test_the_corpus_is_described_as_it_is_stored():
    assert "JSON Lines" not in README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    assert "Parquet" in README
    from dragon_dsl.corpus import build

    assert "parquet" in Path(build.__file__).read_text().lower()


def test_the_two_first_commands_set_up_and_run_the_main_job_and_the_tests():
    first = _block("sh", ".venv/bin/").strip().splitlines()
    assert len(first) == 2
    for line in first:
        assert line.startswith("python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && ")
    assert first[0].endswith(".venv/bin/dragon suggest")
    assert first[1].endswith(".venv/bin/python -m pytest -q -n auto --maxprocesses 4")
    # CI runs the tests as the README says (in parallel: pytest-xdist, one process per core, at most 4)
    assert first[1].split(" && ")[-1] in (ROOT / ".ci" / "run").read_text().splitlines()
