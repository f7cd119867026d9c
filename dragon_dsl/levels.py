"""Check levels: syntax < types < replay < build < verify < time.

One implementation of "how good is this script", shared by `dragon-check`, the
language server, the model's reward and the evaluation. Each level runs only when the
levels below it found no error. Build, verify and time go through the
measurement engine (`dragon_dsl.engine`), whose worker processes isolate
crashes and hangs; their results become diagnostics with spans.

    report = check_text_at_level(text, level="replay", workload=wl)   # no engine below build
    report.passed    # the highest level passed (None: not even syntax)
    report.failed    # the level whose check found an error (None: every level run passed)
    report.trace     # the trace JSON, once the script replayed
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language.check import Program, check
from dragon_dsl.language.diagnostics import Diagnostic, Severity, Span
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.syntax.parser import parse
from dragon_dsl.language.target_names import target_problem

#: the one check-level ladder
LEVELS = ("syntax", "types", "replay", "build", "verify", "time")
#: the levels the language decides alone, without TVM's compiler or a device
STATIC_LEVELS = LEVELS[: LEVELS.index("build")]
#: the levels the measurement engine decides (`Engine.measure(level=...)`)
MEASURE_LEVELS = LEVELS[LEVELS.index("build") :]
#: a verified kernel more than this many times slower than the baseline (dlight's schedule on GPUs,
#: the unscheduled program on CPUs) is a failure for a user, not an answer: `slow` (the model's
#: answers, its reward and the evaluation's counts)
SLOW_FACTOR = 10.0


NO_INSTRUCTIONS = "no instructions: the script schedules nothing (the workload runs as written)"


def is_slow(latency_us: float | None, baseline_us: float | None) -> bool:
    """Whether a verified kernel's latency is more than SLOW_FACTOR times the baseline's (False when
    either is unknown)."""
    return bool(latency_us and baseline_us and latency_us > SLOW_FACTOR * baseline_us)


def level_rank(level: str) -> int:
    """The position of LEVEL on the ladder; ValueError for an unknown level."""
    try:
        return LEVELS.index(level)
    except ValueError:
        raise ValueError(f"unknown level {level!r}; levels: {', '.join(LEVELS)}") from None


# Engine statuses -> diagnostic codes.
STATUS_CODES = {
    "replay_error": "DRG601",
    "build_error": "DRG701",
    "launch_error": "DRG702",
    "timeout": "DRG703",
    "numeric_mismatch": "DRG704",
    "unwritten_output": "DRG705",
}


@dataclass
class Report:
    """What checking one script found."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # latency and speedups at level "time"
    level_reached: str = "syntax"  # the last level that ran
    trace: list | None = None  # the trace JSON, once the script replayed

    @property
    def errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity is Severity.WARNING for d in self.diagnostics)

    @property
    def failed(self) -> str | None:
        """The level whose check found an error (the last that ran), None when every level run passed."""
        return self.level_reached if self.errors else None

    @property
    def passed(self) -> str | None:
        """The highest level passed; None when not even the syntax is right."""
        if not self.errors:
            return self.level_reached
        rank = LEVELS.index(self.level_reached)
        return LEVELS[rank - 1] if rank else None


def resolve_workload(program: Program, script_path: str | None, override):
    """The workload: the override wins (a path; TVMScript text or an IRModule pass through); a
    header path is relative to the script's folder."""
    if (override is not None and not isinstance(override, (str, Path))) or (
        isinstance(override, str) and "\n" in override
    ):
        return override
    if override:
        return Path(override)
    if program.workload:
        base = Path(script_path).parent if script_path and script_path != "-" else Path.cwd()
        return base / program.workload
    return None


def target_span(script, program: Program, directive: str = "target") -> Span:
    """Where findings about the whole kernel go: the target line (findings about the workload: the
    workload line), else the first instruction."""
    for stmt in script.statements:
        if isinstance(stmt, ast.Directive) and stmt.name.id == directive:
            return stmt.span
    for inst in program.instructions:
        return inst.span
    return Span(1, 1, 1, 1)


