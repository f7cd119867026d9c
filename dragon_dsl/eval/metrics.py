"""The evaluation's metrics: pure functions of plain data (no TVM, no I/O).

Every figure in `report.md` comes from `summarize(results)`, which reads only the raw
measurements that `results.json` stores, so anyone can recompute the report from it.

Conventions (the tests in tests/eval/test_metrics.py hold each one on hand-computed values):
  * Success and speed are counted apart. A method "solves" a task when at least one of its
    candidates is correct: verified, timed and not `slow` (status ok); it "verified" the task when
    one was verified and timed, slow or not (status ok or slow). Its latency for the task, in every
    speed-up figure, is its fastest verified candidate, slow or not.
  * Speed-up over a baseline = baseline latency / method latency. A task whose baseline has
    no latency is left out of every speed-up figure for that baseline; a task with no verified
    candidate counts as *not reaching* any threshold, and is left out of geometric means and
    medians (which therefore say "over the tasks verified", with that count, `verified`, beside
    them: not a count of successes).
  * Percentiles interpolate linearly between order statistics (numpy's default):
    p-th percentile of sorted x[0..n-1] sits at position (n - 1) * p / 100.
  * Against search: the MetaSchedule method of the largest budget measured ("metaschedule-N")
    is the search every other method is compared with, for latency (speed-up over it, as over
    a baseline) and for time to a verified kernel: the ratio of the medians (search median /
    method median, each over the tasks that method verified) and the median of the per-task
    ratios over the tasks both verified. A ratio above 1 means the method answers sooner.
  * `slow`: a verified answer more than SLOW_FACTOR (10) times slower than the task's baseline
    (dlight where it was measured, else the unscheduled program) is labelled `slow` (every method
    but the two baselines). A slow answer is a FAILURE in every success figure: it does not solve
    its task (`solved`), is no correct first answer (`first_answer_correct`) and is no correct
    sample in pass@k. It is still verified: `verified` and `first_answer_verified` count it (with
    `first_answer_slow`, the first answers so labelled), and it enters every speed-up figure
    (shares, geometric means, medians) at its measured speed, so no speed figure leaves slow
    answers out. The taxonomy lists slow candidates beside the other failures.
  * A first answer "equals dlight" when its script and dlight's script of the workload (recorded
    in dlight's row) have the same canonical body (`script_statements`: the DSL's canonical form
    of the trace, header, comments and unused queries dropped).
  * The model's own samples: a model candidate records its `origin` (OWN_ORIGINS: written by the
    model, possibly completed by AutoBind; "tensor_core": a sample of MetaSchedule's tensor-core
    design space whose decisions the model chose). A model method's `own_samples` entry repeats
    every figure over its own candidates only (first answer: the first own candidate; best of k:
    the fastest own one); a candidate without `origin` counts as the model's own.
  * pass@k is the unbiased estimator 1 - C(n - c, k) / C(n, k) of Chen et al. (2021) for
    n samples of which c are correct (status ok: a slow sample is not), averaged over tasks.
  * The roofline bound of a kernel is max(FLOPs / peak FLOP/s, bytes / peak bytes/s); the
    fraction reached is bound / measured time (1.0 = at the roofline).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from dragon_dsl.levels import is_slow

THRESHOLDS = (1.0, 1.2, 1.5)
#: the methods every other is compared with (a task's baseline: dlight where measured)
BASELINES = ("unscheduled", "dlight")
#: the statuses of a verified candidate: `slow` is verified, only more than 10x slower than the baseline
VERIFIED = ("ok", "slow")
#: the status of a correct candidate (a success): verified and not slow
CORRECT = "ok"
#: the origins of the candidates the model wrote (metrics.py's docstring); "tensor_core" is not one
OWN_ORIGINS = ("model", "completed")

# Failure taxonomy: the stage a candidate failed at.
CATEGORIES = ("parse", "type", "replay", "build", "launch", "numeric", "timeout", "slow")
_STATUS_CATEGORY = {
    "slow": "slow",
    "parse_error": "parse",
    "type_error": "type",
    "replay_error": "replay",
    "build_error": "build",
    "launch_error": "launch",
    "numeric_mismatch": "numeric",
    "unwritten_output": "numeric",
    "timeout": "timeout",
}

# Method rows that are not measurements of a kernel.
UNAVAILABLE = ("not_available", "not_applicable")


def failure_category(status: str) -> str | None:
    """The taxonomy bucket of a candidate's status; None for "ok"; ValueError for an unknown status."""
    if status == "ok":
        return None
    try:
        return _STATUS_CATEGORY[status]
    except KeyError:
        raise ValueError(f"unknown candidate status {status!r}") from None


