"""`dragon suggest`, `dragon improve` and `dragon train`: the schedule model's commands.

    dragon suggest [WORKLOAD.tvmscript] [--target llvm|cuda] [-k N] [--json] [-o OUT.dragon]
    dragon improve WORKLOAD.tvmscript SCRIPT.dragon [--target ...] [-k N] [--json] [-o OUT.dragon]
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
from pathlib import Path

from dragon_dsl.cli.check import parse_target
from dragon_dsl.cli.files import read_source
from dragon_dsl.language.files import write_text

EXAMPLE_WORKLOAD = Path(__file__).resolve().parent.parent / "examples" / "matmul_256.tvmscript"


def add_commands(sub) -> None:
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
        p.add_argument("-k", type=int, default=4, help="candidates to sample and validate (default 4)")
        p.add_argument("--model", help="a trained model folder (default: the shipped one for the target)")
        p.add_argument("--search-trials", type=int, default=16, help="budget of the fallback MetaSchedule search")
        p.add_argument("--no-model", action="store_true", help="skip the model: search only")
        p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
        p.add_argument("-o", "--output", help="write the script there")
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


def _validate(args, err) -> bool:
    """Inputs are checked before the model loads (tens of seconds): the target (TVM's words for an
    unknown one), the workload (TVMScript, with the position of a parse error) and the script to
    improve (its diagnostics)."""
    from dragon_dsl import check_text
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.target import TargetError, tvm_target
    from dragon_dsl.tvm.workload import WorkloadError, load_workload

    try:
        tvm_target(resolve_target(args.target).spec)
    except (TargetError, ValueError) as exc:
        err.print(f"error: {exc}", markup=False)
        return False
    try:
        load_workload(args.workload)
    except WorkloadError as exc:
        err.print(f"error: {args.workload}: {exc}", markup=False)
        return False
    if getattr(args, "script", None):
        text = read_source(args.script)
        _program, diags = check_text(text)
        errors = [d for d in diags if d.severity.name.lower() == "error"]
        if errors:
            err.print(errors[0].render(args.script), markup=False)
            return False
    return True


class _Stages:
    """What `dragon suggest` is doing, on a terminal: a rich status line per stage (loading the
    model, generating k candidates, measuring, searching); nothing in --json mode or when stderr is
    not a terminal."""

    def __init__(self, err, quiet: bool):
        self.err, self.status = err, None
        self.enabled = not quiet and err.is_terminal

    def __call__(self, name: str, detail: str = "") -> None:
        if not self.enabled:
            return
        text = f"{name} {detail}".strip() + "..."
        if self.status is None:
            self.status = self.err.status(text)
            self.status.start()
        else:
            self.status.update(text)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


def cmd_suggest(args, out, err) -> int:
    from dragon_dsl.cli.files import FileProblem

    try:
        if not _validate(args, err):
            return 2
        script = read_source(args.script) if getattr(args, "script", None) else None
    except FileProblem as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    stages = _Stages(err, quiet=args.json)
    try:
        stages("loading", "the model")
        from dragon_model.api import recommend

        rec = recommend(
            args.workload,
            target=args.target,
            script=script,
            k=args.k,
            model_path=args.model,
            search_trials=args.search_trials,
            use_model=not args.no_model,
            seed=args.seed,
            log=lambda m: None if args.json else err.print(m, markup=False),
            stage=stages,
        )
    finally:
        stages.stop()
    shown = (
        rec.explanation
        if rec.explanation and not rec.explanation.startswith("# explanation unavailable")
        else rec.script
    )
    if args.output and shown:
        write_text(args.output, shown)
    if args.json:
        data = rec.to_json()
        out.print(json.dumps(data, indent=2, default=str), markup=False, highlight=False, soft_wrap=True)
        return 0 if rec.verified else 1
    if not rec.verified:
        err.print(f"error: {rec.note}", markup=False)
        return 1
    if not args.output:  # one script: the explained one when the explanation graph is there
        out.print(shown, markup=False, highlight=False, soft_wrap=True, end="" if shown.endswith("\n") else "\n")
    figures = [
        f"source: {rec.source}" + (f" ({rec.note})" if rec.note else ""),
        f"candidates tried: {rec.candidates_tried}",
        f"latency: {rec.latency_us:.3f} us" if rec.latency_us else "latency: not timed",
    ]
    if rec.speedup_vs_baseline:
        figures.append(f"speedup vs {rec.baseline_kind}: {rec.speedup_vs_baseline:.2f}x ({rec.baseline:.3f} us)")
    if rec.speedup_vs_given:
        figures.append(f"speedup vs the given script: {rec.speedup_vs_given:.2f}x ({rec.given_latency_us:.3f} us)")
    for line in figures:
        err.print("# " + line, markup=False)
    return 0
