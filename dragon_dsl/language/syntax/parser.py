"""Parsing: text -> (Script, diagnostics). Never raises on user text.

Well-formed text takes the fast path (`fastparse`). Otherwise Lark, the
parser of record, parses the whole text in one LALR pass with an inline
transformer (tokens are kept so every node gets its span); when that fails,
the text is cut into logical lines (a statement may continue over lines inside
brackets) and each line is parsed on its own, so one slip yields one
diagnostic and the rest of the script is still understood. Comments and blank
lines are collected by a separate scan and attached to statements as trivia.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, VisitError

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language._gc import paused_gc
from dragon_dsl.language.diagnostics import Diagnostic, Span
from dragon_dsl.language.limits import MAX_INT_DIGITS, MAX_NESTING, MAX_SCRIPT_CHARS
from dragon_dsl.language.syntax import ast, lexical
from dragon_dsl.language.syntax.errors import _error_diag, _tspan
from dragon_dsl.language.syntax.fastparse import TooDeep, fast_parse_or_too_deep

_OPEN = {"LPAR", "LSQB", "LBRACE"}
_CLOSE = {"RPAR", "RSQB", "RBRACE"}


class _BracketNewlines:
    """Post-lexer: newlines inside brackets do not end a statement."""

    always_accept = ("_NL",)

    def process(self, stream):
        depth = 0
        for tok in stream:
            if tok.type in _OPEN:
                depth += 1
            elif tok.type in _CLOSE:
                depth = max(0, depth - 1)
            elif tok.type == "_NL" and depth:
                continue
            yield tok


def _span_of(item) -> Span:
    if isinstance(item, Token):
        return _tspan(item)
    if isinstance(item, list):  # targets, args
        return _span_of(item[0]).cover(_span_of(item[-1]))
    return item.span


def _cover(children) -> Span:
    """The span from the first to the last child (tokens are kept for this)."""
    items = [c for c in children if c is not None and c != [] and not (isinstance(c, Token) and c.type == "_NL")]
    first, last = _span_of(items[0]), _span_of(items[-1])
    return Span(first.line, first.column, last.end_line, last.end_column)


def _nodes(children):
    """Children without punctuation tokens and empty optionals."""
    return [c for c in children if c is not None and not (isinstance(c, Token) and c.type != "NAME")]


class _LimitExceeded(Exception):
    """Raised by the tree builder past a limit of dragon_dsl/language/limits.py; becomes DRG005."""

    def __init__(self, span: Span, message: str):
        self.span, self.message = span, message


def _too_many_digits(n: int) -> str:
    return f"an integer literal of {n} digits; the limit is {MAX_INT_DIGITS}"


class _Builder(Transformer):
    """Builds `ast` nodes while the LALR parser reduces (kept tokens give spans)."""

    def start(self, children):
        return [c for c in children if not isinstance(c, Token)]

    def line(self, children):
        return _nodes(children)[0]

    def directive(self, children):
        name, value = _nodes(children)
        return ast.Directive(_cover(children), ast.Name(_tspan(name), str(name)), value)

    def section(self, children):
        (name,) = _nodes(children)
        return ast.Section(_cover(children), ast.Name(_tspan(name), str(name)))

    def label(self, children):
        (name,) = _nodes(children)
        return ast.Name(_tspan(name), str(name))

    def targets(self, children):
        return [ast.Name(_tspan(t), str(t)) for t in _nodes(children)]

    def assign(self, children):
        label, targets, call = [c for c in children if not isinstance(c, Token)]
        return ast.CallStmt(_cover(children), label, targets, call)

    def call_stmt(self, children):
        label, call = children
        return ast.CallStmt(_cover(children), label, [], call)

    def call(self, children):
        nodes = _nodes(children)
        name, args = nodes[0], (nodes[1] if len(nodes) > 1 else [])
        return ast.Call(_cover(children), ast.Name(_tspan(name), str(name)), args)

    def args(self, children):
        out = []
        for c in _nodes(children):
            out.append(c if isinstance(c, ast.Arg) else ast.Arg(c.span, None, c))
        return out

    def kwarg(self, children):
        name, value = _nodes(children)
        return ast.Arg(_cover(children), ast.Name(_tspan(name), str(name)), value)

    def lambda_(self, children):
        nodes = [c for c in children if not isinstance(c, Token)]
        params, body = nodes if len(nodes) == 2 else ([], nodes[0])
        return ast.Lambda(_cover(children), params or [], body)

    def plain_params(self, children):
        return [ast.Param(_tspan(t), str(t), None) for t in _nodes(children)]

    def typed_params(self, children):
        return [c for c in children if not isinstance(c, Token)]

    def typed_param(self, children):
        name, dtype = _nodes(children)
        return ast.Param(_cover(children), str(name), str(dtype))

    def _bin(op):
        def method(self, children):
            left, right = children[0], children[-1]
            return ast.BinOp(_cover(children), op, left, right)

        return method

    add, sub, mul, floordiv, floormod = _bin("+"), _bin("-"), _bin("*"), _bin("//"), _bin("%")
    del _bin

    def neg(self, children):
        return ast.Neg(_cover(children), children[-1])

    def paren(self, children):
        return children[1]

    def name(self, children):
        (tok,) = children
        return ast.Name(_tspan(tok), str(tok))

    def string(self, children):
        (tok,) = children
        return ast.Str(_tspan(tok), lexical.string_value(tok))

    def int(self, children):
        (tok,) = children
        if len(tok) > MAX_INT_DIGITS:
            raise _LimitExceeded(_tspan(tok), _too_many_digits(len(tok)))
        return ast.Int(_tspan(tok), int(tok))

    def float(self, children):
        (tok,) = children
        return ast.Float(_tspan(tok), float(tok))

    def list(self, children):
        return ast.ListExpr(_cover(children), [c for c in children if not isinstance(c, Token) and c is not None])

    def tuple(self, children):
        return ast.TupleExpr(_cover(children), [c for c in children if not isinstance(c, Token) and c is not None])

    def dict(self, children):
        return ast.DictExpr(_cover(children), [c for c in children if not isinstance(c, Token) and c is not None])

    def pair(self, children):
        key, value = children[0], children[-1]
        return (ast.Str(_tspan(key), lexical.string_value(key)), value)


def grammar_text() -> str:
    """The Lark grammar shipped with the package (grammar/dragon.lark in the repository)."""
    return resources.files("dragon_grammar").joinpath("dragon.lark").read_text(encoding="utf-8")


_TERMINAL_LINE = re.compile(r"^(NAME|INT|FLOAT|STRING): /.*/$", re.M)


def lark_grammar_text() -> str:
    """The grammar as Lark is built with it: the lexical rules in lexical.py's forms for
    Python's `re` (the same languages as grammar/dragon.lark's, without per-character
    backtracking state on long string literals)."""
    return _TERMINAL_LINE.sub(
        lambda m: f"{m.group(1)}: /" + lexical.LARK_TERMINALS_FAST[m.group(1)].replace("/", "\\/") + "/", grammar_text()
    )


@cache
def _parser() -> Lark:
    return Lark(
        lark_grammar_text(),
        parser="lalr",
        lexer="contextual",
        start=["start", "line"],
        keep_all_tokens=True,
        maybe_placeholders=True,
        postlex=_BracketNewlines(),
        transformer=_Builder(),
    )


# A scanner that knows strings, comments and brackets; used for comments,
# blank lines and for cutting the text into logical lines on the slow path.
_SCAN = re.compile(lexical.STRING_OPEN_RE + r"|#[^\n]*|[\[\](){}]|\\[\t \f]*\n|\n")


def _scan(text: str):
    """Return (comments, logical_lines, cut_open). comments: [(line, col, text)];
    logical_lines: [(first_line, start_offset, end_offset)]; cut_open: whether a
    statement was cut at an unindented line while a bracket was open (only then can
    the whole text parse where its statements, one by one, do not)."""
    comments = []
    logical = []
    line = 1
    line_start = 0
    depth = 0
    cut_open = False
    stmt_start, stmt_line = 0, 1
    for m in _SCAN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c == "\\":  # a line continuation: the statement goes on
            line += 1
            line_start = m.end()
        elif c == "\n":
            line += 1
            line_start = m.end()
            nxt = text[m.end() : m.end() + 1]
            if depth and nxt and nxt not in " \t\n)]}#,":
                depth = 0  # an unindented line starts a statement, even after an unclosed bracket
                cut_open = True
            if depth == 0:
                logical.append((stmt_line, stmt_start, m.start()))
                stmt_start, stmt_line = m.end(), line
        elif c == "#":
            comments.append((line, m.start() - line_start + 1, tok))
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
    logical.append((stmt_line, stmt_start, len(text)))
    return comments, logical, cut_open


def logical_lines(text: str) -> list[tuple[int, int, int]]:
    """The statements of a text as (first line, start offset, end offset), cut the way
    the parser recovers from errors: a statement continues over lines inside brackets,
    and an unindented line starts a new one. Editors use it to reparse one statement."""
    return _scan(text)[1]


def lark_parse(text: str, logical, diags: list, cut_open: bool = True) -> list:
    """Recovery: statement by statement, so one slip yields one diagnostic and the rest
    of the script is still understood.

    Each statement is parsed on its own text, by the fast parser when it can and by
    Lark (the parser of record, whose errors these are) when it cannot, and Lark's
    spans are moved to the statement's line afterwards: time in proportion to the
    text, whatever the number of statements. The whole text goes to Lark first only
    when the cut into statements may have split one (`cut_open`, see _scan).
    """
    if cut_open:
        try:
            return _parser().parse(text, start="start")
        except (UnexpectedInput, VisitError, _LimitExceeded):
            pass
    statements = []
    for first_line, start, end in logical:
        chunk = text[start:end]
        if not chunk.strip() or chunk.lstrip().startswith("#") and "\n" not in chunk.strip():
            continue
        fast = fast_parse_or_too_deep(chunk, first_line)
        if isinstance(fast, TooDeep):
            diags.append(_too_deep(Span.point(fast.line, fast.column)))
            continue
        if fast is not None:
            statements.extend(fast)
            continue
        offset = first_line - 1
        try:
            stmt = _parser().parse(chunk, start="line")
        except UnexpectedInput as exc:
            diags.append(_error_diag(exc, chunk, offset))
            continue
        except _LimitExceeded as exc:
            s = exc.span
            diags.append(
                dg.make("DRG005", Span(s.line + offset, s.column, s.end_line + offset, s.end_column), exc.message)
            )
            continue
        if offset:
            _shift_lines(stmt, offset)
        statements.append(stmt)
    return statements


def _too_deep(span: Span) -> Diagnostic:
    return dg.make(
        "DRG005",
        span,
        f"expressions nest more than {MAX_NESTING} levels deep, the limit "
        "(brackets, calls, operators and lambdas each add a level)",
    )


def _children(node):
    """The sub-nodes of a tree node (statements and expressions)."""
    t = type(node)
    if t is ast.CallStmt:
        return ([node.label] if node.label is not None else []) + node.targets + [node.call]
    if t is ast.Call:
        return [node.func] + node.args
    if t is ast.Arg:
        return [node.value] if node.name is None else [node.name, node.value]
    if t is ast.ListExpr or t is ast.TupleExpr:
        return node.items
    if t is ast.DictExpr:
        return [x for pair in node.items for x in pair]
    if t is ast.BinOp:
        return [node.left, node.right]
    if t is ast.Neg:
        return [node.operand]
    if t is ast.Lambda:
        return node.params + [node.body]
    if t is ast.Directive:
        return [node.name, node.value]
    if t is ast.Section:
        return [node.name]
    return []


def _shift_lines(stmt, offset: int) -> None:
    """Move every span of a statement parsed on its own down by `offset` lines (no recursion)."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        s = node.span
        node.span = Span(s.line + offset, s.column, s.end_line + offset, s.end_column)
        stack.extend(_children(node))


