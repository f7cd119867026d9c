"""The corpus builder: search records -> verified training examples, split by family and by shape.

    manifest = build_corpus(["runs/r1"], "corpus/", BuildConfig(improvements=2))

Two tasks per searched workload:
  * construction: the workload -> its best script;
  * improvement: the workload and an acceptable but slower script (it verified, and its
    latency is at least `slower` x the best's) -> the best script; up to `improvements` per
    workload, picked by a stable hash of the trace (never by measured noise).

Every chosen script is measured again from scratch (build, numeric check against the
unscheduled workload, timing: Engine level "time" with the cache off); an example exists
only when that passes, and, for improvement, when the slower script is still at least
`slower` x the best in the new measurement. Examples carry the new latencies and newly
measured baselines. Scripts are Dragon text from `dragon_dsl.from_trace_json`, checked to
encode back to the exact trace; when `dragon_dsl.explain.explain` exists, its explanation
section is added.

Splits (by workload; both tasks of a workload share one split):
  * test_family: whole families never in train (`test_families`, or `n_test_families`
    chosen by a stable hash of the family name and `split_seed`);
  * test_shape / valid / train: the other families' workloads by a stable hash of
    (family, params): `shape_pct` percent to test_shape, `valid_pct` percent to valid.

Resumable: each chunk's examples (and what it dropped) are written to CORPUS/partial/ as soon
as the chunk is measured, one file per workload, atomically; a build killed at any moment and
started again with the same runs and configuration measures only the workloads without such a
file, so the final corpus has every example once. Another configuration over a partial build is
refused. The partial folder is removed once the corpus is written.

Output: CORPUS/data/<split>.parquet (written with HF `datasets`, zstd-compressed: scripts and
workloads are repetitive text, so a corpus is committed compactly; `params`, `target` and
`trace` are JSON strings so that every row has one schema) and CORPUS/manifest.json.
`load_corpus` also reads the JSON Lines splits of corpora built before.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dragon_dsl.corpus.search_run import RunConfigError, read_folder_json, read_records
from dragon_dsl.language.files import write_json

SPLITS = ("train", "valid", "test_family", "test_shape")
TASKS = ("construction", "improvement")
CORPUS_FORMAT = 1
ROW_KEYS = (
    "id",
    "task",
    "split",
    "family",
    "workload",
    "workload_hash",
    "params",
    "target",
    "workload_text",
    "prompt_script",
    "prompt_latency_us",
    "script",
    "trace",
    "latency_us",
    "unscheduled_us",
    "dlight_us",
)


@dataclass(frozen=True)
class BuildConfig:
    improvements: int = 2  # K: improvement examples per workload at most
    slower: float = 1.2  # an improvement's prompt is at least this much slower
    test_families: tuple | None = None  # explicit held-out families (else chosen by hash)
    n_test_families: int = 2
    split_seed: int = 0
    shape_pct: int = 10
    valid_pct: int = 10
    level: str = "time"  # re-measurement level ("time" verifies, then times)
    timeout_s: float = 60.0
    chunk: int = 32  # workloads per engine call (a call waits for its slowest build)

    def __post_init__(self):
        if self.improvements < 0:
            raise ValueError("improvements must be >= 0")
        if self.slower < 1.0:
            raise ValueError("slower must be >= 1.0")
        if not (0 <= self.shape_pct and 0 <= self.valid_pct and self.shape_pct + self.valid_pct < 100):
            raise ValueError("shape_pct and valid_pct are percentages that leave room for train")
        if self.level not in ("verify", "time"):
            raise ValueError("level must be 'verify' or 'time'")


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# --- splits ---------------------------------------------------------------------------------------
def choose_test_families(families, cfg: BuildConfig) -> list:
    """The held-out families: the configured ones (each must be present), else the first
    `n_test_families` by a stable hash; at least one family always stays for training."""
    present = sorted(set(families))
    if cfg.test_families is not None:
        unknown = sorted(set(cfg.test_families) - set(present))
        if unknown:
            raise ValueError(f"test families not in the records: {', '.join(unknown)}; present: {', '.join(present)}")
        chosen = sorted(set(cfg.test_families))
    else:
        n = min(cfg.n_test_families, max(0, len(present) - 1))
        chosen = sorted(sorted(present, key=lambda f: _h(f"{cfg.split_seed}:family:{f}"))[:n])
    if present and len(chosen) >= len(present):
        raise ValueError("every family is held out: nothing is left for train")
    return chosen


def split_of(family: str, params, test_families, cfg: BuildConfig) -> str:
    if family in test_families:
        return "test_family"
    bucket = _h(f"{cfg.split_seed}:shape:{family}:{canonical(params)}") % 100
    if bucket < cfg.shape_pct:
        return "test_shape"
    if bucket < cfg.shape_pct + cfg.valid_pct:
        return "valid"
    return "train"


# --- choosing candidates -------------------------------------------------------------------------
def choose(record: dict, cfg: BuildConfig) -> tuple:
    """(best candidate, [slower candidates]) from a record's search measurements, or (None, [])."""
    ok = [(i, c) for i, c in enumerate(record["candidates"]) if c["status"] == "ok" and c["latency_us"] is not None]
    if not ok:
        return None, []
    _, best = min(ok, key=lambda ic: (ic[1]["latency_us"], ic[0]))
    best_key = canonical(best["trace"])
    seen = {best_key}
    slower = []
    for _, c in ok:
        key = canonical(c["trace"])
        if key in seen or c["latency_us"] < cfg.slower * best["latency_us"]:
            continue
        seen.add(key)
        slower.append(c)
    slower.sort(key=lambda c: _h(f"{record['workload_hash']}:{canonical(c['trace'])}"))
    return best, slower[: cfg.improvements]


