"""`dragon workload` and `dragon workloads`: one workload from a te_workload name, an operator family
or a TVMScript file; many distinct workloads drawn from the operator families (with starting
scripts for the improvement task)."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from dragon_dsl.cli.output import emit as _emit
from dragon_dsl.cli.output import print_workload_error

TE_WORKLOADS = (
    "batch_matmul_nkkm",
    "conv1d_nlc",
    "conv2d_capsule_nhwijc",
    "conv2d_nchw",
    "conv2d_nchw_bias_bn_relu",
    "conv2d_nhwc",
    "conv2d_nhwc_bn_relu",
    "conv2d_transpose_nhwc",
    "conv2d_winograd_nhwc",
    "conv3d_ndhwc",
    "depthwise_conv2d_nhwc",
    "matmul",
    "matmul_relu",
    "max_pool2d_nchw",
    "norm_bmn",
    "softmax_mn",
    "transpose_batch_matmul",
)
_SPEC_CALL = re.compile(r"^([A-Za-z_][A-Za-z_0-9]*)\((.*)\)$", re.S)


def family_parameters() -> dict[str, list[str]]:
    """Each operator family of the corpus -> its parameters' names, in the order a spec gives them."""
    import random

    from dragon_dsl.corpus.families import ALL_FAMILIES

    return {name: list(f.sample(random.Random(0))) for name, f in ALL_FAMILIES.items()}


def _workload_help() -> str:
    import textwrap

    def block(items) -> str:
        return textwrap.fill("  ".join(items), width=96, initial_indent="  ", subsequent_indent="  ")

    intro = (
        "SPEC is a TVMScript file (.py or .tvmscript), a te_workload config such as 'C2D:0', a te_workload "
        "function with int arguments such as 'matmul(1024,1024,1024)', or an operator family of the corpus "
        "with its parameters in order or by name, such as 'softmax(256,1024)' or 'layer_norm(m=256,n=768,rms=0)'."
    )
    families = [f"{name}({','.join(ps)})" for name, ps in family_parameters().items()]
    return (
        f"{textwrap.fill(intro, width=98)}\n\nte_workload functions:\n{block(TE_WORKLOADS)}\n\n"
        f"operator families (parameters in order):\n{block(families)}"
    )