def _depth_limit(stmt):
    """The span of the first expression nested deeper than MAX_NESTING in a statement, or None.

    An expression level takes at least one character, so a statement on one line
    shorter than the limit needs no walk: the fast path pays nothing on real scripts.
    """
    s = stmt.span
    if s.line == s.end_line and s.end_column - s.column <= MAX_NESTING:
        return None
    root = stmt.call if isinstance(stmt, ast.CallStmt) else getattr(stmt, "value", None)
    if root is None:
        return None
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return node.span
        for c in _children(node):
            if type(c) is ast.Arg:  # an argument is its value: no level of its own
                stack.extend((v, depth + 1) for v in _children(c))
            else:
                stack.append((c, depth + 1))
    return None


def within_limits(statements: list, diags: list) -> list:
    """Statements nested past MAX_NESTING are left out of the tree, with a DRG005 each.

    `parse` applies it; code that builds statements with `fast_parse` itself (an editor
    reparsing one statement) applies it too, so no deeper tree reaches a tree walk."""
    out = []
    for stmt in statements:
        if stmt is None:
            continue
        span = _depth_limit(stmt)
        if span is None:
            out.append(stmt)
            continue
        diags.append(_too_deep(Span.point(span.line, span.column)))
    return out


def parse(text: str) -> tuple[ast.Script, list[Diagnostic]]:
    """Parse script text. Returns the tree (possibly partial) and syntax diagnostics."""
    if not isinstance(text, str):
        raise TypeError("parse() expects str")
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark, as some editors write
        text = text[1:]
    if len(text) > MAX_SCRIPT_CHARS:
        return ast.Script([]), [
            dg.make(
                "DRG005",
                Span.point(1, 1),
                f"the script has {len(text):,} characters; the limit is {MAX_SCRIPT_CHARS:,} (16 MiB)",
            )
        ]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    with paused_gc():  # a tree is acyclic: reference counting frees it (see dragon_dsl/language/_gc.py)
        return _parse(text)


