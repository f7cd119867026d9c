"""The identity fixture: canonical scripts that must format to themselves and round-trip."""

from __future__ import annotations

from conftest import DATA, script_lines

import dragon_dsl
from dragon_dsl.language.diagnostics import Severity
from dragon_dsl.language.table import BY_NAME

IDENTITY = (DATA / "identity" / "identity.dragon").read_text(encoding="utf-8")


def test_identity_checks_without_errors():
    _, diags = dragon_dsl.check_text(IDENTITY)
    errors = [d.render() for d in diags if d.severity is Severity.ERROR]
    assert errors == []


def test_identity_formats_to_itself():
    assert dragon_dsl.format_text(IDENTITY) == IDENTITY


def test_identity_round_trips_through_trace_json():
    program = dragon_dsl.to_program(IDENTITY)
    trace = dragon_dsl.to_trace_json(IDENTITY)
    back = dragon_dsl.from_trace_json(trace, workload=program.workload, target=program.target)
    assert script_lines(back) == script_lines(IDENTITY)
    assert dragon_dsl.to_trace_json(back) == trace


def test_identity_uses_every_instruction():
    used = {inst.entry.name for inst in dragon_dsl.to_program(IDENTITY).instructions}
    missing = sorted(n for n in BY_NAME if n not in used)
    assert missing == []