# --- scripts --------------------------------------------------------------------------------------
def _explainer():
    """`dragon_dsl.explain.explain` when that package exists (another part of the project)."""
    try:
        from dragon_dsl import explain as module
    except ImportError:
        return None
    return getattr(module, "explain", None)


def make_script(trace, workload_file: str, target, workload_path: str | None = None, explain=None) -> tuple:
    """(Dragon text for a trace, the trace it encodes to): `exact_script`, with EXPLAIN's section
    added when given (the explained text must encode to the same trace)."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.compile.scripts import exact_script

    text, encoded = exact_script(trace, workload_file, target)
    if explain is not None:
        text = explain(text, workload_path or workload_file, target)
        if to_trace_json(text) != encoded:
            raise ValueError("the explained script does not encode back to its trace")
    return text, encoded


# --- the build -----------------------------------------------------------------------------------
def load_runs(run_dirs, workloads_override=None) -> tuple:
    """(target, tvm_version, [(record, workloads_dir, run_dir)], duplicates) over several runs
    of one target; a workload in several runs is taken from the first."""
    target = tvm_version = None
    out, seen, duplicates = [], set(), 0
    for run_dir in run_dirs:
        run, records = read_records(run_dir)
        t = canonical(run["config"]["target"])
        if target is not None and (t != target or run["tvm_version"] != tvm_version):
            raise RunConfigError(
                f"{run_dir}: another target or TVM version than {run_dirs[0]}: runs of one corpus must match"
            )
        target, tvm_version = t, run["tvm_version"]
        wdir = Path(workloads_override or run["workloads_dir"])
        for rec in records:
            if rec["workload_hash"] in seen:
                duplicates += 1
                continue
            seen.add(rec["workload_hash"])
            out.append((rec, wdir, run_dir))
    if target is None:
        raise RunConfigError("no run given")
    return json.loads(target), tvm_version, out, duplicates


def build_corpus(
    run_dirs,
    out_dir,
    cfg: BuildConfig = BuildConfig(),
    engine=None,
    workers=None,
    workloads_dir=None,
    progress=None,
    device: str = "local",
) -> dict:
    """Build, verify and write the corpus; returns its manifest. `progress(event, **info)`."""
    import datasets  # noqa: F401  (imported first, so a missing extra fails before anything is measured)

    run_dirs = [str(r) for r in run_dirs]
    target, tvm_version, items, duplicates = load_runs(run_dirs, workloads_dir)
    usable = [(r, w, d) for r, w, d in items if r["status"] == "ok"]
    test_families = choose_test_families([r["family"] for r, _, _ in usable], cfg)
    explain = _explainer()
    dropped: dict = {}

    def drop(reason: str, n: int = 1):
        dropped[reason] = dropped.get(reason, 0) + n

    if len(items) > len(usable):
        drop("search failed", len(items) - len(usable))
    plans = _plans(usable, cfg, drop)

    out = Path(out_dir)
    partial = Partial(
        out / PARTIAL,
        {
            "build": _identity(cfg),
            "target": target,
            "tvm_version": tvm_version,
            "workloads": sorted(p["record"]["workload"] for p in plans),
        },
    )
    done = partial.open()
    pending = [p for p in plans if p["record"]["workload"] not in done]
    if progress:
        progress(
            "start", total=len(plans), done=len(plans) - len(pending), rows=sum(len(d["rows"]) for d in done.values())
        )
    from dragon_dsl.corpus.build_chunk import measure_chunk

    own = engine is None and bool(pending)
    if own:
        from dragon_dsl.engine import Engine

        engine = Engine(target, device=device, workers=workers, timeout_s=cfg.timeout_s, cache=False)
    try:
        for start in range(0, len(pending), cfg.chunk):
            chunk = pending[start : start + cfg.chunk]
            t_chunk = time.perf_counter()
            measured = measure_chunk(engine, chunk, target, cfg, test_families, explain)
            share = (time.perf_counter() - t_chunk) / len(chunk)
            for plan in chunk:
                name = plan["record"]["workload"]
                done[name] = {**measured[name], "wall_s": share}
                partial.write(name, done[name])
            if progress:
                progress("advance", n=len(chunk), rows=sum(len(d["rows"]) for d in done.values()))
    finally:
        if own:
            engine.close()
    rows = _rows(plans, done, drop)

    counts = _write_splits(out, rows)
    runs = [json.loads((Path(d) / "run.json").read_text(encoding="utf-8")) for d in run_dirs]
    manifest = {
        "format": CORPUS_FORMAT,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "tvm_version": tvm_version,
        "target": target,
        "device": runs[0]["config"]["device"],
        "budget": sorted({r["config"]["budget"] for r in runs}),
        "run_seeds": sorted({r["config"]["seed"] for r in runs}),
        "workload_seeds": {rec["workload"]: rec["seed"] for rec, _, _ in items},
        "source_runs": [
            {"path": str(Path(d).resolve()), "config": r["config"], "created": r.get("created")}
            for d, r in zip(run_dirs, runs)
        ],
        "build": {**asdict(cfg), "test_families": test_families, "explained": explain is not None},
        "splits": {s: f"data/{s}.parquet" for s in SPLITS},
        "counts": {
            "workloads_in_runs": len(items),
            "duplicate_workloads_skipped": duplicates,
            "examples": len(rows),
            "by_split": counts,
            "dropped": dropped,
        },
        "wall_s": sum(part.get("wall_s", 0.0) for part in done.values()),
        "row_keys": list(ROW_KEYS),
    }
    write_json(out / "manifest.json", manifest)
    partial.remove()
    return manifest


def _plans(usable, cfg: BuildConfig, drop) -> list:
    """What to measure of each searched workload: its best and slower candidates and its text."""
    plans = []
    for rec, wdir, _run_dir in usable:
        best, slower = choose(rec, cfg)
        if best is None:
            drop("no candidate passed the search")
            continue
        path = wdir / rec["workload_file"]
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise RunConfigError(
                f"workload {rec['workload']}: cannot read {path}: {exc.strerror} "
                f"(give the workloads folder with --workloads)"
            ) from None
        plans.append({"record": rec, "best": best, "slower": slower, "text": text, "path": str(path)})
    return plans


def _rows(plans, done: dict, drop) -> list:
    """Every measured row in plan order, whichever engine call measured it; counts what was dropped."""
    rows: list = []
    for plan in plans:
        part = done[plan["record"]["workload"]]
        rows += part["rows"]
        for reason, n in part["dropped"].items():
            drop(reason, n)
    return rows


def _write_splits(out: Path, rows: list) -> dict:
    """Write CORPUS/data/<split>.parquet; returns {split: {task: examples}}."""
    import datasets
    import pyarrow.parquet as pq  # datasets' own to_parquet fixes the codec; zstd is ~3x smaller on scripts

    datasets.disable_progress_bars()  # the CLI draws its own
    (out / "data").mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in SPLITS:
        part = [r for r in rows if r["split"] == split]
        ds = (
            datasets.Dataset.from_list(part, features=features())
            if part
            else datasets.Dataset.from_dict({k: [] for k in ROW_KEYS}, features=features())
        )
        pq.write_table(ds.data.table, str(out / "data" / f"{split}.parquet"), compression="zstd")
        counts[split] = {task: sum(r["task"] == task for r in part) for task in TASKS}
    return counts


PARTIAL = "partial"


def _identity(cfg: BuildConfig) -> dict:
    """What a resumed build must share with the partial one: everything but the chunk size."""
    ident = asdict(cfg)
    ident.pop("chunk")
    return json.loads(canonical(ident))


class Partial:
    """CORPUS/partial/: `build.json` (the build's identity) and one `<workload>.json` per measured
    workload ({"rows", "dropped", "wall_s"}), each written atomically."""

    def __init__(self, folder: Path, identity: dict):
        self.folder, self.identity = folder, json.loads(canonical(identity))

    def open(self) -> dict:
        """{workload: its stored part} of a build cut short, after checking it is this build."""
        ident = self.folder / "build.json"
        if ident.is_file():
            stored = json.loads(ident.read_text(encoding="utf-8"))
            if stored != self.identity:
                diffs = sorted(k for k in set(stored) | set(self.identity) if stored.get(k) != self.identity.get(k))
                raise RunConfigError(
                    f"{self.folder.parent}: holds a partial build of another configuration "
                    f"(differs in: {', '.join(diffs)}); build into another folder or remove "
                    f"{self.folder}"
                )
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_json(ident, self.identity)
        names = set(self.identity["workloads"])
        parts = {}
        for path in self.folder.glob("*.json"):
            if path.name != "build.json" and path.stem in names:
                parts[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        return parts

    def write(self, workload: str, part: dict) -> None:
        write_json(self.folder / f"{workload}.json", part)

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def features():
    import datasets

    s, f = datasets.Value("string"), datasets.Value("float64")
    return datasets.Features(
        {
            "id": s,
            "task": s,
            "split": s,
            "family": s,
            "workload": s,
            "workload_hash": s,
            "params": s,
            "target": s,
            "workload_text": s,
            "prompt_script": s,
            "prompt_latency_us": f,
            "script": s,
            "trace": s,
            "latency_us": f,
            "unscheduled_us": f,
            "dlight_us": f,
        }
    )


def load_corpus(corpus_dir) -> tuple:
    """(manifest, {split: datasets.Dataset}) of a built corpus."""
    import datasets

    folder = Path(corpus_dir)
    manifest = read_folder_json(folder, "manifest.json", "a corpus")
    datasets.disable_progress_bars()
    splits = {}
    for split, rel in manifest["splits"].items():
        file = folder / rel
        if not file.is_file():
            raise RunConfigError(f"{folder}: split {split} is missing ({rel})")
        if file.stat().st_size == 0:
            splits[split] = datasets.Dataset.from_dict({k: [] for k in ROW_KEYS}, features=features())
        elif file.suffix == ".parquet":  # through pyarrow: datasets' reader fails on a file of 0 rows
            import pyarrow.parquet as pq

            splits[split] = datasets.Dataset.from_dict(pq.read_table(str(file)).to_pydict(), features=features())
        else:
            splits[split] = datasets.Dataset.from_json(str(file), features=features(), keep_in_memory=True)
    return manifest, splits