def check_text_at_level(
    text: str,
    path: str = "<script>",
    *,
    level: str = "types",
    workload=None,
    target=None,
    engine_for=None,
    seeds: int = 3,
) -> Report:
    """Check one script up to `level`.

    workload/target override the script's header. `engine_for(target)` returns a
    measurement engine for the build, verify and time levels.
    """
    level_rank(level)
    report = Report(path)
    script, diags = parse(text)
    report.diagnostics += diags
    if dg.has_errors(diags) or level == "syntax":
        return report
    program, more = check(script)
    if not dg.has_errors(more) and not script.statements:
        # an empty file (or one of comments) would pass every level, silently; a header without
        # instructions is a script too: the workload as written (`dragon suggest`'s "no schedule")
        more = [*more, dg.make("DRG108", Span(1, 1, 1, 1), NO_INSTRUCTIONS)]
    report.diagnostics += more
    report.level_reached = "types"
    if dg.has_errors(more) or level == "types":
        return report
    wl = resolve_workload(program, path, workload)
    report.level_reached = "replay"
    if wl is None:
        report.diagnostics.append(
            dg.make(
                "DRG603",
                Span.point(1, 1),
                'no workload: add `workload "file.tvmscript"` to the header or pass --workload',
            )
        )
        return report
    from dragon_dsl.tvm.replay import replay

    result = replay(program, wl)
    report.diagnostics += [
        dataclasses.replace(d, span=target_span(script, program, "workload")) if d.code == "DRG602" else d
        for d in result.diagnostics
    ]
    report.trace = result.trace if result.ok else None
    if result.ok:
        from dragon_dsl.tvm.compile import out_of_bounds, out_of_bounds_message

        # TVM replays such a schedule and builds it; the kernel then reads past its buffer (on a GPU:
        # an illegal address that stops the device's context)
        outside = out_of_bounds_message(out_of_bounds(result.schedule.mod))
        if outside is not None:
            report.diagnostics.append(dg.make("DRG604", target_span(script, program), outside))
            report.trace = None
            return report
    if not result.ok or level == "replay":
        return report
    tgt = target if target is not None else program.target
    if tgt is None:
        tgt = "llvm"
    report.level_reached = "build"
    problem = target_problem(tgt)  # a header target was checked at types; an override is checked here
    if problem is not None:
        report.diagnostics.append(dg.make("DRG207", target_span(script, program), problem))
        return report
    for code, message in _launch_warnings(result.schedule, tgt, wl):
        report.diagnostics.append(dg.make(code, target_span(script, program), message))
    engine = engine_for(tgt)
    measured = engine.measure(wl, [result.trace], level=level, seeds=seeds)[0]
    report.level_reached = level if measured.status == "ok" else measured.level
    span = target_span(script, program)
    if measured.status != "ok":
        code = STATUS_CODES.get(measured.status, "DRG701")
        report.diagnostics.append(dg.make(code, span, measured.message or measured.status))
        return report
    if level == "time":
        report.figures = _figures(engine, wl, measured)
        report.diagnostics.append(dg.make("DRG706", span, _latency_message(report.figures)))
    return report


def _launch_warnings(sch, target, workload) -> list:
    """On GPU targets, (code, message) for what makes the schedule slow before it runs: loops of
    more than one iteration left around a kernel (DRG707, `launch_message`) and kernels that leave
    the GPU idle (DRG708, `idle_message`, the WORKLOAD's own blocks judged by the threads their
    iterations keep busy); none on CPUs."""
    from dragon_dsl.tvm.blocks import block_names
    from dragon_dsl.tvm.compile import idle_message, launch_message
    from dragon_dsl.tvm.target import GPU_KINDS, tvm_target

    if str(tvm_target(target).kind.name) not in GPU_KINDS:
        return []
    found = [("DRG707", launch_message(sch.mod)), ("DRG708", idle_message(sch.mod, set(block_names(workload))))]
    return [(code, message) for code, message in found if message is not None]


def _figures(engine, workload, measured) -> dict:
    figures = {"latency_us": measured.latency_us, "latencies_us": list(measured.latencies_us or [])}
    for kind in ("unscheduled", "dlight"):
        try:
            base = engine.baseline(workload, kind=kind)
        except ValueError:  # dlight applies to GPU targets only
            continue
        if base.status == "ok" and base.latency_us and measured.latency_us:
            figures[f"{kind}_latency_us"] = base.latency_us
            figures[f"speedup_vs_{kind}"] = base.latency_us / measured.latency_us
    return figures


def _latency_message(f: dict) -> str:
    parts = [f"median latency {f['latency_us']:.3f} us"]
    for kind in ("unscheduled", "dlight"):
        if f"speedup_vs_{kind}" in f:
            parts.append(f"{f[f'speedup_vs_{kind}']:.2f}x vs {kind} ({f[f'{kind}_latency_us']:.3f} us)")
    return "; ".join(parts)
