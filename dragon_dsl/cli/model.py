"""`dragon suggest`, `dragon improve` and `dragon train`: the schedule model's commands.

    dragon suggest [WORKLOAD.tvmscript] [--target llvm|cuda] [--device D] [--level L] [-k N]
                   [--budget SECONDS] [--workers N] [--json] [--exact] [-o OUT.dragon]
    dragon improve WORKLOAD.tvmscript SCRIPT.dragon [the same options]
    dragon train sft CORPUS -o MODEL_DIR [...]      (see dragon_model/train.py)
    dragon train rl CORPUS --model MODEL_DIR -o OUT [...]   (see dragon_model/rl.py)

suggest/improve print a verified script (build + numeric check + timing in the measurement
engine), its explanation graph when `dragon_dsl.explain` is there, its latency and speedups.
When no model candidate verifies they run a budgeted MetaSchedule search instead and say so.
The model package (`dragon_model`) and its dependencies (torch, transformers, xgrammar) are
imported only by these commands.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dragon_dsl.cli.check import parse_target
from dragon_dsl.cli.files import read_source
from dragon_dsl.language.files import write_text

EXAMPLE_WORKLOAD = Path(__file__).resolve().parent.parent / "examples" / "matmul_256.tvmscript"


def add_commands(sub) -> None:
    from dragon_dsl.cli.flags import add_device, add_workers

    for name, helptext in (
        ("suggest", "write a verified schedule for a workload with the model"),
        ("improve", "write a faster schedule from scratch, given a workload and a script"),
    ):
        p = sub.add_parser(name, help=helptext)
        if name == "suggest":  # the embedded default: the shipped 256^3 matmul, so `dragon suggest` runs as is
            p.add_argument(
                "workload",
                nargs="?",
                default=str(EXAMPLE_WORKLOAD),
                help="the workload (.tvmscript; default: the shipped matmul_256 example)",
            )
        else:
            p.add_argument("workload", help="the workload (.tvmscript)")
        if name == "improve":
            p.add_argument("script", help="the current .dragon script")
        p.add_argument("--target", type=parse_target, default="llvm", help="llvm (default), cuda, a tag or JSON")
        add_device(p, "where candidates are verified and timed")
        p.add_argument(
            "--level",
            choices=("build", "verify", "time"),
            default="time",
            help="how far each candidate is checked: time (default), verify, or build (no device needed: "
            "a GPU target on a machine without a GPU; the answer is then untimed)",
        )
        p.add_argument("-k", type=int, default=4, help="candidates to sample and validate (default 4)")
        p.add_argument("--model", help="a trained model folder (default: the shipped one for the target)")
        p.add_argument(
            "--budget",
            type=_seconds,
            metavar="SECONDS",
            help="seconds the model may spend writing candidates (default: 60 a candidate); when they run "
            "out, the candidates written so far are measured and the best verified one is the answer",
        )
        p.add_argument("--search-trials", type=int, default=16, help="budget of the fallback MetaSchedule search")
        p.add_argument("--no-model", action="store_true", help="skip the model: search only")
        p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
        p.add_argument(
            "--exact",
            action="store_true",
            help="show the answer exactly as measured, with queries whose results nothing uses (DRG104)",
        )
        p.add_argument("-o", "--output", help="write the script there")
        add_workers(p)
        p.add_argument(
            "--seed", type=int, default=0, help="sampling seed: the same seed gives the same candidates (default 0)"
        )
        p.set_defaults(func=cmd_suggest)
    train = sub.add_parser("train", help="train the schedule model (sft, then rl)")
    stages = train.add_subparsers(dest="stage", required=True)
    from dragon_model import rl
    from dragon_model import train as sft

    sft_p = stages.add_parser("sft", help="supervised training on a corpus")
    sft.add_arguments(sft_p)
    sft_p.set_defaults(func=lambda args, out, err: sft.run(args))
    rl_p = stages.add_parser("rl", help="reinforcement learning from execution (GRPO)")
    rl.add_arguments(rl_p)
    rl_p.set_defaults(func=lambda args, out, err: rl.run(args))


def _seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _validate(args, err) -> bool:
    """Inputs are checked before the model loads (tens of seconds): the target (TVM's words for an
    unknown one), a GPU level without a GPU, the workload (TVMScript, with the position of a parse
    error; a .dragon script given for it: the arguments swapped) and the script to improve (its
    diagnostics)."""
    from dragon_dsl import check_text
    from dragon_dsl.cli.check import no_gpu_problem
    from dragon_dsl.cli.output import print_workload_error
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.target import TargetError, tvm_target
    from dragon_dsl.tvm.workload import WorkloadError, load_workload

    try:
        tvm_target(resolve_target(args.target).spec)
    except (TargetError, ValueError) as exc:
        err.print(f"error: {exc}", markup=False)
        return False
    problem = no_gpu_problem(args.target, args.level, args.device)
    if problem is not None:
        err.print(f"error: {problem}", markup=False)
        return False
    script = getattr(args, "script", None)
    if args.workload.endswith(".dragon") and (script is None or script.endswith((".tvmscript", ".py"))):
        swapped = f"dragon improve {script} {args.workload}" if script else None
        err.print(
            f"error: {args.workload}: a .dragon script where the workload (.tvmscript) goes"
            + (f"; the arguments are WORKLOAD SCRIPT: {swapped}" if swapped else ""),
            markup=False,
        )
        return False
    try:  # a path as given (not read as TVMScript text when it does not end in .tvmscript)
        load_workload(Path(args.workload) if Path(args.workload).is_file() else args.workload)
    except WorkloadError as exc:
        print_workload_error(err, exc if exc.path else exc.located(args.workload))
        return False
    if script:
        text = read_source(script)
        _program, diags = check_text(text)
        errors = [d for d in diags if d.severity.name.lower() == "error"]
        if errors:
            err.print(errors[0].render(script), markup=False)
            return False
    return True


class _Stages:
    """What `dragon suggest` is doing, on standard error: in a terminal a status line that each
    stage updates (loading the model, generating i/k, measuring i/n, searching) with the time so
    far; otherwise (output redirected, a CI log) one plain line a stage, so that minutes of work are
    never silent."""

    def __init__(self, err, quiet: bool = False):
        import time

        self.err, self.status, self.start, self.quiet = err, None, time.monotonic(), quiet
        self.terminal = err.is_terminal

    def __call__(self, name: str, detail: str = "") -> None:
        import time

        if self.quiet:
            return
        text = f"{name} {detail}".strip() + f" ({time.monotonic() - self.start:.0f} s)"
        if not self.terminal:
            self.err.print(f"dragon: {text}", markup=False, highlight=False)
        elif self.status is None:
            self.status = self.err.status(text)
            self.status.start()
        else:
            self.status.update(text)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


_HEADER_WORKLOAD = re.compile(r'^workload "[^"\\\n]*"$', re.M)


def _as_given(text: str, workload: str, output: str | None) -> str:
    """TEXT with its header naming the workload where a check of the script as saved finds it: as
    the user gave it (relative to the folder of -o's file), the shipped example by its full path;
    TVM's file name alone names a file that is not in the user's folder (DRG602)."""
    import os

    path = Path(workload)
    name = str(path)  # printed: the path as given (the shipped example's is absolute)
    if output and str(path) != str(EXAMPLE_WORKLOAD):  # a header path is relative to the script's folder
        name = os.path.relpath(path.resolve(), Path(output).parent.resolve())
    if '"' in name or "\\" in name or "\n" in name:
        return text  # not writable as a header string: the script keeps TVM's name
    return _HEADER_WORKLOAD.sub(lambda _m: f'workload "{name}"', text, count=1)


def cmd_suggest(args, out, err) -> int:
    from dragon_dsl.cli.check import environment_problem
    from dragon_dsl.cli.files import FileProblem

    try:
        if not _validate(args, err):
            return 2
        script = read_source(args.script) if getattr(args, "script", None) else None
    except FileProblem as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    stages = _Stages(err)
    engine = None
    try:
        from dragon_dsl.engine import Engine

        stages("starting", "the measurement engine")
        engine = Engine(args.target, device=args.device, workers=args.workers, cache=False, timeout_s=120.0)
        stages("loading", "the model")
        from dragon_model.api import recommend

        budget = {"budget_s": args.budget} if args.budget else {}
        rec = recommend(
            args.workload,
            target=args.target,
            script=script,
            k=args.k,
            model_path=args.model,
            search_trials=args.search_trials,
            level=args.level,
            engine=engine,
            use_model=not args.no_model,
            seed=args.seed,
            log=lambda m: err.print(m, markup=False),
            stage=stages,
            **budget,
        )
    except Exception as exc:  # the engine could not start or reach its device: one line
        problem = environment_problem(exc)
        if problem is None:
            raise
        stages.stop()
        err.print(f"error: {problem}", markup=False)
        return 2
    finally:
        stages.stop()
        if engine is not None:
            engine.close()
    exact = args.exact and rec.exact_script
    explained = rec.explanation and not rec.explanation.startswith("# explanation unavailable")
    shown = rec.exact_script if exact else rec.explanation if explained else rec.script
    if shown:
        shown = _as_given(shown, args.workload, args.output)
    if args.output and shown:
        write_text(args.output, shown)
    if args.json:
        data = rec.to_json()
        for key in ("script", "exact_script", "explanation"):  # their headers as the printed script's
            if data.get(key):
                data[key] = _as_given(data[key], args.workload, args.output)
        out.print(json.dumps(data, indent=2, default=str), markup=False, highlight=False, soft_wrap=True)
        return 0 if rec.verified else 1
    if not rec.verified:
        err.print(f"error: {rec.note}", markup=False)
        return 1
    if not args.output:  # one script: the explained one when the explanation graph is there
        out.print(shown, markup=False, highlight=False, soft_wrap=True, end="" if shown.endswith("\n") else "\n")
    for line in _figures(rec, args.level):
        err.print("# " + line, markup=False)
    return 0


def _figures(rec, level: str) -> list:
    """The lines after the script: where it came from, how many candidates, its latency and speedups."""
    figures = [
        f"source: {rec.source}" + (f" ({rec.note})" if rec.note else ""),
        f"candidates tried: {rec.candidates_tried}",
    ]
    if rec.latency_us:
        figures.append(f"latency: {rec.latency_us:.3f} us")
    else:
        figures.append(
            f"latency: not timed (level {level}: " + ("built, not run)" if level == "build" else "not timed)")
        )
    if rec.speedup_vs_baseline:
        figures.append(f"speedup vs {rec.baseline_kind}: {rec.speedup_vs_baseline:.2f}x ({rec.baseline:.3f} us)")
    if rec.speedup_vs_given and rec.source != "given":
        figures.append(f"speedup vs the given script: {rec.speedup_vs_given:.2f}x ({rec.given_latency_us:.3f} us)")
    return figures
