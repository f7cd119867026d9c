"""Explanation graphs: derive an `explain:` section for a Dragon script by program analysis.

    explain(script_text, workload, target) -> str

The result is the script with its `explain:` section replaced by facts (about
the workload, the target and the replayed schedule), rationales (one per group
of instructions, linked to the facts they rely on and to the instructions they
produced) and their expected effects. Deterministic; no language model; the
formal part of the script is kept byte for byte, so the trace it encodes does
not change. Fact and effect keys: docs/EXPLAIN.md.

This package sits above the TVM bridge: what TVM knows comes from `dragon_dsl.tvm.inspect`
as plain records; the rules are plain Python. It imports no TVM itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dragon_dsl import DragonError, check_text, paused_gc
from dragon_dsl.language.diagnostics import Severity
from dragon_dsl.language.syntax.parser import parse

__all__ = ["explain", "explain_entries"]


def explain_entries(script_text: str, workload: str | Path | Any | None, target: Any = None):
    """The explanation graph as data (`dragon_dsl.explain.graph.Entry` objects, named)."""
    from dragon_dsl.explain.render import assign_names
    from dragon_dsl.explain.rules import build

    program, diags = check_text(script_text)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        raise DragonError(errors)
    target = target if target is not None else program.target
    wl_info = si = None
    from dragon_dsl.tvm import inspect

    if workload is not None:
        from dragon_dsl.tvm.workload import load_workload

        mod = load_workload(workload)
        wl_info = inspect.workload_info(mod)
        si = inspect.schedule_info(program, mod)
    entries = build(program, wl_info, si, inspect.target_info(target))
    taken = set(program.definitions) | set(program.labels)
    assign_names(entries, taken)
    return entries


def explain(script_text: str, workload, target) -> str:
    """`script_text` with a generated `explain:` section (any existing one is replaced).

    workload: a `.tvmscript` path, TVMScript text or an IRModule (None: facts from the
    script alone). target: a tag string or a dict, as scripts' headers write it (None:
    the script's header)."""
    from dragon_dsl.explain.render import splice, without_explain

    entries = explain_entries(script_text, workload, target)
    with paused_gc():
        script, _ = parse(script_text)
    return splice(without_explain(script_text, script), entries)
