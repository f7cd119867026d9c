"""A seeded mutation fuzzer for the language core and its command-line tools.

Seeds are real scripts (the identity fixture, the golden format and check cases, and
scripts decoded from the real TVM traces in tests/data/traces). Each mutant is made by
`mutant(i)` from its index alone (random.Random(i)), so a failure names a mutant that
anyone can rebuild: `python -c "import fuzzing; print(fuzzing.mutant(1234))"` from tests/.

Mutations: characters (insert, delete, replace from an alphabet of the language's
punctuation), tokens (delete, duplicate, swap, move, replace by another token of the
script), lines (delete, duplicate, swap), and hostile inputs (nesting hundreds to
tens of thousands deep, long operator chains, long strings and integers, a byte order
mark, CR line ends, control characters, non-ASCII text). Trace JSON is mutated too
(values replaced, elements dropped or duplicated) for the decoder.

The property: the API raises nothing but DragonError; `check` (used by both tests
and tests/../benchmarks/fuzz_100k.py) returns the exception that broke it, or None.
"""

from __future__ import annotations

import copy
import json
import random
import re
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "data"
GOLDEN = HERE / "golden"

CHARS = '()[]{},:="\\#\n -_0123456789abclvx.e+*/%'
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"?|[A-Za-z_][A-Za-z_0-9]*|[0-9.]+(?:[eE][+-]?[0-9]+)?|//|\S')


@cache
def seeds() -> tuple[str, ...]:
    """Real scripts to mutate (deterministic order)."""
    import dragon_dsl

    out = [(DATA / "identity" / "identity.dragon").read_text(encoding="utf-8")]
    out += [p.read_text(encoding="utf-8") for p in sorted((GOLDEN / "format").glob("*.in.dragon"))]
    out += [p.read_text(encoding="utf-8") for p in sorted((GOLDEN / "check").glob("*.dragon"))]
    for rec in traces()[::7]:
        try:
            out.append(
                dragon_dsl.from_trace_json(rec["trace"], workload=f"{rec['workload']}.tvmscript", target=rec["target"])
            )
        except dragon_dsl.DragonError:
            pass
    return tuple(out)


@cache
def traces() -> tuple[dict, ...]:
    out = []
    for path in sorted((DATA / "traces").glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return tuple(out)


# ---- script mutants -----------------------------------------------------------------------


def _chars(text: str, rnd: random.Random) -> str:
    chars = list(text) or [" "]
    for _ in range(rnd.randint(1, 8)):
        pos = rnd.randrange(len(chars))
        op = rnd.randrange(3)
        if op == 0 and len(chars) > 1:
            del chars[pos]
        elif op == 1:
            chars.insert(pos, rnd.choice(CHARS))
        else:
            chars[pos] = rnd.choice(CHARS)
    return "".join(chars)


def _tokens(text: str, rnd: random.Random) -> str:
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if not spans:
        return text
    pieces, last = [], 0
    for a, b in spans:
        pieces += [text[last:a], text[a:b]]
        last = b
    pieces.append(text[last:])
    toks = list(range(1, len(pieces), 2))  # indexes of token pieces
    for _ in range(rnd.randint(1, 4)):
        i, j = rnd.choice(toks), rnd.choice(toks)
        op = rnd.randrange(5)
        if op == 0:
            pieces[i] = ""
        elif op == 1:
            pieces[i] = pieces[i] + " " + pieces[i]
        elif op == 2:
            pieces[i], pieces[j] = pieces[j], pieces[i]
        elif op == 3:
            pieces[i] = pieces[j]
        else:
            pieces[i] = pieces[i] + pieces[j]
    return "".join(pieces)


def _lines(text: str, rnd: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rnd.randint(1, 3)):
        i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
        op = rnd.randrange(3)
        if op == 0 and len(lines) > 1:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[j])
        else:
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _hostile(text: str, rnd: random.Random) -> str:
    pos = rnd.randrange(len(text) + 1)
    op = rnd.randrange(12)
    if op == 0:
        n = rnd.choice((99, 100, 101, 150, 500, 1000, 5000, 20000))
        o, c = rnd.choice((("[", "]"), ("(", ")"), ('{"k": ', "}"), ("f(", ")")))
        piece = f'annotate(b0, "k", {o * n}1{c * n})'
    elif op == 1:
        piece = "x = lambda i: " + " + ".join(["i"] * rnd.choice((50, 120, 3000))) + "\n"
    elif op == 2:
        piece = "-" * rnd.choice((50, 101, 3000)) + "1"
    elif op == 3:
        piece = '"' + "x" * rnd.choice((1000, 100_000)) + ('"' if rnd.random() < 0.7 else "")
    elif op == 4:
        piece = "1" * rnd.choice((20, 4300, 4301, 10_000))
    elif op == 5:
        return "\ufeff" + text
    elif op == 6:
        return text.replace("\n", rnd.choice(("\r\n", "\r")))
    elif op == 7:
        piece = rnd.choice(("\x00", "\x0b", "\x0c", "\x1b", "\t", "\u2028", "\x85", "\ud800"))
    elif op == 8:
        piece = rnd.choice(("é", "日本", "🐉", "İ", "\u0301"))
    elif op == 9:
        piece = rnd.choice(("007", "1e999", "-0.0", "nan", "inf", ".5e", "0x10", "1_000", "True", "lambda"))
    elif op == 10:
        piece = (
            "\n"
            + " " * rnd.randrange(4)
            + rnd.choice(("explain:", "postproc:", 'workload "w"', 'target {"kind": "llvm"}', 'fact("x", about=[b0])'))
        )
    else:
        piece = rnd.choice(("\\\n", "#", "\n\n\n", ")" * 3, "(" * 3, ",,", "= =", ":", "x:"))
    return text[:pos] + piece + text[pos:]


