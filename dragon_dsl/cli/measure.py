"""`dragon measure BATCH.jsonl --target T --out RESULTS.jsonl`: build, verify and time a batch of
candidates, resumably (dragon_dsl/engine/batchfile.py holds the batch logic; docs/MEASURE.md the
user's guide).

Exit codes: 0 the batch ran (whatever the candidates' verdicts), 2 the command could not run
(usage, an unreadable batch file, a results file of another configuration, no device).
"""

from __future__ import annotations

import json
import os
import sys

from rich.console import Console
from rich.table import Table

PHASES = ("replay", "checks", "codegen", "compile", "upload", "wait", "verify", "time", "idle")


def add_parser(sub) -> None:
    from dragon_dsl.cli.check import parse_target
    from dragon_dsl.cli.flags import add_input_sets, add_output, add_workers

    p = sub.add_parser(
        "measure",
        help="build, verify and time a JSON-lines batch of candidates (resumable)",
        description="Measure every candidate of BATCH.jsonl (one JSON object a line: 'workload' or "
        "'workload_text', 'script' or 'trace', optional 'id') and append one JSON row "
        "per candidate to -o/--output. A rerun measures only the ids that file does not hold yet.",
    )
    p.add_argument("batch", help="the batch file (JSON lines)")
    p.add_argument(
        "--target", required=True, type=parse_target, help="llvm, cuda, a target tag or a target JSON object"
    )
    add_output(p, "the results file (JSON lines, appended; resumed when it exists)", required=True)
    p.add_argument(
        "--level",
        choices=("verify", "time"),
        default="time",
        help="verify: build and compare with the reference; time: verify, then time (default)",
    )
    p.add_argument(
        "--device",
        default="local",
        help="local (default: one worker per GPU CUDA_VISIBLE_DEVICES shows), cuda:0,1 (these GPUs), "
        "or rpc://HOST:PORT/KEY (the GPUs of a TVM RPC tracker)",
    )
    add_workers(p)
    p.add_argument("--json", action="store_true", help="no progress; print the summary as JSON on standard output")
    p.add_argument("--profile", action="store_true", help="print the phase profile (seconds per phase)")
    add_input_sets(p)
    p.add_argument("--repeat", type=int, default=5, help="timing repeats (default 5)")
    p.add_argument("--min-repeat-ms", type=float, default=5.0, help="grow calls per repeat to this long (default 5)")
    p.add_argument("--flush-l2", action="store_true", help="flush the cache before every timed call")
    p.add_argument(
        "--gpu-timer",
        choices=("blocked", "evaluator"),
        default="blocked",
        help="CUDA kernels: device time behind a blocking kernel (default), or TVM's time_evaluator "
        "(which counts the host's launch rate for kernels of a few microseconds)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per build (default 60)")
    p.add_argument(
        "--run-timeout",
        type=float,
        default=30.0,
        help="seconds for a candidate's verify and time once it holds the device (default 30)",
    )
    p.add_argument(
        "--seconds",
        type=float,
        help="start no engine call after this many seconds (the running one ends first; the rows are "
        "kept and the same command measures the rest)",
    )
    p.add_argument("--chunk", type=int, help="candidates per engine call (default: 1024 on GPUs, 4 x workers on a CPU)")
    p.add_argument(
        "--build-group",
        type=int,
        default=1,
        help="compile up to N candidates of one workload as one library (one nvcc call; default 1)",
    )
    p.add_argument(
        "--no-dedupe",
        action="store_true",
        help="build and measure candidates with an identical program each on its own",
    )
    p.add_argument("--cache", help="answer from (and fill) this results cache file; by default everything is measured")
    p.set_defaults(func=cmd_measure)


def _device(text: str):
    """(engine device string, CUDA_VISIBLE_DEVICES or None) for --device; raises ValueError."""
    if text.startswith("cuda:"):
        ids = [t.strip() for t in text[5:].split(",")]
        if not ids or not all(ids):
            raise ValueError(f"--device {text!r}: expected cuda:INDEX[,INDEX...]")
        return "local", ",".join(ids)
    from dragon_dsl.engine import parse_device

    parse_device(text)
    return text, None


