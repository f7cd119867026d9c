"""Completion: instructions with snippets, keyword arguments, variables of the right kind,
block names from the workload, thread axes, storage scopes, data types, directives and sections.

Everything offered comes from the instruction table (`dragon_dsl.language.table`); the
workload's block names come from the session (a worker reads them with TVM).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.table import (
    BUFFER_KINDS,
    DIRECTIVES,
    DTYPES,
    EXPLAIN_KINDS,
    INST,
    INSTRUCTIONS,
    REF_KINDS,
    SECTIONS,
    STORAGE_SCOPES,
    THREAD_AXES,
    Instruction,
    Param,
    literal_text,
)
from dragon_lsp.analysis import Analysis
from dragon_lsp.features.context import Context, context_at, entry_of, param_for, positional_params
from dragon_lsp.features.data import CompletionEntry
from dragon_lsp.features.hover import instruction_markdown, param_markdown

#: Target tags offered after `target`; any tag TVM knows is accepted.
TARGET_TAGS = ("llvm", "cuda", "nvidia/nvidia-h100", "nvidia/nvidia-a100", "nvidia/geforce-rtx-4090")

_STRING_DOMAINS = {"thread": THREAD_AXES, "scope": STORAGE_SCOPES, "dtype": DTYPES, "buffer_kind": BUFFER_KINDS}


def _kinds_for(param: Param, in_list: bool) -> tuple[str, ...]:
    t = param.type
    if t in REF_KINDS:
        return REF_KINDS[t]
    if t == "loop|list[block]":
        return ("block",) if in_list else ("loop",)
    if t == "list[block]":
        return ("block",)
    if t in ("list[factor]", "any"):
        return ("value",)
    return ()


def _choice(values: Sequence[str]) -> str:
    return ",".join(v.replace("\\", "\\\\").replace(",", "\\,").replace("|", "\\|") for v in values)


def _placeholder(p: Param, i: int) -> str:
    t = p.type
    if t in _STRING_DOMAINS:
        return f'"${{{i}|{_choice(_STRING_DOMAINS[t])}|}}"'
    if t in ("str",):
        return f'"${{{i}:{p.name}}}"'
    if t == "buffer":
        return f"${{{i}|read,write|}}(${{{i + 1}:0}})"
    if t.startswith("index_map"):
        return f"lambda ${{{i}:i, j}}: (${{{i + 1}:i, j}})"
    if t.startswith("list["):
        return f"[${{{i}:{p.name}}}]"
    return f"${{{i}:{p.name}}}"


def instruction_snippet(entry: Instruction) -> str:
    """`split(${1:loop}, [${2:factors}])`: the required parameters as tab stops."""
    parts, i = [], 1
    for p in entry.params:
        if not p.required or p.slot.section == "decision":
            continue
        ph = _placeholder(p, i)
        i += 2 if p.type == "buffer" or p.type.startswith("index_map") else 1
        parts.append(f"{p.name}={ph}" if p.keyword else ph)
    return f"{entry.name}({', '.join(parts)})$0"


def _instruction_items(replace: Span | None) -> list[CompletionEntry]:
    out = []
    for entry in INSTRUCTIONS:
        if entry.section:
            continue
        out.append(
            CompletionEntry(
                label=entry.name,
                kind="instruction",
                detail=entry.signature(),
                doc=instruction_markdown(entry, signature=False),
                insert=entry.name,
                snippet=instruction_snippet(entry),
                replace=replace,
                sort=f"1{entry.name}",
            )
        )
    return out


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def complete(
    an: Analysis, line: int, col: int, *, blocks: Sequence[str] = (), workload_files: Sequence[str] = ()
) -> Completions:
    """What to offer at (line, col); `Completions.incomplete` when variables were left out."""
    out = Completions()
    out.extend(_complete(an, line, col, blocks, workload_files, out))
    return out


def _complete(an: Analysis, line: int, col: int, blocks, workload_files, out: Completions) -> list[CompletionEntry]:
    ctx = context_at(an.lines, line, col)
    if ctx.in_comment:
        return []
    replace = ctx.word.span if ctx.word is not None else None
    if ctx.string is not None:
        return _in_string(an, ctx, blocks, workload_files)
    frame = ctx.call
    if frame is None:
        return _statement(an, ctx, replace, workload_files)
    entry = entry_of(frame)
    if entry is None:
        return []
    if not isinstance(entry, Instruction):  # an explanation entry: links and data keywords
        return _explain_args(an, ctx, entry, replace)
    items: list[CompletionEntry] = []
    inner = ctx.frames[-1]
    param = param_for(entry, frame)
    in_list = inner.kind == "list" and ctx.frames.index(inner) == ctx.frames.index(frame) + 1
    if inner is frame or in_list:
        if param is not None:
            items += _values_for(an, ctx, entry, param, in_list, replace, blocks, out)
        if inner is frame and frame.keyword is None:
            items += _keywords(entry, frame, replace)
    return items


def _keywords(entry: Instruction, frame, replace) -> list[CompletionEntry]:
    bound = set()
    for p in positional_params(entry)[: frame.positional]:
        if p.variadic:  # it takes every positional argument from here on
            break
        bound.add(p.name)
    out = []
    for p in entry.params:
        if p.variadic or p.name in frame.keywords or p.name in bound:
            continue
        default = "required" if p.required else f"default {literal_text(p.default, p)}"
        out.append(
            CompletionEntry(
                label=f"{p.name}=",
                kind="keyword",
                detail=f"{p.type} ({default})",
                doc=param_markdown(entry, p),
                insert=f"{p.name}=",
                snippet=f"{p.name}=$0",
                replace=replace,
                sort=f"0{p.name}",
                filter=p.name,
            )
        )
    return out


def _values_for(
    an, ctx: Context, entry, param: Param, in_list: bool, replace, blocks, result: Completions
) -> list[CompletionEntry]:
    out = []
    kinds = _kinds_for(param, in_list)
    if kinds:
        prefix = ctx.word.text[: ctx.col - ctx.word.col] if ctx.word is not None and ctx.word.col <= ctx.col else None
        names, left_out = an.nearest_visible(ctx.first_line, kinds, prefix, MAX_VARIABLES)
        result.incomplete = result.incomplete or left_out
        n = len(names)
        for k, (name, kind, span) in enumerate(names):
            found = an.defining_instruction(name)
            by = found[1].entry.name if found else _called_at(an, span.line)
            out.append(
                CompletionEntry(
                    label=name,
                    kind="variable",
                    detail=f"{kind} (from {by}, line {span.line})",
                    replace=replace,
                    sort=f"2{n - k:06d}",
                )
            )
        if param.type == "list[factor]":
            out.append(
                CompletionEntry(label="None", kind="constant", detail="inferred factor", replace=replace, sort="3None")
            )
    t = param.type
    if t in _STRING_DOMAINS:
        for v in _STRING_DOMAINS[t]:
            out.append(CompletionEntry(label=_quoted(v), kind="value", detail=t, replace=replace, filter=v))
    elif t == "str" and entry is INST.get_sblock and param.name == "name":
        for b in blocks:
            out.append(
                CompletionEntry(
                    label=_quoted(b), kind="block", detail="block of the workload", replace=replace, filter=b
                )
            )
    elif t == "bool":
        out += [CompletionEntry(label=v, kind="constant", replace=replace) for v in ("True", "False")]
    elif t == "buffer":
        for side in ("read", "write"):
            out.append(
                CompletionEntry(
                    label=f"{side}(0)",
                    kind="snippet",
                    detail=f"the block's i-th {side} buffer",
                    replace=replace,
                    snippet=f"{side}(${{1:0}})",
                )
            )
    elif t.startswith("index_map"):
        out.append(
            CompletionEntry(
                label="lambda i, j: (i, j)",
                kind="snippet",
                detail="index map",
                replace=replace,
                snippet="lambda ${1:i, j}: (${2:i, j})",
            )
        )
        if t.endswith("?"):
            out.append(CompletionEntry(label="None", kind="constant", replace=replace))
    return out


def _called_at(an, line: int) -> str:
    """The instruction a statement on `line` calls (its results are defined even when its arguments
    did not bind), or '?'."""
    stmt = an.statement_at(line)
    call = getattr(stmt, "call", None)
    return call.func.id if call is not None else "?"


class Completions(list):
    """Completion entries; `incomplete`: more would match, so the client asks again as the user types."""

    incomplete = False


#: At most this many variables are offered at once (a 10,000-line script defines ~30,000): those
#: that start with the word typed so far, the nearest definitions before the line first.
MAX_VARIABLES = 300


def _in_string(an: Analysis, ctx: Context, blocks, workload_files) -> list[CompletionEntry]:
    s = ctx.string
    closed = len(s.text) >= 2 and s.text.endswith('"') and ctx.col < s.end
    inner = Span(s.line, s.col + 1, s.line, s.end - 1 if closed else s.end)
    values: Sequence[str] = ()
    detail = ""
    frame = ctx.call
    if frame is None:
        directive = ctx.directive()
        if directive == "workload":
            values, detail = workload_files, "workload file"
        elif directive == "target":
            values, detail = TARGET_TAGS, "target tag"
    else:
        entry = entry_of(frame)
        if isinstance(entry, Instruction):
            param = param_for(entry, frame)
            if param is not None and param.type in _STRING_DOMAINS:
                values, detail = _STRING_DOMAINS[param.type], param.type
            elif param is not None and entry is INST.get_sblock and param.name == "name":
                values, detail = blocks, "block of the workload"
    return [
        CompletionEntry(
            label=v,
            kind="block" if detail.startswith("block") else "value",
            detail=detail,
            insert=json.dumps(v, ensure_ascii=False)[1:-1],
            replace=inner,
        )
        for v in values
    ]


def _statement(an: Analysis, ctx: Context, replace, workload_files) -> list[CompletionEntry]:
    mode = an.mode_at(ctx.first_line)
    if not ctx.statement_start:
        directive = ctx.directive()
        if directive == "workload":
            return [
                CompletionEntry(label=_quoted(f), kind="value", detail="workload file", replace=replace)
                for f in workload_files
            ]
        if directive == "target":
            return [
                CompletionEntry(label=_quoted(t), kind="value", detail="target tag", replace=replace)
                for t in TARGET_TAGS
            ]
        return []
    if mode == "explain":
        out = []
        for kind in EXPLAIN_KINDS.values():
            links = ", ".join(f"{k}=[${{{i + 2}}}]" for i, k in enumerate(kind.links))
            snippet = f'{kind.name}("${{1:text}}"' + (f", {links}" if links else "") + ")$0"
            out.append(
                CompletionEntry(
                    label=kind.name,
                    kind="explain",
                    detail="explanation entry",
                    doc=kind.doc,
                    snippet=snippet,
                    replace=replace,
                )
            )
        return out
    items = _instruction_items(replace)
    if not ctx.has_targets and not ctx.tokens:
        if mode == "header":
            for name, doc in DIRECTIVES.items():
                items.append(
                    CompletionEntry(
                        label=name,
                        kind="directive",
                        detail="header directive",
                        doc=doc,
                        snippet=f'{name} "${{1}}"$0',
                        replace=replace,
                        sort=f"0{name}",
                    )
                )
        for name, entry in SECTIONS.items():
            items.append(
                CompletionEntry(
                    label=f"{name}:",
                    kind="section",
                    detail="section",
                    doc=entry.doc,
                    insert=f"{name}:",
                    replace=replace,
                    sort=f"3{name}",
                    filter=name,
                )
            )
        items.append(
            CompletionEntry(
                label="explain:",
                kind="section",
                detail="section",
                doc="The explanation graph: facts, rationales and effects.",
                insert="explain:",
                replace=replace,
                sort="3explain",
                filter="explain",
            )
        )
    return items


def _explain_args(an: Analysis, ctx: Context, kind, replace) -> list[CompletionEntry]:
    frame = ctx.call
    out = []
    if frame.keyword in kind.links:
        wanted = kind.links[frame.keyword]
        if "instruction" in wanted:
            names = [n for n, _k, _s in an.visible(10**9, ("block", "loop", "value"))]
            names += list(an.program.labels)
        else:
            names = [e.name for e in an.program.explain if e.name and e.kind in wanted]
        out += [CompletionEntry(label=n, kind="variable", replace=replace) for n in names]
    elif frame.fresh and frame.keyword is None and frame.positional > 0:
        out += [
            CompletionEntry(label=f"{k}=", kind="keyword", detail="link", insert=f"{k}=[", replace=replace, filter=k)
            for k in kind.links
            if k not in frame.keywords
        ]
    return out
