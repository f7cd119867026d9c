"""`report.md` and its plots from a results dict (the content of `results.json`).

Everything shown is read from `results["metrics"]` (computed by metrics.summarize from the
raw measurements) or from the measurements themselves; nothing here computes a new figure
except per-method means for the plots' positions. Plots: `report_plots.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

from dragon_dsl.eval.metrics import OWN_ORIGINS
from dragon_dsl.eval.report_plots import PLOTS, plots

__all__ = ["PLOTS", "SECTIONS", "markdown", "plots", "write"]

SECTIONS = (
    "## Setup",
    "## Methods",
    "## Speed-ups",
    "## Correctness and time to a verified kernel",
    "## Failure taxonomy",
    "## Roofline",
    "## Per family",
    "## Per workload",
    "## Plots",
)


def _f(x, fmt="{:.2f}") -> str:
    return "–" if x is None else fmt.format(x)


def _host(h: dict) -> str:
    return f"{h.get('node')}: {h.get('cpus')} CPUs ({h.get('processor')})" + (
        f", GPU {h['gpu']}" if h.get("gpu") else ", no GPU"
    )


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def markdown(results: dict) -> str:
    met = results["metrics"]
    methods = list(met["methods"])
    info = results["methods"]
    lines = _setup(results)
    lines += _methods_table(info)
    lines += _speedups(met, methods)
    lines += _against_search(met, methods)
    lines += _correctness(results, met, methods)
    lines += _taxonomy(met, methods)
    lines += _roofline(met, methods)
    lines += _per_family(met, methods)
    lines += _per_workload(results, info)
    lines += ["", "## Plots", ""] + [f"![{p[:-4]}]({p})" for p in PLOTS] + [""]
    lines += _still_to_measure(results)
    return "\n".join(lines)


def _setup(results: dict) -> list:
    """The title, the command, versions, settings, peaks and the inputs left out."""
    lines = [
        "# Little Dragon evaluation",
        "",
        f"{len(results['workloads'])} workloads, {len({w['family'] for w in results['workloads']})} families, "
        f"target `{json.dumps(results['target'])}`, device `{results['device']}`.",
        "",
        *_merge_notes(results),
        "## Setup",
        "",
        "Command:",
        "",
        "```",
        " ".join(results["command"]),
        "```",
        "",
        "| | |",
        "|---|---|",
    ]
    for k, v in results["versions"].items():
        lines.append(f"| {k} | {v} |")
    s = results["settings"]
    peaks = results["peaks"]
    lines += [
        f"| budgets | {s['budgets']} |",
        f"| k (model) | {s['k']} |",
        f"| verifier input sets | {s['seeds']} |",
        f"| timing repeats | {s['repeat']} |",
        f"| start-up (engine, references) | {results['startup_s']:.1f} s |",
        f"| total wall time | {results['wall_s']:.1f} s |",
        f"| results cache | {results['cache']['rows_before']} rows before, {results['cache']['rows_after']} after |",
        "",
        f"Peaks ({peaks['source']}): "
        + ", ".join(f"{d} {v / 1e12:.3g} TFLOP/s" for d, v in peaks["flops"].items())
        + f", memory {peaks['bytes_per_s'] / 1e12:.3g} TB/s."
        + "".join(f" {n}." for n in peaks.get("notes", [])),
        "",
    ]
    if results["problems"]:
        lines += ["Inputs left out:", ""] + [f"- {p}" for p in results["problems"]] + [""]
    return lines


def _methods_table(info: dict) -> list:
    """Per method: measured on how many tasks, and why not on the others."""
    lines = [
        "## Methods",
        "",
        "| method | measured | not available | not applicable | why not |",
        "|---|---|---|---|---|",
    ]
    for name, e in info.items():
        lines.append(
            f"| {name} | {e['measured']} | {e['not_available']} | {e['not_applicable']} | "
            f"{'; '.join(e['reasons'])[:200]} |"
        )
    lines.append("")
    return lines


def _speedups(met: dict, methods: list) -> list:
    """Speed-ups over each baseline: shares at thresholds, geometric mean, median."""
    lines = [
        "## Speed-ups",
        "",
        "Speed-up = baseline latency / method latency (fastest verified candidate, `slow` ones included at "
        "their measured speed). Shares count every task with a baseline (a task with no verified answer "
        "reaches no threshold); geometric mean and median are over the *verified* tasks: every task with a "
        "verified answer, however slow (a count of the tasks in these figures, not of successes: a `slow` "
        "answer is a failure in every success figure).",
        "",
        *_own_note(met, methods),
    ]
    for base in met["baselines"]:
        own = met["methods"][base]["tasks"].get("construction") or {}
        if not own.get("verified"):
            tx = {c: n for c, n in met["methods"][base]["taxonomy"].items() if n}
            lines += [
                f"Over **{base}**: no speed-up, since {base} has no verified kernel on any of its "
                f"{own.get('n', 0)} tasks (failed candidates: "
                + (", ".join(f"{c} {n}" for c, n in tx.items()) or "none")
                + ").",
                "",
            ]
            continue
        lines += [
            f"Over **{base}**:",
            "",
            "| method | tasks | verified | >= 1.0x | >= 1.2x | >= 1.5x | geomean | median |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name in methods:
            for label, e in _variants(met, name):
                sp = e.get(f"over_{base}")
                if not sp or name == base:
                    continue
                sh = sp["share_at_least"]
                lines.append(
                    f"| {label} | {sp['tasks']} | {sp['verified']} | {_pct(sh.get('1'))} | {_pct(sh.get('1.2'))} | "
                    f"{_pct(sh.get('1.5'))} | {_f(sp['geomean'])} | {_f(sp['median'])} |"
                )
        lines.append("")
    if "dlight" not in met["baselines"]:
        lines += ["Over **dlight**: not applicable on this target (dlight schedules GPU targets only).", ""]
    return lines


def _correctness(results: dict, met: dict, methods: list) -> list:
    """First-answer correctness and time to a verified kernel per method and task, where the
    times come from, and the improvement over the existing scripts."""
    lines = [
        "## Correctness and time to a verified kernel",
        "",
        "A `slow` answer (verified, but more than 10x slower than the task's baseline: dlight where measured, "
        "else the unscheduled program) is a failure. Solved: tasks with a correct answer (verified and not "
        "slow); verified: tasks with a verified answer, slow included. First answer correct: share of tasks "
        "whose first candidate was correct (verified and not slow); first answer slow: how many first answers "
        "were verified but slow (failures). First answer = dlight: first answers whose script is dlight's "
        "script of the workload (canonical form: names, comments, spacing and unused queries aside), of the "
        "tasks where both scripts are recorded. Time: wall seconds from the method's start to its verified "
        "answer, slow or not (search or generation included; engine start-up excluded). pass@k counts only "
        "correct samples.",
        "",
        "| method | task | tasks | solved (ok, within 10x) | verified (slow included) | first answer correct "
        "| first answer slow | first answer = dlight | time median s | time p90 s | pass@k |",
        "|---" * 11 + "|",
    ]
    for name in methods:
        for label, e in _variants(met, name):
            for task, t in e["tasks"].items():
                lines.append(_correctness_row(label, task, t))
    lines += _origins(met, methods)
    lines += _time_notes(results)
    lines += _improvement(met, methods)
    lines.append("")
    return lines


def _correctness_row(label: str, task: str, t: dict) -> str:
    pk = ", ".join(f"@{k}: {_pct(v)}" for k, v in (t.get("pass_at_k") or {}).items())
    tt = t["time_to_verified_s"]
    eq = t.get("first_answer_equals_dlight") or {}
    same = f"{eq['count']}/{eq['n']}" if eq.get("n") else "–"
    return (
        f"| {label} | {task} | {t['n']} | {t['solved']} | {t['verified']} | "
        f"{_pct(t['first_answer_correct'])} | {t.get('first_answer_slow', 0)} | {same} | "
        f"{_f(tt['median'])} | {_f(tt['p90'])} | {pk or '–'} |"
    )


def _variants(met: dict, name: str) -> list:
    """(label, metrics entry) of a method: one row; a model method two, its figures over every candidate
    and over its own samples only (metrics.own_samples), or one where every candidate is its own."""
    e = met["methods"][name]
    if "own_samples" not in e:
        return [(name, e)]
    origins = e.get("origins", {})
    if all(o in OWN_ORIGINS or o == "unrecorded" for o in origins):
        unrecorded = "unrecorded" in origins
        return [(f"{name}, " + ("origins unrecorded, counted as own" if unrecorded else "own samples (all)"), e)]
    return [(f"{name}, all candidates", e), (f"{name}, own samples", e["own_samples"])]


def _own_note(met: dict, methods: list) -> list:
    """What a model method's two rows mean, where there is one."""
    if not any("own_samples" in met["methods"][n] for n in methods):
        return []
    return [
        "A model method with candidates it did not write (the tensor-core candidate: a sample of "
        "MetaSchedule's tensor-core design space whose decisions the model chose) has two rows: *all "
        "candidates* counts every candidate of its answer; *own samples* only the scripts the model wrote "
        "(completed by AutoBind or not; a candidate stored without its origin counts as its own), its first "
        "answer being its first own candidate. One whose candidates are all its own has one row, so labelled.",
        "",
    ]


