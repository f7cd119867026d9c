"""The lexical rules have one home (dragon_dsl/language/syntax/lexical.py): the Lark grammar spells the
same patterns, Lark and the fast parser are built from lexical.py's forms, and the fast forms
accept exactly the languages of the portable ones."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark

from dragon_dsl import parse
from dragon_dsl.language.syntax import lexical
from dragon_dsl.language.syntax.parser import _parser, grammar_text

try:
    import re._parser as sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]


def _same_regex(a: str, b: str) -> bool:
    """Two patterns that parse to the same regex tree (spellings like \\/ and / are equal)."""
    return str(list(sre_parse.parse(a))) == str(list(sre_parse.parse(b)))


def test_lark_grammar_spells_the_lexical_rules():
    terminals = {
        t.name: t.pattern.value for t in Lark(grammar_text(), parser="lalr", start=["start", "line"]).terminals
    }
    for name, pattern in lexical.LARK_TERMINALS.items():
        assert _same_regex(terminals[name], pattern), (name, terminals[name], pattern)


def test_lark_is_built_with_the_fast_forms():
    terminals = {t.name: t.pattern.value for t in _parser().terminals}
    for name, pattern in lexical.LARK_TERMINALS_FAST.items():
        assert _same_regex(terminals[name], pattern), name


_STRING_ALPHABET = st.sampled_from(['"', "\\", "/", "u", "n", "t", "0", "a", "F", "g", "\x01", "\n", "é", " "])


@settings(derandomize=True, max_examples=3000, deadline=None)
@given(st.lists(_STRING_ALPHABET, max_size=14).map("".join))
def test_fast_string_forms_accept_the_same_strings(body):
    for text in ('"' + body + '"', '"' + body, body):
        plain = re.fullmatch(lexical.STRING, text) is not None
        assert (re.fullmatch(lexical.STRING_RE, text) is not None) == plain, text
        assert lexical.is_string(text) == plain
        if plain:
            assert isinstance(lexical.string_value(text), str)
        open_plain = re.match(lexical.STRING_OPEN, text)
        open_fast = re.match(lexical.STRING_OPEN_RE, text)
        assert (open_plain and open_plain.end()) == (open_fast and open_fast.end()), text


def test_int_has_no_leading_zeros():
    for ok in ("0", "7", "10", "1234567890"):
        assert lexical.is_int(ok)
    for bad in ("007", "01", "00", "1.0", "-1", "1e3", ""):
        assert not lexical.is_int(bad)
    _, diags = parse('annotate(b0, "k", 007)\n')
    assert [d.code for d in diags] == ["DRG001"]
    assert "leading zero" in diags[0].message


def test_float_rule_and_canonical_spelling():
    for ok in ("1.5", "1.", ".5", "1e-3", "2.5E+4", "0.0"):
        assert lexical.is_float(ok), ok
    for bad in ("1", ".", "e3", "1e", "-1.5", "nan"):
        assert not lexical.is_float(bad), bad
    for v in (0.0, 1.5, 1e-7, 1e16, 3.141592653589793, 2.0**-1074, 1.7976931348623157e308):
        text = lexical.float_text(v)
        assert lexical.is_float(text) and float(text) == v, text
    assert lexical.float_text(math.nan) == "nan"
    assert lexical.float_text(-math.inf) == "-inf"


def test_string_text_is_a_string_token():
    for v in ("", 'a"b\\c\n\t\x01', "\ud800 lone surrogate", "日本", "/"):
        text = lexical.string_text(v)
        assert lexical.is_string(text), text
    assert lexical.string_value(lexical.string_text('a"b')) == 'a"b'


def test_names():
    assert lexical.is_name("_b0") and lexical.is_name("lambda")
    assert not lexical.is_name("0b") and not lexical.is_name("a-b")
    assert set(lexical.CONSTANTS) <= {"None", "True", "False", "inf", "nan"}
