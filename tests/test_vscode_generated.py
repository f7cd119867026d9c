"""The VS Code extension's generated files are fresh, and what they say matches the table.

`vscode-extension/scripts/generate.py` writes the TextMate grammar, the snippets and the
highlighting test of every instruction from `dragon_dsl/language/table/`. When this test fails, run
`.venv/bin/python vscode-extension/scripts/generate.py` and commit the result.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dragon_dsl import parse
from dragon_dsl.language.table import EXPLAIN_KINDS, INSTRUCTIONS

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "vscode-extension" / "scripts" / "generate.py"


def _generator():
    spec = importlib.util.spec_from_file_location("vscode_generate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


@pytest.mark.parametrize("path", sorted(gen.outputs()), ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_file_is_fresh(path):
    expected = gen.outputs()[path].encode("utf-8")
    assert path.exists(), f"missing; run: .venv/bin/python {SCRIPT.relative_to(ROOT)}"
    assert path.read_bytes() == expected, f"stale; run: .venv/bin/python {SCRIPT.relative_to(ROOT)}"


def test_generation_is_deterministic():
    assert gen.outputs() == gen.outputs()


def test_check_mode_exit_code():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_instruction_and_entry_has_a_snippet():
    snippets = json.loads((ROOT / "vscode-extension" / "snippets" / "dragon.json").read_text(encoding="utf-8"))
    expected = {f"{i.section}:" if i.section else i.name for i in INSTRUCTIONS}
    expected |= {"explain:"} | {f"explain {k}" for k in EXPLAIN_KINDS} | {"directive workload", "directive target"}
    assert set(snippets) == expected
    for inst in INSTRUCTIONS:
        if not inst.section:
            assert snippets[inst.name]["description"].startswith(inst.signature())


def test_snippets_expand_to_statements_that_parse():
    """Every snippet, with each placeholder at its default, is a statement the parser accepts."""
    _, bodies = gen.snippets()
    for key, body in bodies:
        script, diags = parse(body.expanded + "\n")
        assert [d.render() for d in diags] == [], f"{key}: {body.expanded}"


def test_snippets_write_required_parameters_and_results_as_the_table_says():
    _, bodies = gen.snippets()
    by_key = dict(bodies)
    assert by_key["split"].expanded == "l1, l2 = split(loop, [None, 32])"
    assert by_key["sample_perfect_tile"].expanded == "v1, v2 = sample_perfect_tile(loop, n=2)"
    assert by_key["bind"].snippet.startswith('bind(${1:loop}, "${2|blockIdx.x,')
    assert by_key["fuse"].expanded == "l1 = fuse(loop0, loop1)"
    assert by_key["postproc:"].expanded == "postproc:"


def test_grammar_names_every_instruction_once():
    grammar = json.loads(
        (ROOT / "vscode-extension" / "syntaxes" / "dragon.tmLanguage.json").read_text(encoding="utf-8")
    )
    callee = "\n".join(p["match"] for p in grammar["repository"]["callee"]["patterns"])
    for inst in INSTRUCTIONS:
        if not inst.section:
            assert f"|{inst.name}|" in callee.replace("(?:", "|").replace(")", "|"), inst.name
    test_case = (ROOT / "vscode-extension" / "test" / "grammar" / "instructions.test.dragon").read_text(
        encoding="utf-8"
    )
    calls = [line for line in test_case.splitlines() if line and not line.startswith("#")]
    assert len(calls) == len(INSTRUCTIONS)