def _origins(met: dict, methods: list) -> list:
    """Where the model's candidates came from (metrics `origins`)."""
    counted = [(n, met["methods"][n]["origins"]) for n in methods if met["methods"][n].get("origins")]
    if not counted:
        return []
    return [
        "",
        "Origins of the model's candidates (own samples: `model`, `completed`; `unrecorded`: answers stored "
        "without origins, counted as the model's own): "
        + "; ".join(f"{n}: " + ", ".join(f"{o} {c}" for o, c in orig.items()) for n, orig in counted)
        + ".",
    ]


def _time_notes(results: dict) -> list:
    """What the times include: shards sharing the machine, the model's generation host and start-up."""
    lines = []
    if results.get("shards"):
        lines += [
            "",
            f"The measurements were taken by {results['shards']} shard processes at once (`--shard`): "
            "their wall times include waiting for the GPU and the cores the shards shared, so a "
            "MetaSchedule run alone on the machine takes less than its time here.",
        ]
    hosts = {json.dumps(r["generated_on"], sort_keys=True) for r in results["measurements"] if r.get("generated_on")}
    if hosts:
        lines += [
            "",
            "The model's time is its generation (on "
            + "; ".join(_host(json.loads(h)) for h in sorted(hosts))
            + ") plus the engine's verification here.",
        ]
        loads = [r["model_load_s"] for r in results["measurements"] if r.get("model_load_s")]
        if loads:
            lines[-1] += (
                f" Loading the model (imports, weights, grammar: once per process, before its first "
                f"answer) is start-up and not in these times: {max(loads):.1f} s at most, "
                f"in {len(loads)} process{'es' if len(loads) > 1 else ''}."
            )
    return lines