def _argument_problem(args) -> str | None:
    """What is wrong with the command's numbers or batch path, if anything."""
    for name in ("workers", "seeds", "repeat", "chunk", "build_group"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return f"--{name.replace('_', '-')} must be at least 1"
    if args.seconds is not None and not args.seconds > 0:
        return "--seconds must be positive"
    if not os.path.isfile(args.batch):
        return f"{args.batch}: no such batch file"
    return None


def _measure_with_progress(args, engine, err: Console, kw: dict):
    """`measure_batch` with a progress bar on the terminal: candidates done and the tally of statuses."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dragon_dsl.engine import measure_batch

    progress = Progress(
        TextColumn("[bold]measure"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )
    tally: dict = {}
    state = {}

    def on_start(total, todo):
        state["task"] = progress.add_task("measure", total=todo, tally="")
        progress.start()

    def on_row(row):
        tally[row["status"]] = tally.get(row["status"], 0) + 1
        progress.update(state["task"], advance=1, tally=" ".join(f"{k} {v}" for k, v in sorted(tally.items())))

    try:
        return measure_batch(args.batch, args.out, engine, args.level, on_row=on_row, on_start=on_start, **kw)
    finally:
        progress.stop()


def cmd_measure(args, out: Console, err: Console) -> int:
    from dragon_dsl.engine import BatchError, Engine, EngineError, PoolError, engine_options, measure_batch

    problem = _argument_problem(args)
    if problem:
        err.print(f"error: {problem}", markup=False)
        return 2
    try:
        device, visible = _device(args.device)
    except ValueError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible  # the device workers inherit it

    options = engine_options(args.target, device)
    if args.no_dedupe:
        options["dedupe_sources"] = False
    options["build_group"] = args.build_group
    options["gpu_timer"] = args.gpu_timer
    try:
        engine = Engine(
            args.target,
            device=device,
            workers=args.workers,
            timeout_s=args.timeout,
            run_timeout_s=args.run_timeout,
            cache=args.cache if args.cache else False,
            **options,
        )
    except (ValueError, EngineError) as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    quiet = args.json or not err.is_terminal
    try:
        kw = dict(
            seeds=args.seeds,
            repeat=args.repeat,
            min_repeat_ms=args.min_repeat_ms,
            flush_l2=args.flush_l2,
            use_cache=bool(args.cache),
            chunk=args.chunk,
            seconds=args.seconds,
        )
        if quiet:
            summary = measure_batch(args.batch, args.out, engine, args.level, **kw)
        else:
            summary = _measure_with_progress(args, engine, err, kw)
    except (BatchError, EngineError, PoolError) as exc:  # no device, workers that cannot start
        err.print(f"error: {exc}", markup=False)
        return 2
    except KeyboardInterrupt:
        err.print(
            f"interrupted: the rows written to {args.out} are kept; run the same command again to measure the rest",
            markup=False,
        )
        return 130
    finally:
        engine.close()
    if args.json:
        data = summary.to_json()
        if not args.profile:
            data.pop("profile")
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
        return 0
    _print_summary(err if quiet else out, summary, args)
    if args.profile:
        _print_profile(err if quiet else out, summary.profile)
    return 0


def _print_summary(console: Console, summary, args) -> None:
    table = Table(title=f"dragon measure: {args.batch} -> {args.out}", show_edge=False)
    table.add_column("status")
    table.add_column("candidates", justify="right")
    for status, n in sorted(summary.counts.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(status, str(n))
    table.add_row("[dim]already in the results[/dim]", str(summary.skipped))
    console.print(table)
    dup = f", {summary.duplicates} copied from an identical candidate" if summary.duplicates else ""
    torn = "; a cut last line of the results file was dropped and measured again" if summary.dropped_torn else ""
    for problem in summary.problems:
        console.print(f"note: {problem}", markup=False)
    passed = "verified and timed" if args.level == "time" else "verified"
    ok_rate = summary.counts.get("ok", 0) * 60.0 / summary.wall_s if summary.wall_s > 0 else 0.0
    console.print(
        f"{summary.written} row(s) written in {summary.wall_s:.1f} s: "
        f"{summary.per_minute:.1f} candidates per minute ({ok_rate:.1f} {passed}){dup}{torn}",
        markup=False,
    )
    if summary.left:
        console.print(
            f"stopped at --seconds {args.seconds:g}: {summary.left} candidate(s) left; the same command measures them",
            markup=False,
        )


def _print_profile(console: Console, profile: dict) -> None:
    table = Table(title="phase profile (seconds summed over workers)", show_edge=False)
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    for name in PHASES:
        if name in profile:
            table.add_row(name, f"{profile[name]:.2f}")
    table.add_row("wall", f"{profile.get('wall', 0.0):.2f}")
    table.add_row("devices", str(profile.get("devices", 0)))
    console.print(table)
