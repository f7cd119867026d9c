"""`dragon eval`: the evaluation harness. See docs/EVAL.md.

    dragon eval --workloads DIR --target llvm|cuda|TAG|JSON [--device rpc://H:P/KEY]
                [--methods unscheduled,dlight,vendor,metaschedule,ms-random,model]
                [--budgets 16,64,256] [--k 8] --out OUT_DIR

Writes OUT_DIR/report.md, its PNG plots and OUT_DIR/results.json. Exit 0 when the report
was written (or, with --shard, the shard measured everything), 2 for bad input, 3 when
--stop-after deferred measurements to a later run over the same OUT_DIR (no report).
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console


def add_parser(sub) -> None:
    from dragon_dsl.cli.flags import add_input_sets, add_output, add_workers
    from dragon_dsl.eval.harness import METHODS

    p = sub.add_parser("eval", help="evaluate methods on a folder of workloads: report.md + results.json")
    p.add_argument("--workloads", required=True, help="folder of .tvmscript workloads (and optional .dragon scripts)")
    p.add_argument("--target", required=True, help="llvm, cuda, a target tag or a target JSON object")
    p.add_argument("--device", default="local", help="local (default) or rpc://HOST:PORT/KEY")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated from: {', '.join(METHODS)}")
    p.add_argument("--budgets", default="16,64,256", help="MetaSchedule trial budgets, comma-separated")
    p.add_argument("-k", type=int, default=8, help="the model's samples for best-of-k and pass@k (default 8)")
    p.add_argument("--k", type=int, dest="k", help=argparse.SUPPRESS)  # deprecated spelling
    p.add_argument(
        "--model", dest="model_path", help="a trained model folder (default: the shipped one for the target)"
    )
    p.add_argument("--model-path", dest="model_path", help=argparse.SUPPRESS)  # deprecated spelling
    add_input_sets(p)
    p.add_argument("--repeat", type=int, default=5, help="timing repeats")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per build (default 120)")
    p.add_argument(
        "--run-timeout",
        type=float,
        default=30.0,
        help="seconds for a candidate's verify and time on the device, once it holds the device "
        "(default 30: a hanging kernel keeps every process sharing the GPU waiting that long)",
    )
    p.add_argument(
        "--generation-version",
        type=int,
        metavar="N",
        help="measure the model's stored answers of decoder version N (OUT_DIR/model) instead of "
        "this code's; answers missing there are 'not available', never generated",
    )
    add_workers(p)
    p.add_argument("--cache", help="results cache file (default: OUT_DIR/cache/results.sqlite)")
    p.add_argument("--gpu-name", help="GPU name for the roofline peaks (default: nvidia-smi's), e.g. H200")
    p.add_argument("--limit", type=int, help="evaluate only the first N workloads (by name)")
    p.add_argument("--seed", type=int, default=20260101, help="MetaSchedule's seed")
    p.add_argument(
        "--shard",
        help="i/n: measure shard i of n only, into OUT_DIR's caches (no report); "
        "run the shards at once, then once without --shard for the report",
    )
    p.add_argument(
        "--stop-after",
        type=float,
        metavar="SECONDS",
        help="start no measurement expected to end later than SECONDS after the start (MetaSchedule "
        "runs are estimated from the finished ones); the rest waits for the next run (exit 3)",
    )
    p.add_argument(
        "--generate-only",
        action="store_true",
        help="only write the model's scripts into OUT_DIR/model (no engine, no GPU); a later run "
        "with the same options measures them",
    )
    add_output(p, "output folder", required=True)
    p.set_defaults(func=cmd_eval)
    r = sub.add_parser(
        "eval-report",
        help="merge the shard results of a `dragon eval --shard` run into "
        "results.json + report.md, or render a results.json again, measuring nothing",
    )
    r.add_argument("out_dir", nargs="?", help="the evaluation's OUT_DIR (holds results-shard-I-of-N.json)")
    r.add_argument(
        "--results",
        metavar="FILE",
        help="instead of merging shards: compute the metrics of this "
        "results.json again from its measurements and write the report (needs --to)",
    )
    r.add_argument("--to", help="folder for results.json, report.md and the plots (default: OUT_DIR)")
    r.set_defaults(func=cmd_eval_report)


def cmd_eval_report(args, out: Console, err: Console) -> int:
    """Merge shard files into a report. Never replaces a complete run's results.json (one without
    `merged_from`): that one was measured over every workload at once."""
    from pathlib import Path

    from dragon_dsl.eval import report
    from dragon_dsl.eval.discover import EvalInputError
    from dragon_dsl.eval.harness import merge_shards, write_results

    if bool(args.out_dir) == bool(args.results):
        err.print("error: give either OUT_DIR (merge its shard files) or --results FILE", markup=False)
        return 2
    if args.results:
        return _render_again(args, err)
    dest = Path(args.to or args.out_dir)
    command = ["dragon", "eval-report", args.out_dir] + (["--to", args.to] if args.to else [])
    try:
        results = merge_shards(args.out_dir, tuple(command))
        existing = dest / "results.json"
        if existing.exists():
            try:
                merged_before = "merged_from" in json.loads(existing.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                merged_before = False
            if not merged_before:
                raise EvalInputError(
                    f"{existing} is a complete run's results (not a merge): not replaced; give --to another folder"
                )
    except EvalInputError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    dest.mkdir(parents=True, exist_ok=True)
    write_results(results, dest)
    path = report.write(results, dest)
    n = sum(r["status"] == "measured" for r in results["measurements"])
    gaps = ([f"{len(results['deferred'])} measurement(s) still deferred"] if results["deferred"] else []) + (
        [f"shard(s) {', '.join(map(str, results['missing_shards']))} missing"] if results["missing_shards"] else []
    )
    err.print(
        f"{n} measurement rows over {len(results['workloads'])} workloads from {len(results['merged_from'])} "
        f"shard files; report: {path}" + (f" (interim: {'; '.join(gaps)})" if gaps else ""),
        markup=False,
    )
    return 0


def _render_again(args, err: Console) -> int:
    """`eval-report --results FILE --to DIR`: the metrics of FILE's measurements computed again by
    this code (a report written before a metric existed gets it), written with the report into DIR.
    The measurements and the run's own command are kept; `rendered_by` records this command."""
    from pathlib import Path

    from dragon_dsl.eval import report
    from dragon_dsl.eval.harness import write_results
    from dragon_dsl.eval.metrics import summarize

    if not args.to:
        err.print("error: --results needs --to DIR (the folder for the new report)", markup=False)
        return 2
    src, dest = Path(args.results), Path(args.to)
    try:
        results = json.loads(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        err.print(f"error: {src}: {exc}", markup=False)
        return 2
    except json.JSONDecodeError as exc:
        err.print(f"error: {src}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}", markup=False)
        return 2
    missing = (
        [k for k in ("measurements", "workloads", "methods", "command") if k not in results]
        if isinstance(results, dict)
        else ["(not an object)"]
    )
    if missing:
        err.print(f"error: {src}: not a `dragon eval` results file (missing {', '.join(missing)})", markup=False)
        return 2
    if dest.resolve() == src.resolve().parent:
        err.print(f"error: --to {dest} holds {src.name} itself: give another folder", markup=False)
        return 2
    results["metrics"] = summarize(results)
    results["rendered_by"] = ["dragon", "eval-report", "--results", str(src), "--to", str(dest)]
    dest.mkdir(parents=True, exist_ok=True)
    write_results(results, dest)
    path = report.write(results, dest)
    n = sum(r.get("status") == "measured" for r in results["measurements"])
    err.print(
        f"{n} measurement rows over {len(results['workloads'])} workloads rendered again; report: {path}", markup=False
    )
    return 0


def _ints(text: str, what: str) -> tuple:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise ValueError(f"{what}: expected positive integers, got {text!r}")
    return values


def _target(text: str):
    if text.strip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--target: not JSON: {exc.msg}") from None
    return text


def command_of(args) -> list:
    """The exact command, every option spelled out (defaults included), from the parsed arguments."""
    cmd = ["dragon", "eval"]
    for name in (
        "workloads",
        "target",
        "device",
        "methods",
        "budgets",
        "k",
        "model_path",
        "seeds",
        "repeat",
        "timeout",
        "run_timeout",
        "generation_version",
        "workers",
        "cache",
        "gpu_name",
        "limit",
        "seed",
        "shard",
        "stop_after",
        "out",
    ):
        value = getattr(args, name)
        if value is not None:
            cmd += [f"--{name.replace('_', '-')}", str(value)]
    return cmd


def _settings(args):
    """The evaluation's Settings from the command's arguments; ValueError names a bad one."""
    from dragon_dsl.corpus.search_run import parse_shard
    from dragon_dsl.eval.harness import Settings, parse_methods

    settings = Settings(
        workloads=args.workloads,
        target=_target(args.target),
        out_dir=args.out,
        device=args.device,
        methods=parse_methods(args.methods),
        budgets=_ints(args.budgets, "--budgets"),
        k=args.k,
        seeds=args.seeds,
        repeat=args.repeat,
        timeout_s=args.timeout,
        run_timeout_s=args.run_timeout,
        generation_version=args.generation_version,
        workers=args.workers,
        cache=args.cache,
        model_path=args.model_path,
        gpu_name=args.gpu_name,
        limit=args.limit,
        seed=args.seed,
        shard=parse_shard(args.shard) if args.shard else None,
        stop_after_s=args.stop_after,
        command=command_of(args),
    )
    if args.k < 1:
        raise ValueError("--k must be at least 1")
    for option, value in (("--timeout", args.timeout), ("--run-timeout", args.run_timeout)):
        if not value > 0:
            raise ValueError(f"{option}: expected a positive number of seconds, got {value:g}")
    if args.stop_after is not None and not args.stop_after > 0:
        raise ValueError(f"--stop-after: expected a positive number of seconds, got {args.stop_after}")
    return settings


def _generated_line(args, summary) -> str:
    """What `--generate-only` wrote, in one line."""
    made = [g for g in summary["generated"] if not g["cached"]]
    left = summary["improvement_left_to_the_measured_run"]
    return (
        f"{len(summary['generated'])} model answers for {summary['workloads']} workloads in "
        f"{args.out}/model ({len(made)} generated now, {sum(g['generation_s'] for g in made):.1f} s of "
        f"generation; the others were there)"
        + (f"; improvement left to the measured run (several scripts): {', '.join(left)}" if left else "")
    )


def _finish(args, settings, results, err: Console) -> int:
    """The results written (a shard's file, or the whole results and report), or why not yet."""
    from dragon_dsl.eval import report
    from dragon_dsl.eval.harness import write_results

    deferred = results["deferred"]
    why = f"the interruption ({results['interrupted']})" if results.get("interrupted") else "--stop-after"
    later = (
        f"; {len(deferred)} measurement(s) deferred by {why} "
        f"({', '.join(sorted({d['method'] for d in deferred}))}): run again over {args.out} to go on"
        if deferred
        else ""
    )
    if settings.shard is not None:
        i, n = settings.shard
        path = write_results(results, args.out, f"results-shard-{i}-of-{n}.json")
        err.print(
            f"shard {i}/{n}: {len(results['workloads'])} workloads measured into {args.out}'s caches "
            f"({path.name})" + (later or "; run again without --shard for the report"),
            markup=False,
        )
        return 3 if deferred else 0
    if deferred:
        err.print(f"no report{later}", markup=False)
        return 3
    write_results(results, args.out)
    path = report.write(results, args.out)
    n = sum(r["status"] == "measured" for r in results["measurements"])
    err.print(f"{n} measurement rows over {len(results['workloads'])} workloads; report: {path}", markup=False)
    return 0


def cmd_eval(args, out: Console, err: Console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dragon_dsl.eval.discover import EvalInputError
    from dragon_dsl.eval.harness import generate, run

    try:
        settings = _settings(args)
    except ValueError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
    ) as progress:
        current = {}

        def phase(label, total):
            if "task" in current:
                progress.update(current["task"], visible=False)
            current["task"] = progress.add_task(label, total=total)

        def advance():
            progress.advance(current["task"])

        def log(line):  # one line per measurement, above the bar or alone in a log file
            progress.console.print(line, markup=False, highlight=False)

        try:
            if args.generate_only:
                summary = generate(settings, phase, advance)
            else:
                results = run(settings, phase, advance, log)
        except (EvalInputError, ValueError) as exc:  # bad inputs; an unknown target or device, no model
            err.print(f"error: {exc}", markup=False)
            return 2
    if args.generate_only:
        err.print(_generated_line(args, summary), markup=False)
        return 0
    return _finish(args, settings, results, err)