MUTATORS = (_chars, _chars, _tokens, _tokens, _lines, _hostile)
PLAIN_MUTATORS = MUTATORS[:-1]


def mutant(i: int, hostile: bool = True) -> str:
    """Mutant number i (deterministic); `hostile=False`: slips a person makes, no hostile pieces."""
    rnd = random.Random(i)
    text = rnd.choice(seeds())
    mutators = MUTATORS if hostile else PLAIN_MUTATORS
    for _ in range(rnd.randint(1, 3)):
        text = rnd.choice(mutators)(text, rnd)
    return text


# ---- trace mutants -------------------------------------------------------------------------

_VALUES = [
    None,
    0,
    1,
    -1,
    2**40,
    1.5,
    True,
    "",
    "b0",
    "l1",
    "v2",
    '"x"',
    "None",
    [],
    [[]],
    {},
    {"a": 1},
    '{"root": 1}',
    [1, 2],
    ["l1", "l2"],
]


def trace_mutant(i: int):
    rnd = random.Random(10**9 + i)
    t = copy.deepcopy(rnd.choice(traces())["trace"])
    for _ in range(rnd.randint(1, 4)):
        path = [t]
        node = t
        while isinstance(node, list) and node and rnd.random() < 0.75:
            node = rnd.choice(node)
            path.append(node)
        parent = path[-2] if len(path) > 1 else None
        if not isinstance(parent, list) or not parent:
            continue
        k = rnd.randrange(len(parent))
        op = rnd.randrange(3)
        if op == 0:
            parent[k] = copy.deepcopy(rnd.choice(_VALUES))
        elif op == 1:
            del parent[k]
        else:
            parent.insert(k, copy.deepcopy(parent[k]))
    return t


# ---- the property ---------------------------------------------------------------------------------


def check(text: str):
    """Run the API on a text: the exception that escaped (anything but DragonError), or None.

    format_text and to_trace_json parse first and raise DragonError on syntax errors,
    a path check_text has just run; they are called where they go further.
    """
    import dragon_dsl
    from dragon_dsl.language.diagnostics import has_errors

    try:
        _, diags = dragon_dsl.check_text(text)
        for d in diags:
            if not (d.code and d.span.line >= 1 and d.span.column >= 1 and d.message):
                return AssertionError(f"bad diagnostic {d}")
        syntax_ok = not any(d.code < "DRG100" and d.severity.value == "error" for d in diags)
        calls = [dragon_dsl.format_text] if syntax_ok else []
        if not has_errors(diags):
            calls.append(dragon_dsl.to_trace_json)
        for f in calls:
            try:
                f(text)
            except dragon_dsl.DragonError:
                pass
    except Exception as exc:
        return exc
    return None


def check_trace(trace):
    import dragon_dsl

    try:
        try:
            text = dragon_dsl.from_trace_json(trace)
        except dragon_dsl.DragonError:
            return None
        dragon_dsl.to_trace_json(text)  # a decoded trace must encode
    except Exception as exc:
        return exc
    return None


def file_safe(text: str) -> bool:
    """Whether a mutant can be written as UTF-8 (lone surrogates cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
