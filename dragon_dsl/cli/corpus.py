"""`dragon search` and `dragon corpus build|verify|card`: the corpus pipeline's commands.

    dragon search WORKLOADS_DIR --out RUN --target T --budget N [--shard i/n] [--device D] [--limit N]
    dragon corpus build RUN... --out CORPUS [--improvements K] [--test-families a,b]
    dragon corpus verify CORPUS [--json FILE]
    dragon corpus card CORPUS

Progress is drawn with rich on a terminal and stays quiet otherwise; summaries go to
standard error, JSON (where asked) to a file or standard output.
"""

from __future__ import annotations

import argparse
import json
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dragon_dsl.cli.check import parse_target
from dragon_dsl.cli.flags import add_json, add_output, add_workers, check_required


def _progress(err: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=err,
        transient=False,
        disable=not err.is_terminal,
    )


def _plain(err: Console, line: str) -> None:
    """A progress line where no bar is drawn (a log file, a device machine's output)."""
    if not err.is_terminal:
        err.print(line, markup=False, highlight=False)


def _write_json(out: Console, data, path) -> None:
    from dragon_dsl.language.files import write_text

    text = json.dumps(data, indent=1) + "\n"
    if path and path != "-":
        write_text(path, text)
    else:
        out.print(text, markup=False, highlight=False, soft_wrap=True, end="")


# --- search -----------------------------------------------------------------------------------------
def cmd_search(args, out: Console, err: Console) -> int:
    from dragon_dsl.corpus.search_run import RunConfigError, SearchConfig, SearchRun, parse_shard
    from dragon_dsl.engine import resolve_target

    try:
        shard = parse_shard(args.shard)
        cfg = SearchConfig(
            target=resolve_target(args.target).spec,
            budget=args.budget,
            seed=args.seed,
            num_trials_per_iter=args.per_iter or min(args.budget, 64),
            cost_model=args.cost_model,
            population_size=args.population,
            genetic_num_iters=args.genetic_iters,
            init_min_unmeasured=min(args.population, 32),
            device=args.device,
            timeout_s=args.timeout,
            cache=not args.no_cache,
            baselines=not args.no_baselines,
        )
        run = SearchRun(args.out, args.workloads_dir, cfg, workers=args.workers)
        run.select(shard, args.limit)  # a bad manifest fails here, before a run folder or a worker exists
        run.open()
    except (RunConfigError, ValueError) as exc:
        err.print(f"error: {exc}", markup=False)
        return 2

    state = {"trials": 0, "failed_candidates": 0, "failed": 0, "t0": time.perf_counter()}
    with _progress(err) as bar:
        task = bar.add_task("searching", total=None, info="")

        def info() -> str:
            minutes = max((time.perf_counter() - state["t0"]) / 60, 1e-9)
            return (
                f"{state['trials']} trials, {state['trials'] / minutes:.0f}/min, "
                f"{state['failed_candidates']} failed candidates, {state['failed']} failed workloads"
            )

        def progress(event, **kw):
            if event == "start":
                bar.update(task, total=kw["total"], completed=kw["done"], info=info())
            elif event == "batch":
                state["trials"] += len(kw["candidates"])
                state["failed_candidates"] += sum(c["status"] != "ok" for c in kw["candidates"])
                bar.update(task, info=info())
            elif event == "workload":
                rec = kw["record"]
                state["failed"] += rec["status"] != "ok"
                bar.update(task, advance=1, info=info())
                if rec["status"] != "ok":
                    bar.console.print(f"{rec['workload']}: failed: {rec['error']}", markup=False)

        try:
            summary = run.run(shard=shard, limit=args.limit, retry_failed=args.retry_failed, progress=progress)
        except RunConfigError as exc:
            err.print(f"error: {exc}", markup=False)
            return 2
    per = summary.per_workload_s
    err.print(
        f"{summary.done} workload(s) searched ({summary.failed} failed), {summary.skipped} already done; "
        f"{summary.trials} trials in {summary.wall_s:.1f} s"
        + (f", {sum(per) / len(per):.1f} s per workload" if per else "")
        + f"; records in {run.records_dir}",
        markup=False,
    )
    if args.json:
        _write_json(out, summary.to_json(), args.json)
    return 1 if summary.failed else 0


