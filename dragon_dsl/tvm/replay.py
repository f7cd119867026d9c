"""Replay: apply a Dragon script to a workload and return the scheduled module.

A failure is reported as a diagnostic on the span of the instruction TVM
rejected, with TVM's own message. To find that instruction, prefixes of the
trace are replayed on fresh schedules (binary search), which keeps TVM's
replay exactly as TVM does it.

`replay_steps` replays once more, one instruction at a time, for callers that read what each
instruction used or bound (the explainer, the language server's hover facts): the script's names
are mapped to TVM's objects here, once for everyone (`named_objects` maps trace JSON names).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language.check import Program
from dragon_dsl.language.codec.encode import encode
from dragon_dsl.language.diagnostics import Diagnostic, Span
from dragon_dsl.tvm.errors import tvm_message
from dragon_dsl.tvm.trace import UnsafeInstruction, apply, named_objects, own_module, prefix
from dragon_dsl.tvm.workload import WorkloadError, load_workload

__all__ = ["ReplayResult", "named_objects", "replay", "replay_steps"]


@dataclass
class ReplayResult:
    module: Any = None  # the scheduled IRModule, or None
    schedule: Any = None
    trace: list | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    workload: Any = None  # the unscheduled IRModule the script was replayed on

    @property
    def ok(self) -> bool:
        return self.module is not None and not dg.has_errors(self.diagnostics)


def replay(program: Program, workload, *, seed: int = 1, replays_before: int = 0) -> ReplayResult:
    """Replay a checked program on a workload (TVMScript text, path or IRModule).

    REPLAYS_BEFORE: how many of its first instructions are known to replay (a decoder's accepted
    prefix): the search for the instruction TVM rejects starts after them. The verdict is the
    whole trace's replay either way."""
    try:
        mod = load_workload(workload)
    except WorkloadError as exc:
        # on the first instruction (levels.py moves it to the `workload` line where there is one),
        # not on line 1, which may well be a comment
        where = program.instructions[0].span if program.instructions else Span(1, 1, 1, 1)
        return ReplayResult(diagnostics=[dg.make("DRG602", where, str(exc))])
    trace = encode(program)
    try:
        sch = apply(trace, mod, seed=seed)
        return ReplayResult(sch.mod, sch, trace, _repaired_decisions(program, trace, sch), mod)
    except UnsafeInstruction as exc:  # refused before TVM ran it: the position is known
        return _rejected(program, trace, exc.index + 1, exc)
    except Exception as exc:  # TVM raises its own error types from C++
        full_error = exc
    # Find the first instruction whose prefix fails.
    lo, hi = min(max(0, replays_before), len(trace[0]) - 1), len(trace[0])  # prefix lo replays, prefix hi fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            apply(prefix(trace, mid), mod, seed=seed)
            lo = mid
        except Exception:
            hi = mid
    error = full_error
    if hi < len(trace[0]):  # the whole trace's error is prefix hi's own when hi is the last instruction
        try:
            apply(prefix(trace, hi), mod, seed=seed)
        except Exception as exc:
            error = exc
    return _rejected(program, trace, hi, error)


def replay_steps(program: Program, mod, *, before=None, after=None, seed: int = 1):
    """Replay PROGRAM on a fresh schedule of MOD one instruction at a time, exactly as TVM replays
    a trace, and return that schedule (raises TVM's errors, UnsafeInstruction).

    `before(i, sch, inputs)` runs before instruction I with its inputs as [(script name or None, TVM
    object)]; `after(i, sch, outputs)` once it ran, with its outputs as [(script name, TVM object)].
    The callbacks read the schedule with `sch.get` only: queries such as `get_loops` are
    instructions too and would be recorded in the replayed trace."""
    from tvm import s_tir

    trace_json = encode(program)
    trace = apply(trace_json, mod, seed=seed).trace
    # TVM's output names -> the script's names (positions agree: the encoder derives TVM's names)
    script_name = {
        tvms: mine
        for inst, (_, _, _, outs) in zip(program.instructions, trace_json[0])
        for mine, tvms in zip(inst.outputs, outs)
    }
    sch = s_tir.Schedule(own_module(trace_json, mod), seed=seed)
    applied = [0]

    def finished(upto: int) -> None:
        while applied[0] < upto:
            i = applied[0]
            applied[0] += 1
            if after is not None and i < len(program.instructions):
                after(i, sch, list(zip(program.instructions[i].outputs, sch.trace.insts[i].outputs)))

    def provider(inst, inputs, attrs, decision):
        i = len(sch.trace.insts)
        finished(i)
        if before is not None:
            names = trace_json[0][i][1] if i < len(trace_json[0]) else []
            before(i, sch, [(script_name.get(n) if isinstance(n, str) else None, rv) for rv, n in zip(inputs, names)])
        return decision

    trace.apply_to_schedule(sch, remove_postproc=False, decision_provider=provider)
    finished(len(sch.trace.insts))
    return sch


def _rejected(program: Program, trace: list, hi: int, error: BaseException) -> ReplayResult:
    """The failed replay of TRACE, whose prefix of HI instructions is the first that fails."""
    inst = program.instructions[hi - 1] if 0 < hi <= len(program.instructions) else None
    span = inst.span if inst is not None else Span(1, 1, 1, 1)
    name = inst.entry.name if inst is not None else "replay"
    verdict = (
        "refused before TVM ran it: " + str(error)
        if isinstance(error, UnsafeInstruction)
        else "TVM rejected this instruction: " + tvm_message(error, 2000, primitive=False)
    )
    return ReplayResult(None, None, trace, [dg.make("DRG601", span, f"{name}: {verdict}")])


def _repaired_decisions(program: Program, trace: list, sch) -> list[Diagnostic]:
    """TVM silently replaces a decision it cannot honour (a tile whose factors do not
    multiply to the loop's extent, a compute location that is not valid). Compare
    the decisions TVM kept with the script's and report each one it changed."""
    from dragon_dsl.tvm.trace import decisions_at

    kept = decisions_at(sch, [i for i, _ in trace[1]])
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
            msg = (
                f"{inst.entry.name}: the factors {wanted} multiply to {product}, but the loop has extent {extent}; "
                f"TVM would silently use {got}"
            )
            diags.append(dg.make("DRG303", inst.span, msg, suggestion=got))
        else:
            msg = f"{inst.entry.name}: decision {wanted} is not valid here; TVM would silently use {got}"
            diags.append(dg.make("DRG302", inst.span, msg, suggestion=got))
    return diags
