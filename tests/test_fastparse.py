"""Differential test: the fast parser builds exactly Lark's tree, or gives up."""

from __future__ import annotations

import dataclasses

from conftest import DATA
from hypothesis import given
from hypothesis import strategies as st
from strategies import mutate, scripts

from dragon_dsl.language.syntax import ast
from dragon_dsl.language.syntax.fastparse import fast_parse
from dragon_dsl.language.syntax.parser import _parser

IDENTITY = (DATA / "identity" / "identity.dragon").read_text(encoding="utf-8")


def dump(node):
    if isinstance(node, list):
        return [dump(x) for x in node]
    if isinstance(node, tuple):
        return tuple(dump(x) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, ast.Trivia):
        return (type(node).__name__,) + tuple(
            (f.name, dump(getattr(node, f.name))) for f in dataclasses.fields(node) if f.name != "trivia"
        )
    return node


def lark_tree(text):
    try:
        return _parser().parse(text, start="start")
    except Exception:
        return None


def agree(text):
    fast = fast_parse(text)
    slow = lark_tree(text)
    if fast is None:
        return  # giving up is always allowed: Lark decides
    assert slow is not None, "the fast parser accepted text that Lark rejects"
    assert dump(fast) == dump(slow)


def test_labels_and_sections_agree():
    text = (
        'b0 = get_sblock("C")\ntile: l1, l2 = get_loops(b0)\nmark: parallel(l1)\npostproc:\n'
        'explain:\nr = rationale("x", produces=[tile, mark])\n'
    )
    assert fast_parse(text) is not None
    agree(text)


def test_identity_fixture_agrees_and_is_fast_path():
    assert fast_parse(IDENTITY) is not None
    agree(IDENTITY)


@given(scripts())
def test_generated_scripts_agree(s):
    assert fast_parse(s) is not None
    agree(s)


@given(st.randoms(use_true_random=False), st.integers(1, 6))
def test_mutated_scripts_agree(rnd, n):
    agree(mutate(IDENTITY, rnd, n))


LABELED = (DATA.parent / "golden" / "format" / "sections.out.dragon").read_text(encoding="utf-8")


@given(st.randoms(use_true_random=False), st.integers(1, 4))
def test_mutated_labeled_scripts_agree(rnd, n):
    agree(mutate(LABELED, rnd, n))


@given(st.text(alphabet='ab01(),[]{}:="#\n -.e+*/%lambd\\', max_size=60))
def test_token_soup_agrees(text):
    agree(text)
