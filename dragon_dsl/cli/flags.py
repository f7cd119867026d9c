"""The flags every command spells the same way: `-o/--output` for what a command writes,
`--json` a switch (JSON on standard output; a file is `--json-out FILE`), `-k`, `--model`,
`--input-sets` for the verifier's random input sets (`--seed` is always a sampling or search seed),
`--workers`, `--device`. An older spelling stays as a hidden alias, so that scripts written for it
keep working; the README lists them as deprecated."""

from __future__ import annotations

import argparse

#: the namespace attribute that carries (parser, dest) of a required -o/--output
_REQUIRED = "_required_output"


def add_output(p: argparse.ArgumentParser, help: str, *, required: bool = False, dest: str = "out") -> None:
    """`-o/--output PATH` (the old `--out` still works, unlisted). A required one is checked by
    `check_required` after parsing, since argparse would otherwise call the old spelling missing."""
    p.add_argument("-o", "--output", dest=dest, metavar="OUT", help=help + (" (required)" if required else ""))
    p.add_argument("--out", dest=dest, help=argparse.SUPPRESS)  # deprecated spelling
    if required:
        p.set_defaults(**{_REQUIRED: (p, dest)})


def check_required(args: argparse.Namespace) -> None:
    """A required -o/--output that is missing is a usage error (exit 2), as argparse says it."""
    found = getattr(args, _REQUIRED, None)
    if found is not None and getattr(args, found[1]) is None:
        found[0].error("the following arguments are required: -o/--output")


def add_json(p: argparse.ArgumentParser, what: str) -> None:
    """`--json` (WHAT as JSON on standard output) and `--json-out FILE` (to a file). The old
    `--json FILE` still writes FILE (deprecated)."""
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help=f"print {what} as JSON on standard output (the old `--json FILE`, deprecated: --json-out FILE)",
    )
    p.add_argument("--json-out", dest="json", metavar="FILE", help=f"write {what} as JSON to FILE")


def add_input_sets(p: argparse.ArgumentParser, default: int = 3) -> None:
    """`--input-sets N`: the verifier's random input sets (the old `--seeds`, which read as a
    sampling seed, still works)."""
    p.add_argument(
        "--input-sets",
        type=int,
        default=default,
        dest="seeds",
        metavar="N",
        help=f"the verifier's random input sets (default {default})",
    )
    p.add_argument("--seeds", type=int, dest="seeds", help=argparse.SUPPRESS)  # deprecated spelling


def add_workers(p: argparse.ArgumentParser, type=int) -> None:
    """`--workers N`, the one name of every command for how many processes build at once
    (`--jobs`/`-j` is accepted too, unlisted)."""
    p.add_argument("--workers", type=type, metavar="N", help="build workers (default: one per core)")
    p.add_argument("--jobs", "-j", type=type, dest="workers", help=argparse.SUPPRESS)


def add_device(p: argparse.ArgumentParser, what: str) -> None:
    """`--device local|rpc://HOST:PORT/KEY`, where WHAT (verification and timing) runs; checked as it
    is parsed (`check.parse_device_flag`)."""
    from dragon_dsl.cli.check import parse_device_flag

    p.add_argument(
        "--device", default="local", type=parse_device_flag, help=f"{what}: local (default) or rpc://HOST:PORT/KEY"
    )