def _improvement(met: dict, methods: list) -> list:
    """The speed-up over the existing script, per method that improved one."""
    imp = [
        (n, met["methods"][n]["tasks"]["improvement"])
        for n in methods
        if "improvement" in met["methods"][n]["tasks"]
        and "speedup_over_existing" in met["methods"][n]["tasks"]["improvement"]
    ]
    if not imp:
        return []
    lines = [
        "",
        "Improvement over the existing script:",
        "",
        "| method | tasks | verified | >= 1.0x | geomean |",
        "|---|---|---|---|---|",
    ]
    for n, t in imp:
        sp = t["speedup_over_existing"]
        lines.append(
            f"| {n} | {sp['tasks']} | {sp['verified']} | {_pct(sp['share_at_least'].get('1'))} | {_f(sp['geomean'])} |"
        )
    return lines


def _taxonomy(met: dict, methods: list) -> list:
    """Failed candidates per method by the stage that failed them."""
    lines = [
        "## Failure taxonomy",
        "",
        "Failed candidates by stage (parse and type: the script; replay, build, launch, numeric, timeout: the "
        "engine; slow: verified candidates more than 10x slower than the baseline, a failure in every success "
        "figure, though they enter the speed-up figures at their measured speed).",
        "",
    ]
    cats = list(next(iter(met["methods"].values()))["taxonomy"]) if methods else []
    lines += ["| method | " + " | ".join(cats) + " |", "|---" * (len(cats) + 1) + "|"]
    for name in methods:
        tx = met["methods"][name]["taxonomy"]
        lines.append(f"| {name} | " + " | ".join(str(tx[c]) for c in cats) + " |")
    lines.append("")
    return lines


def _roofline(met: dict, methods: list) -> list:
    """The median fraction of the roofline bound each method reaches."""
    lines = [
        "## Roofline",
        "",
        "Fraction of the roofline bound reached (bound = max(FLOPs / peak, compulsory bytes / "
        "bandwidth); 100% = at the roofline). Median per method:",
        "",
        "| method | median | tasks |",
        "|---|---|---|",
    ]
    for name in methods:
        rf = met["methods"][name]["roofline_fraction"]
        lines.append(f"| {name} | {_pct(rf['median'])} | {len(rf['per_task'])} |")
    lines.append("")
    return lines


