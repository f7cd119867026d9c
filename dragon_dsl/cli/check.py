"""`dragon-check FILE...`: lint and validate scripts up to a level.

    dragon-check FILE... [--workload PATH] [--target llvm|cuda|TAG|JSON] [--device local|rpc://HOST:PORT/KEY]
                 [--level syntax|types|replay|build|verify|time] [--format text|json|sarif] [--workers N]

Exit codes: 0 clean, 1 findings (errors; warnings too with --strict), 2 usage, environment or
internal error (a GPU level on a machine without a GPU, an unreachable RPC tracker: one line).
Build, verify and time run in the measurement engine's worker processes: a
kernel that crashes or hangs is a finding and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dragon_dsl.cli.files import FileProblem, expand, read_source
from dragon_dsl.cli.flags import add_device
from dragon_dsl.cli.output import to_json, to_sarif, to_text
from dragon_dsl.language.diagnostics import Severity
from dragon_dsl.levels import LEVELS, Report, check_text_at_level, level_rank

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def parse_target(text):
    """`--target`: a kind or tag string, or a JSON object; one TVM would refuse is a usage error (exit 2)."""
    from dragon_dsl.language.target_names import target_problem

    if text is None:
        return None
    t = text.strip()
    if t.startswith("{"):
        try:
            t = json.loads(t)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not a JSON object: {exc.msg} at column {exc.colno}") from None
    problem = target_problem(t)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return t


def parse_device_flag(text: str) -> str:
    """`--device`: local or rpc://HOST:PORT/KEY; anything else is a usage error (exit 2)."""
    if text == "local":  # the default: no engine import (the language tools run without TVM)
        return text
    from dragon_dsl.engine import parse_device

    try:
        parse_device(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


NO_GPU = "this machine has no GPU: level 'build' works here; 'verify' and 'time' need a GPU or an rpc:// device"


def no_gpu_problem(target, level: str, device: str) -> str | None:
    """The one line for a GPU target checked at verify or time on a machine without a GPU (before
    TVM or any worker starts), else None."""
    if target is None or device != "local" or level_rank(level) < level_rank("verify"):
        return None
    from dragon_dsl.engine import local_gpus, resolve_target

    try:
        gpu = resolve_target(target).is_gpu
    except ValueError:
        return None  # an unknown target is reported as such where it is used
    return f"{NO_GPU} ({_NO_GPU_ADVICE})" if gpu and not local_gpus() else None


_NO_GPU_ADVICE = "--device rpc://HOST:PORT/KEY, or --level build here"


def environment_problem(exc: BaseException) -> str | None:
    """The one line for what stops the measurement engine before any script is judged (no GPU for a
    GPU level, an unreachable RPC tracker, a bad --device), else None: an exception of the engine
    (`EngineError`) or its device string's ValueError is the environment's, not a finding."""
    engine = sys.modules.get("dragon_dsl.engine")  # not imported: not the engine's exception (and
    if engine is None:  # importing it here would raise for a missing numpy instead)
        return None
    if isinstance(exc, engine.EngineError):
        text = str(exc)
        return f"{text} ({_NO_GPU_ADVICE})" if text.startswith("this machine has no GPU") else text
    return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dragon-check",
        description="Check Dragon scripts: syntax, types, and with TVM replay, build, numeric verification and timing.",
    )
    p.add_argument("files", nargs="+", help=".dragon files or folders, or - for standard input")
    p.add_argument("--workload", help="workload .tvmscript file (overrides the scripts' headers)")
    p.add_argument("--target", type=parse_target, help="llvm, cuda, a target tag or a JSON object (overrides headers)")
    p.add_argument("--level", choices=LEVELS, default="types", help="how far to check (default: types)")
    add_device(p, "where verify and time run (rpc://: the GPUs of a TVM RPC tracker)")
    p.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="text (file:line:col, the line and a caret; default), json (a list of findings) or sarif (SARIF 2.1.0)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        dest="jobs",
        metavar="N",
        help="worker processes: files checked at once below build, build workers from build up (default 1)",
    )
    p.add_argument("--jobs", "-j", type=int, dest="jobs", help=argparse.SUPPRESS)  # the old name, kept working
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per build/run task (default 60)")
    p.add_argument("--strict", action="store_true", help="warnings are findings too (exit 1)")
    return p


