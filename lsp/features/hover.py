"""Hover: instruction documentation from the table; for a variable, its kind, where it
was defined, what it denotes after replay and the explanation graph's notes about it."""

from __future__ import annotations

import re

from dragon_dsl.language.table import BY_NAME, DIRECTIVES, EXPLAIN_KINDS, SECTIONS, Instruction, Param, literal_text
from dragon_lsp.analysis import CONSTANTS, Analysis
from dragon_lsp.features.context import LEX, Tok, context_at, entry_of
from dragon_lsp.features.data import HoverInfo, ReplayFacts

_RESULT_WORDS = {"*": "any number, known at replay", "n": "n", "factors": "one per factor"}


def instruction_markdown(entry: Instruction, signature: bool = True) -> str:
    parts = []
    if signature:
        parts.append(f"```dragon\n{entry.signature()}\n```")
    parts.append(entry.doc)
    rows = []
    for p in entry.params:
        rows.append(
            f"- `{p.name}: {p.type}`"
            + ("" if p.required else f" = `{literal_text(p.default, p)}`")
            + (" (keyword)" if p.keyword else "")
            + (f" — {p.doc}" if p.doc else "")
        )
    if rows:
        parts.append("\n".join(rows))
    facts = [f"TVM kind `{entry.kind}`", "pure" if entry.pure else "not pure"]
    if entry.results.count:
        c = entry.results.count
        facts.append(f"binds {entry.results.kind} x {_RESULT_WORDS.get(c, c) if not isinstance(c, int) else c}")
    if entry.decision:
        facts.append(f"decision: {entry.decision}")
    parts.append(", ".join(facts))
    return "\n\n".join(parts)


def param_markdown(entry: Instruction, p: Param) -> str:
    default = "required" if p.required else f"default `{literal_text(p.default, p)}`"
    return f"`{entry.name}` parameter `{p.name}: {p.type}` ({default})\n\n{p.doc}"


def _token_at(lines, line: int, col: int) -> Tok | None:
    if not 0 < line <= len(lines):
        return None
    for m in LEX.finditer(lines[line - 1]):
        if m.start() + 1 <= col < m.end() + 1 and m.lastgroup in ("NAME", "STR"):
            return Tok(m.lastgroup, m.group(), line, m.start() + 1)
    return None


def _describe_fact(info: dict) -> str:
    if "extent" in info:
        return f"after replay: a loop of extent **{info['extent']}**"
    if "block" in info:
        return f'after replay: the block **"{info["block"]}"**'
    if "value" in info:
        return f"after replay: the value **{info['value']}**"
    return ""


def _notes(an: Analysis, name: str) -> str:
    notes = an.notes_for(name)
    if not notes:
        return ""
    lines = []
    for e in notes:
        because = ""
        if e.kind == "rationale" and e.links.get("because"):
            texts = [an.entries[f].text for f in e.links["because"] if f in an.entries]
            because = "".join(f"\n  - because: {t}" for t in texts)
        lines.append(f"- *{e.kind}* `{e.name or ''}`: {e.text}{because}")
    return "**Explanation**\n\n" + "\n".join(lines)


def variable_markdown(an: Analysis, name: str, facts: ReplayFacts | None) -> str | None:
    where = an.definition(name)
    if where is None:
        return None
    what, span = where
    if what == "entry":
        e = an.entries.get(name)
        if e is None:
            return None
        return f"**{name}**: {e.kind}\n\n{e.text}"
    found = an.defining_instruction(name)
    parts = []
    if what == "label":
        inst = found[1] if found else None
        parts.append(f"**{name}**: label of `{inst.entry.name if inst else '?'}` (line {span.line})")
    else:
        head = f"**{name}**: {what}"
        if found is not None:
            _i, inst = found
            outs = [o for o in inst.outputs]
            pos = outs.index(name) + 1 if name in outs else 0
            head += f"\n\ndefined on line {span.line} by `{inst.entry.name}`"
            if len(outs) > 1 and pos:
                head += f" (result {pos} of {len(outs)})"
        else:
            head += f"\n\ndefined on line {span.line}"
        parts.append(head)
        if facts is not None and name in facts.variables:
            parts.append(_describe_fact(facts.variables[name]))
    notes = _notes(an, name)
    if notes:
        parts.append(notes)
    return "\n\n".join(p for p in parts if p)


def hover(an: Analysis, line: int, col: int, facts: ReplayFacts | None = None) -> HoverInfo | None:
    tok = _token_at(an.lines, line, col)
    if tok is None:
        return None
    text = an.lines[line - 1]
    after = text[tok.end - 1 :].lstrip()
    if tok.kind == "STR":
        return None
    name = tok.text
    if after.startswith("(") and name in BY_NAME and not BY_NAME[name].section:
        return HoverInfo(instruction_markdown(BY_NAME[name]), tok.span)
    if after.startswith("(") and name in EXPLAIN_KINDS:
        k = EXPLAIN_KINDS[name]
        links = ", ".join(f"`{a}` -> {' or '.join(b)}" for a, b in k.links.items())
        return HoverInfo(f"**{name}** (explanation entry)\n\n{k.doc}\n\nlinks: {links}", tok.span)
    if after.startswith("=") and not after.startswith("=="):
        ctx = context_at(an.lines, line, tok.col)
        entry = entry_of(ctx.call)
        if isinstance(entry, Instruction):
            p = entry.param(name)
            if p is not None:
                return HoverInfo(param_markdown(entry, p), tok.span)
    before = text[: tok.col - 1].strip()
    if not before and after.startswith(":"):
        if name in SECTIONS:
            return HoverInfo(f"**{name}:** (section)\n\n{SECTIONS[name].doc}", tok.span)
        if name == "explain":
            return HoverInfo(
                "**explain:** (section)\n\nThe explanation graph: facts, rationales and effects. "
                "It never changes the trace.",
                tok.span,
            )
    if not before and name in DIRECTIVES and re.match(r'["{]', after or " "):
        return HoverInfo(f"**{name}** (header directive)\n\n{DIRECTIVES[name]}", tok.span)
    if name in CONSTANTS:
        return None
    md = variable_markdown(an, name, facts)
    if md is None:
        return None
    return HoverInfo(md, tok.span)