def _family_workload(spec: str):
    """The IRModule of an operator family spec (`softmax(256,1024)`, `layer_norm(m=256,n=768,rms=0)`),
    None when SPEC names no family or is a te_workload call (those keep TVM's meaning); raises
    WorkloadSpecError for a family spec with wrong parameters."""
    from dragon_dsl.tvm.workload import WorkloadSpecError

    m = _SPEC_CALL.match(spec.replace(" ", ""))
    if m is None:
        return None
    name, body = m.group(1), m.group(2)
    families = family_parameters()
    if name not in families or (name in TE_WORKLOADS and "=" not in body):
        return None
    names = families[name]
    usage = f"{name}({', '.join(names)})"
    params: dict = {}
    for i, item in enumerate(x for x in body.split(",") if x):
        key, eq, value = item.partition("=")
        if not eq:
            if i >= len(names):
                raise WorkloadSpecError(f"{spec}: {name} takes {len(names)} parameters: {usage}")
            key, value = names[i], item
        if key not in names:
            raise WorkloadSpecError(f"{spec}: {name} has no parameter {key!r}: {usage}")
        value = value.strip("'\"")
        params[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    missing = [n for n in names if n not in params]
    if missing:
        raise WorkloadSpecError(f"{spec}: {name} needs {', '.join(missing)}: {usage}")
    from dragon_dsl.corpus.generator import WorkloadSpec

    try:
        return WorkloadSpec(name, tuple(sorted(params.items()))).build()
    except Exception as exc:  # te and the builders raise their own errors for a bad value
        raise WorkloadSpecError(f"{spec}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc!r}") from None


def cmd_workload(args, out: Console, err: Console) -> int:
    from dragon_dsl.tvm.workload import WorkloadError, make_workload

    try:
        mod = _family_workload(args.spec)
        if mod is None:
            mod = make_workload(args.spec)
    except WorkloadError as exc:
        print_workload_error(err, exc)
        return 2
    text = mod.script()
    _emit(out, text, args.output)
    return 0


def _starting_sampler(target: str):
    """(the target's header, a design-space sampler for it) for --starting-scripts; ValueError
    (TVM's TargetError) for a target TVM does not know."""
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.design_space import SpaceSampler
    from dragon_dsl.tvm.target import tune_target

    header = resolve_target(target).spec
    return header, SpaceSampler(tune_target(header))


def _starting_scripts(folder, header, sampler, seed: int, err: Console) -> list:
    """Beside every workload of FOLDER without one, NAME.dragon: a sampled schedule that compiles
    (`dragon eval` then also asks the model to improve on it); a script already there is kept.
    Returns the names left without one."""
    from dragon_dsl.corpus.manifest import read_manifest
    from dragon_dsl.corpus.pretrain import starting_script
    from dragon_dsl.tvm.workload import load_workload

    folder = Path(folder)
    missing = []
    for row in read_manifest(folder, fields=("name",), missing_ok=True, check_files=False):
        name = str(row["name"])
        script = folder / f"{name}.dragon"
        if script.exists():
            continue
        mod = load_workload((folder / f"{name}.tvmscript").read_text(encoding="utf-8"))
        text = starting_script(mod, sampler, f"{name}.tvmscript", header, seed)
        if text is None:
            missing.append(name)
        else:
            script.write_text(text, encoding="utf-8")
            err.print(f"{script.name}: a sampled starting script", markup=False)
    return missing


def _task_draw(path, split: str, seed: int) -> list:
    """The tasks of SPLIT in the merged tasks file PATH (`corpus.pretrain.task_specs`) in a random
    order fixed by SEED: the first N are a sample of the split, the same for the same seed."""
    import random

    from dragon_dsl.corpus.pretrain import task_specs

    specs = task_specs(path, split)
    if not specs:
        raise ValueError(f"{path}: no task of split {split!r}")
    random.Random(seed).shuffle(specs)
    return specs


def cmd_workloads(args, out: Console, err: Console) -> int:
    from rich.progress import Progress

    from dragon_dsl.corpus.generator import generate, write

    for flag, value in (("--max-flops", args.max_flops), ("--max-bytes", args.max_bytes)):
        if value is not None and value <= 0:
            err.print(f"error: {flag} must be positive", markup=False)
            return 2
    sampling = None
    if args.starting_scripts:  # the target first: a bad one writes nothing
        try:
            sampling = _starting_sampler(args.starting_scripts)
        except ValueError as exc:
            err.print(f"error: --starting-scripts: {exc}", markup=False)
            return 2
    capped = args.max_flops is not None or args.max_bytes is not None
    pool = args.count * (20 if capped else 1)  # with a cap, draw more and stop at --count
    if args.held_out_operators:  # the fixed evaluation set that no training step sees
        from dragon_dsl.corpus.families import HELD_OUT_OPERATORS
        from dragon_dsl.corpus.generator import WorkloadSpec

        specs = [WorkloadSpec(f, p) for f, p in HELD_OUT_OPERATORS]
        args.count = len(specs)
    elif args.tasks:  # tasks of real networks, a fixed random draw from one split
        try:
            specs = _task_draw(args.tasks, args.split, args.seed)
        except (OSError, ValueError) as exc:
            err.print(f"error: --tasks: {exc}", markup=False)
            return 2
    else:
        try:
            specs = generate(pool, seed=args.seed, families=args.families.split(",") if args.families else None)
        except ValueError as exc:
            err.print(f"error: {exc}", markup=False)
            return 2
    written = tried = 0
    with Progress(console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("building workloads", total=args.count)
        for spec in specs:
            if written >= args.count:
                break
            tried += 1
            new = len(write([spec], args.output, max_flops=args.max_flops, max_bytes=args.max_bytes))
            written += new
            progress.advance(task, new)
    if sampling is not None:
        missing = _starting_scripts(args.output, *sampling, args.seed, err)
        if missing:
            err.print(f"no sampled script compiled for {len(missing)} workload(s): {', '.join(missing)}", markup=False)
    note = f", {tried - written} over the caps or already there" if capped else ""
    err.print(
        f"{tried} distinct specs{note}; {written} new workload(s) written to {args.output} (manifest.jsonl lists them)",
        markup=False,
    )
    return 0


def add_workloads_parser(sub) -> None:
    """`dragon workloads`' arguments."""
    gen = sub.add_parser("workloads", help="generate distinct workloads from operator families")
    gen.add_argument("--count", type=int, default=100, help="how many workloads to write (default 100)")
    gen.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the shape draws: the same seed gives the same workloads (default 0)",
    )
    gen.add_argument(
        "--families",
        help="comma-separated (default: the classic families; "
        "dragon_dsl/corpus/families_operators.py lists today's operators too)",
    )
    gen.add_argument(
        "--held-out-operators",
        action="store_true",
        help="write the 50 held-out real operators (LLM and vision shapes) that no training run sees",
    )
    gen.add_argument(
        "--tasks",
        metavar="TASKS.jsonl",
        help="write tasks of real networks instead (a merged tasks.jsonl[.gz] such as data/tasks/tasks.jsonl.gz): "
        "--count of them drawn at random by --seed from --split",
    )
    gen.add_argument(
        "--split",
        default="test",
        choices=["train", "validation", "test"],
        help="with --tasks: the split of the manifest's networks to draw from (default test)",
    )
    gen.add_argument(
        "--max-flops", type=float, help="leave out workloads with more floating-point work (TVM's estimate)"
    )
    gen.add_argument("--max-bytes", type=float, help="leave out workloads whose parameter buffers take more bytes")
    gen.add_argument("-o", "--output", required=True, help="folder for the .tvmscript files and manifest.jsonl")
    gen.add_argument(
        "--starting-scripts",
        metavar="TARGET",
        help="also write beside each workload a sampled schedule for TARGET that compiles "
        "(NAME.dragon: the improvement task of `dragon eval` starts from it)",
    )
    gen.set_defaults(func=cmd_workloads)
