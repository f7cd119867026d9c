"""Golden diagnostics: exact code, span and message for every diagnostic code.

Cases live in tests/golden/diagnostics.txt; DRAGON_UPDATE_GOLDEN=1 rewrites the
expected sections (review the diff before committing).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import DATA, GOLDEN, UPDATE_GOLDEN

import dragon_dsl
from dragon_dsl.language.codec.decode import decode
from dragon_dsl.language.diagnostics import CODES

PATH = GOLDEN / "diagnostics.txt"
_HEADER = re.compile(r"^=== (\S+) (.*?) (script|trace|replay(?: \S+)?)$")


def load_cases():
    text = PATH.read_text(encoding="utf-8")
    preamble, *chunks = re.split(r"^(?==== )", text, flags=re.M)
    cases = []
    for chunk in chunks:
        head, _, rest = chunk.partition("\n")
        m = _HEADER.match(head)
        assert m, f"bad case header: {head!r}"
        source, _, expected = rest.partition("--- expected\n")
        cases.append((m.group(1), m.group(2), m.group(3), source, expected.strip("\n")))
    return preamble, cases


def render(d) -> str:
    s = d.span
    return f"{d.code} {s.line}:{s.column}-{s.end_line}:{s.end_column} {d.severity.value}: {d.message}"


def run_case(mode: str, source: str) -> list:
    if mode == "script":
        return dragon_dsl.check_text(source)[1]
    if mode == "trace":
        return decode(json.loads(source))[1]
    from dragon_dsl.tvm.replay import replay

    # a path relative to the repository root, so messages read the same on every machine
    workload = (DATA / "workloads" / (mode.split()[1] + ".tvmscript")).relative_to(ROOT)
    program, diags = dragon_dsl.check_text(source)
    assert not [d for d in diags if d.severity.value == "error"], diags
    return replay(program, workload).diagnostics


PREAMBLE, CASES = load_cases()
ROOT = GOLDEN.parent.parent


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_every_code_has_a_golden_case():
    """Each code has a case here or, for the check levels, in tests/golden/check."""
    from test_check_golden import golden_codes

    covered = {c[0] for c in CASES} | golden_codes()
    assert sorted(set(CODES) - covered) == []


@pytest.mark.parametrize("code,title,mode,source,expected", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_golden_diagnostic(code, title, mode, source, expected):
    got = "\n".join(render(d) for d in run_case(mode, source))
    if UPDATE_GOLDEN:
        return
    assert got == expected
    assert code in {line.split()[0] for line in got.splitlines()}, f"the case for {code} must report it"


def _update_golden():
    """With DRAGON_UPDATE_GOLDEN=1, rewrite the expected sections."""
    parts = [PREAMBLE]
    for code, title, mode, source, _ in CASES:
        got = "\n".join(render(d) for d in run_case(mode, source))
        parts.append(f"=== {code} {title} {mode}\n{source}--- expected\n{got}\n\n")
    PATH.write_text("".join(parts).rstrip("\n") + "\n", encoding="utf-8")


if UPDATE_GOLDEN:
    test_update_golden = _update_golden


def test_did_you_mean_is_also_data():
    """Quick fixes read the proposed word from the diagnostic, not from its message."""
    src = 'b0 = get_sblock("C")\nl1, l2, l3 = get_lops(b0)\nb1 = cache_read(b0, 0, "sharde")\nbind(l9, "threadIdx.w")\n'
    got = [(d.code, d.suggestion) for d in dragon_dsl.check_text(src)[1]]
    assert ("DRG201", "get_loops") in got
    assert ("DRG207", "shared") in got and ("DRG207", "threadIdx.z") in got
