"""`dragon-fmt FILE... | -`: canonical formatting, like Black.

Exit codes: 0 done (or nothing to change with --check), 1 some file would change
(--check), 2 a file could not be read, parsed or written.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from rich.console import Console

from dragon_dsl.cli.files import FileProblem, expand, read_source
from dragon_dsl.cli.render import print_diagnostics
from dragon_dsl.language.diagnostics import DragonError
from dragon_dsl.language.files import write_text
from dragon_dsl.language.format import format_text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dragon-fmt", description="Format Dragon scripts canonically (comments kept).")
    p.add_argument("files", nargs="+", help=".dragon files or folders, or - for standard input")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    p.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of the changes")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    err = Console(stderr=True, soft_wrap=True)
    changed = failed = 0
    files = expand(args.files)
    for path in files:
        try:
            src = read_source(path)
        except FileProblem as exc:
            err.print(f"error: {exc}", markup=False, highlight=False)
            failed += 1
            continue
        try:
            new = format_text(src)
        except DragonError as exc:
            print_diagnostics(err, exc.diagnostics, src, path)
            err.print(f"error: cannot format {path}: it does not parse", markup=False, highlight=False)
            failed += 1
            continue
        if path == "-" and not (args.check or args.diff):
            sys.stdout.write(new)
            continue
        if new == src:
            continue
        changed += 1
        if args.diff:
            name = "<stdin>" if path == "-" else path
            sys.stdout.writelines(
                difflib.unified_diff(
                    src.splitlines(True), new.splitlines(True), f"{name}\t(original)", f"{name}\t(formatted)"
                )
            )
        elif args.check:
            if not args.quiet:
                err.print(f"would reformat {path}", markup=False, highlight=False)
        else:
            try:
                write_text(path, new)
            except OSError as exc:
                err.print(f"error: {path}: cannot write: {exc.strerror}", markup=False, highlight=False)
                failed += 1
                continue
            if not args.quiet:
                err.print(f"reformatted {path}", markup=False, highlight=False)
    if not args.quiet and files != ["-"]:
        verb = "would be reformatted" if (args.check or args.diff) else "reformatted"
        err.print(
            f"{changed} file(s) {verb}, {len(files) - changed - failed} unchanged, {failed} failed",
            markup=False,
            highlight=False,
        )
    if failed:
        return 2
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