def _parse(text: str) -> tuple[ast.Script, list[Diagnostic]]:
    comments, logical, cut_open = _scan(text)
    diags: list[Diagnostic] = []
    statements = fast_parse_or_too_deep(text)
    if not isinstance(statements, list):
        statements = lark_parse(text, logical, diags, cut_open)
    script = ast.Script(within_limits(statements, diags))
    _attach_trivia(script, text, comments)
    return script, sorted(diags, key=lambda d: (d.span.line, d.span.column))


def _attach_trivia(script: ast.Script, text: str, comments) -> None:
    """Give each statement its comments and blank-line flag.

    Own-line comments above a statement lead it; a comment on a statement's
    last line trails it; a comment inside a statement spread over several
    lines joins the leading comments, so the formatter never drops one.
    """
    lines = text.split("\n")

    def blank(lineno: int) -> bool:  # 1-based
        return 1 <= lineno <= len(lines) and not lines[lineno - 1].strip()

    ci = 0
    prev_end = 0
    for stmt in script.statements:
        trivia = ast.Trivia()
        first, end = stmt.span.line, stmt.span.end_line
        leading: list[tuple[int, str]] = []
        while ci < len(comments) and comments[ci][0] <= end:
            line, _col, body = comments[ci]
            if line == end and line >= first:
                trivia.trailing = body
            else:
                leading.append((line, body))
            ci += 1
        trivia.leading = [b for _, b in leading]
        top = leading[0][0] if leading and leading[0][0] < first else first
        trivia.blank_before = prev_end > 0 and blank(top - 1)
        stmt.trivia = trivia
        prev_end = end
    rest = comments[ci:]
    script.trailing_comments = [b for _, _, b in rest]
    if rest:
        script.trailing_blank = prev_end > 0 and blank(rest[0][0] - 1)
