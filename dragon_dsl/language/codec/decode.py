"""Decoding: TVM trace JSON -> a canonical script (syntax tree).

The trace is validated as it is read, so that what TVM would mishandle (an
unknown kind, a reused output name, a decision index out of range or on an
instruction without a decision, an input of the wrong kind) is rejected here
with a message naming the instruction, before anything reaches TVM.
"""

from __future__ import annotations

from typing import Any

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language.canonical import canonical_call, value_ast
from dragon_dsl.language.check import in_domain
from dragon_dsl.language.codec import index_map as imap
from dragon_dsl.language.codec.encode import PREFIX
from dragon_dsl.language.diagnostics import NOWHERE, Diagnostic
from dragon_dsl.language.limits import MAX_NESTING
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import BY_KIND, REF_KINDS, Instruction, Param
from dragon_dsl.language.values import Buffer, Ref


class _Reject(Exception):
    def __init__(self, code: str, message: str):
        self.code, self.message = code, message


def _is_int(x) -> bool:
    return type(x) is int


def _deeper_than(raw, limit: int) -> bool:
    """Whether JSON lists and dicts nest more than `limit` levels (the outer list counts as
    the call, as in the script the instruction becomes); no recursion."""
    stack = [(raw, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
    return False


class Decoder:
    def __init__(self):
        self.names: dict[str, tuple[str, str]] = {}  # TVM name -> (script name, kind)
        self.counter = 0

    # -- values --------------------------------------------------------------------

    def ref(self, raw, kinds: tuple[str, ...]) -> Ref:
        if not isinstance(raw, str):
            raise _Reject("DRG501", f"expected a variable name, got {raw!r}")
        if raw not in self.names:
            raise _Reject("DRG501", f"'{raw}' is not bound by an earlier instruction")
        name, kind = self.names[raw]
        if kind not in kinds:
            raise _Reject("DRG501", f"'{raw}' is a {kind}, but a {' or '.join(kinds)} is expected")
        return Ref(name, kind)

    def index_map(self, raw) -> imap.IndexMap:
        if not isinstance(raw, str):
            raise _Reject("DRG501", f"expected an index map (a JSON graph string), got {raw!r}")
        try:
            m = imap.from_graph(raw)
        except imap.IndexMapError as exc:
            raise _Reject("DRG501", f"index map: {exc}") from None
        free = m.free_vars()
        if not free:
            return m
        mapping = {}
        for f in free:
            mapping[f] = self.ref(f, ("value",)).name

        def sub(e):
            if isinstance(e, imap.Var) and e.name in mapping and e not in m.params:
                return imap.Var(mapping[e.name], e.dtype)
            if isinstance(e, imap.Op):
                return imap.Op(e.op, tuple(sub(a) for a in e.args), e.dtype)
            return e

        return imap.IndexMap(m.params, tuple(sub(r) for r in m.results))

    def input_str(self, raw) -> str:
        if isinstance(raw, str) and len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
            return raw[1:-1]
        raise _Reject("DRG501", f"expected a quoted string input, got {raw!r}")

    def any_input(self, raw):
        """An annotation value among inputs, read the way TVM reads inputs."""
        if isinstance(raw, str):
            if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
                return raw[1:-1]
            if raw == "None":
                return None
            if raw.startswith("{") and raw.endswith("}"):
                raise _Reject("DRG505", "an index map as an annotation value is not supported")
            return self.ref(raw, ("value",))
        if isinstance(raw, list):
            return [self.any_input(x) for x in raw]
        if raw is None or isinstance(raw, (bool, int, float, dict)):
            return raw
        raise _Reject("DRG501", f"unexpected annotation value {raw!r}")

    def typed(self, p: Param, raw, section: str):
        t = p.type
        if t in REF_KINDS:
            return self.ref(raw, REF_KINDS[t])
        if t == "loop|list[block]":
            if isinstance(raw, list):
                return [self.ref(x, ("block",)) for x in raw]
            return self.ref(raw, ("loop",))
        if t == "list[block]":
            if not isinstance(raw, list):
                raise _Reject("DRG501", f"'{p.name}' expects a list of blocks, got {raw!r}")
            return [self.ref(x, ("block",)) for x in raw]
        if t == "list[factor]":
            out = []
            for x in raw:
                if x == "None":
                    out.append(None)
                elif _is_int(x):
                    if x < 1:  # as the checker holds it
                        raise _Reject("DRG207", f"'{p.name}': a factor must be positive, got {x}")
                    out.append(x)
                else:
                    out.append(self.ref(x, ("value",)))
            if not out:
                raise _Reject("DRG501", f"'{p.name}' needs at least one factor")
            return out
        if t == "list[int]":
            if not isinstance(raw, list) or not all(_is_int(x) for x in raw):
                raise _Reject("DRG501", f"'{p.name}' expects a list of integers, got {raw!r}")
            return list(raw)
        if t == "list[float]":
            if not isinstance(raw, list) or not all(type(x) in (int, float) for x in raw):
                raise _Reject("DRG501", f"'{p.name}' expects a list of numbers, got {raw!r}")
            return list(raw)
        if t == "int":
            if not _is_int(raw):
                raise _Reject("DRG501", f"'{p.name}' expects an integer, got {raw!r}")
            return raw
        if t == "bool":
            if isinstance(raw, bool) or (_is_int(raw) and raw in (0, 1)):
                return raw
            raise _Reject("DRG501", f"'{p.name}' expects a bool (true/false or 1/0), got {raw!r}")
        if t in ("str", "scope", "thread", "dtype", "buffer_kind"):
            if section == "inputs":
                value = self.input_str(raw)
            elif not isinstance(raw, str):
                raise _Reject("DRG501", f"'{p.name}' expects a string, got {raw!r}")
            else:
                value = raw
            if not in_domain(t, value):  # as the checker holds it: TVM would fail on it later
                raise _Reject("DRG207", f"'{p.name}': {value!r} is not a valid {t.replace('_', ' ')}")
            return value
        if t == "index_map":
            return self.index_map(raw)
        if t == "index_map?":
            return None if raw is None else self.index_map(raw)
        if t == "any":
            return self.any_input(raw)
        raise AssertionError(t)  # pragma: no cover

    # -- one instruction -------------------------------------------------------------------

    def instruction(self, raw, index: int, decision) -> tuple[Instruction, dict, list[str]]:
        if not isinstance(raw, list) or len(raw) != 4:
            raise _Reject("DRG501", "an instruction is [kind, inputs, attrs, outputs]")
        kind, inputs, attrs, outputs = raw
        if not isinstance(kind, str):
            raise _Reject("DRG501", f"the kind must be a string, got {kind!r}")
        entry = BY_KIND.get(kind)
        if entry is None:
            raise _Reject("DRG502", f"unknown instruction kind '{kind}' (not in TVM 0.27's 52 kinds)")
        for what, val in (("inputs", inputs), ("attrs", attrs), ("outputs", outputs)):
            if not isinstance(val, list):
                raise _Reject("DRG501", f"{kind}: {what} must be a list, got {val!r}")
        if _deeper_than(inputs, MAX_NESTING) or _deeper_than(attrs, MAX_NESTING):
            raise _Reject("DRG005", f"{kind}: values nest more than {MAX_NESTING} levels deep, the limit")
        if entry.n_inputs is not None and len(inputs) != entry.n_inputs:
            raise _Reject("DRG501", f"{kind} has {entry.n_inputs} input(s), got {len(inputs)}")
        if len(attrs) != entry.n_attrs:
            raise _Reject("DRG501", f"{kind} has {entry.n_attrs} attribute(s), got {len(attrs)}")
        args: dict[str, Any] = {}
        for p in entry.params:
            s = p.slot
            if s.section == "decision":
                if decision is not None:
                    args[p.name] = decision
                continue
            src = inputs if s.section == "inputs" else attrs
            if s.rest:
                raw_v = src[s.index :]
                if not raw_v:
                    raise _Reject("DRG501", f"{kind} needs at least one {p.type} input")
                if p.variadic:
                    args[p.name] = [self.typed(p, x, s.section) for x in raw_v]
                else:
                    args[p.name] = self.typed(p, raw_v, s.section)
            elif isinstance(s.index, tuple):
                i, j = s.index
                idx, bit = src[i], src[j]
                if not _is_int(idx) or idx < 0 or bit not in (0, 1) or isinstance(bit, bool):
                    raise _Reject("DRG501", f"{kind}: expected a buffer index and a 0/1 side, got {idx!r}, {bit!r}")
                args[p.name] = Buffer("read" if bit == 0 else "write", idx)
            else:
                args[p.name] = self.typed(p, src[s.index], s.section)
        # decisions
        if decision is not None:
            self.check_decision(entry, args, decision)
        # outputs
        expected = entry.results.expected(args)
        if expected is not None and len(outputs) != expected:
            raise _Reject("DRG501", f"{kind} binds {expected} result(s), but the trace lists {len(outputs)}")
        names = []
        for o in outputs:
            if not isinstance(o, str) or not o:
                raise _Reject("DRG501", f"{kind}: output names must be strings, got {o!r}")
            if o in self.names:
                raise _Reject(
                    "DRG503",
                    f"{kind}: output '{o}' is already bound by an earlier instruction "
                    "(TVM would keep the first binding)",
                )
            kind_of = entry.results.kind
            script_name = "_" if o == "_" else f"{PREFIX[kind_of]}{self.counter}"
            self.counter += 1
            if o != "_":
                self.names[o] = (script_name, kind_of)
            names.append(script_name)
        return entry, args, names

    def check_decision(self, entry: Instruction, args: dict, d):
        shape = entry.decision
        if shape in ("index", "location"):
            if not _is_int(d):
                raise _Reject("DRG504", f"{entry.kind}: the decision must be an integer, got {d!r}")
            if shape == "index" and not 0 <= d < len(args["candidates"]):
                raise _Reject(
                    "DRG504", f"{entry.kind}: decision {d} is out of range for {len(args['candidates'])} candidate(s)"
                )
            if shape == "location" and d < -2:
                raise _Reject("DRG504", f"{entry.kind}: decision {d} must be -2, -1 or a loop index")
        elif shape == "tile":
            if not isinstance(d, list) or not all(_is_int(x) and x >= 1 for x in d):
                raise _Reject("DRG504", f"{entry.kind}: the decision must be a list of positive integers, got {d!r}")
            if len(d) != args["n"]:
                raise _Reject("DRG504", f"{entry.kind}: the decision has {len(d)} factor(s), but n={args['n']}")


def _header(workload, target) -> list:
    out = []
    if workload is not None:
        out.append(ast.Directive(NOWHERE, ast.Name(NOWHERE, "workload"), ast.Str(NOWHERE, str(workload))))
    if target is not None:
        if hasattr(target, "export") and not isinstance(target, (str, dict)):
            target = dict(target.export())
        out.append(ast.Directive(NOWHERE, ast.Name(NOWHERE, "target"), value_ast(target)))
    return out


def decode(trace_json, *, workload=None, target=None) -> tuple[ast.Script | None, list[Diagnostic]]:
    """Read trace JSON `[instructions, decisions]` into a canonical script tree."""
    if not isinstance(trace_json, (list, tuple)) or len(trace_json) != 2:
        return None, [dg.make("DRG501", NOWHERE, "a trace is [instructions, decisions]")]
    insts, decisions = trace_json
    if not isinstance(insts, list) or not isinstance(decisions, list):
        return None, [dg.make("DRG501", NOWHERE, "a trace is [instructions, decisions], two lists")]
    by_index: dict[int, Any] = {}
    for d in decisions:
        if not (isinstance(d, list) and len(d) == 2 and _is_int(d[0])):
            return None, [dg.make("DRG504", NOWHERE, f"a decision is [instruction index, value], got {d!r}")]
        i, value = d
        if not 0 <= i < len(insts):
            return None, [dg.make("DRG504", NOWHERE, f"decision for instruction {i}, but the trace has {len(insts)}")]
        if i in by_index:
            return None, [dg.make("DRG504", NOWHERE, f"instruction {i} has two decisions")]
        kind = insts[i][0] if isinstance(insts[i], list) and insts[i] else None
        entry = BY_KIND.get(kind) if isinstance(kind, str) else None
        if entry is not None and entry.decision is None:
            return None, [dg.make("DRG504", NOWHERE, f"instruction {i} ({kind}) takes no decision")]
        by_index[i] = value
    dec = Decoder()
    statements: list = _header(workload, target)
    for i, raw in enumerate(insts):
        try:
            entry, args, names = dec.instruction(raw, i, by_index.get(i))
        except _Reject as r:
            return None, [dg.make(r.code, NOWHERE, f"instruction {i}: {r.message}")]
        except (TypeError, IndexError, KeyError, AttributeError) as exc:
            return None, [dg.make("DRG501", NOWHERE, f"instruction {i}: malformed ({exc})")]
        except RecursionError:
            return None, [
                dg.make(
                    "DRG005", NOWHERE, f"instruction {i}: values nest more than {MAX_NESTING} levels deep, the limit"
                )
            ]
        if entry.section:
            statements.append(ast.Section(NOWHERE, ast.Name(NOWHERE, entry.section)))
            continue
        call = canonical_call(entry, args)
        statements.append(ast.CallStmt(NOWHERE, None, [ast.Name(NOWHERE, n) for n in names], call))
    return ast.Script(statements), []
