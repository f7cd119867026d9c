"""Candidates per minute on the labelling path: today's engine call against `dragon measure`'s path,
on one batch, in one run, with identical verdicts required.

    python benchmarks/bench_measure.py --target cuda --out $OUT            # the GPU host (no network needed)
    python benchmarks/bench_measure.py --target llvm --candidates 48 --workloads 16 --out /tmp/bm
    ... --rpc                                                             # also through a TVM RPC tracker

The batch: workloads of every family of the target's corpus (data/corpus/<cuda|llvm>, all
splits; --workloads of them, spread over the families), each with its corpus traces and variants
of them whose sampling decisions are changed (a SamplePerfectTile's factors permuted, a
SampleCategorical's choice moved: what MetaSchedule's evolutionary search does), --candidates in
all. It is written to OUT/batch.jsonl (the workloads to --workload-dir, by default a temporary
folder); OUT gets batch.jsonl, results-measure.jsonl, results-rpc.jsonl, bench_measure.json and
the RPC processes' logs (rpc-tracker.log, rpc-server-N.log).

Modes, one after the other in this order (the baseline after the measure modes with
--baseline-last), each on a fresh engine (results cache off) whose workers are started
and warm before the clock starts:
  * baseline: `Engine(target)` and one `engine.run` over the whole batch (the engine path as it was:
    no source dedupe, one device worker per GPU, the CUDA source compiled as TVM writes it,
    `cuda_preamble="full"`, kernels timed with TVM's time_evaluator, `gpu_timer="evaluator"`);
  * measure:  `dragon measure`'s path (`batchfile.measure_batch` with `batchfile.engine_options`:
    identical programs measured once, two device workers per local GPU, the CUDA source trimmed
    of the type traits it does not use, rows appended as decided; CUDA kernels timed behind a
    blocking kernel, `--gpu-timer evaluator` for TVM's time_evaluator);
  * measure-longest-first (--also-build-order longest-first): the same, with builds handed out
    longest-first (pool.JobQueue);
  * measure-again (--measure-again): the measure mode once more, after the others (on the H200 a
    mode that ran later compiled the same kernels in a third of the time: this separates the order
    of the modes from what they do);
  * rpc (--rpc): the measure path through a TVM RPC tracker and one RPC server per GPU (one for the
    CPU) started here on loopback (`python -m tvm.exec.rpc_tracker` / `dragon rpc-server`; GPU servers with
    `--no-fork` and nvcc as TVM's compiler of the CUDA source the libraries carry, docs/MEASURE.md).
Printed: candidates per minute (all, and verified-and-timed ones), the phase profile (seconds
summed over workers: parse (a build worker loading a workload), replay, checks, codegen, compile,
upload, wait, verify, time; idle device seconds; build_span, from the start to the last build's
reply; main, the seconds the engine's own process spent on the replies), the build workers' busy
share of build_span, the duplicate sources found, and the verdict comparison (status and checked input sets
of every candidate must match; latencies of candidates both modes timed: median ratio and the
share within 5%). OUT/bench_measure.json holds all of it. Exit 1 when verdicts differ; exit 3 when
--rpc could not start its tracker or servers (what they said is printed and kept as `rpc_error`; the
local figures are still written).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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
RPC_KEY = "dragon-bench"


# --- the batch --------------------------------------------------------------------------------------
def corpus_rows(kind: str) -> list:
    import pyarrow.parquet as pq

    folder = ROOT / "data" / "corpus" / kind / "data"
    rows = []
    for file in sorted(folder.glob("*.parquet")):
        rows += pq.read_table(str(file), columns=["family", "workload", "workload_text", "trace"]).to_pylist()
    return rows


def pick_workloads(rows: list, n: int) -> dict:
    """N workloads spread over every family (round robin, names sorted): {name: (family, text, [traces])}."""
    by_family: dict = {}
    for r in rows:
        entry = by_family.setdefault(r["family"], {}).setdefault(r["workload"], (r["family"], r["workload_text"], []))
        trace = json.loads(r["trace"])
        if trace not in entry[2]:
            entry[2].append(trace)
    families = sorted(by_family)
    queues = {f: sorted(by_family[f]) for f in families}
    chosen: dict = {}
    while len(chosen) < n and any(queues.values()):
        for f in families:
            if queues[f] and len(chosen) < n:
                name = queues[f].pop(0)
                chosen[name] = by_family[f][name]
    return chosen


def variant(trace: list, rng: random.Random):
    """TRACE with one or two sampling decisions changed (None when it has none to change)."""
    insts, decisions = trace
    options = []
    for slot, (index, decision) in enumerate(decisions):
        kind, _, attrs, _ = insts[index]
        if kind == "SamplePerfectTile" and isinstance(decision, list) and len(set(decision)) > 1:
            options.append((slot, "tile", attrs))
        elif kind == "SampleCategorical" and len(attrs[0]) > 1:
            options.append((slot, "categorical", attrs))
    if not options:
        return None
    new = [list(d) for d in decisions]
    for slot, how, attrs in rng.sample(options, k=min(len(options), rng.choice((1, 1, 2)))):
        current = new[slot][1]
        if how == "tile":
            limit = attrs[1] if len(attrs) > 1 and isinstance(attrs[1], int) and attrs[1] > 0 else None
            for _ in range(8):
                perm = list(current)
                rng.shuffle(perm)
                if perm != current and (limit is None or perm[-1] <= limit):
                    new[slot][1] = perm
                    break
        else:
            new[slot][1] = rng.choice([i for i in range(len(attrs[0])) if i != current])
    return [insts, new]


def make_batch(kind: str, n_candidates: int, n_workloads: int, out: Path, seed: int, wl_dir: Path) -> dict:
    from dragon_dsl.engine.keys import trace_hash

    rows = corpus_rows(kind)
    chosen = pick_workloads(rows, n_workloads)
    wl_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per = -(-n_candidates // len(chosen))
    pools, families = {}, set()
    for name, (family, text, traces) in chosen.items():
        path = wl_dir / f"{name}.tvmscript"
        path.write_text(text, encoding="utf-8")
        seen, mine = set(), []
        for t in traces:
            if trace_hash(t) not in seen:
                seen.add(trace_hash(t))
                mine.append(t)
        for _attempt in range(per * 40):  # up to 3x its share: workloads with few decisions fall short
            if len(mine) >= 3 * per:
                break
            v = variant(rng.choice(traces), rng)
            if v is not None and trace_hash(v) not in seen:
                seen.add(trace_hash(v))
                mine.append(v)
        pools[name] = (path, mine)
        families.add(family)
    # every workload its share where it has one, the shortfall from those with more
    taken = {name: min(per, len(mine)) for name, (_, mine) in pools.items()}
    while sum(taken.values()) < n_candidates and any(taken[n] < len(pools[n][1]) for n in pools):
        for name in pools:
            if taken[name] < len(pools[name][1]) and sum(taken.values()) < n_candidates:
                taken[name] += 1
    lines = [
        {"id": f"{name}/{i}", "workload": str(path), "trace": t}
        for name, (path, mine) in pools.items()
        for i, t in enumerate(mine[: taken[name]])
    ]
    rng.shuffle(lines)  # a labelling batch mixes workloads
    lines = lines[:n_candidates]
    (out / "batch.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")
    all_families = sorted({r["family"] for r in rows})
    return {
        "candidates": len(lines),
        "workloads": len({ln["workload"] for ln in lines}),
        "families": sorted(families),
        "corpus_families": all_families,
        "every_family": sorted(families) == all_families,
    }


# --- the modes ----------------------------------------------------------------------------------
def warm(engine, workload: str, level: str) -> None:
    """Start every worker (builders and device workers) and wait until each has imported TVM,
    before the clock starts."""
    from dragon_dsl.engine.pool import Dispatcher

    pools = [engine._builders] + ([engine._device_pool()] if level != "build" else [])
    dispatcher = Dispatcher(pools)
    while not all(w.ready for pool in pools for w in pool.workers):
        dispatcher._wait_once()


def run_baseline(target, batch: Path, level: str, workers, timing: dict) -> dict:
    from dragon_dsl.engine import Engine, Task
    from dragon_dsl.engine.batchfile import read_batch

    cands = [c for c in read_batch(batch) if not c.problem]
    with Engine(target, workers=workers, cache=False, cuda_preamble="full", gpu_timer="evaluator") as engine:
        warm(engine, cands[0].workload, level)
        engine.profile(reset=True)
        t0 = time.perf_counter()
        results = engine.run([Task(c.workload, c.trace, level=level, **timing) for c in cands])
        wall = time.perf_counter() - t0
        profile = engine.profile()
        stats = engine.stats()
        workers = engine.workers
    rows = {
        c.id: {"status": r.status.value, "n_checked": r.n_checked, "latency_us": r.latency_us, "timer": r.timer}
        for c, r in zip(cands, results)
    }
    return {"wall_s": wall, "rows": rows, "profile": profile, "stats": stats, "workers": workers}


class _TimeUp(Exception):
    """A mode's time limit passed: its rows so far are compared, the rest is left out."""