# --- corpus -----------------------------------------------------------------------------------------
def cmd_build(args, out: Console, err: Console) -> int:
    from dragon_dsl.corpus.build import BuildConfig, build_corpus
    from dragon_dsl.corpus.search_run import RunConfigError

    try:
        cfg = BuildConfig(
            improvements=args.improvements,
            slower=args.slower,
            test_families=tuple(args.test_families.split(",")) if args.test_families else None,
            n_test_families=args.n_test_families,
            split_seed=args.split_seed,
            shape_pct=args.shape_pct,
            valid_pct=args.valid_pct,
            level=args.level,
            timeout_s=args.timeout,
            chunk=args.chunk,
        )
    except ValueError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    t0 = time.perf_counter()
    with _progress(err) as bar:
        task = bar.add_task("verifying examples", total=None, info="")

        def progress(event, **kw):
            if event == "start":
                bar.update(task, total=kw["total"], completed=kw["done"], info=f"{kw['rows']} examples")
                if kw["done"]:
                    _plain(
                        err, f"resuming: {kw['done']} of {kw['total']} workloads measured before, {kw['rows']} examples"
                    )
            else:
                bar.update(task, advance=kw["n"], info=f"{kw['rows']} examples")
                t = bar.tasks[0]
                _plain(
                    err, f"{t.completed}/{t.total} workloads, {kw['rows']} examples, {time.perf_counter() - t0:.0f} s"
                )

        try:
            manifest = build_corpus(
                args.runs,
                args.out,
                cfg,
                workers=args.workers,
                workloads_dir=args.workloads,
                progress=progress,
                device=args.device,
            )
        except (RunConfigError, ValueError) as exc:
            err.print(f"error: {exc}", markup=False)
            return 2
    c = manifest["counts"]
    err.print(
        f"{c['examples']} verified example(s) from {c['workloads_in_runs']} workload(s) in {args.out}: "
        + ", ".join(f"{s} {sum(v.values())}" for s, v in c["by_split"].items())
        + f"; held-out families: {', '.join(manifest['build']['test_families']) or 'none'}"
        + (f"; dropped: {json.dumps(c['dropped'])}" if c["dropped"] else ""),
        markup=False,
    )
    return 0


def cmd_verify(args, out: Console, err: Console) -> int:
    from dragon_dsl.corpus.search_run import RunConfigError
    from dragon_dsl.corpus.verify import verify_corpus

    t0 = time.perf_counter()
    with _progress(err) as bar:
        task = bar.add_task("re-verifying", total=None, info="")

        def progress(event, **kw):
            if event == "start":
                bar.update(task, total=kw["total"])
            else:
                bar.update(task, advance=kw["n"], info=f"{kw['failed']} failing")
                t = bar.tasks[0]
                _plain(
                    err, f"{t.completed}/{t.total} examples, {kw['failed']} failing, {time.perf_counter() - t0:.0f} s"
                )

        try:
            report = verify_corpus(
                args.corpus, workers=args.workers, timeout_s=args.timeout, progress=progress, device=args.device
            )
        except RunConfigError as exc:
            err.print(f"error: {exc}", markup=False)
            return 2
    for f in report["failures"][:20]:
        err.print(f"{f['id']}: " + "; ".join(f["problems"]), markup=False)
    err.print(f"{report['passed']}/{report['examples']} examples pass ({100 * report['share']:.1f}%)", markup=False)
    if args.json:
        _write_json(out, report, args.json)
    return 0 if report["passed"] == report["examples"] else 1


def cmd_card(args, out: Console, err: Console) -> int:
    from dragon_dsl.corpus.card import write_card
    from dragon_dsl.corpus.search_run import RunConfigError

    try:
        path = write_card(args.corpus)
    except RunConfigError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    err.print(f"wrote {path}", markup=False)
    return 0


# --- parsers ----------------------------------------------------------------------------------------
def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _workers(p) -> None:
    add_workers(p, type=_positive)


def _device(p) -> None:
    from dragon_dsl.cli.flags import add_device

    add_device(p, "where examples are verified and timed")


