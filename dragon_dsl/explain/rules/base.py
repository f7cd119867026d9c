"""The explainer's state and its vocabulary: what names denote, and how entries are made.

Plain Python over `dragon_dsl.explain.info` records; no TVM. The rules of each family
(`dragon_dsl.explain.rules.*`) read this state and add facts and rationales through it.
"""

from __future__ import annotations

from dragon_dsl.explain.graph import Entry, number
from dragon_dsl.explain.info import LoopState, ScheduleInfo, TargetInfo, WorkloadInfo
from dragon_dsl.language.check import BoundInst, Program
from dragon_dsl.language.table import INST, in_group
from dragon_dsl.language.values import Ref


def refs(value) -> list[str]:
    if isinstance(value, Ref):
        return [value.name]
    if isinstance(value, list):
        out = []
        for v in value:
            out += refs(v)
        return out
    return []


class Explainer:
    def __init__(self, program: Program, wl: WorkloadInfo | None, si: ScheduleInfo | None, tgt: TargetInfo):
        self.p = program
        self.wl = wl
        self.si = si if si is not None and si.ok else None
        self.tgt = tgt
        self.facts: list[Entry] = []
        self.groups: list[tuple[Entry, list[Entry]]] = []  # rationale, its effects
        self.block_of: dict[str, str] = {}  # block variable -> block name
        self.origin: dict[str, str] = {}  # loop variable -> name of the block whose loop it is
        self.block_fact: dict[str, Entry] = {}
        self.tile: dict[str, dict] = {}  # block name -> tiling summary
        self.claimed: set[int] = set()
        # shared between the families' rules, filled in the order `build` runs them
        self.workload: Entry | None = None  # the workload fact (facts)
        self.target: Entry | None = None  # the target fact (facts)
        self.kernel_facts: list = []  # (kernel, fact) per launched kernel (facts)
        self.cache_names: dict[str, str] = {}  # cache stage variable -> its block's name (caches)
        self.cache_stages: list[int] = []  # the instructions that make cache stages (caches)
        self._trace_names()

    # -- what names denote ---------------------------------------------------------

    def _trace_names(self):
        for var, state in (self.si.final | self.si.first_seen).items() if self.si else ():
            if isinstance(state, str):
                self.block_of.setdefault(var, state)
        for _i, inst in enumerate(self.p.instructions):
            entry = inst.entry
            if entry is INST.get_sblock:
                for o in inst.outputs:
                    self.block_of.setdefault(o, inst.args.get("name", ""))
            elif entry is INST.get_loops:
                blk = self.block_name(inst.args.get("block"))
                for o in inst.outputs:
                    if blk:
                        self.origin.setdefault(o, blk)
            elif in_group(entry, "loop_making"):
                src = refs(inst.args.get("loop") or inst.args.get("loops") or inst.args.get("target"))
                blk = next((self.origin[s] for s in src if s in self.origin), None)
                if blk is None and src and src[0] in self.block_of:
                    blk = self.block_of[src[0]]
                for o in inst.outputs:
                    if blk:
                        self.origin.setdefault(o, blk)

    def block_name(self, ref) -> str | None:
        if isinstance(ref, Ref):
            return self.block_of.get(ref.name)
        return None

    def loop(self, var: str, final: bool = True) -> LoopState | None:
        if not self.si:
            return None
        state = (self.si.final.get(var) if final else None) or self.si.first_seen.get(var)
        return state if isinstance(state, LoopState) else None

    def is_cache_block(self, name: str) -> bool:
        return name in set(self.cache_names.values())

    def link(self, i: int) -> list[str]:
        """How a rationale names instruction i: its label, else its first bound result."""
        inst = self.p.instructions[i]
        if inst.label:
            return [inst.label]
        return [o for o in inst.outputs if o != "_"][:1]

    def operand_link(self, inst: BoundInst) -> list[str]:
        """An instruction without results is linked through the first result it acts on."""
        if inst.label:
            return [inst.label]
        for param in inst.entry.params:
            for r in refs(inst.args.get(param.name)):
                if r in self.p.definitions:
                    return [r]
        return []

    def links(self, indices) -> list[str]:
        out: list[str] = []
        for i in sorted(set(indices)):
            got = self.link(i) or self.operand_link(self.p.instructions[i])
            for name in got:
                if name not in out:
                    out.append(name)
        return out

    # -- entries --------------------------------------------------------------------

    def fact(self, text, about=(), **data) -> Entry:
        e = Entry("fact", text, {"about": list(about)} if about else {}, {k: lit(v) for k, v in data.items()})
        self.facts.append(e)
        return e

    def rationale(self, text, because, indices, effects) -> None:
        self.claimed |= set(indices)
        produces = self.links(indices)
        links = {}
        if because:
            links["because"] = [b for b in because if b is not None]
        if produces:
            links["produces"] = produces
        r = Entry("rationale", text, links)
        self.groups.append(
            (r, [Entry("effect", t, {"of": [r]}, {k: lit(v) for k, v in d.items()}) for t, d in effects])
        )


def lit(v):
    """Data values as literals the checker accepts: numbers rounded, tuples as lists, dict keys as text."""
    if isinstance(v, dict):
        return {str(k): lit(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [lit(x) for x in v]
    return number(v)