def taxonomy(statuses: Iterable[str]) -> dict:
    """Counts per failure category (every category present, zeros included)."""
    counts = Counter(c for c in (failure_category(s) for s in statuses) if c is not None)
    return {c: counts.get(c, 0) for c in CATEGORIES}


def median(values: Iterable[float]) -> float | None:
    return percentile(values, 50.0)


def percentile(values: Iterable[float], p: float) -> float | None:
    """Linear interpolation between order statistics; None for no values."""
    data = sorted(float(v) for v in values)
    if not data:
        return None
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile {p} outside [0, 100]")
    pos = (len(data) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def geomean(values: Iterable[float]) -> float | None:
    data = [float(v) for v in values]
    if not data:
        return None
    if any(v <= 0 or not math.isfinite(v) for v in data):
        raise ValueError("a geometric mean needs positive finite values")
    return math.exp(sum(math.log(v) for v in data) / len(data))


def speedup(baseline_us: float | None, method_us: float | None) -> float | None:
    """baseline / method, or None when either is missing."""
    if baseline_us is None or method_us is None:
        return None
    if baseline_us <= 0 or method_us <= 0:
        raise ValueError("latencies must be positive")
    return baseline_us / method_us


def speedup_summary(baseline: dict, method: dict, thresholds: Sequence[float] = THRESHOLDS) -> dict:
    """Speed-ups of one method over one baseline, per task and aggregated.

    `baseline` and `method` map task -> latency in us (None: no verified kernel). Tasks are
    those with a baseline latency that the method was run on (keys of `method`). `verified` counts
    the tasks with a method latency (slow ones included): the tasks in the geomean and median, not
    a count of successes."""
    tasks = sorted(t for t in method if baseline.get(t) is not None)
    per_task = {t: speedup(baseline[t], method[t]) for t in tasks}
    verified = [s for s in per_task.values() if s is not None]
    n = len(tasks)
    return {
        "tasks": n,
        "verified": len(verified),
        "per_task": per_task,
        "share_at_least": {f"{t:g}": (sum(s >= t for s in verified) / n if n else None) for t in thresholds},
        "geomean": geomean(verified),
        "median": median(verified),
    }


def time_ratio(search_s: dict, method_s: dict) -> dict:
    """How much sooner a method reaches a verified kernel than the search (module docstring).

    Both map task -> wall seconds to the verified answer, for the tasks each verified."""
    both = sorted(t for t in method_s if t in search_s)
    per_task = {t: search_s[t] / method_s[t] for t in both if method_s[t] > 0}
    m, s = median(method_s.values()), median(search_s.values())
    return {
        "median_s": m,
        "search_median_s": s,
        "ratio_of_medians": (s / m if m and s is not None else None),
        "per_task": per_task,
        "median_per_task": median(per_task.values()),
        "tasks_both": len(per_task),
    }


def search_method(methods: Iterable[str]) -> str | None:
    """The MetaSchedule method of the largest budget among METHODS ("metaschedule-64"), or None."""
    budgets = {}
    for m in methods:
        head, _, n = m.rpartition("-")
        if head == "metaschedule" and n.isdigit():
            budgets[int(n)] = m
    return budgets[max(budgets)] if budgets else None


def first_answer_correctness(first_ok: Iterable[bool]) -> float | None:
    """Share of tasks whose first answer passed (True); None for no tasks."""
    data = [bool(x) for x in first_ok]
    return sum(data) / len(data) if data else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: n samples, c correct."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass@k needs 0 <= c <= n and k >= 1 (n={n}, c={c}, k={k})")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(samples: Iterable[tuple], k: int) -> float | None:
    """Mean pass@k over tasks given (n, c) per task."""
    data = [pass_at_k(n, c, k) for n, c in samples]
    return sum(data) / len(data) if data else None


