"""How fast the measured labels are: each workload's fastest verified candidate against dlight's script
(GPU targets) or against the program as written (a CPU target's baseline).

    python -m dragon_model.label_report PRE_DIR... --measured RESULTS.jsonl[.xz] [--json OUT]

A label is the fastest verified candidate of a workload's labelling batch (`records.write_batch`,
measured by `dragon measure`). Its speed over dlight is dlight's latency over the label's, on the
workloads where dlight's script was measured and verified; the report gives the geometric mean,
the median, the share at or above 1.0x, how many labels are dlight's own script, and which source
(design space) wins how often. On a CPU target the batch times the program as written instead of
dlight's script, and the same figures are given over it (a workload whose label is the program
itself counts 1.0x). Nothing is measured here: the figures come from the results file.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path


def label_speeds(records: list, measured: dict) -> list:
    """One row per workload with a verified candidate (`records.measured_label`): its name, the
    label's source and latency, and dlight's latency and the program's as written (None where that
    baseline was not measured or did not verify)."""
    from dragon_model.records import measured_label

    rows = []
    for record in records:
        label, _ranked = measured_label(record, measured)
        if label is not None:
            rows.append(
                {
                    "name": record["name"],
                    "source": label["source"],
                    "label_us": label["latency_us"],
                    "dlight_us": label["dlight_us"],
                    "unscheduled_us": label["unscheduled_us"],
                }
            )
    return rows


def _speeds(speeds: list, over: str) -> dict:
    """Geometric mean, median, share at least 1.0x and maximum of SPEEDS, named after OVER."""
    if not speeds:
        return {}
    return {
        f"geomean_over_{over}": round(math.exp(sum(math.log(s) for s in speeds) / len(speeds)), 3),
        f"median_over_{over}": round(statistics.median(speeds), 3),
        f"share_at_least_{over}": round(sum(1 for s in speeds if s >= 1.0) / len(speeds), 3),
        f"max_over_{over}": round(max(speeds), 2),
    }


def summary(rows: list) -> dict:
    """The figures of `label_speeds` rows (speed-ups only where the baseline was timed)."""
    speeds = [r["dlight_us"] / r["label_us"] for r in rows if r["dlight_us"]]
    plain = [r["unscheduled_us"] / r["label_us"] for r in rows if r.get("unscheduled_us")]
    out = {
        "workloads": len(rows),
        "with_dlight": len(speeds),
        "label_is_dlight": sum(1 for r in rows if r["source"] == "dlight"),
        "wins_by_source": dict(Counter(r["source"] for r in rows)),
    }
    out.update(_speeds(speeds, "dlight"))
    if plain:
        out["with_unscheduled"] = len(plain)
        out.update(_speeds(plain, "unscheduled"))
        out["share_at_least_2x_over_unscheduled"] = round(sum(1 for s in plain if s >= 2.0) / len(plain), 3)
    return out


def main(argv=None) -> int:
    import argparse
    import sys

    from dragon_model.records import merged_records, read_measured

    ap = argparse.ArgumentParser(prog="python -m dragon_model.label_report", description=__doc__.split("\n\n")[0])
    ap.add_argument("pretrain", nargs="+", help="pretraining run folders (with records/)")
    ap.add_argument("--measured", action="append", required=True, help="`dragon measure` results (repeatable)")
    ap.add_argument("--json", dest="json_out", help="write the rows and the summary here")
    args = ap.parse_args(argv)
    for path in [*args.pretrain, *args.measured]:
        if not Path(path).exists():
            print(f"error: {path}: no such file or folder", file=sys.stderr)
            return 2
    records = merged_records(args.pretrain)
    rows = label_speeds(records, read_measured(args.measured))
    figures = summary(rows)
    print(json.dumps(figures, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"summary": figures, "rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
