"""Formatter golden cases: expected output, idempotence, and an unchanged trace."""

from __future__ import annotations

import pytest
from conftest import GOLDEN, UPDATE_GOLDEN

import dragon_dsl

CASES = sorted((GOLDEN / "format").glob("*.in.dragon"))


@pytest.mark.parametrize("path", CASES, ids=[p.name.split(".")[0] for p in CASES])
def test_format_golden(path):
    src = path.read_text(encoding="utf-8")
    expected_path = path.with_name(path.name.replace(".in.", ".out."))
    got = dragon_dsl.format_text(src)
    if UPDATE_GOLDEN:
        expected_path.write_text(got, encoding="utf-8")
    assert got == expected_path.read_text(encoding="utf-8")
    assert dragon_dsl.format_text(got) == got, "formatting is idempotent"
    try:
        before = dragon_dsl.to_trace_json(src)
    except dragon_dsl.DragonError:
        with pytest.raises(dragon_dsl.DragonError):
            dragon_dsl.to_trace_json(got)
        return
    assert dragon_dsl.to_trace_json(got) == before, "formatting never changes the trace"


def test_format_refuses_text_that_does_not_parse():
    with pytest.raises(dragon_dsl.DragonError) as info:
        dragon_dsl.format_text('b0 = get_sblock("C"\n')
    assert info.value.diagnostics[0].code == "DRG003"
