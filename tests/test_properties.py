"""Properties over generated scripts and arbitrary text (hypothesis, derandomized in CI)."""

from __future__ import annotations

from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import mutate, scripts

import dragon_dsl
from dragon_dsl.language.diagnostics import Severity

IDENTITY = (DATA / "identity" / "identity.dragon").read_text(encoding="utf-8")


@given(scripts())
def test_decode_of_encode_is_format(s):
    trace = dragon_dsl.to_trace_json(s)
    assert dragon_dsl.from_trace_json(trace) == dragon_dsl.format_text(s)


@given(scripts())
def test_format_is_idempotent_and_keeps_meaning(s):
    once = dragon_dsl.format_text(s)
    assert dragon_dsl.format_text(once) == once
    assert dragon_dsl.to_trace_json(once) == dragon_dsl.to_trace_json(s)


@given(scripts())
def test_encoding_is_deterministic(s):
    assert dragon_dsl.to_trace_json(s) == dragon_dsl.to_trace_json(s)


@given(scripts(), st.randoms(use_true_random=False))
def test_names_do_not_change_the_trace(s, rnd):
    """Readable names encode to the same trace as the canonical ones (alpha-equivalence)."""
    program = dragon_dsl.to_program(s)
    names = list(program.definitions)
    renamed = {n: f"x_{rnd.randrange(10**6)}_{i}" for i, n in enumerate(names)}
    import re

    text = re.sub(r"\b([blv]\d+)\b", lambda m: renamed.get(m.group(1), m.group(1)), s)
    if text == s or '"' in s:  # strings could contain names: only rename string-free scripts
        return
    assert dragon_dsl.to_trace_json(text) == dragon_dsl.to_trace_json(s)


def _never_raises(text: str):
    script, diags = dragon_dsl.parse(text)
    program, more = dragon_dsl.check_text(text)
    for d in diags + more:
        assert d.code and d.span.line >= 1 and d.span.column >= 1 and d.message
    try:
        dragon_dsl.format_text(text)
    except dragon_dsl.DragonError:
        pass
    try:
        dragon_dsl.to_trace_json(text)
    except dragon_dsl.DragonError as exc:
        assert any(d.severity is Severity.ERROR for d in exc.diagnostics)


@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text):
    _never_raises(text)


@given(st.text(alphabet='b0l1v2=(),[]{}:"\\#\n .-_aeiolrstnpdkx*/%+lambda', max_size=120))
def test_token_soup_never_raises(text):
    _never_raises(text)


@settings(max_examples=300)
@given(st.randoms(use_true_random=False), st.integers(1, 8))
def test_mutated_scripts_never_raise(rnd, n):
    _never_raises(mutate(IDENTITY, rnd, n))
