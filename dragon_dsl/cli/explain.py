"""`dragon explain`: write a script's explanation graph (`explain:` section) from program analysis.

    dragon explain SCRIPT.dragon [--workload F] [--target T] [-o OUT | --in-place]

The workload and target default to the script's header (a header path is
relative to the script). Without a workload the graph holds only what the
script itself says (tile decisions, annotations).
"""

from __future__ import annotations

from dragon_dsl import DragonError, check_text
from dragon_dsl.cli.check import parse_target
from dragon_dsl.cli.files import read_source
from dragon_dsl.cli.output import print_workload_error
from dragon_dsl.cli.render import print_diagnostics
from dragon_dsl.language.diagnostics import Severity
from dragon_dsl.language.files import write_text


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="add a generated explain: section (facts, rationales, effects)")
    p.add_argument("script", help=".dragon file, or - for standard input")
    p.add_argument("--workload", help="workload .tvmscript file (overrides the header)")
    p.add_argument("--target", type=parse_target, help="target tag or JSON object (overrides the header)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", help="write the result to this file")
    where.add_argument("--in-place", action="store_true", help="replace the script file")
    p.set_defaults(func=cmd_explain)


def cmd_explain(args, out, err) -> int:
    from dragon_dsl.explain import explain
    from dragon_dsl.levels import resolve_workload
    from dragon_dsl.tvm.workload import WorkloadError

    if args.in_place and args.script == "-":
        err.print("error: --in-place needs a file, not standard input", markup=False)
        return 2
    text = read_source(args.script)
    program, diags = check_text(text)
    if any(d.severity is Severity.ERROR for d in diags):
        print_diagnostics(err, diags, text, args.script)
        return 1
    workload = resolve_workload(program, args.script, args.workload)
    target = args.target if args.target is not None else program.target
    try:
        result = explain(text, str(workload) if workload is not None else None, target)
    except DragonError as exc:
        print_diagnostics(err, exc.diagnostics, text, args.script)
        return 1
    except WorkloadError as exc:
        print_workload_error(err, exc)
        return 1
    path = args.script if args.in_place else args.output
    if path:
        write_text(path, result)
    else:
        out.print(result, markup=False, highlight=False, soft_wrap=True, end="")
    return 0
