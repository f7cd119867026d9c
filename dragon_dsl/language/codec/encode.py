"""Encoding: a checked program -> TVM trace JSON `[instructions, decisions]`.

Output names are derived deterministically, as TVM derives them: one counter
over all results in order, prefixed by kind (`b` block, `l` loop, `v` value),
so a script may use readable names and still encode to the trace TVM writes.
The explanation graph is not read here: it never changes the trace.
"""

from __future__ import annotations

from dragon_dsl.language.check import DISCARD, Program
from dragon_dsl.language.codec import index_map as imap
from dragon_dsl.language.table import RESULT_PREFIX, Instruction, Param
from dragon_dsl.language.values import Ref

PREFIX = RESULT_PREFIX


def _input(value, names: dict[str, str]):
    """A value as TVM writes it among an instruction's inputs (TranslateInputRVs)."""
    if isinstance(value, Ref):
        return names[value.name]
    if value is None:
        return "None"
    if isinstance(value, str):
        return '"' + value + '"'  # TVM wraps string inputs in one pair of quotes, unescaped
    if isinstance(value, list):
        return [_input(v, names) for v in value]
    if isinstance(value, imap.IndexMap):
        return imap.to_graph(_rename_free(value, names))
    return value  # int, float, bool, dict (dicts are written as they are)


def _attr(value):
    """A value as TVM writes it among an instruction's attributes (as is)."""
    if isinstance(value, imap.IndexMap):
        return imap.to_graph(value, indent=2)
    return value


def _rename_free(m: imap.IndexMap, names: dict[str, str]) -> imap.IndexMap:
    free = m.free_vars()
    if not free:
        return m
    mapping = {n: names[n] for n in free}

    def sub(e):
        if isinstance(e, imap.Var) and e.name in mapping and all(e != p for p in m.params):
            return imap.Var(mapping[e.name], e.dtype)
        if isinstance(e, imap.Op):
            return imap.Op(e.op, tuple(sub(a) for a in e.args), e.dtype)
        return e

    return imap.IndexMap(m.params, tuple(sub(r) for r in m.results))


def _place(entry: Instruction, param: Param, value, inputs: dict, rest: list, attrs: dict, names):
    slot = param.slot
    if slot.section == "decision":
        return
    if slot.section == "inputs":
        if slot.rest:
            rest.extend(_input(v, names) for v in value)
        elif isinstance(slot.index, tuple):
            i, j = slot.index
            inputs[i], inputs[j] = value.index, value.bit
        else:
            inputs[slot.index] = _input(value, names)
    else:
        if isinstance(slot.index, tuple):
            i, j = slot.index
            attrs[i], attrs[j] = value.index, value.bit
        else:
            attrs[slot.index] = _attr(value)


def encode(program: Program) -> list:
    names: dict[str, str] = {}
    counter = 0
    insts: list = []
    decisions: list = []
    for inst in program.instructions:
        entry = inst.entry
        inputs: dict[int, object] = {}
        rest: list = []
        attrs: dict[int, object] = {}
        for p in entry.params:
            _place(entry, p, inst.value(p), inputs, rest, attrs, names)
        in_list = [inputs[i] for i in sorted(inputs)] + rest
        at_list = [attrs[i] for i in range(entry.n_attrs)]
        outs = []
        for name in inst.outputs:
            kind = program.definitions[name][0] if name in program.definitions else entry.results.kind
            tvm_name = f"{PREFIX[kind]}{counter}"
            counter += 1
            if name != DISCARD:
                names[name] = tvm_name
            outs.append(tvm_name)
        index = len(insts)
        insts.append([entry.kind, in_list, at_list, outs])
        if entry.decision is not None and inst.args.get("decision") is not None:
            decisions.append([index, inst.args["decision"]])
    return [insts, decisions]
