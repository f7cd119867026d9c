"""The lexical rules of Dragon: the one home of names, numbers and strings.

Every reader of Dragon text takes its tokens from here: the fast parser
(`fastparse`), the Lark grammar (`grammar/dragon.lark` spells the same
patterns; `tests/test_lexical.py` fails when they differ), the language
server's cursor context and the model's decoder grammar. Each rule is given
as a regular expression in portable syntax (no possessive quantifiers, no
lookbehind), so that other regex engines and grammar generators can use it.

    NAME    identifiers and the constants None, True, False, inf, nan
    INT     0 or a digit 1-9 followed by digits: `007` is not an integer
    FLOAT   digits with a point and/or an exponent: 1.5, 1., .5, 1e-3, 2.5E+4
    STRING  a JSON string literal: no raw control characters, escapes \\" \\\\ \\/
            \\b \\f \\n \\r \\t \\uXXXX

The canonical spelling of values (`float_text`, `string_text`) lives here too,
since it must stay inside these rules: the printer and the formatter write
floats and strings only through them.
"""

from __future__ import annotations

import json
import math
import re
import sys

# ---- the rules (portable regular expressions) -------------------------------------------

NAME = r"[A-Za-z_][A-Za-z_0-9]*"

#: An integer literal. A `0` followed by another digit is no integer (`007`),
#: so a reader never splits it into three integers.
INT = r"(?:0(?![0-9])|[1-9][0-9]*)"

FLOAT = r"(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"

#: One escape inside a string literal (JSON's).
ESCAPE = r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'

STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'

#: A string literal that may be unterminated (runs to the end of the line): what
#: editors and the error-recovery scanner see while a string is being typed.
STRING_OPEN = r'"(?:[^"\\\n]|\\[^\n])*"?'

#: Words the language gives a meaning without a definition.
CONSTANTS = ("None", "True", "False", "inf", "nan")
#: The one keyword of the grammar.
KEYWORDS = ("lambda",)

# ---- the same languages, for Python's `re` ------------------------------------------------
#
# Python's backtracking matcher keeps state for every iteration of a repeated
# group: STRING as written costs ~110 bytes per character (a 2 MB literal needs
# ~230 MB). Possessive repeats (Python 3.11) keep none; they accept exactly the
# same strings, because the alternatives start with disjoint characters. Before
# 3.11 the "unrolled loop" form keeps state only per escape.
if sys.version_info >= (3, 11):
    STRING_RE = r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"'
    STRING_OPEN_RE = r'"(?:[^"\\\n]++|\\[^\n])*+"?'
else:  # pragma: no cover - exercised on Python 3.10 only
    STRING_RE = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
    STRING_OPEN_RE = r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?'

NAME_RE = re.compile(NAME)
INT_RE = re.compile(INT)
FLOAT_RE = re.compile(FLOAT)
STRING_MATCH = re.compile(STRING_RE)

#: What the rules are called in grammar/dragon.lark and which pattern each one is.
LARK_TERMINALS = {"NAME": NAME, "INT": INT, "FLOAT": FLOAT, "STRING": STRING}
#: The forms Lark is built with (same languages; see STRING_RE).
LARK_TERMINALS_FAST = {"NAME": NAME, "INT": INT, "FLOAT": FLOAT, "STRING": STRING_RE}


def is_name(text: str) -> bool:
    return NAME_RE.fullmatch(text) is not None


def is_int(text: str) -> bool:
    return INT_RE.fullmatch(text) is not None


def is_float(text: str) -> bool:
    return FLOAT_RE.fullmatch(text) is not None


def is_string(text: str) -> bool:
    return STRING_MATCH.fullmatch(text) is not None


# ---- values and their canonical spelling ----------------------------------------------------


def string_value(token: str) -> str:
    """The value of a STRING token (JSON's escapes)."""
    return json.loads(token)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def string_text(value: str) -> str:
    """The canonical STRING for a value; lone surrogates are escaped so the text stays valid UTF-8."""
    text = json.dumps(value, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def float_text(value: float) -> str:
    """The canonical spelling of a float: Python's shortest round-trip repr (a FLOAT token),
    or the constants `nan`, `inf`, `-inf` (a NAME, negated)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)