def run_measure(
    target,
    batch: Path,
    out: Path,
    level: str,
    workers,
    timing: dict,
    device: str = "local",
    build_group: int | None = None,
    seconds: float = 0.0,
    build_order: str | None = None,
    gpu_timer: str = "blocked",
) -> dict:
    """One mode through `measure_batch`; with SECONDS, it stops after that long (rows written so
    far are kept: `complete` says whether every candidate has one)."""
    from dragon_dsl.engine import Engine
    from dragon_dsl.engine.batchfile import engine_options, measure_batch, read_batch

    out.unlink(missing_ok=True)
    first = next(c for c in read_batch(batch) if not c.problem)
    options = engine_options(target, device)
    if build_group is not None:
        options["build_group"] = build_group
    if build_order is not None:
        options["build_order"] = build_order
    options["gpu_timer"] = gpu_timer
    deadline = None

    def on_row(_row):
        if deadline is not None and time.monotonic() > deadline:
            raise _TimeUp()

    complete = True
    with Engine(target, device=device, workers=workers, cache=False, **options) as engine:
        warm(engine, first.workload, level)
        engine.timeline = []
        t0 = time.perf_counter()
        deadline = time.monotonic() + seconds if seconds else None  # the clock starts once warm, as wall's
        try:
            wall = measure_batch(batch, out, engine, level, on_row=on_row, **timing).wall_s
        except _TimeUp:
            complete = False
            wall = time.perf_counter() - t0
        profile, stats, workers = engine.profile(), engine.stats(), engine.workers
        timeline = build_timeline(engine.timeline, t0, workers)
    rows = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows[r["id"]] = {
            "status": r["status"],
            "n_checked": r.get("n_checked"),
            "latency_us": r.get("latency_us"),
            "duplicate_of": r.get("duplicate_of") or "",
            "message": (r.get("message") or "")[:300],
            "timer": r.get("timer") or "",
        }
    duplicates = sum(1 for r in rows.values() if r["duplicate_of"])
    return {
        "wall_s": wall,
        "rows": rows,
        "profile": profile,
        "stats": stats,
        "duplicates": duplicates,
        "complete": complete,
        "workers": workers,
        "timeline": timeline,
    }