def roofline_bound_us(flops: float, nbytes: float, peak_flops: float, peak_bytes_per_s: float) -> float:
    """The shortest time the roofline allows, in us."""
    if peak_flops <= 0 or peak_bytes_per_s <= 0:
        raise ValueError("peaks must be positive")
    return 1e6 * max(flops / peak_flops, nbytes / peak_bytes_per_s)


def roofline_fraction(bound_us: float, latency_us: float | None) -> float | None:
    if latency_us is None:
        return None
    if latency_us <= 0:
        raise ValueError("latencies must be positive")
    return bound_us / latency_us


# --- one method's row on one task --------------------------------------------------------------
def best_latency(candidates: Sequence[dict]) -> float | None:
    """The fastest verified (ok or slow) and timed candidate's latency."""
    times = [c["latency_us"] for c in candidates if c["status"] in VERIFIED and c.get("latency_us") is not None]
    return min(times) if times else None


def first_verified(candidates: Sequence[dict]) -> bool:
    """Whether the first candidate was verified (ok or slow)."""
    return bool(candidates) and candidates[0]["status"] in VERIFIED


def first_correct(candidates: Sequence[dict]) -> bool:
    """Whether the first candidate was correct: verified and not slow (status ok)."""
    return bool(candidates) and candidates[0]["status"] == CORRECT


def is_own(candidate: dict) -> bool:
    """Whether the model wrote a candidate (no `origin` recorded: the model's own)."""
    return candidate.get("origin", "model") in OWN_ORIGINS


def own_samples(row: dict) -> dict:
    """ROW with only the candidates the model wrote (a copy)."""
    return dict(row, candidates=[c for c in row["candidates"] if is_own(c)])


@lru_cache(maxsize=4096)
def script_statements(text: str) -> tuple:
    """A script's statements in canonical form, to tell identical scripts: the trace it encodes
    written back by the decoder (names renumbered, header, comments and explanations dropped:
    `body_of_text`), without the queries whose results nothing uses (`without_unused_queries`,
    dragon-check DRG104), as the fine-tuning labels and `dragon suggest`'s answers drop them, and
    every lambda's parameters named by position (`positional_lambdas`: TVM compares index maps by
    position, and a model trained under canonical names writes them so); a script that does not
    encode: its lines without whitespace, blank lines, comments and directives."""
    from dragon_dsl import DragonError
    from dragon_model.data import body_of_text, without_unused_queries
    from dragon_model.renaming import positional_lambdas

    try:
        body = positional_lambdas(without_unused_queries(body_of_text(text)))
        return tuple(line.strip() for line in body.splitlines() if line.strip())
    except (DragonError, ValueError, KeyError, TypeError):
        lines = ("".join(line.split("#", 1)[0].split()) for line in text.splitlines())
        return tuple(ln for ln in lines if ln and not ln.startswith(("workload", "target")))


def same_script(a: str | None, b: str | None) -> bool | None:
    """Whether two script texts are the same schedule written alike (`script_statements`); None
    when either is missing."""
    if not isinstance(a, str) or not isinstance(b, str):
        return None
    return script_statements(a) == script_statements(b)


