"""One evaluation run: workloads x methods through one warm engine -> the `results.json` dict.

Order: the verifier's references of all workloads first (start-up, reported apart), then
method by method over all workloads, so that each method's wall times are taken on a warm
engine. The unscheduled workload is always measured: it is a baseline of every speed-up.

With `stop_after_s`, nothing starts that is expected to end after that many seconds from the
start (MetaSchedule's runs are estimated from the finished ones, `methods.expected_tune_s`; the
model's answers not written yet from those written, `methods.expected_generation_s` and, for the
improvement task, `methods.expected_improvement_s`): a run
cut short by the machine's time limit loses its whole tuning run, a deferred one loses nothing
and is measured by the next run over the same OUT_DIR (`results["deferred"]` lists them).
A run interrupted (SIGTERM, which `dragon` turns into an exit, or Ctrl-C) stops measuring and
returns what it measured, the rest deferred, with `results["interrupted"]`: a machine's time
limit ends the run, not its results.

Shards (`shard=(i, n)`): workload number j (by name) belongs to shard j mod n. Shards of one
evaluation run at once, as separate processes sharing OUT_DIR: its caches (results sqlite in
WAL mode, MetaSchedule databases per workload, JSON files merged under a lock) take all their
measurements, and a final run without a shard measures nothing new and writes the report
over every workload. On one GPU, the engines take turns on it for each candidate (the GPU
lock in engine/devices.py), so the shards overlap building, searching and references only.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dragon_dsl.eval import methods as m
from dragon_dsl.eval.discover import discover
from dragon_dsl.eval.metrics import roofline_bound_us, summarize
from dragon_dsl.eval.results import (  # noqa: F401  (merge_shards, write_results: importers use the harness)
    SCHEMA,
    merge_shards,
    methods_info,
    shard_count,
    write_results,
)

METHODS = ("unscheduled", "dlight", "vendor", "metaschedule", "ms-random", "model")


@dataclass
class Settings:
    workloads: str
    target: str
    out_dir: str
    device: str = "local"
    methods: tuple = METHODS
    budgets: tuple = (16, 64, 256)
    k: int = 8
    seeds: int = 3
    repeat: int = 5
    timeout_s: float = 120.0
    run_timeout_s: float | None = 30.0
    generation_version: int | None = None  # measure the model's answers of this decoder version
    workers: int | None = None
    cache: str | None = None
    model_path: str | None = None
    gpu_name: str | None = None
    limit: int | None = None
    shard: tuple | None = None  # (i, n): this process evaluates shard i of n
    stop_after_s: float | None = None  # start nothing expected to end later than this after the start
    seed: int = 20260101
    command: list = field(default_factory=list)


def parse_methods(text: str) -> tuple:
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    if not names:
        raise ValueError("no methods given")
    return names


def versions() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    from importlib.metadata import PackageNotFoundError, version

    from dragon_dsl.tvm.tuning import tvm_version

    # the evaluation layer imports no TVM (`lint-imports`): TVM's release through the bridge, its
    # FFI's from the installed package's metadata
    try:
        out["tvm"] = tvm_version()
    except ImportError:
        out["tvm"] = None
    try:
        out["tvm_ffi"] = version("apache-tvm-ffi")
    except PackageNotFoundError:
        out["tvm_ffi"] = None
    for mod in ("numpy", "torch", "matplotlib", "xgboost"):
        try:
            out[mod] = getattr(__import__(mod), "__version__", "?")
        except ImportError:
            out[mod] = None
    try:
        root = Path(__file__).resolve().parents[2]
        out["little_dragon_commit"] = (
            subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        out["little_dragon_dirty"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        out["little_dragon_commit"] = None
    # a copy of the working tree (a GPU host's) may carry another commit's git metadata: the code
    # that ran, by content (`source_digest`), which any checkout can compute for its own commit
    out["little_dragon_source"] = source_digest(Path(__file__).resolve().parents[2])
    return out


#: the packages whose code an evaluation runs (their Python files and grammars)
SOURCE_DIRS = ("dragon_dsl", "model", "grammar", "lsp")


def source_digest(root: Path) -> str:
    """sha256 (16 hex digits) of the package sources under ROOT (SOURCE_DIRS: every .py and .lark
    file, by path relative to ROOT, in sorted order): equal digests, equal code."""
    import hashlib

    h = hashlib.sha256()
    for d in SOURCE_DIRS:
        for f in sorted(p for p in (root / d).rglob("*") if p.suffix in (".py", ".lark") and p.is_file()):
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _gpu_name(settings: Settings, engine) -> str | None:
    if settings.gpu_name:
        return settings.gpu_name
    from dragon_dsl.engine import local_gpus

    gpus = local_gpus()
    return gpus[0] if gpus else str(engine.target.spec)


def _inputs(settings: Settings) -> tuple:
    """(this shard's workload entries, problems found reading the folder, the output folder, made)."""
    entries, problems = discover(settings.workloads, settings.limit)
    if settings.shard is not None:
        i, n = settings.shard
        entries = [e for j, e in enumerate(entries) if j % n == i]
    out_dir = Path(settings.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return entries, problems, out_dir


def run(
    settings: Settings,
    progress: Callable[[str, int], None] = lambda label, total: None,
    advance: Callable[[], None] = lambda: None,
    log: Callable[[str], None] = lambda s: None,
) -> dict:
    """Evaluate; `progress(label, total)` starts a phase and `advance()` moves it (a rich bar in the CLI)."""
    from dragon_dsl.engine import Engine, ResultsCache
    from dragon_dsl.eval.peaks import peaks_for

    entries, problems, out_dir = _inputs(settings)
    cache_path = Path(settings.cache) if settings.cache else out_dir / "cache" / "results.sqlite"
    t_start = time.perf_counter()
    engine = Engine(
        settings.target,
        device=settings.device,
        workers=settings.workers,
        timeout_s=settings.timeout_s,
        run_timeout_s=settings.run_timeout_s,
        cache=ResultsCache(cache_path),
    )
    try:
        cache_before = engine.cache.count()
        is_cuda = engine.target.kind == "cuda"
        peaks = peaks_for(
            "cuda" if is_cuda else "cpu",
            _gpu_name(settings, engine) if is_cuda else None,
            out_dir / "cache" / "peaks.json",
        )
        ctx = m.Context(
            engine,
            out_dir,
            m.WallTimes(out_dir / "cache" / "wall_times.json"),
            seeds=settings.seeds,
            repeat=settings.repeat,
            seed=settings.seed,
            k=settings.k,
            model_path=settings.model_path,
            generation_version=settings.generation_version,
        )
        progress("references", len(entries))
        # a workload whose unscheduled program fails as the verifier's reference (nothing could be
        # checked against it) is left out, said in the report, instead of ending the evaluation
        failed = engine.prepare([str(e.path) for e in entries], seeds=settings.seeds, strict=False)
        kept = []
        for e in entries:
            message = failed.get(ctx.whash(e.path))
            if message is None:
                kept.append(e)
                continue
            problems.append(f"{e.name}: no reference (the program as written): {message}")
            log(f"{e.name}: left out, its program as written failed as the reference")
        entries = kept
        workloads = _workload_rows(entries, ctx, peaks)
        startup_s = time.perf_counter() - t_start
        wanted = ("unscheduled",) + tuple(x for x in settings.methods if x != "unscheduled")
        measured = _Measured(settings, ctx, entries, t_start, progress, advance, log)
        measured.measure(*_phases(settings, ctx, wanted), wanted)
        cache_after = engine.cache.count()
        startup_s += ctx.import_s
        per_method = methods_info(measured.rows)
    finally:
        engine.close()
    results = {
        "schema": SCHEMA,
        "command": settings.command,
        "cwd": os.getcwd(),
        "versions": versions(),
        "settings": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items() if k != "command"
        },
        "target": engine.target.spec,
        "device": settings.device,
        "peaks": peaks.to_json(),
        "startup_s": startup_s,
        "wall_s": time.perf_counter() - t_start,
        "cache": {"path": str(cache_path), "rows_before": cache_before, "rows_after": cache_after},
        "problems": problems,
        "methods": per_method,
        "workloads": workloads,
        "measurements": measured.rows,
        "deferred": measured.deferred,
        "shards": shard_count(out_dir) if settings.shard is None else None,
    }
    if measured.interrupted:
        results["interrupted"] = measured.interrupted
    results["metrics"] = summarize(results)
    return results


def _workload_rows(entries: list, ctx, peaks) -> list:
    """One row a workload: where it comes from, what it computes (`workload_info.analyse`), its
    scripts to improve, its hash and its roofline bound on this device."""
    from dragon_dsl.eval.workload_info import analyse
    from dragon_dsl.tvm.workload import load_workload

    workloads = []
    for e in entries:
        mod = load_workload(str(e.path))
        info = analyse(mod)
        workloads.append(
            {
                "name": e.name,
                "path": str(e.path),
                "family": e.family,
                "params": e.params,
                **info.to_json(),
                "scripts": [p.name for p in e.scripts],
                "hash": ctx.whash(e.path),
                "roofline_us": roofline_bound_us(
                    info.flops, info.bytes, peaks.flops_for(info.dtype), peaks.bytes_per_s
                ),
            }
        )
    return workloads


def _phases(settings: Settings, ctx, wanted: tuple) -> tuple:
    """The construction phases of the WANTED methods, as ([(label, entry -> row)], {label: entry ->
    expected seconds or None}) for the phases that take long."""
    phases = []
    expected: dict = {}  # phase -> (entry -> expected seconds or None), for the phases that take long
    for name in wanted:
        if name == "metaschedule":
            for b in settings.budgets:
                phases.append((f"metaschedule-{b}", lambda e, b=b: m.metaschedule(ctx, e, b)))
                expected[f"metaschedule-{b}"] = lambda e, b=b: m.expected_tune_s(ctx, e, b)
        elif name == "ms-random":
            phases.append(("ms-random", lambda e: m.metaschedule(ctx, e, 1, strategy="replay-trace")))
            expected["ms-random"] = lambda e: m.expected_tune_s(ctx, e, 1, "replay-trace")
        elif name in ("unscheduled", "dlight"):
            phases.append((name, lambda e, kind=name: m.baseline(ctx, e, kind)))
        elif name == "vendor":
            phases.append(("vendor", lambda e: m.vendor(ctx, e)))
        elif name == "model":
            phases.append(("model-first", lambda e: m.model(ctx, e, 1)))
            expected["model-first"] = lambda e: m.expected_generation_s(ctx, e, 1)
            if settings.k > 1:  # best of 1 is the first answer: measured once, one row
                phases.append((f"model-best-of-{settings.k}", lambda e: m.model(ctx, e, settings.k)))
                expected[f"model-best-of-{settings.k}"] = lambda e: m.expected_generation_s(ctx, e, settings.k)
    return phases, expected


@dataclass
class _Measured:
    """The measurements of one run: its rows, those deferred to a later run over the same OUT_DIR
    (past the deadline, or interrupted), and why it was interrupted, if it was."""

    settings: Settings
    ctx: Any
    entries: list
    t_start: float
    progress: Callable
    advance: Callable
    log: Callable
    rows: list = field(default_factory=list)
    deferred: list = field(default_factory=list)
    done: set = field(default_factory=set)  # (method, workload) of the measurements finished or deferred
    interrupted: str | None = None

    def measure(self, phases: list, expected: dict, wanted: tuple) -> None:
        """Every phase over every workload, then the improvement task; an interruption defers the rest."""
        improving = [e for e in self.entries if e.scripts]
        try:
            for label, fn in phases:
                self.phase(label, fn, expected.get(label))
            if improving:
                self.improvements(improving, wanted)
        except (KeyboardInterrupt, SystemExit) as exc:
            # the measurement under way is lost (its results cache keeps what it finished); the
            # rest waits for the next run over OUT_DIR, as with --stop-after
            interrupted = "keyboard interrupt" if isinstance(exc, KeyboardInterrupt) else f"exit {exc.code}"
            self.interrupted = interrupted
            self.log(
                f"[{time.perf_counter() - self.t_start:7.1f} s] interrupted ({interrupted}): writing what was measured"
            )
            self.deferred += [
                {"method": label, "workload": e.name}
                for label, _ in phases
                for e in self.entries
                if (label, e.name) not in self.done
            ]
            self.deferred += [
                {"method": "improvement", "workload": e.name}
                for e in improving
                if ("improvement", e.name) not in self.done
            ]

    def phase(self, label: str, fn: Callable, expected) -> None:
        """One construction phase over every workload: FN(entry) -> its row, deferred where it is
        EXPECTED to end past the deadline."""
        settings, entries = self.settings, self.entries
        self.progress(label, len(entries))
        # all of a phase's builds at once (the rows take their results): baselines, first answers
        prefetch = PREFETCH.get(label)
        if prefetch is not None and _time_left(settings, self.t_start) > SERIAL_MEASURE_S * len(entries):
            prefetch(self.ctx, entries, label)
        for e in entries:
            if _past_deadline(settings, self.t_start, expected, e):
                self.deferred.append({"method": label, "workload": e.name})
            else:
                t0 = time.perf_counter()
                self.rows.append(fn(e))
                self.log(_line(self.t_start, t0, self.rows[-1]))
            self.done.add((label, e.name))
            self.advance()

    def improvements(self, improving: list, wanted: tuple) -> None:
        """The improvement task of the workloads with scripts: the existing script measured, then
        the model's answers (one per size), a workload's rows all or none of them."""
        ctx, settings = self.ctx, self.settings
        self.progress("improvement", len(improving))
        # the model's answers (one per size), their writing part of each workload's time
        sizes = tuple(dict.fromkeys((1, settings.k))) if "model" in wanted else ()
        expected_s = lambda e: m.expected_improvement_s(ctx, e, sizes)  # noqa: E731
        for e in improving:
            if _past_deadline(settings, self.t_start, expected_s, e):
                self.deferred.append({"method": "improvement", "workload": e.name})
                self.done.add(("improvement", e.name))
                self.advance()
                continue
            t0 = time.perf_counter()
            row, text, existing_us = m.existing(ctx, e)
            improved = [row]
            self.log(_line(self.t_start, t0, row))
            for n in sizes:
                t0 = time.perf_counter()
                improved.append(m.model(ctx, e, n, "improvement", text, existing_us))
                self.log(_line(self.t_start, t0, improved[-1]))
            self.rows.extend(improved)  # a workload's improvement rows all, or none of them
            self.done.add(("improvement", e.name))
            self.advance()


def _line(t_start: float, t0: float, row: dict) -> str:
    """One measurement's log line: when it ended in the run, what it was, how it went, how long it took
    (what a device machine's log must say to tell where a call's time went)."""
    now = time.perf_counter()
    cands = row.get("candidates") or []
    ok = sum(c.get("status") == "ok" for c in cands)
    failed = sorted({c.get("status") for c in cands if c.get("status") != "ok"})
    what = f"{ok}/{len(cands)} verified" + (f", failed: {', '.join(failed)}" if failed else "") if cands else ""
    why = f" ({row['reason'][:80]})" if row.get("reason") and not cands else ""
    return (
        f"[{now - t_start:7.1f} s] {row['method']} {row['task']} {row['workload']}: {row['status']}"
        f"{' ' + what if what else ''}{why} in {now - t0:.1f} s"
    )


DEADLINE_MARGIN = 1.25  # an expected duration is stretched by this before it is compared with the time left


#: seconds one workload's measurement took alone (dlight or a first answer on a GPU host: build,
#: verify, time), an upper bound on its share of a batch: a phase's batch starts only when this many
#: per workload are left
SERIAL_MEASURE_S = 3.0

#: the phases measured in one engine call before their rows (label -> fn(ctx, entries, label))
PREFETCH = {
    "unscheduled": m.prefetch_baselines,
    "dlight": m.prefetch_baselines,
    "model-first": lambda ctx, entries, _label: m.prefetch_first_answers(ctx, entries),
}


def _time_left(settings: Settings, t_start: float) -> float:
    if settings.stop_after_s is None:
        return float("inf")
    return settings.stop_after_s - (time.perf_counter() - t_start)


def _past_deadline(settings: Settings, t_start: float, estimate, entry) -> bool:
    """With `stop_after_s`: whether this measurement should wait for a later run, because the time is
    up or because its expected duration (for tuning runs, `methods.expected_tune_s`; for the model's
    answers not written yet, `methods.expected_generation_s`) would end past it.
    A run of unknown duration starts while time is left: a cut-short tuning run is done again later."""
    if settings.stop_after_s is None:
        return False
    left = _time_left(settings, t_start)
    if left <= 0:
        return True
    seconds = estimate(entry) if estimate is not None else None
    return seconds is not None and seconds * DEADLINE_MARGIN > left


def generate(
    settings: Settings,
    progress: Callable[[str, int], None] = lambda label, total: None,
    advance: Callable[[], None] = lambda: None,
) -> dict:
    """Only the model's scripts (`--generate-only`), into OUT_DIR/model where `run` finds them:
    construction at 1 and k samples, and improvement where a workload has exactly one script (with
    several, the measured run gives the model the fastest, which only measuring tells). No engine and
    no GPU: the model and TVM's replay run on the CPU."""
    from dragon_dsl.engine import resolve_target

    if "model" not in settings.methods:
        raise ValueError("--generate-only writes the model's scripts: --methods must include model")
    entries, problems, out_dir = _inputs(settings)
    ctx = m.Context(
        None,
        out_dir,
        m.WallTimes(out_dir / "cache" / "wall_times.json"),
        k=settings.k,
        model_path=settings.model_path,
        target=resolve_target(settings.target),
        generation_version=settings.generation_version,
    )
    current = m.generation_version()
    if settings.generation_version not in (None, current):
        raise ValueError(
            f"--generation-version {settings.generation_version}: this code writes decoder version "
            f"{current} only (--generation-version measures stored answers)"
        )
    sizes = tuple(dict.fromkeys((1, settings.k)))
    improving = [(e, e.scripts[0].read_text(encoding="utf-8")) for e in entries if len(e.scripts) == 1]
    skipped = [e.name for e in entries if len(e.scripts) > 1]
    # every first answer before any best-of-k (k times the work): a run cut short keeps the first answers
    jobs = [
        job
        for n in sizes
        for job in [(e, n, "construction", None) for e in entries]
        + [(e, n, "improvement", text) for e, text in improving]
    ]
    t0 = time.perf_counter()
    progress("generating", len(jobs))
    done = []
    for e, n, task, text in jobs:
        done.append(m.generate(ctx, e, n, task, text))
        advance()
    return {
        "workloads": len(entries),
        "generated": done,
        "wall_s": time.perf_counter() - t0,
        "improvement_left_to_the_measured_run": skipped,
        "problems": problems,
        "host": m.host(),
    }
