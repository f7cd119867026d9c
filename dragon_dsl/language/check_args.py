"""The checker's typing of one argument: literals (`literal`, `int_`), and an argument against its
parameter's type from the table (`typed`: references, factors, scopes, domains, buffers, index
maps, any value). A mixin of `dragon_dsl.language.check.Checker`, which owns the state it reads
(`kinds`, `extents`) and `report`/`ref`."""

from __future__ import annotations

import math

from dragon_dsl.language.check_words import _CONSTANTS, _Bad, _closest, _describe, _did_you_mean, in_domain
from dragon_dsl.language.codec import index_map as imap
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import DOMAINS, REF_KINDS, STORAGE_SCOPES, Instruction, Param
from dragon_dsl.language.values import Buffer


class ArgumentTyping:
    def literal(self, e, what: str):
        """A plain literal: None, bool, int, float, str, list or dict of literals."""
        if isinstance(e, ast.Name) and e.id in _CONSTANTS:
            return _CONSTANTS[e.id]
        if isinstance(e, (ast.Int, ast.Float, ast.Str)):
            return e.value
        if isinstance(e, ast.Neg) and isinstance(e.operand, (ast.Int, ast.Float)):
            return -e.operand.value
        if isinstance(e, ast.Neg) and isinstance(e.operand, ast.Name) and e.operand.id == "inf":
            return -math.inf
        if isinstance(e, ast.ListExpr):
            return [self.literal(x, what) for x in e.items]
        if isinstance(e, ast.DictExpr):
            return self.dict_literal(e, what)
        if isinstance(e, (ast.BinOp, ast.Neg)):
            raise _Bad("DRG208", e.span, f"{what}: arithmetic is only allowed inside an index map (lambda)")
        raise _Bad("DRG102", e.span, f"{what} expects a literal, but got {_describe(e)}")

    def dict_literal(self, e: ast.DictExpr, what: str) -> dict:
        out = {}
        for k, v in e.items:
            if k.value in out:
                raise _Bad("DRG205", k.span, f'{what}: key "{k.value}" is given twice')
            if isinstance(v, ast.Name) and v.id not in _CONSTANTS:
                raise _Bad(
                    "DRG102",
                    v.span,
                    f"{what}: a dict value cannot be a variable ('{v.id}'); TVM stores dicts as plain data",
                )
            out[k.value] = self.literal(v, what)
        return out

    def int_(self, e, what: str) -> int:
        v = self.literal(e, what)
        if type(v) is not int:
            raise _Bad("DRG102", e.span, f"{what} expects an integer, but got {_describe(e)}")
        return v

    # -- typing one argument ----------------------------------------------------------

    def typed(self, param: Param, e, entry: Instruction):
        what = f"{entry.name}: '{param.name}'"
        t = param.type
        if t in REF_KINDS:
            return self.ref(e, REF_KINDS[t], what)
        if t == "loop|list[block]":
            if isinstance(e, ast.ListExpr):
                return [self.ref(x, ("block",), what) for x in e.items]
            return self.ref(e, ("loop",), what)
        if t == "list[block]":
            if not isinstance(e, ast.ListExpr):
                raise _Bad("DRG102", e.span, f"{what} expects a list of blocks, but got {_describe(e)}")
            return [self.ref(x, ("block",), what) for x in e.items]
        if t == "list[factor]":
            if not isinstance(e, ast.ListExpr):
                raise _Bad("DRG102", e.span, f"{what} expects a list of factors, but got {_describe(e)}")
            out = [self.factor(x, what) for x in e.items]
            if not out:
                raise _Bad("DRG207", e.span, f"{what} needs at least one factor")
            if sum(1 for x in out if x is None) > 1:
                raise _Bad("DRG207", e.span, f"{what}: at most one factor can be None (inferred)")
            return out
        if t in ("list[int]", "list[float]"):
            if not isinstance(e, ast.ListExpr):
                raise _Bad("DRG102", e.span, f"{what} expects a list, but got {_describe(e)}")
            # Probabilities are floats, but MetaSchedule's database writes 1.0 as 1: an
            # integer stays an integer so the round trip is exact; TVM reads both.
            allowed = (int,) if t == "list[int]" else (int, float)
            out = []
            for x in e.items:
                v = self.literal(x, what)
                if type(v) not in allowed:
                    word = "integers" if t == "list[int]" else "numbers"
                    raise _Bad("DRG102", x.span, f"{what} expects a list of {word}, but got {_describe(x)}")
                out.append(v)
            return out
        if t == "int":
            return self.int_(e, what)
        if t == "float":
            v = self.literal(e, what)
            if type(v) is not float:
                raise _Bad("DRG102", e.span, f"{what} expects a float, but got {_describe(e)}")
            return v
        if t == "bool":
            v = self.literal(e, what)
            # A bool parameter is written the way TVM writes it for this kind: True
            # becomes 1 where TVM writes 1/0; a 0/1 literal stays an integer, so the
            # MetaSchedule database form (Split's 1/0) survives a round trip.
            if type(v) is bool:
                return v if param.bool_json == "bool" else int(v)
            if type(v) is int and v in (0, 1):
                return v
            raise _Bad("DRG102", e.span, f"{what} expects True or False, but got {_describe(e)}")
        if t in ("str", "scope", "thread", "dtype", "buffer_kind"):
            if not isinstance(e, ast.Str):
                raise _Bad("DRG102", e.span, f"{what} expects a string, but got {_describe(e)}")
            self.domain(t, e, what)
            return e.value
        if t == "buffer":
            if (
                isinstance(e, ast.Call)
                and e.func.id in ("read", "write")
                and len(e.args) == 1
                and e.args[0].name is None
            ):
                idx = self.int_(e.args[0].value, what)
                if idx < 0:
                    raise _Bad("DRG207", e.args[0].span, f"{what}: a buffer index cannot be negative")
                return Buffer(e.func.id, idx)
            raise _Bad("DRG102", e.span, f"{what} expects read(i) or write(i), but got {_describe(e)}")
        if t in ("index_map", "index_map?"):
            if t.endswith("?") and isinstance(e, ast.Name) and e.id == "None":
                return None
            if not isinstance(e, ast.Lambda):
                raise _Bad("DRG102", e.span, f"{what} expects an index map (a lambda), but got {_describe(e)}")
            m, diags = imap.from_lambda(e, self.is_value)
            if diags:
                raise _Bad(diags[0].code, diags[0].span, f"{what}: {diags[0].message}")
            for name in m.free_vars():
                self.used.add(name)
            return m
        if t == "any":
            return self.any_value(e, what)
        raise AssertionError(f"unknown type {t!r} in the instruction table")  # pragma: no cover

    def is_value(self, name: str) -> bool:
        return self.kinds.get(name) == "value"

    def factor(self, e, what):
        if isinstance(e, ast.Name) and e.id == "None":
            return None
        if isinstance(e, ast.Name):
            return self.ref(e, ("value",), what)
        if isinstance(e, (ast.BinOp, ast.Neg)) and not (isinstance(e, ast.Neg) and isinstance(e.operand, ast.Int)):
            raise _Bad(
                "DRG208",
                e.span,
                f"{what}: a factor must be a sampled value, an integer or None; "
                "TVM cannot write a composite factor into a trace",
            )
        v = self.int_(e, what)
        if v < 1:
            raise _Bad("DRG207", e.span, f"{what}: a factor must be positive, got {v}")
        return v

    def any_value(self, e, what):
        if isinstance(e, ast.Name) and e.id not in _CONSTANTS:
            return self.ref(e, ("value",), what)
        if isinstance(e, ast.ListExpr):
            return [self.any_value(x, what) for x in e.items]
        return self.literal(e, what)

    def domain(self, t, e: ast.Str, what):
        v = e.value
        if t == "scope":
            if in_domain(t, v):
                return
            hint = _closest(v, STORAGE_SCOPES)
            raise _Bad("DRG207", e.span, f"{what}: '{v}' is not a storage scope{_did_you_mean(hint)}", suggestion=hint)
        allowed = DOMAINS.get(t)
        if not in_domain(t, v):
            hint = _closest(v, allowed)
            word = {"thread": "a thread axis", "dtype": "a data type", "buffer_kind": '"read" or "write"'}[t]
            raise _Bad("DRG207", e.span, f"{what}: '{v}' is not {word}{_did_you_mean(hint)}", suggestion=hint)