def _per_family(met: dict, methods: list) -> list:
    """Geometric-mean speed-ups over the last baseline, per workload family."""
    lines = ["## Per family", ""]
    base = met["baselines"][-1] if met["baselines"] else None
    if base:
        fams = sorted({f for n in methods for f in met["methods"][n].get("families", {}).get(base, {})})
        shown = [n for n in methods if n != base]
        lines += [
            f"Geometric-mean speed-up over **{base}** (verified/tasks; slow answers included):",
            "",
            "| family | " + " | ".join(shown) + " |",
            "|---" * (len(shown) + 1) + "|",
        ]
        for fam in fams:
            cells = []
            for n in shown:
                c = met["methods"][n].get("families", {}).get(base, {}).get(fam)
                cells.append("–" if not c else f"{_f(c['geomean'])} ({c['verified']}/{c['tasks']})")
            lines.append(f"| {fam} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _per_workload(results: dict, info: dict) -> list:
    """Per workload: its size, roofline bound and each method's fastest verified latency."""
    lines = [
        "## Per workload",
        "",
        "Latency in us of the fastest verified candidate (– none; n/a not applicable or not available).",
        "",
    ]
    lat = {}
    for r in results["measurements"]:
        if r["task"] != "construction":
            continue
        if r["status"] != "measured":
            lat[(r["workload"], r["method"])] = "n/a"
        else:
            ok = [c["latency_us"] for c in r["candidates"] if c["status"] == "ok" and c.get("latency_us") is not None]
            lat[(r["workload"], r["method"])] = f"{min(ok):.2f}" if ok else "–"
    cols = [n for n in info if any(k[1] == n for k in lat)]
    lines += [
        "| workload | family | GFLOP | MB | roofline us | " + " | ".join(cols) + " |",
        "|---" * (len(cols) + 5) + "|",
    ]
    for w in results["workloads"]:
        lines.append(
            f"| {w['name']} | {w['family']} | {w['flops'] / 1e9:.3g} | {w['bytes'] / 1e6:.3g} | "
            f"{w['roofline_us']:.3g} | " + " | ".join(lat.get((w["name"], c), "") for c in cols) + " |"
        )
    return lines


def _still_to_measure(results: dict) -> list:
    """The measurements `--stop-after` deferred, per method."""
    if not results.get("deferred"):
        return []
    lines = [
        "## Still to measure",
        "",
        "Deferred by `--stop-after` (not in any figure above):",
        "",
        "| method | workloads |",
        "|---|---|",
    ]
    for method, names in _deferred_by_method(results).items():
        lines.append(f"| {method} | {len(names)}: {', '.join(sorted(names))} |")
    lines.append("")
    return lines


def _against_search(met: dict, methods: list) -> list:
    """The section comparing every method with the largest MetaSchedule budget measured: the
    latency it reaches and how much sooner it has a verified kernel (metrics.time_ratio)."""
    search = met.get("search")
    rows = [(label, e) for n in methods if n != search for label, e in _variants(met, n) if "over_search" in e]
    if not search or not rows:
        return []
    lines = [
        f"## Against {search}",
        "",
        f"Speed-up over **{search}** (its latency / the method's, construction tasks) and time to a "
        f"verified kernel (slow answers included): *sooner* = {search}'s median time / the method's median "
        "time, each over the tasks it verified; *per task* = the median of that ratio over the tasks both "
        "verified.",
        "",
        "| method | tasks | verified | >= 1.0x | geomean | median | median time s | "
        f"{search} median s | sooner | per task (n) |",
        "|---" * 10 + "|",
    ]
    for label, e in rows:
        sp, tv = e["over_search"], e["time_vs_search"]
        lines.append(
            f"| {label} | {sp['tasks']} | {sp['verified']} | {_pct(sp['share_at_least'].get('1'))} | "
            f"{_f(sp['geomean'])} | {_f(sp['median'])} | {_f(tv['median_s'])} | {_f(tv['search_median_s'])} | "
            f"{_f(tv['ratio_of_medians'], '{:.1f}x')} | {_f(tv['median_per_task'], '{:.1f}x')} "
            f"({tv['tasks_both']}) |"
        )
    return lines + [""]


def _deferred_by_method(results: dict) -> dict:
    """{method: [workload, ...]} of the measurements still deferred, in the order first deferred."""
    by_method: dict = {}
    for d in results.get("deferred") or []:
        by_method.setdefault(d["method"], []).append(d["workload"])
    return by_method


def _merge_notes(results: dict) -> list:
    """For a report merged from shard files (`dragon eval-report`): how, and what it lacks."""
    if not results.get("merged_from"):
        return []
    lines = [
        f"Merged from {len(results['merged_from'])} shard result files by `{' '.join(results['merge_command'])}`"
        " (nothing measured by the merge)."
    ]
    if results.get("missing_shards"):
        lines.append(
            f"**Shard(s) {', '.join(map(str, results['missing_shards']))} of {results['shards']} have no "
            "results: their workloads are missing.**"
        )
    if results.get("deferred"):
        lines.append(
            f"**Interim report: {len(results['deferred'])} measurement(s) are still to come** ("
            + ", ".join(f"{m} {len(names)}" for m, names in _deferred_by_method(results).items())
            + "; listed under *Still to measure*): every figure of those methods covers only the "
            "workloads measured so far (the *tasks* columns say how many)."
        )
    return [lines[0]] + ([""] + lines[1:] if lines[1:] else []) + [""]


def write(results: dict, out_dir) -> Path:
    out = Path(out_dir)
    plots(results, out)
    path = out / "report.md"
    path.write_text(markdown(results), encoding="utf-8")
    return path