class _Engines:
    """One measurement engine per target, created on first use and closed at the end."""

    def __init__(self, jobs: int, timeout: float, device: str = "local"):
        self.jobs, self.timeout, self.device, self.engines = jobs, timeout, device, {}

    def __call__(self, target):
        key = json.dumps(target, sort_keys=True)
        if key not in self.engines:
            from dragon_dsl.engine import Engine

            self.engines[key] = Engine(target, device=self.device, workers=max(1, self.jobs), timeout_s=self.timeout)
        return self.engines[key]

    def close(self):
        for e in self.engines.values():
            e.close()


def _check_one(job):
    """Check one file (runs in a worker process for --jobs > 1 below the build level)."""
    path, src, level, workload, target = job
    return check_text_at_level(src, path, level=level, workload=workload, target=target)


def run(args, err: Console) -> tuple[list[Report], dict[str, str], int]:
    files = expand(args.files)
    sources: dict[str, str] = {}
    internal = 0
    jobs = []
    for path in files:
        try:
            sources[path] = read_source(path)
        except FileProblem as exc:
            err.print(f"error: {exc}", markup=False, highlight=False)
            internal += 1
            continue
        jobs.append((path, sources[path], args.level, args.workload, args.target))
    reports: list[Report] = []
    measuring = LEVELS.index(args.level) >= LEVELS.index("build")
    show_progress = err.is_terminal and len(jobs) > 1
    progress = Progress(
        TextColumn("[bold]dragon-check"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        disable=not show_progress,
    )
    with progress:
        task = progress.add_task("", total=len(jobs))
        if measuring:
            engines = _Engines(args.jobs, args.timeout, args.device)
            try:
                for job in jobs:
                    progress.update(task, description=job[0])
                    reports.append(
                        check_text_at_level(
                            job[1],
                            job[0],
                            level=args.level,
                            workload=args.workload,
                            target=args.target,
                            engine_for=engines,
                        )
                    )
                    progress.advance(task)
            finally:
                engines.close()
        elif args.jobs > 1 and len(jobs) > 1:
            # spawned: a fork of this process (the progress bar's thread, TVM's) can deadlock its child
            with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                for report in pool.map(_check_one, jobs, chunksize=max(1, len(jobs) // (4 * args.jobs))):
                    reports.append(report)
                    progress.advance(task)
        else:
            for job in jobs:
                reports.append(_check_one(job))
                progress.advance(task)
    return reports, sources, internal


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    out, err = Console(highlight=False, soft_wrap=True), Console(stderr=True, highlight=False, soft_wrap=True)
    problem = no_gpu_problem(args.target, args.level, args.device)
    if problem is not None:
        err.print(f"error: {problem}", markup=False)
        return 2
    try:
        reports, sources, internal = run(args, err)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        return 2
    except Exception as exc:
        problem = environment_problem(exc)
        if problem is None:
            raise
        err.print(f"error: {problem}", markup=False)
        return 2
    if args.format == "json":
        sys.stdout.write(to_json(reports) + "\n")
    elif args.format == "sarif":
        sys.stdout.write(to_sarif(reports) + "\n")
    else:
        for r in reports:
            for head, body, sev in to_text(r, sources.get(r.path, "")):
                out.print(head, style=_STYLE[sev], markup=False, soft_wrap=True)
                if body:
                    out.print(body, markup=False, soft_wrap=True)
        errors = sum(r.errors for r in reports)
        warnings = sum(r.warnings for r in reports)
        err.print(
            f"{len(reports)} file(s) checked at level {args.level}: {errors} error(s), {warnings} warning(s)",
            markup=False,
        )
    if internal:
        return 2
    if any(r.errors for r in reports) or (args.strict and any(r.warnings for r in reports)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
