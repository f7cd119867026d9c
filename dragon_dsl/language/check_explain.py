"""The checker's part for the explanation graph: entries (`fact`, `rationale`, `effect`) after
`explain:`, their fields, and links to instructions or to entries of a kind. A mixin of
`dragon_dsl.language.check.Checker`, which owns the state it reads (`program`, `kinds`, `def_span`,
`used`, `_explain_names`, `_pending_links`) and `report`/`literal`."""

from __future__ import annotations

from typing import Any

from dragon_dsl.language.check_words import _Bad, _closest, _describe, _did_you_mean
from dragon_dsl.language.diagnostics import Related
from dragon_dsl.language.program import ExplainEntry
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import EXPLAIN_KINDS


class ExplanationChecks:
    def explain_stmt(self, stmt: ast.CallStmt):
        name = stmt.call.func.id
        kind = EXPLAIN_KINDS.get(name)
        if kind is None:
            hint = _closest(name, EXPLAIN_KINDS)
            self.report(
                "DRG405",
                stmt.call.func.span,
                f"'{name}' is not an explanation entry{_did_you_mean(hint)} (entries: fact, rationale, effect)",
                suggestion=hint,
            )
            return
        if stmt.label is not None or len(stmt.targets) > 1:
            self.report("DRG405", stmt.span, f"an explanation entry is written 'name = {name}(\"text\", ...)'")
            return
        text = None
        links: dict[str, list[str]] = {}
        data: dict[str, Any] = {}
        for arg in stmt.call.args:
            if arg.name is None:
                if text is None and isinstance(arg.value, ast.Str):
                    text = arg.value.value
                    continue
                self.report("DRG405", arg.span, f"{name}: the only positional argument is its text, a string")
                continue
            key = arg.name.id
            if key in kind.links:
                items = arg.value.items if isinstance(arg.value, ast.ListExpr) else [arg.value]
                names = []
                for it in items:
                    if not isinstance(it, ast.Name):
                        self.report("DRG405", it.span, f"{name}: '{key}' links to names, got {_describe(it)}")
                        continue
                    names.append(it)
                links[key] = names
            elif kind.free_data:
                try:
                    data[key] = self.literal(arg.value, f"{name}: '{key}'")
                except _Bad as b:
                    self.diags.append(b.diag)
            else:
                self.report("DRG405", arg.name.span, f"{name} has no field '{key}' (fields: {', '.join(kind.links)})")
        if text is None:
            self.report("DRG405", stmt.call.span, f"{name} needs its text as the first argument")
        target = stmt.targets[0].id if stmt.targets else None
        if stmt.targets:
            t = stmt.targets[0]
            if t.id in self.kinds or t.id in self.program.labels or t.id in self._explain_names:
                self.report(
                    "DRG103",
                    t.span,
                    f"'{t.id}' is already defined",
                    [Related(self.def_span[t.id], f"'{t.id}' is first defined here")],
                )
            else:
                self._explain_names[t.id] = name
                self.def_span[t.id] = t.span
        self.program.explain.append(
            ExplainEntry(name, target, text or "", {k: [n.id for n in v] for k, v in links.items()}, data, stmt)
        )
        self._pending_links.append((kind, links))

    def check_links(self):
        """Explanation links: to instructions (labels or variables they define) or to entries of a kind."""
        for kind, links in self._pending_links:
            for key, names in links.items():
                wanted = kind.links[key]
                for n in names:
                    if "instruction" in wanted and (n.id in self.program.labels or n.id in self.program.definitions):
                        self.used.add(n.id)
                        continue
                    if self._explain_names.get(n.id) in wanted:
                        continue
                    what = " or ".join(
                        "an instruction label or result" if w == "instruction" else f"a {w}" for w in wanted
                    )
                    self.report("DRG404", n.span, f"'{key}' links to '{n.id}', which is not {what} of this script")
