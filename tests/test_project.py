"""Project-level invariants: layer boundaries, docs that check, README and CI in step."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import dragon_dsl
from dragon_dsl.diagnostics import Severity

ROOT = Path(__file__).resolve().parent.parent


def test_language_core_imports_neither_tvm_nor_torch():
    code = ("import sys, dragon_dsl, dragon_dsl.format, dragon_dsl.docs, dragon_dsl.canonical; "
            "import dragon_dsl.tvm, dragon_dsl.tvm.replay; "
            "bad = [m for m in ('tvm', 'torch', 'lsprotocol', 'pygls') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_eval_exec_or_as_python_in_sources():
    pattern = re.compile(r"\b(eval|exec)\(|as_python\(")
    offenders = []
    for path in list((ROOT / "dragon_dsl").rglob("*.py")) + list((ROOT / "grammar").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code) and "never" not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_language_doc_examples_check():
    text = (ROOT / "docs" / "LANGUAGE.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```dragon\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        _, diags = dragon_dsl.check_text(block)
        assert [d.render() for d in diags if d.severity is Severity.ERROR] == []
        dragon_dsl.to_trace_json(block)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    commands = [ln for ln in readme[:6] if ln.startswith("python3 ")]
    assert len(commands) == 2, "the README starts with two commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci
    assert "set -euo pipefail" in ci  # so pytest's exit code 5 fails the run
