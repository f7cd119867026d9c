"""The typed checker: gives a parsed script its meaning, from the instruction table.

`check(script)` never raises on user text. It returns a `Program` (every
instruction bound to its table entry, arguments typed) and diagnostics:
define-before-use, argument kinds, arity, attribute domains, decision shapes,
duplicate names, unused results of pure instructions and explanation links.
A program with error diagnostics must not be encoded.
"""

from __future__ import annotations

import math
from typing import Any

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language._gc import paused_gc
from dragon_dsl.language.check_args import ArgumentTyping
from dragon_dsl.language.check_explain import ExplanationChecks
from dragon_dsl.language.check_words import (
    _ARTICLE,
    _CONSTANTS,
    _Bad,
    _closest,
    _describe,
    _did_you_mean,
    in_domain,  # noqa: F401  (importers use dragon_dsl.language.check)
)
from dragon_dsl.language.diagnostics import Diagnostic, Related, Span
from dragon_dsl.language.hints import NameIndex
from dragon_dsl.language.limits import MAX_NESTING
from dragon_dsl.language.program import DISCARD, BoundInst, ExplainEntry, Program  # noqa: F401  (importers use dragon_dsl.language.check)
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import (
    BY_NAME,
    DIRECTIVES,
    EXPLAIN_KINDS,
    INST,
    RESERVED,
    SECTIONS,
    Instruction,
    Param,
    in_group,
)
from dragon_dsl.language.target_names import closest_target, target_problem
from dragon_dsl.language.values import Ref


