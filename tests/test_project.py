"""Project-level invariants: layer boundaries, docs that check, README and CI in step."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import dragon_dsl
from dragon_dsl.language.diagnostics import Severity

ROOT = Path(__file__).resolve().parent.parent


def test_language_core_imports_neither_tvm_nor_torch():
    code = (
        "import sys, dragon_dsl, dragon_dsl.language.format, dragon_dsl.language.docs, dragon_dsl.language.canonical; "
        "import dragon_dsl.tvm, dragon_dsl.tvm.replay; "
        "bad = [m for m in ('tvm', 'torch', 'lsprotocol', 'pygls') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_eval_exec_or_as_python_in_sources():
    # Python's builtins, not methods of the same name (torch's `module.eval()` is inference mode)
    pattern = re.compile(r"(?<![.\w])(eval|exec)\(|as_python\(")
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
    """CI runs every step of the README's test command, in order, with `lint-imports` (the import
    contracts) after the install and before the tests."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    commands = [ln for ln in readme[:6] if ln.startswith("python3 ")]
    assert len(commands) == 2, "the README starts with two commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [step.strip() for step in commands[1].split("&&")]
    at = [ci.find(step) for step in steps]
    assert -1 not in at and at == sorted(at), f"{steps} in this order in .ci/run"
    lint = ci.find("\n.venv/bin/lint-imports\n")
    assert at[-2] < lint < at[-1], "lint-imports runs between the install and pytest"
    assert "set -euo pipefail" in ci  # so pytest's exit code 5, or a broken contract, fails the run


# ---- the layers of ARCHITECTURE.md, held by import-linter -----------------------------------------


def _importlinter() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_import_contracts_are_kept():
    """`lint-imports` (also run by .ci/run) finds every contract of pyproject.toml kept."""
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_every_module_of_dragon_dsl_has_a_place_in_the_contracts():
    """A new top-level module of dragon_dsl is either in the language core's contract or a layer,
    so no module escapes the import contracts."""
    config = _importlinter()
    named = set()
    for contract in config["contracts"]:
        for key in ("layers", "source_modules"):
            for entry in contract.get(key, []):
                named |= {m.strip() for m in entry.replace(":", "|").split("|")}
    package = ROOT / "dragon_dsl"
    modules = {f"dragon_dsl.{p.stem}" for p in package.glob("*.py") if p.name != "__init__.py"}
    modules |= {f"dragon_dsl.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert sorted(modules - named) == []


def test_architecture_names_every_import_contract():
    """ARCHITECTURE.md lists each contract of pyproject.toml by its id, and the layers in the order the
    layers contract holds them."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    contracts = _importlinter()["contracts"]
    assert [c["id"] for c in contracts if f"**{c['id']}**" not in text] == []
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    table = text.split("## Layers", 1)[1].split("## Import contracts", 1)[0]
    order = [table.find(f"`{entry.split('|')[0].strip()}`") for entry in layers]
    assert -1 not in order and order == sorted(order), layers


def test_packaging_lists_every_package():
    """The wheel's package list (pyproject.toml) names every folder with an __init__.py."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folder_of = {name: folder for name, folder in config["package-dir"].items()}
    listed = set(config["packages"])
    found = set()
    for root, folder in [("dragon_dsl", "dragon_dsl"), *folder_of.items()]:
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((root, *rel)))
    assert sorted(found - listed) == [] and sorted(listed - found) == []


# ---- the language tools without TVM ------------------------------------------------------------

_WITHOUT = """
import importlib.abc, sys
BLOCKED = ("tvm", "tvm_ffi", "numpy", "torch", "transformers")
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Blocker())
from dragon_dsl.cli.entry import run
sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3:]))
"""


def _without_tvm(prog, target, *args):
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, prog, target, *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_language_tools_work_without_tvm(tmp_path):
    """What `pip install little-dragon` (no extras) installs runs with TVM, numpy and torch
    unimportable: dragon-fmt, dragon-check up to --level types (an error is found too), dragon --help."""
    good = ROOT / "tests" / "golden" / "check" / "replay_error.dragon"
    r = _without_tvm("dragon-fmt", "dragon_dsl.cli.fmt:main", "--check", str(good))
    assert r.returncode == 0, r.stderr
    r = _without_tvm("dragon-check", "dragon_dsl.cli.check:main", "--level", "types", str(good))
    assert r.returncode == 0 and "0 error(s)" in r.stdout + r.stderr, r.stdout + r.stderr
    r = _without_tvm("dragon", "dragon_dsl.cli.main:main", "--help")
    assert r.returncode == 0 and "usage: dragon" in r.stdout, r.stdout + r.stderr
    bad = ROOT / "tests" / "golden" / "check" / "type_error.dragon"
    r = _without_tvm("dragon-check", "dragon_dsl.cli.check:main", "--level", "types", str(bad))
    assert r.returncode == 1 and "DRG" in r.stdout + r.stderr and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_a_command_that_needs_tvm_says_which_extra_without_a_traceback():
    good = ROOT / "tests" / "golden" / "check" / "replay_error.dragon"
    r = _without_tvm("dragon-check", "dragon_dsl.cli.check:main", "--level", "replay", str(good))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (  # from this checkout: the editable install; the index's name once published
        "dragon-check: this needs tvm, which is not installed: pip install -e '.[tvm]' "
        "(once published: pip install 'little-dragon[tvm]')"
    )