def build_timeline(jobs: list, t0: float, workers: int) -> dict:
    """Where the build workers' time went (JOBS: the engine's timeline, seconds from T0): worker
    seconds busy before the last build was sent and after it (the tail), the busy workers in each
    second (worker-seconds), the longest build jobs (a reference for the verifier is one too), and
    each workload's build seconds and jobs, the largest first."""
    builds = sorted(
        (sent - t0, done - t0, wkey, status) for pool, _, sent, done, wkey, status in jobs if pool == "build"
    )
    if not builds:
        return {}
    last_sent = max(b[0] for b in builds)
    end = max(b[1] for b in builds)
    busy_before = sum(min(done, last_sent) - sent for sent, done, _, _ in builds if sent < last_sent)
    busy_after = sum(done - max(sent, last_sent) for sent, done, _, _ in builds if done > last_sent)
    per_second = [
        round(sum(max(0.0, min(done, s + 1) - max(sent, s)) for sent, done, _, _ in builds), 1)
        for s in range(int(end) + 1)
    ]
    longest = sorted(builds, key=lambda b: b[0] - b[1])[:10]
    by_workload: dict = {}  # build seconds and jobs per workload: which workloads' builds differ between modes
    for sent, done, wkey, _ in builds:
        entry = by_workload.setdefault(wkey or "", [0.0, 0])
        entry[0] += done - sent
        entry[1] += 1
    return {
        "jobs": len(builds),
        "last_sent_s": round(last_sent, 2),
        "last_reply_s": round(end, 2),
        "build_seconds_by_workload": {
            k: [round(v[0], 2), v[1]] for k, v in sorted(by_workload.items(), key=lambda kv: -kv[1][0])
        },
        "busy_until_last_sent": round(busy_before / (workers * last_sent), 3) if last_sent else None,
        "busy_in_tail": round(busy_after / (workers * (end - last_sent)), 3) if end > last_sent else None,
        "busy_workers_per_second": per_second,
        "longest": [
            {"seconds": round(done - sent, 2), "sent_s": round(sent, 2), "workload": wkey, "status": status}
            for sent, done, wkey, status in longest
        ],
    }


