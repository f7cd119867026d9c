"""`python -m dragon_dsl.corpus.networks --out DIR [--networks NAMES] [--list]`: extract the zoo's tasks
(resumable), then merge them into DIR/tasks.jsonl (with `--splits MANIFEST`, each task's split).
`--make-splits PATH` writes the split manifest of the zoo (data/tasks/splits.json)."""

from __future__ import annotations

import argparse
import sys

from dragon_dsl.corpus.networks.registry import NetworkError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dragon_dsl.corpus.networks", description=__doc__)
    parser.add_argument("--out", help="output folder (networks/NAME.json per network, tasks.jsonl)")
    parser.add_argument("--networks", nargs="+", metavar="NAME", help="networks to extract (default: all but toys)")
    parser.add_argument("--list", action="store_true", help="list the zoo's networks and variants, then stop")
    parser.add_argument("--in-process", action="store_true", help="extract in this process, not one per network")
    parser.add_argument("--no-merge", action="store_true", help="do not write tasks.jsonl afterwards")
    parser.add_argument("--summary", action="store_true", help="one line per finished network under --out, then stop")
    parser.add_argument("--retry-failed", action="store_true", help="extract again networks with a failed variant")
    parser.add_argument("--splits", metavar="MANIFEST", help="give each merged task its split from this manifest")
    parser.add_argument("--make-splits", metavar="PATH", help="write the zoo's split manifest to PATH, then stop")
    args = parser.parse_args(argv)
    from dragon_dsl.corpus.networks.zoo import NETWORKS

    if args.list:
        for n in NETWORKS.values():
            print(
                f"{n.name:<22} {n.kind:<8} {n.family:<13} {'toy ' if n.toy else ''}"
                + " ".join(v.name for v in n.variants)
            )
        return 0
    if args.make_splits:
        from dragon_dsl.corpus.networks.splits import make_manifest
        from dragon_dsl.corpus.networks.zoo import full_run
        from dragon_dsl.language.files import write_json

        write_json(args.make_splits, make_manifest(full_run()), indent=1)
        return 0
    if not args.out:
        parser.error("--out is required (or --list, or --make-splits)")
    from dragon_dsl.corpus.networks import driver
    from dragon_dsl.corpus.networks.splits import read_manifest

    if args.summary:
        print(driver.summary_table(args.out))
        return 0

    try:
        split_of = read_manifest(args.splits) if args.splits else None
    except NetworkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    try:
        summary = driver.run(
            args.out,
            args.networks,
            isolate=not args.in_process,
            retry_failed=args.retry_failed,
            log=lambda line: print(line, flush=True),
        )
    except NetworkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.no_merge:
        path = driver.merge(args.out, split_of)
        print(f"merged {sum(1 for _ in open(path, encoding='utf-8'))} distinct tasks into {path}", flush=True)
    if summary["failed"]:
        print(f"failed: {', '.join(sorted(summary['failed']))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
