"""What `bench_measure.py` reports: the figures of one mode (`figures`: candidates per minute,
the phase profile), the verdict and latency comparison of two modes (`compare`), and the printed
report (`print_report`)."""

from __future__ import annotations

import math
import statistics

PHASES = (
    "parse",
    "replay",
    "checks",
    "codegen",
    "compile",
    "upload",
    "wait",
    "verify",
    "time",
    "idle",
    "build_span",
    "main",
)


BUILD_PHASES = ("parse", "replay", "checks", "codegen", "compile")


# --- comparing -----------------------------------------------------------------------------------
def compare(a: dict, b: dict, partial: dict | None = None) -> dict:
    """Verdicts (status, input sets checked) of every candidate, and latencies of those both timed;
    with PARTIAL (the rows of a mode stopped by its time limit: a or b), only its candidates."""
    ids = sorted(set(a) | set(b)) if partial is None else sorted(set(partial))
    differ = [
        i
        for i in ids
        if i not in a or i not in b or (a[i]["status"], a[i]["n_checked"]) != (b[i]["status"], b[i]["n_checked"])
    ]
    ratios = [
        b[i]["latency_us"] / a[i]["latency_us"]
        for i in ids
        if i in a and i in b and a[i]["status"] == b[i]["status"] == "ok" and a[i]["latency_us"] and b[i]["latency_us"]
    ]
    return {
        "candidates": len(ids),
        "verdicts_differ": len(differ),
        "first_differences": [{"id": i, "a": a.get(i), "b": b.get(i)} for i in differ[:5]],
        "timed_in_both": len(ratios),
        "latency_ratio_median": statistics.median(ratios) if ratios else None,
        "latency_ratio_geomean": statistics.geometric_mean(ratios) if ratios else None,
        "within_5_percent": within_5_percent(ratios),
        "distinct_by_latency": by_latency(a, b, ids),
    }


def within_5_percent(ratios: list) -> float | None:
    return sum(abs(r - 1) <= 0.05 for r in ratios) / len(ratios) if ratios else None


LATENCY_BINS_US = (0.0, 5.0, 10.0, 20.0, 100.0, math.inf)


def by_latency(a: dict, b: dict, ids) -> dict:
    """Candidates measured themselves in both (no copies of another's result), by A's latency:
    how many were timed in both, and the share within 5%; and the timers each mode used."""
    out = {}
    pairs = [
        (a[i], b[i])
        for i in ids
        if i in a
        and i in b
        and a[i]["status"] == b[i]["status"] == "ok"
        and a[i]["latency_us"]
        and b[i]["latency_us"]
        and not a[i].get("duplicate_of")
        and not b[i].get("duplicate_of")
    ]
    for lo, hi in zip(LATENCY_BINS_US, LATENCY_BINS_US[1:]):
        ratios = [y["latency_us"] / x["latency_us"] for x, y in pairs if lo <= x["latency_us"] < hi]
        share = within_5_percent(ratios)
        out[f"{lo:g}-{hi:g} us"] = {"timed": len(ratios), "within_5_percent": round(share, 3) if ratios else None}
    out["timers"] = [sorted({x.get("timer", "") for x, _ in pairs}), sorted({y.get("timer", "") for _, y in pairs})]
    return out


def figures(mode: dict) -> dict:
    rows = mode["rows"]
    minutes = mode["wall_s"] / 60.0
    decided = sum(r["status"] != "invalid" for r in rows.values())
    ok = sum(r["status"] == "ok" for r in rows.values())
    profile = mode["profile"]
    span = profile.get("build_span")
    busy = (
        sum(profile.get(p, 0.0) for p in BUILD_PHASES) / (mode["workers"] * span)
        if span and mode.get("workers")
        else None
    )
    return {
        "timeline": mode.get("timeline", {}),
        "build_busy": round(busy, 3) if busy is not None else None,
        "device_tail_s": round(profile["wall"] - span, 2) if span and "wall" in profile else None,
        "wall_s": round(mode["wall_s"], 2),
        "candidates": decided,
        "ok": ok,
        "per_minute": round(decided / minutes, 1) if minutes else None,
        "ok_per_minute": round(ok / minutes, 1) if minutes else None,
        "duplicates": mode.get("duplicates", 0),
        "complete": mode.get("complete", True),
        "profile": {k: round(v, 2) if isinstance(v, float) else v for k, v in mode["profile"].items()},
    }


def print_report(batch_info: dict, modes: dict, comparisons: dict) -> None:
    print(
        f"batch: {batch_info['candidates']} candidates, {batch_info['workloads']} workloads, "
        f"{len(batch_info['families'])} families (every corpus family: {batch_info['every_family']})"
    )
    names = list(modes)
    print(f"\n{'':28}" + "".join(f"{n:>14}" for n in names))
    for label, key in (
        ("wall (s)", "wall_s"),
        ("candidates", "candidates"),
        ("ok (verified, timed)", "ok"),
        ("candidates per minute", "per_minute"),
        ("ok per minute", "ok_per_minute"),
        ("copied (identical source)", "duplicates"),
        ("build workers busy (share)", "build_busy"),
        ("device after builds (s)", "device_tail_s"),
    ):
        print(f"{label:28}" + "".join(f"{str(modes[n][key]):>14}" for n in names))
    for n in names:
        t = modes[n].get("timeline") or {}
        if t:
            print(
                f"{n}: the last of {t['jobs']} builds was sent at {t['last_sent_s']} s, the last reply came at "
                f"{t['last_reply_s']} s; build workers busy {t['busy_until_last_sent']:.0%} until then, "
                f"{t['busy_in_tail'] or 0:.0%} in the tail; longest builds (s): "
                + ", ".join(f"{j['seconds']}" for j in t["longest"][:6])
            )
    for n in names:
        if not modes[n].get("complete", True):
            print(f"{n}: stopped by its time limit; compared on the {modes[n]['candidates']} candidates it measured")
    print("\nphase profile (seconds summed over workers)")
    for phase in PHASES + ("wall", "devices"):
        print(f"  {phase:26}" + "".join(f"{str(modes[n]['profile'].get(phase, '-')):>14}" for n in names))
    if "baseline" in modes and "measure" in modes and modes["baseline"]["per_minute"]:
        print(
            f"\nmeasure / baseline candidates per minute: "
            f"{modes['measure']['per_minute'] / modes['baseline']['per_minute']:.2f}x"
        )
    for name, c in comparisons.items():
        ratio = c["latency_ratio_median"]
        within = c["within_5_percent"]
        print(
            f"{name}: {c['verdicts_differ']} of {c['candidates']} verdicts differ; latencies of {c['timed_in_both']} "
            f"timed in both: median ratio {ratio if ratio is None else round(ratio, 3)}, "
            f"within 5%: {within if within is None else f'{within:.0%}'}"
        )
        bins = c.get("distinct_by_latency") or {}
        print(
            "    measured themselves in both, within 5% by latency: "
            + ", ".join(
                f"{k} {v['within_5_percent']:.0%} of {v['timed']}"
                for k, v in bins.items()
                if k != "timers" and v["timed"]
            )
            + f"; timers {bins.get('timers')}"
        )
        for d in c["first_differences"]:
            print(f"    {d['id']}: {d['a']} vs {d['b']}")