# --- RPC on loopback ------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_rpc(n_servers: int, env_for, log_dir: Path, no_fork: bool = False) -> tuple:
    """A tracker and N servers on loopback: (device string, processes). Each process's output goes
    to LOG_DIR/rpc-*.log (a pipe nobody reads would stall a server once full). NO_FORK: the servers
    start every session in a fresh process (`--no-fork`), as GPU servers must (see docs/MEASURE.md)."""
    from dragon_dsl.engine.devices import count_servers

    port = _free_port()
    names = ["tracker"] + [f"server-{i}" for i in range(n_servers)]
    logs = [log_dir / f"rpc-{name}.log" for name in names]

    def spawn(args: list, log: Path, env=None) -> subprocess.Popen:
        with log.open("wb") as fh:  # the child has its own copy of the descriptor
            return subprocess.Popen(
                [sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=fh, start_new_session=True, env=env
            )

    procs = [
        spawn(
            [
                "tvm.exec.rpc_tracker",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--port-end",
                str(port + 1),
                "--silent",
            ],
            logs[0],
        )
    ]
    listening = time.monotonic() + 30  # servers that find no tracker retry only every 5 s
    while time.monotonic() < listening and procs[0].poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    for i in range(n_servers):
        sp = _free_port()
        procs.append(
            spawn(
                [
                    "dragon_dsl.engine.rpc_server",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(sp),
                    "--port-end",
                    str(sp + 1),
                    "--tracker",
                    f"127.0.0.1:{port}",
                    "--key",
                    RPC_KEY,
                ]
                + (["--no-fork"] if no_fork else []),
                logs[i + 1],
                env={**os.environ, **env_for(i)},
            )
        )
    deadline = time.monotonic() + 120
    while True:
        try:
            if count_servers("127.0.0.1", port, RPC_KEY) == n_servers:
                break
        except Exception:
            pass
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            died = [(name, p.poll()) for name, p in zip(names, procs)]
            stop_rpc(procs)
            said = []
            for (name, code), log in zip(died, logs):
                tail = log_tail(log, 3)
                said.append(
                    f"{name}: "
                    + ("exited with code %s" % code if code is not None else "still running")
                    + (" (" + " | ".join(tail) + ")" if tail else "")
                )
            raise RpcUnavailable("the RPC tracker and servers did not come up within 120 s: " + "; ".join(said))
        time.sleep(0.3)
    return f"rpc://127.0.0.1:{port}/{RPC_KEY}", procs


class RpcUnavailable(RuntimeError):
    """The loopback tracker or its servers did not start (what each process said is in the message)."""


def log_tail(path: Path, n: int) -> list:
    return path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-n:] if path.exists() else []


