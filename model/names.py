"""The names a workload's author chose, told apart from its structure.

A TVMScript workload names its buffers, blocks, loops and iteration variables; none of these
names changes what the program computes (TVM's structural equality ignores them). A model that
reads the program and not its names must give the same schedule to the same program under other
names. This module owns the renaming that tests and evaluations use to hold it to that:

    text, mapping = renamed_workload(text, random.Random(0))

`user_names` finds every name the author chose, with its role (`param`, `alloc`, `block`,
`var`), by reading the text as Python tokens. Blocks have names of their own (a block and a
buffer may both be called `C`), so a name is keyed by its space, `("block", "C")` or
`("word", "C")`. Attribute names (`T.float32`), keyword arguments (`scope=`), called names
(`range(64)`), TVMScript's own words (`T`, `I`, `Module`, `main`, `root`) and string literals other
than a block's name are never names. The text is never executed.
"""

from __future__ import annotations

import io
import keyword
import string
import tokenize
from dataclasses import dataclass

#: words of a workload that are TVMScript's, not its author's
FIXED = frozenset({"T", "I", "Module", "main", "root", "True", "False", "None"})


@dataclass(frozen=True)
class Name:
    text: str
    role: str  # "param", "alloc", "block" or "var"
    start: tuple  # (row, col) of each occurrence's token, 1-based rows as `tokenize` gives them


def _tokens(text: str) -> list:
    return [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in (tokenize.NL,)]


def user_names(text: str) -> dict:
    """{(space, name): role} of every name the workload's author chose, in order of first appearance."""
    roles: dict = {}
    for tok, role in _occurrences(_tokens(text)):
        roles.setdefault(_key(tok), role)
    return roles


def _key(tok) -> tuple:
    return ("block", tok.string[1:-1]) if tok.type == tokenize.STRING else ("word", tok.string)


def _occurrences(toks: list):
    """(token, role) of each occurrence of an author's name: NAME tokens, and the STRING token of a
    block's name in `T.sblock("...")`."""
    depth, in_signature = 0, False
    sig = [t for t in toks if t.type not in (tokenize.COMMENT,)]
    for i, tok in enumerate(sig):
        prev = sig[i - 1].string if i else ""
        nxt = sig[i + 1].string if i + 1 < len(sig) else ""
        if tok.type == tokenize.OP:
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
                if in_signature and depth == 0:
                    in_signature = False
            continue
        if tok.type == tokenize.STRING:
            if prev == "(" and i >= 3 and sig[i - 2].string == "sblock" and sig[i - 3].string == ".":
                if tok.string[1:-1] != "root":
                    yield tok, "block"
            continue
        if tok.type != tokenize.NAME:
            continue
        word = tok.string
        if prev == "def" and word == "main":
            in_signature = True
            continue
        if keyword.iskeyword(word) or word in FIXED or prev == "." or (nxt == "=" and depth > 0):
            continue
        if nxt == "(":  # a call: TVMScript's own builtins (`range`, `min`), never a buffer or variable
            continue
        if in_signature and depth == 1 and nxt == ":":
            yield tok, "param"
        elif nxt == "=" and i + 4 < len(sig) and sig[i + 4].string in ("alloc_buffer", "sblock_alloc_buffer"):
            yield tok, "alloc"
        else:
            yield tok, "var"


def renamed(text: str, mapping: dict) -> str:
    """TEXT with each of the author's names in MAPPING ({(space, name): new name}) replaced, token by
    token (a block's name inside its `T.sblock("...")` string too); every other character stays."""
    toks = _tokens(text)
    lines = text.splitlines(keepends=True)
    edits = []
    for tok, _role in _occurrences(toks):
        key = _key(tok)
        if key in mapping:
            new = f'"{mapping[key]}"' if tok.type == tokenize.STRING else mapping[key]
            edits.append((tok.start, tok.end, new))
    for (r0, c0), (r1, c1), new in sorted(edits, reverse=True):
        assert r0 == r1, "a name is one token on one line"
        line = lines[r0 - 1]
        lines[r0 - 1] = line[:c0] + new + line[c1:]
    return "".join(lines)


def random_mapping(names, rng, avoid=()) -> dict:
    """A fresh name for each of NAMES ((space, name) keys): 1-3 letters and a digit (never a word of TVMScript or of the
    rendered prompt), none used twice, none in AVOID."""
    taken = {n for _space, n in names} | set(avoid) | FIXED
    out = {}
    for old in names:
        while True:
            new = "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(1, 3))) + str(rng.randint(0, 99))
            if new not in taken and not keyword.iskeyword(new):
                taken.add(new)
                out[old] = new
                break
    return out


#: the prefix of each role's canonical names
PREFIX = {"param": "p", "alloc": "a", "block": "q", "var": "x"}


def canonical_names(names: dict) -> dict:
    """{(space, name): canonical name} for NAMES ({(space, name): role}, in order of appearance):
    each role numbered on its own, `p0, p1, ...` for parameter buffers, `a0, ...` for allocated
    ones, `q0, ...` for blocks, `x0, ...` for loop and iteration variables."""
    counts: dict = {}
    out = {}
    for key, role in names.items():
        n = counts.get(role, 0)
        counts[role] = n + 1
        out[key] = f"{PREFIX[role]}{n}"
    return out


def canonical(text: str) -> tuple:
    """(TEXT under canonical names, {name as written: its canonical name} of the names a script can
    refer to: its blocks, and its buffers, whose names schedules give the blocks they add
    (`A_reindex_shared`). A block and a buffer of one name (`T_add`) map as the block. TEXT is
    TVM's own printing of the program (`workload_text`), so the order of appearance, and with it
    every canonical name, follows from the program's structure alone: two programs TVM finds
    structurally equal get the same canonical text."""
    mapping = canonical_names(user_names(text))
    buffers = {name: new for (space, name), new in mapping.items() if space == "word" and new[0] in "pa"}
    blocks = {name: new for (space, name), new in mapping.items() if space == "block"}
    return renamed(text, mapping), NameMap(blocks, buffers)


class NameMap(dict):
    """{name: canonical name} of a workload's blocks and buffers, a block's where one name is both;
    `blocks` and `buffers` hold each kind's apart (`renaming.renamed_strings` tells which one a
    block named after a buffer refers to)."""

    def __init__(self, blocks: dict, buffers: dict):
        super().__init__({**buffers, **blocks})
        self.blocks, self.buffers = dict(blocks), dict(buffers)

    def __reduce__(self):  # pickled with both kinds (rows are renamed in spawned processes)
        return (NameMap, (self.blocks, self.buffers))

    def back(self) -> dict:
        """{canonical name: name}, buffers included: an answer's names given back."""
        return {**{new: old for old, new in self.buffers.items()}, **{new: old for old, new in self.items()}}


def renamed_workload(text: str, rng) -> tuple:
    """(TEXT with every buffer, block, loop and iteration variable renamed at random, the mapping
    (space, old) -> new). The program is the same: TVM's structural equality holds between the two."""
    names = list(user_names(text))
    mapping = random_mapping(names, rng)
    return renamed(text, mapping), mapping