# --- the whole report ----------------------------------------------------------------------------
def summarize(results: dict, thresholds: Sequence[float] = THRESHOLDS) -> dict:
    """All metrics of a run, from `results["measurements"]` and `results["workloads"]`.

    A measurement row: {"workload", "task" ("construction"|"improvement"), "method",
    "status" ("measured"|"not_available"|"not_applicable"), "candidates": [{"status",
    "latency_us", "script" (where the method writes scripts), "origin" (the model's), ...}],
    "time_s" (wall time to the method's verified answer or None), "k"}.
    """
    rows = _mark_slow([r for r in results["measurements"] if r["status"] == "measured"])
    methods = sorted({r["method"] for r in rows})
    latency, solve_s = _construction_latencies(rows)
    scope = _Scope(
        workloads={w["name"]: w for w in results["workloads"]},
        baselines=[b for b in BASELINES if b in latency],
        search=search_method(m for m in methods if latency.get(m)),
        latency=latency,
        solve_s=solve_s,
        thresholds=tuple(thresholds),
        dlight_scripts={
            r["workload"]: r["candidates"][0].get("script")
            for r in rows
            if r["method"] == "dlight" and r["task"] == "construction" and r["candidates"]
        },
    )
    out: dict = {"methods": {}, "baselines": scope.baselines, "search": scope.search}
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        entry = _method_entry(m, mine, scope)
        if m.startswith("model"):
            entry["origins"] = dict(
                sorted(Counter(c.get("origin", "unrecorded") for r in mine for c in r["candidates"]).items())
            )
            own = [own_samples(r) for r in mine]
            own_latency, own_s = _construction_latencies(own)
            entry["own_samples"] = _method_entry(
                m,
                own,
                replace(
                    scope,
                    latency={**latency, m: own_latency.get(m, {})},
                    solve_s={**solve_s, m: own_s.get(m, {})},
                ),
            )
        out["methods"][m] = entry
    return out


@dataclass(frozen=True)
class _Scope:
    """What every method's figures are computed against: the workloads, baselines, the search, every
    method's construction latencies and times to a verified kernel, and dlight's scripts."""

    workloads: dict
    baselines: list
    search: str | None
    latency: dict  # method -> workload -> fastest verified latency (construction)
    solve_s: dict  # method -> workload -> seconds to a verified kernel (construction)
    thresholds: tuple
    dlight_scripts: dict  # workload -> dlight's script (None: not recorded)


def _construction_latencies(rows: list) -> tuple:
    """({method: {workload: fastest verified latency}}, {method: {workload: seconds to it}}) of the
    construction rows."""
    latency: dict = {}
    solve_s: dict = {}
    for r in rows:
        if r["task"] == "construction":
            lat = latency.setdefault(r["method"], {})[r["workload"]] = best_latency(r["candidates"])
            times = solve_s.setdefault(r["method"], {})
            if r.get("time_s") is not None and lat is not None:
                times[r["workload"]] = r["time_s"]
    return latency, solve_s


def _method_entry(m: str, mine: list, scope: _Scope) -> dict:
    """One method's figures from its rows MINE."""
    entry: dict = {"tasks": {}, "taxonomy": taxonomy(c["status"] for r in mine for c in r["candidates"])}
    for task in ("construction", "improvement"):
        tr = [r for r in mine if r["task"] == task]
        if tr:
            entry["tasks"][task] = _task_entry(tr, task, scope)
    latency = scope.latency.get(m, {})
    for base in scope.baselines:
        if latency:
            entry[f"over_{base}"] = speedup_summary(scope.latency[base], latency, scope.thresholds)
    if scope.search and m != scope.search and latency:
        entry["over_search"] = speedup_summary(scope.latency[scope.search], latency, scope.thresholds)
        entry["time_vs_search"] = time_ratio(scope.solve_s[scope.search], scope.solve_s.get(m, {}))
    roof = {}
    for name, lat in latency.items():
        w = scope.workloads.get(name)
        if w and w.get("roofline_us") is not None and lat is not None:
            roof[name] = roofline_fraction(w["roofline_us"], lat)
    entry["roofline_fraction"] = {"per_task": roof, "median": median(roof.values())}
    families: dict = {}
    for base in scope.baselines:
        for name, s in (entry.get(f"over_{base}") or {}).get("per_task", {}).items():
            fam = scope.workloads.get(name, {}).get("family", "?")
            families.setdefault(base, {}).setdefault(fam, []).append(s)
    entry["families"] = {
        base: {
            fam: {
                "tasks": len(v),
                "verified": sum(s is not None for s in v),
                "geomean": geomean([s for s in v if s is not None]),
            }
            for fam, v in sorted(fams.items())
        }
        for base, fams in families.items()
    }
    return entry


