"""A fast recursive-descent parser for well-formed scripts.

The Lark grammar (grammar/dragon.lark) is the language's definition and the
parser of record: it reports syntax errors and recovers from them. Lark's
pure-Python LALR driver costs about 8 us per token, too slow for a
1,000-instruction script in an editor's keystroke budget, so well-formed text
takes this path first: one compiled regular expression tokenizes, a small
recursive descent builds exactly the tree Lark's transformer builds (same
nodes, same spans). On anything unexpected it gives up (returns None) and
Lark parses the text instead, so errors are always Lark's. A differential
test holds the two parsers equal on generated, real and mutated scripts.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.limits import MAX_INT_DIGITS, MAX_NESTING
from dragon_dsl.language.syntax import ast, lexical

_TOKEN = re.compile(
    r"""
    (?P<NL>(?:\n[\t \f]*)+)
  | (?P<WS>[\t \f]+)
  | (?P<COMMENT>\#[^\n]*)
  | (?P<CONT>\\[\t \f]*\n)
  | (?P<FLOAT>"""
    + lexical.FLOAT
    + r""")
  | (?P<INT>"""
    + lexical.INT
    + r""")
  | (?P<NAME>"""
    + lexical.NAME
    + r""")
  | (?P<STRING>"""
    + lexical.STRING_RE
    + r""")
  | (?P<OP>//|[-+*%=:,()\[\]{}])
    """,
    re.VERBOSE,
)


class _GiveUp(Exception):
    pass


class TooDeep(NamedTuple):
    """What `fast_parse` returns for text whose brackets nest past MAX_NESTING: where the
    first bracket past the limit opens. No parser needs to build such a statement."""

    line: int
    column: int


class _TooDeep(Exception):
    def __init__(self, where: TooDeep):
        self.where = where


def _tokens(text: str, first_line: int = 1):
    """(kind, value, line, col, end_col) tuples; newlines inside brackets dropped, as Lark's post-lexer does."""
    out = []
    append = out.append
    line, line_start, depth, expected = first_line, 0, 0, 0
    for m in _TOKEN.finditer(text):
        start = m.start()
        if start != expected:  # a character no token matches: let Lark report it
            raise _GiveUp
        kind = m.lastgroup
        value = m.group()
        expected = m.end()
        if kind == "NAME":
            col = start - line_start + 1
            append(("lambda" if value == "lambda" else "NAME", value, line, col, col + len(value)))
        elif kind == "OP":
            if value in "([{":
                depth += 1
                if depth > MAX_NESTING:
                    raise _TooDeep(TooDeep(line, start - line_start + 1))
            elif value in ")]}":
                depth = max(0, depth - 1)
            col = start - line_start + 1
            append((value, value, line, col, col + len(value)))
        elif kind == "WS" or kind == "COMMENT":
            continue
        elif kind == "NL":
            if depth == 0:
                append(("NL", value, line, start - line_start + 1, 0))
            line += value.count("\n")
            line_start = start + value.rfind("\n") + 1
        elif kind == "CONT":
            line += 1
            line_start = expected
        else:
            if kind == "INT" and len(value) > MAX_INT_DIGITS:
                raise _GiveUp
            col = start - line_start + 1
            append((kind, value, line, col, col + len(value)))
    if expected != len(text):
        raise _GiveUp
    append(("EOF", "", line, expected - line_start + 1, 0))
    return out


_SIMPLE = {"NAME", "INT", "STRING"}
_CLOSERS = {",", ")", "]", "}"}


class _Parser:
    def __init__(self, toks):
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0):
        return self.toks[self.i + k][0]

    def take(self, kind: str | None = None):
        tok = self.toks[self.i]
        if kind is not None and tok[0] != kind:
            raise _GiveUp
        self.i += 1
        return tok

    @staticmethod
    def span(first, last) -> Span:  # token tuples
        return Span(first[2], first[3], last[2], last[4])

    # -- statements ----------------------------------------------------------

    def script(self) -> list:
        stmts = []
        while self.peek() == "NL":
            self.i += 1
        while self.peek() != "EOF":
            stmts.append(self.statement())
            if self.peek() == "EOF":
                break
            self.take("NL")
        return stmts

    def statement(self):
        t0 = self.take("NAME")
        nxt = self.peek()
        if nxt == ":":
            colon = self.take()
            if self.peek() in ("NL", "EOF"):
                return ast.Section(self.span(t0, colon), _name(t0))
            t1 = self.take("NAME")
            return self.assign_or_call(t1, _name(t0), t0)  # the label's span is its name, as in Lark's tree
        if nxt in ("STRING", "INT", "FLOAT", "[", "{"):
            value = self.literal()
            return ast.Directive(Span(t0[2], t0[3], value.span.end_line, value.span.end_column), _name(t0), value)
        return self.assign_or_call(t0, None, t0)

    def assign_or_call(self, t0, label, first):
        if self.peek() == "(":
            call = self.call(t0)
            return ast.CallStmt(_cover(first, call.span), label, [], call)
        targets = [_name(t0)]
        while self.peek() == ",":
            self.i += 1
            if self.peek() == "=":
                break
            targets.append(_name(self.take("NAME")))
        self.take("=")
        call = self.call(self.take("NAME"))
        return ast.CallStmt(_cover(first, call.span), label, targets, call)

    # -- expressions -----------------------------------------------------------

    def call(self, name_tok) -> ast.Call:
        self.take("(")
        args = []
        while self.peek() != ")":
            if self.peek() == "NAME" and self.peek(1) == "=":
                kt = self.take()
                self.i += 1
                value = self.expr()
                args.append(ast.Arg(Span(kt[2], kt[3], value.span.end_line, value.span.end_column), _name(kt), value))
            else:
                value = self.expr()
                args.append(ast.Arg(value.span, None, value))
            if self.peek() == ",":
                self.i += 1
                if self.peek() == ",":
                    raise _GiveUp
            elif self.peek() != ")":
                raise _GiveUp
        close = self.take(")")
        return ast.Call(self.span(name_tok, close), _name(name_tok), args)

    def expr(self):
        toks, i = self.toks, self.i
        kind = toks[i][0]
        if kind in _SIMPLE and toks[i + 1][0] in _CLOSERS:  # the common case: a bare name or literal
            t = toks[i]
            self.i = i + 1
            sp = Span(t[2], t[3], t[2], t[4])
            if kind == "NAME":
                return ast.Name(sp, t[1])
            if kind == "INT":
                return ast.Int(sp, int(t[1]))
            return ast.Str(sp, lexical.string_value(t[1]))
        if kind == "lambda":
            return self.lambda_()
        return self.sum()

    def lambda_(self):
        lt = self.take("lambda")
        params = []
        if self.peek() == "(":
            self.i += 1
            while True:
                nt = self.take("NAME")
                self.take(":")
                dt = self.take("NAME")
                params.append(ast.Param(self.span(nt, dt), nt[1], dt[1]))
                if self.peek() == ",":
                    self.i += 1
                    continue
                self.take(")")
                break
        elif self.peek() == "NAME":
            while True:
                nt = self.take("NAME")
                params.append(ast.Param(self.span(nt, nt), nt[1], None))
                if self.peek() != ",":
                    break
                self.i += 1
        self.take(":")
        body = self.expr()
        return ast.Lambda(_cover(lt, body.span), params, body)

    def sum(self):
        left = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()[0]
            right = self.product()
            left = ast.BinOp(left.span.cover(right.span), op, left, right)
        return left

    def product(self):
        left = self.unary()
        while self.peek() in ("*", "//", "%"):
            op = self.take()[0]
            right = self.unary()
            left = ast.BinOp(left.span.cover(right.span), op, left, right)
        return left

    def unary(self):
        if self.toks[self.i][0] != "-":
            return self.atom()
        signs = []
        while self.peek() == "-":  # a loop, not recursion: `- - - x` may be long
            signs.append(self.take())
        operand = self.atom()
        for t in reversed(signs):
            operand = ast.Neg(_cover(t, operand.span), operand)
        return operand

    def atom(self):
        k = self.peek()
        if k == "NAME":
            t = self.take()
            if self.peek() == "(":
                return self.call(t)
            return _name(t)
        if k == "(":
            return self.paren()
        return self.literal()

    def paren(self):
        open_ = self.take("(")
        if self.peek() == ")":
            return ast.TupleExpr(self.span(open_, self.take()), [])
        first = self.expr()
        if self.peek() == ")":
            self.i += 1
            return first
        items = [first]
        while self.peek() == ",":
            self.i += 1
            if self.peek() == ")":
                break
            items.append(self.expr())
        close = self.take(")")
        return ast.TupleExpr(self.span(open_, close), items)

    def literal(self):
        t = self.toks[self.i]
        k = t[0]
        if k == "STRING":
            self.i += 1
            return ast.Str(self.span(t, t), lexical.string_value(t[1]))
        if k == "INT":
            self.i += 1
            return ast.Int(self.span(t, t), int(t[1]))
        if k == "FLOAT":
            self.i += 1
            return ast.Float(self.span(t, t), float(t[1]))
        if k == "[":
            self.i += 1
            items = []
            while self.peek() != "]":
                items.append(self.expr())
                if self.peek() == ",":
                    self.i += 1
                elif self.peek() != "]":
                    raise _GiveUp
            close = self.take("]")
            return ast.ListExpr(self.span(t, close), items)
        if k == "{":
            self.i += 1
            items = []
            while self.peek() != "}":
                kt = self.take("STRING")
                self.take(":")
                items.append((ast.Str(self.span(kt, kt), lexical.string_value(kt[1])), self.expr()))
                if self.peek() == ",":
                    self.i += 1
                elif self.peek() != "}":
                    raise _GiveUp
            close = self.take("}")
            return ast.DictExpr(self.span(t, close), items)
        raise _GiveUp


def _name(tok) -> ast.Name:
    return ast.Name(Span(tok[2], tok[3], tok[2], tok[4]), tok[1])


def _cover(first_tok, last: Span) -> Span:
    return Span(first_tok[2], first_tok[3], last.end_line, last.end_column)


def fast_parse(text: str, first_line: int = 1) -> list | None:
    """The statements of well-formed text, or None when Lark should decide.

    `first_line`: the line number of the text's first line (the parser reparses one
    statement of a larger text on its own).
    """
    out = fast_parse_or_too_deep(text, first_line)
    return None if isinstance(out, TooDeep) else out


def fast_parse_or_too_deep(text: str, first_line: int = 1) -> list | TooDeep | None:
    """As `fast_parse`, but brackets nested past MAX_NESTING give TooDeep (where), so the
    parser reports the limit without building the statement at all."""
    try:
        return _Parser(_tokens(text, first_line)).script()
    except _TooDeep as exc:
        return exc.where
    except (_GiveUp, IndexError, ValueError, RecursionError):
        return None
