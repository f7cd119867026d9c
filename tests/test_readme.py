"""The README's examples do what it says: its Python runs as written, its commands print its
listings (figures excepted), its script checks against its workload, the mistake it shows gives the
diagnostic it quotes, it names every command and only flags they take, and its layout and
requirements name what the tree holds."""

from __future__ import annotations

import json
import re
import shlex
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


def _dragon(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.main", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_the_workload_listing_is_what_dragon_workload_writes(tmp_path):
    """The command the README names, run as written: its file is the listing, line for line."""
    pytest.importorskip("tvm")
    m = re.search(r"`(dragon workload '[^']+' -o (\S+))`", README)
    assert m, "the README names the command that writes the workload"
    r = _dragon(*shlex.split(m.group(1))[1:], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / m.group(2)).read_text() == WORKLOAD


_FIGURE = re.compile(r"\d+(?:\.\d+)?")


@pytest.mark.slow
def test_the_level_time_listing_is_what_dragon_check_prints(tmp_path):
    """`dragon-check matmul.dragon --level time` prints the README's listing, figures excepted
    (they vary from run to run)."""
    listing = _block("text", "info DRG706")
    r = _check(tmp_path, SCRIPT, "--level", "time")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _FIGURE.sub("N", r.stdout + r.stderr) == _FIGURE.sub("N", listing)
    assert "`dragon-check matmul.dragon --level time`" in README


def test_show_and_export_print_what_the_readme_says(tmp_path):
    pytest.importorskip("tvm")
    from dragon_dsl import to_trace_json

    assert "`dragon show matmul.dragon` prints the scheduled TensorIR" in README
    assert "`dragon export matmul.dragon` the TVM trace it stands for" in README
    (tmp_path / "matmul_128.tvmscript").write_text(WORKLOAD)
    (tmp_path / "matmul.dragon").write_text(SCRIPT)
    shown = _dragon("show", "matmul.dragon", cwd=tmp_path)
    assert shown.returncode == 0 and 'T.sblock("C")' in shown.stdout and "T.parallel" in shown.stdout, shown.stderr
    exported = _dragon("export", "matmul.dragon", cwd=tmp_path)
    assert exported.returncode == 0 and json.loads(exported.stdout) == to_trace_json(SCRIPT)


def _parsers() -> dict:
    """Each command of the table -> its argparse parser."""
    import argparse

    from dragon_dsl.cli import check, fmt
    from dragon_dsl.cli.main import build_parser

    def subs(p):
        return next(a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction))

    top = subs(build_parser())
    found = {f"dragon {name}": p for name, p in top.items()}
    found.update({f"dragon corpus {name}": p for name, p in subs(top["corpus"]).items()})
    found.update({"dragon-check": check.build_parser(), "dragon-fmt": fmt.build_parser(), "dragon": build_parser()})
    return found


_FLAG = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def test_every_flag_the_commands_table_names_exists():
    """The synopsis of each row (and the options dragon-check's row lists) names only options its
    command takes, so the table cannot drift from the parsers."""
    parsers = _parsers()
    table = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    wrong = []
    for row in table.splitlines():
        if not row.startswith("| `"):
            continue
        first, description = row[2:].split(" | ", 1)
        for synopsis in re.findall(r"`([^`]+)`", first):
            words = synopsis.split()
            name = " ".join(words[:3]) if words[:2] == ["dragon", "corpus"] else " ".join(words[:2])
            if name not in parsers:
                name = words[0]
            if name in ("dragon rpc-server", "dragon train"):  # parsed by the engine, the trainer
                continue
            p = parsers[name]
            options = {o for a in p._actions for o in a.option_strings}
            named = _FLAG.findall(synopsis.replace("\\|", " "))
            if name == "dragon-check":
                named += _FLAG.findall(" ".join(re.findall(r"`([^`]+)`", description)))
            wrong += [f"{name}: {flag}" for flag in named if flag not in options and flag != "-"]
    assert wrong == []


def test_the_margin_a_cpu_answer_has_over_the_unscheduled_program_is_the_codes():
    pytest.importorskip("torch")
    from dragon_model.data import TIMING_NOISE

    m = re.search(r"a model answer more than (\d+)% slower than the unscheduled program", README)
    assert m, "the README says how much slower than the unscheduled program an answer may be"
    assert int(m.group(1)) == round((TIMING_NOISE - 1) * 100)


def test_the_layout_names_every_layer_of_dragon_dsl():
    layout = README.split("## Layout", 1)[1].split("\n## ", 1)[0]
    packages = [p.name for p in (ROOT / "dragon_dsl").iterdir() if (p / "__init__.py").exists()]
    missing = [name for name in packages if f"`{name}/`" not in layout]
    assert missing == [] and "`levels.py`" in layout


def test_the_requirements_name_every_core_dependency():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    requirements = README.split("## Requirements", 1)[1].split("\n## ", 1)[0]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!\[ ]", d, maxsplit=1)[0] for d in project["dependencies"]]
    assert [n for n in names if n not in requirements] == []
    for extra in project["optional-dependencies"]:
        if extra != "test":
            assert f"`[{extra}]`" in requirements, extra


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