def add_parsers(sub) -> None:
    """Register `search` and `corpus` on the `dragon` command's subparsers."""
    s = sub.add_parser("search", help="MetaSchedule over a workload folder, resumable (records per workload)")
    s.add_argument("workloads_dir", help="folder with manifest.jsonl (from `dragon workloads`)")
    add_output(s, "run folder (created, or resumed when it exists)", required=True)
    s.add_argument("--target", type=parse_target, required=True, help="llvm, cuda, a tag or a JSON object")
    s.add_argument("--budget", type=_positive, required=True, help="MetaSchedule trials per workload")
    s.add_argument(
        "--seed", type=int, default=0, help="run seed; each workload's search seed derives from it (default 0)"
    )
    s.add_argument("--per-iter", type=_positive, help="trials per search round (default: min(budget, 64))")
    s.add_argument(
        "--cost-model",
        choices=("xgb", "random"),
        default="xgb",
        help="MetaSchedule's cost model: xgb (default) or random (seeded: one search round is reproducible)",
    )
    s.add_argument("--population", type=_positive, default=128, help="evolutionary search population (default 128)")
    s.add_argument("--genetic-iters", type=int, default=2, help="evolutionary search iterations per round (default 2)")
    s.add_argument("--shard", default="0/1", help="i/n: this process searches shard i of n")
    s.add_argument("--device", default="local", help="local or rpc://HOST:PORT/KEY")
    s.add_argument("--limit", type=_positive, help="search at most the first N workloads of the shard")
    _workers(s)
    s.add_argument("--timeout", type=float, default=60.0, help="seconds per build/run task")
    s.add_argument("--no-cache", action="store_true", help="no engine results cache")
    s.add_argument("--no-baselines", action="store_true", help="do not measure the baselines")
    s.add_argument("--retry-failed", action="store_true", help="search again the workloads whose search failed")
    add_json(s, "the summary")
    s.set_defaults(func=cmd_search)

    c = sub.add_parser("corpus", help="build, re-verify and describe a corpus of verified examples")
    csub = c.add_subparsers(dest="corpus_command", required=True)
    b = csub.add_parser(
        "build", help="search runs -> verified examples (HF datasets Parquet + manifest.json); resumable"
    )
    b.add_argument("runs", nargs="+", help="run folders of `dragon search`")
    add_output(b, "corpus folder (created, or resumed when a build was cut short)", required=True)
    b.add_argument("--improvements", type=int, default=2, help="improvement examples per workload at most (K)")
    b.add_argument("--slower", type=float, default=1.2, help="an improvement's prompt is at least this much slower")
    b.add_argument("--test-families", help="comma-separated held-out families (default: chosen by hash)")
    b.add_argument(
        "--n-test-families",
        type=int,
        default=2,
        help="how many families to hold out when --test-families is not given (default 2)",
    )
    b.add_argument("--split-seed", type=int, default=0, help="seed of the split by family and shape (default 0)")
    b.add_argument("--shape-pct", type=int, default=10, help="percent of shapes held out as test_shape (default 10)")
    b.add_argument("--valid-pct", type=int, default=10, help="percent of the rest kept for validation (default 10)")
    b.add_argument(
        "--level",
        choices=("verify", "time"),
        default="time",
        help="verify: keep examples that verify; time (default): measure them again too",
    )
    b.add_argument("--workloads", help="the workloads folder, when it moved since the search")
    _workers(b)
    _device(b)
    b.add_argument("--timeout", type=float, default=60.0, help="seconds per build/run task (default 60)")
    b.add_argument(
        "--chunk",
        type=_positive,
        default=32,
        help="workloads per engine call (their results are kept as each call ends: a killed build resumes)",
    )
    b.set_defaults(func=cmd_build)
    v = csub.add_parser("verify", help="re-verify every example of a corpus from scratch")
    v.add_argument("corpus", help="corpus folder (from `dragon corpus build`)")
    add_json(v, "the report")
    _workers(v)
    _device(v)
    v.add_argument("--timeout", type=float, default=60.0, help="seconds per build/run task (default 60)")
    v.set_defaults(func=cmd_verify)
    d = csub.add_parser("card", help="write DATA_CARD.md for a corpus")
    d.add_argument("corpus", help="corpus folder (from `dragon corpus build`)")
    d.set_defaults(func=cmd_card)
    from dragon_dsl.corpus import pretrain

    pt = csub.add_parser(
        "pretrain",
        help="valid scripts sampled from MetaSchedule's design spaces and dlight's "
        "schedules, no measurement (the model's pretraining records); resumable, sharded",
    )
    pretrain.add_arguments(pt)
    pt.set_defaults(func=lambda args, out, err: pretrain.run_command(args))


def main(argv=None) -> int:
    """`python -m dragon_dsl.cli.corpus search|corpus ...`: the same commands without the rest of `dragon`."""
    import sys

    parser = argparse.ArgumentParser(prog="dragon", description="Little Dragon: the corpus pipeline")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    check_required(args)
    out, err = Console(soft_wrap=True), Console(stderr=True, soft_wrap=True)
    try:
        return args.func(args, out, err)
    except OSError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
