"""`dragon`: the umbrella command.

    dragon demo                      decode the shipped example trace, check it, replay it, print the TensorIR
    dragon import TRACE.json [-o F]  trace JSON -> .dragon script
    dragon export FILE.dragon        .dragon script -> trace JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

from rich.console import Console

from dragon_dsl import DragonError, check_text, from_trace_json, to_trace_json
from dragon_dsl.cli.render import print_diagnostics
from dragon_dsl.diagnostics import Severity

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
    out.print(text, markup=False, highlight=False, soft_wrap=True)
    out.rule("2. check")
    _, diags = check_text(text)
    print_diagnostics(err, diags, text, "example.dragon")
    errors = sum(d.severity is Severity.ERROR for d in diags)
    out.print(f"{errors} error(s), {len(diags) - errors} warning(s)")
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
    out.print(result.module.script(), markup=False, highlight=False, soft_wrap=True)
    return 0 if exact else 1


def cmd_import(args, out: Console, err: Console) -> int:
    raw = sys.stdin.read() if args.trace == "-" else Path(args.trace).read_text(encoding="utf-8")
    try:
        trace = json.loads(raw)
    except json.JSONDecodeError as exc:
        err.print(f"{args.trace}:{exc.lineno}:{exc.colno}: error: not JSON: {exc.msg}", markup=False)
        return 2
    target = args.target
    if target and target.strip().startswith("{"):
        target = json.loads(target)
    try:
        text = from_trace_json(trace, workload=args.workload, target=target)
    except DragonError as exc:
        err.print(f"{args.trace}: error: {exc}", markup=False)
        return 1
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        out.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    return 0


def cmd_export(args, out: Console, err: Console) -> int:
    text = sys.stdin.read() if args.script == "-" else Path(args.script).read_text(encoding="utf-8")
    try:
        trace = to_trace_json(text)
    except DragonError as exc:
        print_diagnostics(err, exc.diagnostics, text, args.script)
        return 1
    out.print(json.dumps(trace), markup=False, highlight=False, soft_wrap=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dragon", description="Little Dragon: typed TVM schedules")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="decode, check and replay the shipped example").set_defaults(func=cmd_demo)
    imp = sub.add_parser("import", help="trace JSON -> .dragon script")
    imp.add_argument("trace", help="trace JSON file, or - for standard input")
    imp.add_argument("--workload", help="workload file named in the script's header")
    imp.add_argument("--target", help="target tag or JSON object named in the header")
    imp.add_argument("-o", "--output", help="write the script here")
    imp.set_defaults(func=cmd_import)
    exp = sub.add_parser("export", help=".dragon script -> trace JSON")
    exp.add_argument("script", help=".dragon file, or - for standard input")
    exp.set_defaults(func=cmd_export)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    out, err = Console(), Console(stderr=True)
    try:
        return args.func(args, out, err)
    except OSError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
