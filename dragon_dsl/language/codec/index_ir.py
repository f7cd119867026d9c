"""Index maps' typed expression IR: variables, literals, operations and the map itself.

Owns the records an index map is made of (`Var`, `IntImm`, `FloatImm`, `Op`, `IndexMap`),
TVM's node fields of each operation and how operations read in lambda text (infix operators,
function names). `index_map` reads and writes them as TVM's JSON graph and as lambdas, and
re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

INDEX_DTYPE = "int32"
FLOAT_DTYPE = "float32"

# ---- IR -------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    name: str
    dtype: str = INDEX_DTYPE


@dataclass(frozen=True)
class IntImm:
    value: int
    dtype: str = INDEX_DTYPE


@dataclass(frozen=True)
class FloatImm:
    value: float
    dtype: str = FLOAT_DTYPE


@dataclass(frozen=True)
class Op:
    """An operation node; `op` is TVM's node name without its `prim.` prefix."""

    op: str
    args: tuple
    dtype: str


IExpr = Union[Var, IntImm, FloatImm, Op]


@dataclass(frozen=True)
class IndexMap:
    params: tuple  # tuple[Var, ...]
    results: tuple  # tuple[IExpr, ...]

    def free_vars(self) -> list[str]:
        bound = {p.name for p in self.params}
        seen: list[str] = []

        def walk(e):
            if isinstance(e, Var):
                if e.name not in bound and e.name not in seen:
                    seen.append(e.name)
            elif isinstance(e, Op):
                for a in e.args:
                    walk(a)

        for r in self.results:
            walk(r)
        return seen


# Node fields in TVM's order (after span and ty). Binary ops use a, b.
BINARY = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Mod",
    "FloorDiv",
    "FloorMod",
    "Min",
    "Max",
    "EQ",
    "NE",
    "LT",
    "LE",
    "GT",
    "GE",
    "And",
    "Or",
)
COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not")
OP_FIELDS = {
    **{b: ("a", "b") for b in BINARY},
    "Not": ("a",),
    "Select": ("condition", "true_value", "false_value"),
    "Cast": ("value",),
}

# How ops read in lambda text: infix operators and function names.
INFIX = {"Add": "+", "Sub": "-", "Mul": "*", "FloorDiv": "//", "FloorMod": "%"}
INFIX_OPS = {v: k for k, v in INFIX.items()}
FUNCS = {
    "Div": "truncdiv",
    "Mod": "truncmod",
    "Min": "min",
    "Max": "max",
    "EQ": "eq",
    "NE": "ne",
    "LT": "lt",
    "LE": "le",
    "GT": "gt",
    "GE": "ge",
    "And": "logical_and",
    "Or": "logical_or",
    "Not": "logical_not",
    "Select": "select",
}
FUNC_OPS = {v: k for k, v in FUNCS.items()}


class IndexMapError(ValueError):
    """An index map graph or lambda that cannot be represented."""
