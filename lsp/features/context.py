"""Where the cursor is: the statement, the call and argument around it, the word or string under it.

Completion and signature help run while the text is being typed and often does
not parse, so this reads tokens rather than the tree: it lexes the statement
around the cursor (a statement spans lines only inside brackets or after a
`\\`) and tracks the open brackets, calls and keyword arguments up to the cursor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.syntax import lexical
from dragon_dsl.language.table import BY_NAME, EXPLAIN_KINDS, Instruction, Param

#: The language's own lexical rules (`dragon_dsl.language.syntax.lexical`); a string may be unterminated here.
LEX = re.compile(
    r"""
    (?P<STR>"""
    + lexical.STRING_OPEN_RE
    + r""")
  | (?P<COMMENT>\#[^\n]*)
  | (?P<NAME>"""
    + lexical.NAME
    + r""")
  | (?P<NUM>"""
    + lexical.FLOAT
    + "|"
    + lexical.INT
    + r""")
  | (?P<OP>//|[-+*%=:,()\[\]{}\\])
  | (?P<NL>\n)
  | (?P<WS>[ \t\f]+)
  | (?P<OTHER>.)
    """,
    re.VERBOSE,
)


@dataclass
class Tok:
    kind: str
    text: str
    line: int
    col: int  # 1-based code points

    @property
    def end(self) -> int:
        return self.col + len(self.text)

    @property
    def span(self) -> Span:
        return Span(self.line, self.col, self.line, self.end)


def lex_lines(lines: list[str], first: int, last: int) -> list[Tok]:
    """Tokens of lines first..last (1-based, inclusive), NL tokens between lines; no whitespace."""
    out = []
    for ln in range(first, last + 1):
        text = lines[ln - 1] if 0 < ln <= len(lines) else ""
        for m in LEX.finditer(text):
            kind = m.lastgroup
            if kind == "WS":
                continue
            out.append(Tok(kind, m.group(), ln, m.start() + 1))
        if ln != last:
            out.append(Tok("NL", "\n", ln, len(text) + 1))
    return out


@dataclass
class Frame:
    kind: str  # call, list, dict, paren
    func: str | None = None
    func_tok: Tok | None = None
    positional: int = 0  # positional arguments before the current one
    keyword: str | None = None  # the current argument's keyword, once `name=` is typed
    keywords: set = field(default_factory=set)
    fresh: bool = True  # nothing typed yet in the current argument
    items: int = 0  # list items before the current one


@dataclass
class Context:
    line: int
    col: int
    first_line: int  # where the statement starts
    tokens: list[Tok]  # the statement's tokens before the cursor (the word under it excluded)
    frames: list[Frame]
    word: Tok | None = None  # a name under or just before the cursor
    string: Tok | None = None  # a string literal the cursor is inside
    in_comment: bool = False

    @property
    def statement_start(self) -> bool:
        """Nothing but a label and/or `targets =` before the cursor: an instruction goes here."""
        toks = [t for t in self.tokens if t.kind != "NL"]
        if not toks:
            return True
        i = 0
        if len(toks) >= 2 and toks[0].kind == "NAME" and toks[1].text == ":":
            i = 2
        if i == len(toks):
            return True
        j = i
        while j < len(toks) and toks[j].kind == "NAME":
            j += 1
            if j < len(toks) and toks[j].text == ",":
                j += 1
            else:
                break
        return j == len(toks) - 1 and toks[j].text == "=" and j > i

    @property
    def has_targets(self) -> bool:
        return any(t.text == "=" for t in self.tokens) and not self.frames

    @property
    def call(self) -> Frame | None:
        for f in reversed(self.frames):
            if f.kind == "call":
                return f
        return None

    @property
    def in_list(self) -> bool:
        """The cursor is inside a list that is itself the argument of the innermost call."""
        return bool(self.frames) and self.frames[-1].kind == "list"

    def directive(self) -> str | None:
        toks = [t for t in self.tokens if t.kind != "NL"]
        if len(toks) == 1 and toks[0].kind == "NAME" and not self.frames:
            return toks[0].text
        return None


def statement_start(lines: list[str], line: int) -> int:
    """A line at or above `line` from which lexing finds the statement (continuations are indented)."""
    start = line
    while start > 1 and start - line < 200:
        text = lines[start - 1] if start - 1 < len(lines) else ""
        prev = lines[start - 2]
        if (text[:1] in (" ", "\t", ")", "]", "}", ",") and prev.strip()) or prev.rstrip().endswith("\\"):
            start -= 1
        else:
            break
    return start


def context_at(lines: list[str], line: int, col: int) -> Context:
    """The cursor context at (line, col), both 1-based; col may be one past the line's end."""
    first = statement_start(lines, line)
    toks = lex_lines(lines, first, line)
    before: list[Tok] = []
    word = string = None
    in_comment = False
    for t in toks:
        if t.line < line or t.end < col:
            before.append(t)
            continue
        if t.line > line or t.col >= col:
            break
        # the cursor is inside the token or just after it: t.col < col <= t.end
        if t.kind == "NAME":
            word = t
            break
        if t.kind == "STR":
            if col < t.end or not _closed(t.text):
                string = t
                break
        elif t.kind == "COMMENT":
            in_comment = True
            break
        before.append(t)
    # drop what belongs to earlier statements: a newline outside brackets ends one
    stmt: list[Tok] = []
    depth = 0
    for i, t in enumerate(before):
        if t.kind == "NL":
            cont = i > 0 and before[i - 1].text == "\\"
            if depth == 0 and not cont:
                stmt = []
                continue
            continue
        if t.kind == "COMMENT":
            continue
        stmt.append(t)
        if t.text in "([{" and t.kind == "OP":
            depth += 1
        elif t.text in ")]}" and t.kind == "OP":
            depth = max(0, depth - 1)
    first_line = stmt[0].line if stmt else line
    return Context(line, col, first_line, stmt, _frames(stmt), word, string, in_comment)


def _closed(text: str) -> bool:
    if len(text) < 2 or not text.endswith('"'):
        return False
    body = text[1:-1]
    # an odd run of backslashes before the final quote escapes it
    run = len(body) - len(body.rstrip("\\"))
    return run % 2 == 0


def _frames(stmt: list[Tok]) -> list[Frame]:
    frames: list[Frame] = []
    for i, t in enumerate(stmt):
        nxt = stmt[i + 1] if i + 1 < len(stmt) else None
        top = frames[-1] if frames else None
        if t.kind == "OP" and t.text == "(":
            prev = stmt[i - 1] if i > 0 else None
            if prev is not None and prev.kind == "NAME":
                frames.append(Frame("call", prev.text, prev))
            else:
                frames.append(Frame("paren"))
            continue
        if t.kind == "OP" and t.text == "[":
            if top is not None:
                top.fresh = False
            frames.append(Frame("list"))
            continue
        if t.kind == "OP" and t.text == "{":
            if top is not None:
                top.fresh = False
            frames.append(Frame("dict"))
            continue
        if t.kind == "OP" and t.text in ")]}":
            if frames:
                frames.pop()
            continue
        if top is None:
            continue
        if t.kind == "OP" and t.text == ",":
            if top.kind == "call":
                if top.keyword is None:
                    top.positional += 1
                top.keyword = None
            elif top.kind == "list":
                top.items += 1
            top.fresh = True
            continue
        if top.kind == "call" and t.kind == "NAME" and nxt is not None and nxt.text == "=" and top.fresh:
            top.keyword = t.text
            top.keywords.add(t.text)
            continue
        if top.kind == "call" and t.kind == "OP" and t.text == "=":
            continue
        top.fresh = False
    return frames


# ---- parameters --------------------------------------------------------------------------


def positional_params(entry: Instruction) -> list[Param]:
    """Parameters in the order positional arguments bind them (as the checker binds them)."""
    return [p for p in entry.params if p.slot.section != "decision"]


def param_for(entry: Instruction, frame: Frame) -> Param | None:
    """The parameter the current argument of a call binds."""
    if frame.keyword is not None:
        return entry.param(frame.keyword)
    pos = positional_params(entry)
    for i, p in enumerate(pos):
        if p.variadic and i <= frame.positional:
            return p
    if frame.positional < len(pos):
        return pos[frame.positional]
    return None


def entry_of(frame: Frame | None):
    """The table entry (Instruction) or explanation kind a call frame names."""
    if frame is None or frame.func is None:
        return None
    return BY_NAME.get(frame.func) or EXPLAIN_KINDS.get(frame.func)
