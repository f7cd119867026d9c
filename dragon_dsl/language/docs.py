"""Generates docs/INSTRUCTIONS.md from the instruction table and the diagnostic catalogue.

    python -m dragon_dsl.language.docs > docs/INSTRUCTIONS.md

The file is committed; tests/test_table.py fails when it is stale.
"""

from __future__ import annotations

import sys

from dragon_dsl.language.diagnostics import CODES
from dragon_dsl.language.table import ANNOTATION_KEYS, EXPLAIN_KINDS, FAMILIES, INSTRUCTIONS, TRACE_SCHEMA, literal_text


def _slot(p) -> str:
    s = p.slot
    if s.section == "decision":
        return "decision"
    idx = s.index
    where = (
        f"{s.section}[{idx[0]}], {s.section}[{idx[1]}]"
        if isinstance(idx, tuple)
        else f"{s.section}[{idx}" + (":]" if s.rest else "]")
    )
    return where


def render() -> str:
    out = [
        "# Dragon instruction reference",
        "",
        f"Generated from `dragon_dsl/language/table/` (trace schema `{TRACE_SCHEMA}`) by `python -m dragon_dsl.language.docs`.",
        "Do not edit by hand: `tests/test_table.py` fails when this file is stale.",
        "",
        "Columns: the parameter, its type in the Dragon type language (docs/LANGUAGE.md), its default",
        "(omitted from canonical scripts when equal), and where it lives in TVM's trace JSON",
        "(`[kind, inputs, attrs, outputs]`).",
        "",
        "| # | instruction | TVM kind | pure | results | decision |",
        "|---|---|---|---|---|---|",
    ]
    for n, i in enumerate(INSTRUCTIONS, 1):
        r = i.results
        res = "-" if not r.count else f"{r.kind} x {r.count}"
        name = f"`{i.section}:` (section)" if i.section else f"[`{i.name}`](#{i.name})"
        out.append(f"| {n} | {name} | `{i.kind}` | {'yes' if i.pure else 'no'} | {res} | {i.decision or '-'} |")
    out.append("")
    for i in INSTRUCTIONS:
        out += [
            f"## {i.name}",
            "",
            f"`{i.signature()}`",
            "",
            i.doc,
            "",
            f"TVM kind `{i.kind}`, {'pure' if i.pure else 'not pure'}"
            + (f", decision: {i.decision}" if i.decision else "")
            + ".",
            "",
        ]
        if i.params:
            out += ["| parameter | type | default | JSON | |", "|---|---|---|---|---|"]
            for p in i.params:
                default = "required" if p.required else f"`{literal_text(p.default, p)}`"
                extra = " (bool written as 1/0)" if p.type == "bool" and p.bool_json == "int" else ""
                kw = " keyword" if p.keyword else ""
                out.append(f"| `{p.name}`{kw} | `{p.type}` | {default} | {_slot(p)}{extra} | {p.doc} |")
            out.append("")
    out += [
        "## Instruction families",
        "",
        "Every instruction belongs to one family (`table.FAMILIES`); the explanation",
        "rules are written per family.",
        "",
        "| family | instructions |",
        "|---|---|",
    ]
    for fam, names in FAMILIES.items():
        out.append(f"| {fam} | {', '.join(f'`{n}`' for n in names)} |")
    out += [
        "",
        "## MetaSchedule annotation keys",
        "",
        "The keys MetaSchedule writes (or removes) with `annotate`/`unannotate` (`table.ANNOTATION_KEYS`).",
        "decoded: the schedule model may write it; token: one word of the model's vocabulary.",
        "",
        "| key | value | written by | family | decoded | token |",
        "|---|---|---|---|---|---|",
    ]
    for a in ANNOTATION_KEYS:
        out.append(
            f"| `{a.key}` | {a.value} | {a.writer} | {a.family} | {'yes' if a.decoded else 'no'} "
            f"| {'yes' if a.vocabulary else 'no'} |"
        )
    out.append("")
    out += ["## Explanation entries", "", "| entry | links | free data | |", "|---|---|---|---|"]
    for k in EXPLAIN_KINDS.values():
        links = ", ".join(f"`{key}` -> {' or '.join(v)}" for key, v in k.links.items())
        out.append(f"| `{k.name}` | {links} | {'yes' if k.free_data else 'no'} | {k.doc} |")
    out += ["", "## Diagnostic codes", "", "| code | severity | meaning |", "|---|---|---|"]
    for code, (sev, title) in CODES.items():
        out.append(f"| `{code}` | {sev.value} | {title} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