def _task_entry(tr: list, task: str, scope: _Scope) -> dict:
    """One method's figures on one task from its rows TR of that task."""
    times = [r["time_s"] for r in tr if r.get("time_s") is not None and best_latency(r["candidates"]) is not None]
    firsts = [r["candidates"][0] if r["candidates"] else None for r in tr]
    same = [same_script(c.get("script"), scope.dlight_scripts.get(r["workload"])) for r, c in zip(tr, firsts) if c]
    t_entry = {
        "n": len(tr),
        "solved": sum(best_latency([c for c in r["candidates"] if c["status"] == CORRECT]) is not None for r in tr),
        "verified": sum(best_latency(r["candidates"]) is not None for r in tr),
        "first_answer_correct": first_answer_correctness(first_correct(r["candidates"]) for r in tr),
        "first_answer_verified": first_answer_correctness(first_verified(r["candidates"]) for r in tr),
        "first_answer_slow": sum(c is not None and c["status"] == "slow" for c in firsts),
        "first_answer_equals_dlight": {"count": sum(x is True for x in same), "n": sum(x is not None for x in same)},
        "time_to_verified_s": {"median": median(times), "p90": percentile(times, 90.0), "n": len(times)},
    }
    ks = sorted({r["k"] for r in tr if r.get("k")})
    if ks:
        samples = [(len(r["candidates"]), sum(c["status"] == CORRECT for c in r["candidates"])) for r in tr]
        t_entry["pass_at_k"] = {
            str(k): mean_pass_at_k(samples, k) for k in _k_values(max(ks)) if all(n >= k for n, _ in samples)
        }
    if task == "improvement":
        t_entry["speedup_over_existing"] = speedup_summary(
            {r["workload"]: r.get("existing_latency_us") for r in tr},
            {r["workload"]: best_latency(r["candidates"]) for r in tr},
            scope.thresholds,
        )
    return t_entry


def _mark_slow(rows: list) -> list:
    """ROWS with every verified candidate of a method other than the baselines that is more than
    SLOW_FACTOR times slower than its task's baseline (dlight's construction latency where measured,
    else the unscheduled program's) given status `slow` (copies; the stored results stay as
    measured). A slow candidate stays verified (VERIFIED) but is not correct (CORRECT)."""
    base: dict = {}
    for r in rows:
        if r["method"] in BASELINES and r["task"] == "construction":
            base.setdefault(r["workload"], {})[r["method"]] = best_latency(r["candidates"])
    out = []
    for r in rows:
        refs = base.get(r["workload"], {})
        ref = refs.get("dlight") or refs.get("unscheduled")
        if r["method"] in BASELINES or not ref:
            out.append(r)
            continue
        cands = [
            dict(c, status="slow") if c["status"] == "ok" and is_slow(c.get("latency_us"), ref) else c
            for c in r["candidates"]
        ]
        out.append(dict(r, candidates=cands))
    return out


def _k_values(k_max: int) -> list:
    return sorted({k for k in (1, 2, 4, 8, 16, 32, 64, k_max) if k <= k_max})
