"""`dragon`: the umbrella command.

dragon demo                        decode the shipped example, check it, replay it, print the TensorIR
dragon import TRACE.json [...]     raw trace JSON -> a .dragon script
dragon import --database DIR -o D  a MetaSchedule database -> .dragon files and their workload files
dragon export FILE.dragon          .dragon script -> trace JSON
dragon show FILE.dragon [--cuda]   the scheduled TensorIR (or the generated CUDA source)
dragon workload SPEC -o F          write a .tvmscript workload (te_workload name or TVMScript file)
dragon workloads --count N -o DIR  generate N distinct workloads from operator families
dragon search DIR --out RUN ...    MetaSchedule over a workload folder, resumable (dragon_dsl/cli/corpus.py)
dragon corpus build|verify|card    search runs -> verified examples; re-verify; DATA_CARD.md
dragon fmt ... / dragon check ...  the same as dragon-fmt / dragon-check
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from importlib import resources
from pathlib import Path

from rich.console import Console

from dragon_dsl import DragonError, __version__, check_text, from_trace_json, to_trace_json
from dragon_dsl.cli.check import environment_problem, parse_target
from dragon_dsl.cli.files import FileProblem, json_position, read_source
from dragon_dsl.cli.flags import check_required
from dragon_dsl.cli.output import code as _code
from dragon_dsl.cli.output import emit as _emit
from dragon_dsl.cli.render import print_diagnostics
from dragon_dsl.cli.workloads import (  # noqa: F401 - the commands' home; TE_WORKLOADS and family_parameters re-exported
    TE_WORKLOADS,
    _workload_help,
    add_workloads_parser,
    cmd_workload,
    cmd_workloads,
    family_parameters,
)
from dragon_dsl.language.diagnostics import Severity, Span
from dragon_dsl.language.diagnostics import make as make_diagnostic
from dragon_dsl.language.files import write_text

EXAMPLE_TRACE = "matmul_256.llvm.trace.json"
EXAMPLE_WORKLOAD = "matmul_256.tvmscript"
EXAMPLE_TARGET = {"kind": "llvm", "num-cores": 2}


def _example(name: str) -> str:
    return resources.files("dragon_dsl").joinpath("examples", name).read_text(encoding="utf-8")


def cmd_demo(args, out: Console, err: Console) -> int:
    from dragon_dsl import to_program
    from dragon_dsl.tvm.replay import replay

    trace = json.loads(_example(EXAMPLE_TRACE))
    out.rule("1. decode: TVM trace JSON -> Dragon script")
    text = from_trace_json(trace, workload=EXAMPLE_WORKLOAD, target=EXAMPLE_TARGET)
    _code(out, text)
    out.rule("2. check")
    _, diags = check_text(text)
    print_diagnostics(err, diags, text, "example.dragon")
    errors = sum(d.severity is Severity.ERROR for d in diags)
    out.print(f"{errors} error(s), {len(diags) - errors} warning(s)")
    if diags and all(d.code == "DRG104" for d in diags):  # the demo shows exactness: the trace as TVM wrote it
        out.print("(kept: the script stands for the trace exactly, queries without effect included)", markup=False)
    if errors:
        return 1
    out.rule("3. encode: the script gives back the exact trace")
    exact = to_trace_json(text) == trace
    out.print("round trip exact" if exact else "round trip DIFFERS")
    out.rule("4. replay on the workload: scheduled TensorIR")
    result = replay(to_program(text), _example(EXAMPLE_WORKLOAD))
    if not result.ok:
        print_diagnostics(err, result.diagnostics, text, "example.dragon")
        return 1
    _code(out, result.module.script())
    return 0 if exact else 1


def cmd_import(args, out: Console, err: Console) -> int:
    if args.database:
        return _import_database(args, out, err)
    if not args.trace:
        err.print("error: give a trace JSON file, or --database DIR", markup=False)
        return 2
    raw = read_source(args.trace)
    try:
        trace = json.loads(raw)
    except json.JSONDecodeError as exc:
        name = "<stdin>" if args.trace == "-" else args.trace
        print_diagnostics(
            err, [make_diagnostic("DRG501", Span.point(exc.lineno, exc.colno), f"not JSON: {exc.msg}")], raw, name
        )
        return 2
    name = "<stdin>" if args.trace == "-" else args.trace
    if not (isinstance(trace, list) and len(trace) == 2):
        err.print(
            f"{name}: error: not a trace: a TVM trace is [instructions, decisions], but this file holds "
            f"{_json_kind(trace)}",
            markup=False,
            highlight=False,
        )
        return 1
    try:
        text = from_trace_json(trace, workload=args.workload, target=args.target)
    except DragonError as exc:
        located = [
            dataclasses.replace(d, span=Span.point(*json_position(raw, _trace_path(trace, d.message))))
            for d in exc.diagnostics
        ]
        print_diagnostics(err, located, raw, name)
        return 1
    _emit(out, text, args.output)
    return 0


def _json_kind(value) -> str:
    if isinstance(value, dict):
        keys = ", ".join(json.dumps(k) for k in list(value)[:5])
        return f"a JSON object (keys: {keys}{', ...' if len(value) > 5 else ''})" if value else "an empty JSON object"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return {str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _trace_path(trace, message: str) -> list[int]:
    """Where in trace JSON a decoder message points: [0, i] for instruction i, [1, j] for decision j."""
    m = re.match(r"instruction (\d+)[:( ]", message)
    decisions = trace[1] if isinstance(trace[1], list) else []
    if m and "decision" not in message:
        return [0, int(m.group(1))]
    if "decision" in message:
        n = int(m.group(1)) if m else None
        m2 = re.search(r"instruction (\d+)", message)
        n = int(m2.group(1)) if m2 else n
        hits = [j for j, d in enumerate(decisions) if isinstance(d, list) and d and d[0] == n]
        if hits:
            return [1, hits[-1] if "two decisions" in message else hits[0]]
        bad = [j for j, d in enumerate(decisions) if not (isinstance(d, list) and len(d) == 2)]
        return [1, bad[0]] if bad else [1]
    return []


def _import_database(args, out: Console, err: Console) -> int:
    from dragon_dsl.tvm.database import DatabaseError, read_database

    if not args.output:
        err.print("error: --database needs -o OUTDIR", markup=False)
        return 2
    try:
        records = read_database(args.database)
    except DatabaseError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    n_workloads = len({r.workload_key for r in records})
    if args.workload and n_workloads > 1:
        err.print(
            f"error: --workload names one workload file, but {args.database} holds {n_workloads} workloads",
            markup=False,
        )
        return 2
    outdir = Path(args.output)
    outdir.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    failures = 0
    for rec in records:
        n = written.get(rec.workload_key, 0)
        if args.top and n >= args.top:
            continue
        wl_name = args.workload or f"{rec.workload_key}.tvmscript"
        if n == 0 and not args.workload:
            write_text(str(outdir / wl_name), rec.module.script())
        try:
            text = from_trace_json(rec.trace, workload=wl_name, target=rec.target)
        except DragonError as exc:
            err.print(f"{rec.workload_key} record {n}: error: {exc}", markup=False)
            failures += 1
            continue
        if rec.failed:
            text = "# MetaSchedule's build or run of this record failed\n" + text
        elif rec.mean_latency_us is not None:
            text = f"# MetaSchedule measured {rec.mean_latency_us:.3f} us (mean of its runs)\n" + text
        write_text(str(outdir / f"{rec.workload_key}_{n:03d}.dragon"), text)
        written[rec.workload_key] = n + 1
    total = sum(written.values())
    err.print(
        f"imported {total} script(s) for {len(written)} workload(s) into {outdir}"
        + (f"; {failures} record(s) rejected" if failures else ""),
        markup=False,
    )
    return 1 if failures else 0


def cmd_export(args, out: Console, err: Console) -> int:
    text = read_source(args.script)
    try:
        trace = to_trace_json(text)
    except DragonError as exc:
        print_diagnostics(err, exc.diagnostics, text, args.script)
        return 1
    _emit(out, json.dumps(trace) + "\n", args.output)
    return 0


def cmd_show(args, out: Console, err: Console) -> int:
    from dragon_dsl import check_text as _check
    from dragon_dsl.levels import resolve_workload
    from dragon_dsl.tvm.replay import replay

    text = read_source(args.script)
    program, diags = _check(text)
    if any(d.severity is Severity.ERROR for d in diags):
        print_diagnostics(err, diags, text, args.script)
        return 1
    wl = resolve_workload(program, args.script, args.workload)
    if wl is None:
        err.print(f"{args.script}: error: no workload (header `workload` or --workload)", markup=False)
        return 1
    result = replay(program, wl)
    if not result.ok:
        print_diagnostics(err, result.diagnostics, text, args.script)
        return 1
    if not args.cuda:
        _emit(out, result.module.script(), args.output)
        return 0
    from dragon_dsl.tvm.codegen import NoKernel, cuda_source
    from dragon_dsl.tvm.errors import tvm_message
    from dragon_dsl.tvm.target import TargetError, target_kind

    target = args.target or program.target or "nvidia/nvidia-h100"
    try:
        kind = target_kind(target)
    except TargetError as exc:
        err.print(f"{args.script}: error: {exc}", markup=False, highlight=False)
        return 1
    if kind != "cuda":
        where = "--target" if args.target else "the script's target"
        err.print(
            f"{args.script}: error: --cuda shows CUDA source, but {where} is {kind} "
            f"({json.dumps(target)}); pass --target with a CUDA target (e.g. nvidia/nvidia-h100) "
            f"to see the CUDA this schedule would give",
            markup=False,
            highlight=False,
        )
        return 1
    try:
        source = cuda_source(result.module, target)
    except NoKernel:
        err.print(
            f"{args.script}: error: no CUDA kernel: the schedule binds no loop to blockIdx/threadIdx "
            f"(bind loops, or check it with dragon-check --level build --target cuda)",
            markup=False,
            highlight=False,
        )
        return 1
    except Exception as exc:  # TVM's build errors come as its own exception types
        err.print(
            f"{args.script}: error: CUDA code generation failed: {tvm_message(exc)}", markup=False, highlight=False
        )
        return 1
    _emit(out, source, args.output)
    return 0


#: TVM's te_workload functions `dragon workload NAME(INT,...)` builds (tests/test_cli_first_contact_2.py
#: holds this list to TVM's); `dragon workload --help` lists them without importing TVM
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dragon", description="Little Dragon: typed TVM schedules")
    p.add_argument("--version", action="version", version=f"dragon {__version__}", help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="decode, check and replay the shipped example").set_defaults(func=cmd_demo)
    imp = sub.add_parser("import", help="trace JSON or a MetaSchedule database -> .dragon")
    imp.add_argument("trace", nargs="?", help="trace JSON file, or - for standard input")
    imp.add_argument("--database", help="MetaSchedule JSONDatabase folder (or its database_tuning_record.json)")
    imp.add_argument("--top", type=int, default=0, help="with --database: keep the K best records per workload")
    imp.add_argument(
        "--workload",
        help="workload file named in the script's header (with --database: the one workload's file, written by you; none is written)",
    )
    imp.add_argument("--target", type=parse_target, help="target tag or JSON object named in the header")
    imp.add_argument("-o", "--output", help="output file (trace) or folder (--database)")
    imp.set_defaults(func=cmd_import)
    exp = sub.add_parser("export", help=".dragon script -> trace JSON")
    exp.add_argument("script", help=".dragon file, or - for standard input")
    exp.add_argument("-o", "--output", help="write the trace JSON to this file (default: standard output)")
    exp.set_defaults(func=cmd_export)
    show = sub.add_parser("show", help="replay a script and print the scheduled TensorIR")
    show.add_argument("script", help=".dragon file, or - for standard input")
    show.add_argument("--workload", help="workload .tvmscript file (overrides the script's header)")
    show.add_argument("--cuda", action="store_true", help="print the generated CUDA source instead")
    show.add_argument(
        "--target",
        type=parse_target,
        help="CUDA target tag or JSON object for --cuda (default: the header's, else nvidia/nvidia-h100)",
    )
    show.add_argument(
        "-o", "--output", help="write the TensorIR (or CUDA source) to this file (default: standard output)"
    )
    show.set_defaults(func=cmd_show)
    wl = sub.add_parser(
        "workload",
        help="write a .tvmscript workload",
        description=_workload_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    wl.add_argument(
        "spec", help="a TVMScript file, 'C2D:0', 'matmul(1024,1024,1024)' or 'softmax(256,1024)' (names below)"
    )
    wl.add_argument("-o", "--output", help="write the workload to this file (default: standard output)")
    wl.set_defaults(func=cmd_workload)
    add_workloads_parser(sub)
    from dragon_dsl.cli import eval as eval_cli  # dragon eval: the evaluation harness

    eval_cli.add_parser(sub)
    from dragon_dsl.cli import explain as explain_cli

    explain_cli.add_parser(sub)
    from dragon_dsl.cli import measure as measure_cli  # dragon measure: batches of candidates

    measure_cli.add_parser(sub)
    # its options are the engine's (`dragon rpc-server --help`), parsed where it runs
    sub.add_parser(
        "rpc-server", help="a TVM RPC server for a GPU farm, timing kernels as the engine does locally", add_help=False
    )
    from dragon_dsl.cli.corpus import add_parsers as add_corpus_parsers

    add_corpus_parsers(sub)  # dragon search, dragon corpus build|verify|card
    try:  # the model's commands need its optional dependencies (torch, transformers, xgrammar)
        from dragon_dsl.cli.model import add_commands
    except ImportError:
        pass
    else:
        add_commands(sub)
    for name in ("fmt", "check"):
        sub.add_parser(name, help=f"the same as dragon-{name}", add_help=False)
    return p


def _exit_on_sigterm() -> None:
    """SIGTERM (what `timeout` and job schedulers send) ends the command as an exit does: the
    engine's finalizers run, so its worker pools stop and its working folder is removed. Killed by
    the default handler, a `dragon measure` run left 18 GB of reference input sets behind on a GPU
    host, and the next run on that disk found it full. Results written so far stay (a rerun resumes)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def main(argv=None) -> int:
    if argv is None:  # run as the program (not called by a host process with its own handlers)
        _exit_on_sigterm()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "rpc-server":
        from dragon_dsl.engine import rpc_server_main

        return rpc_server_main(argv[1:])
    if argv and argv[0] in ("fmt", "check"):
        from dragon_dsl.cli import check, fmt

        return (fmt if argv[0] == "fmt" else check).main(argv[1:])
    args = build_parser().parse_args(argv)
    check_required(args)
    out, err = Console(soft_wrap=True), Console(stderr=True, soft_wrap=True)
    try:
        return args.func(args, out, err)
    except FileProblem as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    except OSError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    except Exception as exc:  # the engine could not start (no GPU, no tracker): one line, not a traceback
        problem = environment_problem(exc)
        if problem is None:
            raise
        err.print(f"error: {problem}", markup=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
