"""Replay: apply a Dragon script to a workload and return the scheduled module.

A failure is reported as a diagnostic on the span of the instruction TVM
rejected, with TVM's own message. To find that instruction, prefixes of the
trace are replayed on fresh schedules (binary search), which keeps TVM's
replay exactly as TVM does it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from dragon_dsl import diagnostics as dg
from dragon_dsl.check import Program
from dragon_dsl.codec.encode import encode
from dragon_dsl.diagnostics import Diagnostic, Span
from dragon_dsl.tvm.trace import UnsafeInstruction, apply, prefix
from dragon_dsl.tvm.workload import WorkloadError, load_workload


@dataclass
class ReplayResult:
    module: Any = None  # the scheduled IRModule, or None
    schedule: Any = None
    trace: Optional[list] = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.module is not None and not dg.has_errors(self.diagnostics)


def tvm_message(exc: BaseException) -> str:
    """TVM's message without the C++ backtrace and boilerplate."""
    text = str(exc)
    lines = [ln.rstrip() for ln in text.splitlines()]
    keep = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("File \"", "Traceback", "  File"))
            and not ln.strip().startswith(("0:", "1:", "2:", "3:", "4:", "5:", "6:", "7:", "8:", "9:"))]
    msg = " ".join(ln.strip() for ln in keep)
    if "Error message:" in msg:  # schedule errors print the whole IR first; keep the verdict
        return msg.split("Error message:", 1)[1].strip()[:2000]
    for marker in ("ScheduleError:", "TVMError:", "ValueError:", "TypeError:", "InternalError:"):
        if marker in msg:
            msg = msg.split(marker, 1)[1].strip()
    return msg[:2000] or type(exc).__name__


def replay(program: Program, workload, *, seed: int = 1) -> ReplayResult:
    """Replay a checked program on a workload (TVMScript text, path or IRModule)."""
    try:
        mod = load_workload(workload)
    except WorkloadError as exc:
        return ReplayResult(diagnostics=[dg.make("DRG602", Span(1, 1, 1, 1), str(exc))])
    trace = encode(program)
    try:
        sch = apply(trace, mod, seed=seed)
        return ReplayResult(sch.mod, sch, trace, _repaired_decisions(program, trace, sch))
    except UnsafeInstruction as exc:  # refused before TVM ran it: the position is known
        return _rejected(program, trace, exc.index + 1, exc)
    except Exception as exc:  # TVM raises its own error types from C++
        full_error = exc
    # Find the first instruction whose prefix fails.
    lo, hi = 0, len(trace[0])  # prefix lo replays, prefix hi fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            apply(prefix(trace, mid), mod, seed=seed)
            lo = mid
        except Exception:  # noqa: BLE001 - any TVM failure narrows the search
            hi = mid
    error = full_error
    try:
        apply(prefix(trace, hi), mod, seed=seed)
    except Exception as exc:  # noqa: BLE001
        error = exc
    return _rejected(program, trace, hi, error)


def _rejected(program: Program, trace: list, hi: int, error: BaseException) -> ReplayResult:
    """The failed replay of TRACE, whose prefix of HI instructions is the first that fails."""
    inst = program.instructions[hi - 1] if 0 < hi <= len(program.instructions) else None
    span = inst.span if inst is not None else Span(1, 1, 1, 1)
    name = inst.entry.name if inst is not None else "replay"
    verdict = ("refused before TVM ran it: " + str(error) if isinstance(error, UnsafeInstruction)
               else "TVM rejected this instruction: " + tvm_message(error))
    return ReplayResult(None, None, trace, [dg.make("DRG601", span, f"{name}: {verdict}")])


def _repaired_decisions(program: Program, trace: list, sch) -> list[Diagnostic]:
    """TVM silently replaces a decision it cannot honour (a tile whose factors do not
    multiply to the loop's extent, a compute location that is not valid). Compare
    the decisions TVM kept with the script's and report each one it changed."""
    from dragon_dsl.tvm.trace import trace_json

    kept = {i: d for i, d in trace_json(sch)[1]}
    diags = []
    for i, wanted in trace[1]:
        got = kept.get(i)
        if got is None or got == wanted:
            continue
        inst = program.instructions[i]
        if inst.entry.decision == "tile":
            extent = 1
            for f in got:
                extent *= f
            product = 1
            for f in wanted:
                product *= f
            msg = (f"{inst.entry.name}: the factors {wanted} multiply to {product}, but the loop has extent {extent}; "
                   f"TVM would silently use {got}")
            diags.append(dg.make("DRG303", inst.span, msg, suggestion=got))
        else:
            msg = f"{inst.entry.name}: decision {wanted} is not valid here; TVM would silently use {got}"
            diags.append(dg.make("DRG302", inst.span, msg, suggestion=got))
    return diags