def stop_rpc(procs) -> None:
    for proc in procs:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue


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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="llvm", help="llvm, cuda, or a target tag / JSON object (default llvm)")
    p.add_argument("--candidates", type=int, default=1000)
    p.add_argument("--workloads", type=int, default=32, help="spread over every family of the corpus (default 32)")
    p.add_argument("--level", choices=("verify", "time"), default="time")
    p.add_argument("--workers", type=int, help="build workers (default: one per core)")
    p.add_argument("--out", default="bench_measure_out", help="folder for the batch, results and bench_measure.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workload-dir", help="where the batch's .tvmscript files go (default: a temporary folder)")
    p.add_argument("--rpc", action="store_true", help="also measure through a TVM RPC tracker on loopback")
    p.add_argument(
        "--rpc-seconds",
        type=float,
        default=0.0,
        help="stop the RPC mode after this long and compare the candidates it measured (default: no limit)",
    )
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument(
        "--baseline-last",
        action="store_true",
        help="run the baseline after the measure modes, so that the measure mode runs first on a "
        "machine no mode has compiled on yet",
    )
    p.add_argument(
        "--build-group",
        type=int,
        help="the measure path compiles up to N candidates of a workload as one library (default: dragon measure's, 1)",
    )
    p.add_argument(
        "--also-build-group",
        type=int,
        action="append",
        default=[],
        help="also run the measure path with this build group (mode measure-gN, compared with measure); repeatable",
    )
    p.add_argument(
        "--also-build-order",
        choices=("fifo", "longest-first"),
        action="append",
        default=[],
        help="also measure with the build workers taking jobs in this order (the engine's default is fifo)",
    )
    p.add_argument(
        "--measure-again",
        action="store_true",
        help="run the measure mode once more after the other modes (modes run one after the other on "
        "one machine: this shows what running later changes by itself)",
    )
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--min-repeat-ms", type=float, default=5.0)
    p.add_argument(
        "--gpu-timer",
        choices=("blocked", "evaluator"),
        default="blocked",
        help="how the measure modes time CUDA kernels (the baseline: TVM's time_evaluator)",
    )
    args = p.parse_args(argv)

    from dragon_dsl.engine.targets import local_gpus, resolve_target

    target = json.loads(args.target) if args.target.strip().startswith("{") else args.target
    spec = resolve_target(target)
    kind = "cuda" if spec.is_gpu else "llvm"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # the workloads go to a folder of their own: OUT keeps a few files (the batch, the results files,
    # bench_measure.json, the RPC processes' logs), so that a GPU machine's output folder brings them back
    wl_dir = Path(args.workload_dir) if args.workload_dir else Path(tempfile.mkdtemp(prefix="bench-measure-wl-"))
    batch_info = make_batch(kind, args.candidates, args.workloads, out, args.seed, wl_dir)
    batch = out / "batch.jsonl"
    timing = {"repeat": args.repeat, "min_repeat_ms": args.min_repeat_ms}
    print(f"target {spec.spec}; {batch_info['candidates']} candidates in {batch}", flush=True)

    modes_raw: dict = {}
    rpc_error = None

    def baseline() -> None:
        modes_raw["baseline"] = run_baseline(spec, batch, args.level, args.workers, timing)
        print(f"baseline: {modes_raw['baseline']['wall_s']:.1f} s", flush=True)

    if not args.skip_baseline and not args.baseline_last:
        baseline()
    modes_raw["measure"] = run_measure(
        spec,
        batch,
        out / "results-measure.jsonl",
        args.level,
        args.workers,
        timing,
        build_group=args.build_group,
        gpu_timer=args.gpu_timer,
    )
    print(f"measure: {modes_raw['measure']['wall_s']:.1f} s", flush=True)
    for order in args.also_build_order:
        modes_raw[f"measure-{order}"] = run_measure(
            spec, batch, out / f"results-measure-{order}.jsonl", args.level, args.workers, timing, build_order=order
        )
        print(f"measure-{order}: {modes_raw[f'measure-{order}']['wall_s']:.1f} s", flush=True)
    for g in args.also_build_group:
        modes_raw[f"measure-g{g}"] = run_measure(
            spec, batch, out / f"results-measure-g{g}.jsonl", args.level, args.workers, timing, build_group=g
        )
        print(f"measure-g{g}: {modes_raw[f'measure-g{g}']['wall_s']:.1f} s", flush=True)
    if not args.skip_baseline and args.baseline_last:
        baseline()
    if args.measure_again:  # the same mode after the others: what running later alone changes
        modes_raw["measure-again"] = run_measure(
            spec,
            batch,
            out / "results-measure-again.jsonl",
            args.level,
            args.workers,
            timing,
            build_group=args.build_group,
            gpu_timer=args.gpu_timer,
        )
        print(f"measure-again: {modes_raw['measure-again']['wall_s']:.1f} s", flush=True)
    if args.rpc:
        if spec.is_gpu:
            n = max(1, len(local_gpus()))
            gpus = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()] or [
                str(i) for i in range(n)
            ]
            # a library built without a GPU holds CUDA source, which the server compiles when it loads
            # it: with nvcc (on its PATH), as the local path's builders do, for the same binary
            from dragon_dsl.engine.nvcc import ensure_on_path

            ensure_on_path()
            env_for = lambda i: {"CUDA_VISIBLE_DEVICES": gpus[i], "TVM_CUDA_COMPILE_MODE": "nvcc"}  # noqa: E731
        else:
            n = 1
            threads = str(spec.num_cores or os.cpu_count() or 1)
            env_for = lambda i: {"TVM_NUM_THREADS": threads}  # noqa: E731 - as the local CPU device worker
        try:
            device, procs = start_rpc(n, env_for, out, no_fork=spec.is_gpu)
        except RpcUnavailable as exc:  # the local figures are still reported and written
            rpc_error = str(exc)
            print(f"rpc: not measured: {rpc_error}", flush=True)
        else:
            try:
                modes_raw["rpc"] = run_measure(
                    spec,
                    batch,
                    out / "results-rpc.jsonl",
                    args.level,
                    args.workers,
                    timing,
                    device=device,
                    build_group=args.build_group,
                    seconds=args.rpc_seconds,
                    gpu_timer=args.gpu_timer,
                )
            finally:
                stop_rpc(procs)
            print(f"rpc: {modes_raw['rpc']['wall_s']:.1f} s", flush=True)

    modes = {name: figures(m) for name, m in modes_raw.items()}
    comparisons = {}
    if "baseline" in modes_raw:
        comparisons["measure vs baseline"] = compare(modes_raw["baseline"]["rows"], modes_raw["measure"]["rows"])
    for order in args.also_build_order:
        comparisons[f"measure-{order} vs measure"] = compare(
            modes_raw["measure"]["rows"], modes_raw[f"measure-{order}"]["rows"]
        )
    if args.measure_again:
        comparisons["measure-again vs measure"] = compare(
            modes_raw["measure"]["rows"], modes_raw["measure-again"]["rows"]
        )
    for g in args.also_build_group:
        comparisons[f"measure-g{g} vs measure"] = compare(
            modes_raw["measure"]["rows"], modes_raw[f"measure-g{g}"]["rows"]
        )
    if "rpc" in modes_raw:
        rpc = modes_raw["rpc"]
        comparisons["rpc vs measure (local)"] = compare(
            modes_raw["measure"]["rows"], rpc["rows"], None if rpc["complete"] else rpc["rows"]
        )
    print_report(batch_info, modes, comparisons)
    if comparisons.get("rpc vs measure (local)", {}).get("verdicts_differ"):
        for log in sorted(out.glob("rpc-*.log")):
            print(f"\n{log.name} (last lines):\n  " + "\n  ".join(log_tail(log, 8)))
    report = {
        "target": spec.spec,
        "level": args.level,
        "batch": batch_info,
        "modes": modes,
        "comparisons": comparisons,
        "stats": {n: m["stats"] for n, m in modes_raw.items()},
        "gpus": list(local_gpus()),
        "cpu_count": os.cpu_count(),
        "rpc_error": rpc_error,
    }
    (out / "bench_measure.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten: {out / 'bench_measure.json'}")
    if any(c["verdicts_differ"] for c in comparisons.values()):
        return 1
    return 3 if rpc_error else 0


if __name__ == "__main__":
    sys.exit(main())
