"""The shape of the instruction table: what one instruction entry says (`Instruction`), its
parameters (`Param`), where each lives in TVM's trace JSON (`Slot`), and what it binds
(`Results`). The entries themselves are in `instructions.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The TVM release whose trace schema this table describes.
TRACE_SCHEMA = "tvm-0.27.0.post1"
#: Written into the metadata of index-map JSON graphs the codec produces.
TVM_VERSION = "0.27.0.post1"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Slot:
    """Where a parameter lives in the instruction's JSON.

    section: "inputs", "attrs" or "decision".
    index:   position in that list; a pair (index, side) for a buffer parameter
             that is written as a buffer index followed by a read/write bit.
    rest:    the parameter is flattened into the inputs from `index` on
             (the factors of split, the loops of fuse and reorder).
    """

    section: str
    index: int | tuple[int, int] | None = None
    rest: bool = False


def In(i, rest: bool = False) -> Slot:
    return Slot("inputs", i, rest)


def At(i) -> Slot:
    return Slot("attrs", i)


DECISION = Slot("decision")


@dataclass(frozen=True)
class Param:
    """One parameter of an instruction.

    type: a type of the Dragon type language:
      block, loop, value            random variables (results of earlier instructions)
      location                      a loop or a compute location (the result of sample_compute_location,
                                    which may be the root or "inline" marker: no other instruction takes it)
      block|loop, loop|list[block]  unions
      int, float, bool, str         literals
      scope, thread, dtype          strings with a domain (storage scope, thread axis, data type)
      factor                        value, int or None (a split factor)
      buffer                        read(i) or write(i): a buffer of a block and its side
      buffer_kind                   "read" or "write"
      index_map, index_map?         a lambda (index map); `?`: or None
      any                           an annotation value
      list[T]                       a list of T
    bool_json: how TVM writes a bool of this parameter: "bool" (true/false) or "int" (1/0).
    keyword: the canonical form writes it as `name=value` (after the positional ones).
    """

    name: str
    type: str
    slot: Slot
    default: Any = REQUIRED
    doc: str = ""
    keyword: bool = False
    bool_json: str = "bool"

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def variadic(self) -> bool:
        return self.slot.rest and not self.type.startswith("list[")


@dataclass(frozen=True)
class Results:
    """The results an instruction binds.

    kind:  block, loop, value or location.
    count: an int; "n" (the value of parameter n); "factors" (one per split factor);
           "*" (any number: known only when TVM replays, e.g. get_loops).
    remainder: with "factors", one more result (the rest of the loop) when no factor
           is None: TVM's loop_partition makes len(factors) + 1 parts then.
    kinds: for results of different kinds (cache_inplace binds two blocks), a tuple.
    """

    kind: str | None = None
    count: int | str = 0
    remainder: bool = False

    def fixed(self) -> int | None:
        return self.count if isinstance(self.count, int) else None

    def expected(self, args: dict) -> int | None:
        """How many results an instruction with these typed arguments binds (None: known at replay)."""
        c = self.count
        if isinstance(c, int):
            return c
        if c == "n":
            n = args.get("n")
            return n if isinstance(n, int) else None
        if c == "factors":
            factors = args.get("factors")
            if not isinstance(factors, list) or not factors:
                return None
            return len(factors) + (1 if self.remainder and None not in factors else 0)
        return None


@dataclass(frozen=True)
class Instruction:
    name: str  # the DSL name, as written in scripts
    kind: str  # TVM's instruction kind (trace JSON position 0)
    pure: bool
    params: tuple[Param, ...]
    results: Results
    decision: str | None  # None, "index", "tile" or "location"
    doc: str
    n_inputs: int | None = None  # fixed JSON input count (None when variadic)
    n_attrs: int = 0
    section: str | None = None  # written as a section header instead of a call
    schema: str = TRACE_SCHEMA

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def signature(self) -> str:
        """`split(loop: loop, factors: list[factor], *, preserve_unit_iters: bool = True, ...) -> loop*`"""
        if self.section:
            return f"{self.section}:"
        parts = []
        star = False
        for p in self.params:
            star = star or p.variadic  # after *loops, everything is keyword-only already
            if p.keyword and not star:
                parts.append("*")
                star = True
            if p.variadic:
                parts.append(f"*{p.name}: {p.type}")
            elif p.required:
                parts.append(f"{p.name}: {p.type}")
            else:
                parts.append(f"{p.name}: {p.type} = {literal_text(p.default, p)}")
        res = ""
        if self.results.count:
            c = self.results.count
            res = f" -> {self.results.kind}" + ("" if c == 1 else f" x {c}" if isinstance(c, int) else f"[{c}]")
        return f"{self.name}({', '.join(parts)}){res}"


def literal_text(value, param: Param | None = None) -> str:
    """How a default value reads in documentation."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if param is not None and param.type == "bool" and isinstance(value, int):
        return "True" if value else "False"
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)