class Checker(ArgumentTyping, ExplanationChecks):
    def __init__(self, extents: dict[str, int] | None = None):
        self.diags: list[Diagnostic] = []
        self.program = Program()
        self.kinds: dict[str, str] = {}  # variable -> kind
        self.known = NameIndex()  # the variables, for "did you mean"
        self.def_span: dict[str, Span] = {}
        self.used: set[str] = set()
        self.extents = extents or {}
        self._explain_names: dict[str, str] = {}  # explanation entry -> its kind (fact, rationale, effect)
        self._pending_links: list = []  # (kind, links) checked once the whole script is known

    # -- helpers -------------------------------------------------------------------

    def report(self, code: str, span: Span, message: str, related=(), suggestion=None):
        self.diags.append(dg.make(code, span, message, tuple(related), suggestion))

    def ref(self, e, kinds: tuple[str, ...], what: str) -> Ref:
        if not isinstance(e, ast.Name) or e.id in _CONSTANTS:
            raise _Bad(
                "DRG102", e.span, f"{what} expects {' or '.join(_ARTICLE[k] for k in kinds)}, but got {_describe(e)}"
            )
        kind = self.kinds.get(e.id)
        if kind is None:
            hint = _closest(e.id, self.known)
            raise _Bad(
                "DRG101", e.span, f"'{e.id}' is not defined before this use{_did_you_mean(hint)}", suggestion=hint
            )
        self.used.add(e.id)
        if kind == "unknown":  # bound by an instruction that did not check: do not cascade
            return Ref(e.id, kinds[0])
        if kind not in kinds:
            raise _Bad(
                "DRG102",
                e.span,
                f"{what} expects {' or '.join(_ARTICLE[k] for k in kinds)}, but '{e.id}' is {_ARTICLE[kind]}",
                [Related(self.def_span[e.id], f"'{e.id}' is defined here")],
            )
        return Ref(e.id, kind)

    # -- binding a call to its parameters ---------------------------------------------

    def bind(self, entry: Instruction, call: ast.Call) -> dict[str, Any] | None:
        params = list(entry.params)
        given: dict[str, tuple[Param, Any]] = {}
        ok = True
        positional = [p for p in params if p.slot.section != "decision"]
        pi = 0
        variadic_items: list = []
        variadic_param = next((p for p in params if p.variadic), None)
        seen_keyword = False
        for arg in call.args:
            if arg.name is None:
                if seen_keyword:
                    self.report(
                        "DRG002", arg.span, f"{entry.name}: a positional argument cannot follow a keyword argument"
                    )
                    ok = False
                    continue
                if pi < len(positional) and positional[pi].variadic:
                    variadic_items.append(arg.value)
                    continue
                if pi >= len(positional):
                    self.report(
                        "DRG203",
                        arg.span,
                        f"{entry.name} takes at most {len(positional)} positional argument(s): {entry.signature()}",
                    )
                    ok = False
                    continue
                p = positional[pi]
                pi += 1
                given[p.name] = (p, arg.value)
            else:
                seen_keyword = True
                p = entry.param(arg.name.id)
                if p is None or p.variadic:
                    hint = _closest(arg.name.id, [q.name for q in params if not q.variadic])
                    self.report(
                        "DRG204",
                        arg.name.span,
                        f"{entry.name} has no parameter '{arg.name.id}'" + _did_you_mean(hint),
                        suggestion=hint,
                    )
                    ok = False
                    continue
                if p.name in given:
                    self.report("DRG205", arg.span, f"{entry.name}: '{p.name}' is given twice")
                    ok = False
                    continue
                given[p.name] = (p, arg.value)
        out: dict[str, Any] = {}
        if variadic_param is not None:
            if not variadic_items:
                self.report(
                    "DRG202", call.span, f"{entry.name} needs at least one {variadic_param.type}: {entry.signature()}"
                )
                ok = False
            refs = []
            for x in variadic_items:
                try:
                    refs.append(self.typed(variadic_param, x, entry))
                except _Bad as b:
                    self.diags.append(b.diag)
                    ok = False
            out[variadic_param.name] = refs
        for p in params:
            if p.variadic:
                continue
            if p.name not in given:
                if p.required:
                    self.report("DRG202", call.span, f"{entry.name} is missing '{p.name}': {entry.signature()}")
                    ok = False
                continue
            try:
                out[p.name] = self.typed(p, given[p.name][1], entry)
            except _Bad as b:
                self.diags.append(b.diag)
                ok = False
        return out if ok else None

    # -- decisions ------------------------------------------------------------------------

    def check_decision(self, entry: Instruction, args: dict, call: ast.Call):
        if "decision" not in args or args["decision"] is None:
            return
        node = next((a.value for a in call.args if a.name is not None and a.name.id == "decision"), call)
        d = args["decision"]
        shape = entry.decision
        if shape == "index":
            n = len(args.get("candidates", []))
            if not 0 <= d < n:
                self.report("DRG302", node.span, f"{entry.name}: decision {d} is not an index into {n} candidate(s)")
        elif shape == "location":
            if d < -2:
                self.report(
                    "DRG302",
                    node.span,
                    f"{entry.name}: decision {d} must be -2 (inline), -1 (root) or a loop index >= 0",
                )
        elif shape == "tile":
            n = args.get("n")
            if isinstance(n, int) and len(d) != n:
                self.report("DRG301", node.span, f"{entry.name}: decision has {len(d)} factor(s), but n={n}")
                return
            if any(x < 1 for x in d):
                self.report("DRG302", node.span, f"{entry.name}: every tile factor must be positive")
                return
            loop = args.get("loop")
            extent = self.extents.get(loop.name) if isinstance(loop, Ref) else None
            if (
                extent is not None
                and shape == "tile"
                and entry.name == INST.sample_perfect_tile.name
                and math.prod(d) != extent
            ):
                self.report(
                    "DRG303",
                    node.span,
                    f"{entry.name}: the factors multiply to {math.prod(d)}, but loop '{loop.name}' has extent {extent}",
                )

    # -- results ---------------------------------------------------------------------------

    def expected_results(self, entry: Instruction, args: dict) -> int | None:
        return entry.results.expected(args)

    def define(self, names: list[ast.Name], kind: str, index: int):
        for n in names:
            if n.id == DISCARD:
                continue
            if n.id in RESERVED or n.id in BY_NAME or n.id in SECTIONS or n.id in DIRECTIVES:
                self.report("DRG105", n.span, f"'{n.id}' is a reserved name and cannot be bound")
                continue
            if n.id in self.kinds or n.id in self.program.labels:
                self.report(
                    "DRG103",
                    n.span,
                    f"'{n.id}' is already defined",
                    [Related(self.def_span[n.id], f"'{n.id}' is first defined here")],
                )
                continue
            self.kinds[n.id] = kind
            self.known.add(n.id)
            self.def_span[n.id] = n.span
            self.program.definitions[n.id] = (kind, n.span, index)

    # -- statements ----------------------------------------------------------------------------

    def run(self, script: ast.Script) -> Program:
        mode = "header"
        seen_directives: dict[str, Span] = {}
        for stmt in script.statements:
            if isinstance(stmt, ast.Directive):
                self.directive(stmt, mode, seen_directives)
                continue
            if isinstance(stmt, ast.Section):
                name = stmt.name.id
                if name == "explain":
                    mode = "explain"
                elif name in SECTIONS:
                    if mode == "explain":
                        self.report(
                            "DRG403", stmt.span, f"'{name}:' cannot follow 'explain:'; the explanation comes last"
                        )
                        continue
                    mode = name
                    self.program.instructions.append(BoundInst(SECTIONS[name], stmt, {}, []))
                else:
                    hint = _closest(name, list(SECTIONS) + ["explain"])
                    self.report(
                        "DRG403",
                        stmt.name.span,
                        f"unknown section '{name}:'{_did_you_mean(hint, ':')} (sections: postproc:, explain:)",
                        suggestion=hint,
                    )
                continue
            if mode == "explain":
                self.explain_stmt(stmt)
                continue
            if mode == "header":
                mode = "body"
            try:
                self.instruction(stmt)
            except RecursionError:  # a tree built by hand past MAX_NESTING (parse never makes one)
                self.report("DRG005", stmt.span, f"expressions nest too deeply; the limit is {MAX_NESTING} levels")
        self.finish()
        return self.program

    def directive(self, stmt: ast.Directive, mode: str, seen: dict):
        name = stmt.name.id
        if name not in DIRECTIVES:
            hint = _closest(name, DIRECTIVES)
            self.report(
                "DRG401",
                stmt.name.span,
                f"unknown header directive '{name}'{_did_you_mean(hint)} (directives: workload, target)",
                suggestion=hint,
            )
            return
        if mode != "header":
            self.report("DRG402", stmt.span, f"'{name}' belongs in the header, before the first instruction")
            return
        if name in seen:
            self.report("DRG406", stmt.span, f"'{name}' is given twice", [Related(seen[name], "first given here")])
            return
        seen[name] = stmt.span
        try:
            value = self.literal(stmt.value, name)
        except _Bad as b:
            self.diags.append(b.diag)
            return
        if name == "workload" and not isinstance(value, str):
            self.report("DRG102", stmt.value.span, "workload expects a file path string")
            return
        if name == "target" and not isinstance(value, (str, dict)):
            self.report("DRG102", stmt.value.span, "target expects a tag string or a JSON object")
            return
        if name == "target" and target_problem(value):  # an unknown target fails at every level, not at build
            hint = closest_target(value) if isinstance(value, str) else None
            self.report("DRG207", stmt.value.span, target_problem(value), suggestion=hint)
            return
        setattr(self.program, name, value)

    def instruction(self, stmt: ast.CallStmt):
        name = stmt.call.func.id
        entry = BY_NAME.get(name)
        if entry is None or entry.section:
            hint = None
            if name in EXPLAIN_KINDS:
                msg = f"'{name}' is an explanation entry; it belongs after 'explain:'"
            else:
                hint = _closest(name, [i.name for i in BY_NAME.values() if not i.section])
                msg = f"unknown instruction '{name}'{_did_you_mean(hint)}"
            self.report("DRG201", stmt.call.func.span, msg, suggestion=hint)
            self.define(stmt.targets, "unknown", -1)  # keep later uses from cascading
            return
        index = len(self.program.instructions)
        if stmt.label is not None:
            self.define_label(stmt.label, index)
        args = self.bind(entry, stmt.call)
        if args is None:  # no instruction is recorded: its results name none (-1), not the next one's index
            self.define(stmt.targets, entry.results.kind or "unknown", -1)
            return
        self.check_decision(entry, args, stmt.call)
        want = self.expected_results(entry, args)
        got = len(stmt.targets)
        if want is not None and got != want:
            if want == 0:
                msg = f"{entry.name} binds no result, but {got} name(s) are assigned"
            elif entry.results.remainder:
                rest = (
                    "one per factor (a None factor takes the rest of the loop)"
                    if None in args.get("factors", ())
                    else "one per factor and one for the rest of the loop"
                )
                msg = f"{entry.name} binds {want} result(s) here, {rest}, but {got} name(s) are assigned"
            else:
                msg = f"{entry.name} binds {want} result(s) here, but {got} name(s) are assigned"
            self.report(
                "DRG206", stmt.targets[0].span.cover(stmt.targets[-1].span) if stmt.targets else stmt.call.span, msg
            )
        elif entry.results.count == 0 and got:
            self.report("DRG206", stmt.targets[0].span, f"{entry.name} binds no result")
        self.define(stmt.targets, entry.results.kind or "unknown", index)
        self.program.instructions.append(
            BoundInst(entry, stmt, args, [t.id for t in stmt.targets], stmt.label.id if stmt.label else None)
        )

    def define_label(self, label: ast.Name, index: int):
        if label.id in self.program.labels or label.id in self.kinds:
            self.report(
                "DRG103",
                label.span,
                f"'{label.id}' is already defined",
                [Related(self.def_span[label.id], f"'{label.id}' is first defined here")],
            )
            return
        if label.id in RESERVED:
            self.report("DRG105", label.span, f"'{label.id}' is a reserved name")
            return
        self.program.labels[label.id] = index
        self.def_span[label.id] = label.span

    def finish(self):
        self.check_links()
        self.check_undone_caches()
        # unused results of pure instructions
        for inst in self.program.instructions:
            if not inst.entry.pure or inst.label:
                continue
            if DISCARD in inst.outputs or any(o in self.used for o in inst.outputs):
                continue
            targets = inst.stmt.targets
            span = targets[0].span.cover(targets[-1].span) if targets else inst.stmt.call.span
            what = {0: "it binds no result", 1: "its result is never used"}.get(
                len(targets), "its results are never used"
            )
            self.report("DRG104", span, f"{inst.entry.name} has no effect: {what}")

    def check_undone_caches(self):
        """DRG106: a block made by cache_read or cache_write (a copy of a buffer in another storage
        scope) inlined again: the copy is undone and its block's reads go to the original buffer,
        with whatever loops were made for the copy left behind. No training script does it; a
        derailing model does (it inlined its shared-memory cache of A instead of A's reindex block
        in every dlight-like GEMM answer of one evaluation, 3x slower than dlight)."""
        made: dict[str, BoundInst] = {}
        written: dict[tuple[str, object], BoundInst] = {}  # (block, write buffer index) -> its cache_write
        for inst in self.program.instructions:
            if in_group(inst.entry, "staging_copy"):
                made.update((o, inst) for o in inst.outputs if o != DISCARD)
                block = inst.args.get("block")
                if in_group(inst.entry, "write_cache") and isinstance(block, Ref):
                    written[(block.name, inst.args.get("write_buffer_index"))] = inst
            elif inst.entry.name == INST.set_scope.name:
                self.check_cache_scope(inst, made, written)
            elif in_group(inst.entry, "inline"):
                block = inst.args.get("block")
                cache = made.get(block.name) if isinstance(block, Ref) else None
                if cache is not None:
                    scope = cache.args.get("storage_scope")
                    back = (
                        "its readers read the original buffer again"
                        if in_group(cache.entry, "read_cache")
                        else "its writer writes the original buffer again"
                    )
                    self.report(
                        "DRG106",
                        inst.stmt.call.span,
                        f"{inst.entry.name}({block.name}) undoes the {cache.entry.name} that made "
                        f"'{block.name}' (a copy in \"{scope}\"): {back}; leave out the "
                        f"{cache.entry.name}, or inline another block",
                        [Related(cache.span, f"'{block.name}' is made here")],
                    )

    def check_cache_scope(self, inst: BoundInst, made: dict, written: dict):
        """DRG107: set_scope on the buffer of a cache the script made: the copy of a cache_read (the
        block it made writes it) or the buffer a cache_write redirected its writer to (the writer's
        same write buffer). The cache then lives in a scope it was not made for: a GEMM answer that
        set its `local` accumulator to `shared` ran 20x slower than dlight. None of the
        137k CUDA and llvm training scripts does it."""
        block, index = inst.args.get("block"), inst.args.get("buffer_index")
        if not isinstance(block, Ref):
            return
        cache = written.get((block.name, index))
        if cache is None and index == 0 and block.name in made and in_group(made[block.name].entry, "read_cache"):
            cache = made[block.name]
        if cache is None:
            return
        scope = cache.args.get("storage_scope")
        new = inst.args.get("storage_scope")
        self.report(
            "DRG107",
            inst.stmt.call.span,
            f'{inst.entry.name}({block.name}, {index}, "{new}") moves the "{scope}" copy that a {cache.entry.name} '
            f'made to "{new}"; give the {cache.entry.name} that scope, or leave the copy where it is',
            [Related(cache.span, f'the "{scope}" copy is made here')],
        )


def check(script: ast.Script, extents: dict[str, int] | None = None) -> tuple[Program, list[Diagnostic]]:
    """Type-check a parsed script. `extents` maps loop variables to known extents (after a replay)."""
    c = Checker(extents)
    with paused_gc():  # the program is acyclic: reference counting frees it (see dragon_dsl/language/_gc.py)
        program = c.run(script)
    return program, sorted(c.diags, key=lambda d: (d.span.line, d.span.column))
