"""Measuring a batch file of candidates into a results file: what `dragon measure` and the
corpus labelling run.

A batch file is JSON lines, one candidate per line:

    {"id": "a1", "workload": "matmul.tvmscript", "script": "a1.dragon"}
    {"workload_text": "# from tvm.script ...", "trace": [[...], [...]]}

* the workload: `workload` (a .tvmscript path, relative to the batch file's folder) or
  `workload_text` (TVMScript); without either, the script's own `workload "..."` header;
* the candidate: `script` (.dragon text, or a path to a .dragon file) or `trace` (trace JSON,
  or a string holding it);
* `id` (a string or an integer): the candidate's name in the results; by default the line
  number and a hash of the line's text (`12-3f9a0c1b2d4e`).

The results file gets one JSON object per candidate, appended (flushed; fsync'ed at most once a
second and at the end) as soon as the engine decides it, so a run that is killed loses nothing it
reported. A run on an existing
results file measures only the ids it does not hold yet; a last line cut short by a kill is
dropped and its candidate measured again. A line that cannot be measured (bad JSON, a missing
field, a workload that does not load, a script with errors) gets a row with status `invalid`
and a message that names it (`BATCH.jsonl:LINE:COL: ...`); the others are measured.

Candidates whose lowered source is identical are built and measured once
(`Engine(dedupe_sources=True)`); the others get the first one's result, with `duplicate_of`
naming its id.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

INVALID = "invalid"
ROW_KEYS = (
    "id",
    "line",
    "status",
    "message",
    "level",
    "latency_us",
    "latencies_us",
    "build_s",
    "run_s",
    "n_checked",
    "max_abs_err",
    "max_rel_err",
    "cached",
    "duplicate_of",
    "timer",
    "workload_hash",
    "trace_hash",
    "requested",
    "target",
)


class BatchError(ValueError):
    """The batch cannot run at all (no batch file, a results file from another configuration)."""


@dataclass
class Candidate:
    """One line of a batch file, read; `problem` says why it cannot be measured."""

    line: int
    id: str
    workload: object = None  # a path (str) or TVMScript text
    trace: object = None
    problem: str = ""


@dataclass
class Summary:
    """What one run did: rows written by status, candidates skipped (already in the results)."""

    total: int = 0  # candidates in the batch file
    skipped: int = 0  # already in the results file
    counts: dict = field(default_factory=dict)  # status -> rows written by this run
    duplicates: int = 0  # rows copied from a candidate with identical source or trace
    wall_s: float = 0.0
    dropped_torn: bool = False  # a cut last line of the results file was dropped
    problems: list = field(default_factory=list)  # workloads whose verifier reference failed
    profile: dict = field(default_factory=dict)
    left: int = 0  # candidates not measured: the time limit (seconds) came first

    @property
    def written(self) -> int:
        return sum(self.counts.values())

    @property
    def per_minute(self) -> float:
        """Candidates decided (invalid lines left out) per minute of this run."""
        decided = self.written - self.counts.get(INVALID, 0)
        return decided * 60.0 / self.wall_s if self.wall_s > 0 else 0.0

    def to_json(self) -> dict:
        return {
            "total": self.total,
            "skipped": self.skipped,
            "written": self.written,
            "counts": dict(self.counts),
            "duplicates": self.duplicates,
            "wall_s": round(self.wall_s, 3),
            "candidates_per_minute": round(self.per_minute, 1),
            "dropped_torn_line": self.dropped_torn,
            "problems": list(self.problems),
            "left": self.left,
            "profile": {k: round(v, 3) if isinstance(v, float) else v for k, v in self.profile.items()},
        }


# --- the batch file -------------------------------------------------------------------------------
def default_id(number: int, raw: str) -> str:
    return f"{number}-{hashlib.sha256(raw.strip().encode('utf-8')).hexdigest()[:12]}"


def read_batch(path) -> list:
    """The candidates of a batch file, in order (blank lines skipped); never raises on content."""
    path = Path(path)
    name = str(path)
    base = path.parent
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BatchError(f"{name}: {exc.strerror or exc}") from None
    out: list = []
    seen: dict = {}
    for number, raw_bytes in enumerate(data.split(b"\n"), start=1):
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append(
                Candidate(
                    number,
                    default_id(number, raw_bytes.decode("utf-8", "replace")),
                    problem=f"{name}:{number}:{exc.start + 1}: not UTF-8 text",
                )
            )
            continue
        if not raw.strip():
            continue
        cand = _candidate(raw, number, name, base)
        if cand.id in seen:
            cand.problem = cand.problem or f"{name}:{number}: id {cand.id!r} is already used on line {seen[cand.id]}"
            cand.id = default_id(number, raw)
            if cand.id in seen:  # the same text twice under one explicit id: keep the row's id unique
                cand.id = f"{cand.id}-{number}"
        seen.setdefault(cand.id, number)
        out.append(cand)
    return out


def _candidate(raw: str, number: int, name: str, base: Path) -> Candidate:
    cand = Candidate(number, default_id(number, raw))
    where = f"{name}:{number}"
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        cand.problem = f"{where}:{exc.colno}: not JSON: {exc.msg}"
        return cand
    if not isinstance(obj, dict):
        cand.problem = f"{where}:1: expected a JSON object, got {type(obj).__name__}"
        return cand
    if "id" in obj:
        if isinstance(obj["id"], bool) or not isinstance(obj["id"], (str, int)) or str(obj["id"]).strip() == "":
            cand.problem = f"{where}: 'id' must be a non-empty string or an integer"
            return cand
        cand.id = str(obj["id"])
    unknown = sorted(set(obj) - {"id", "workload", "workload_text", "script", "trace"})
    if unknown:
        cand.problem = (
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))} (expected id, workload or "
            f"workload_text, script or trace)"
        )
        return cand
    # the candidate
    if ("script" in obj) == ("trace" in obj):
        cand.problem = f"{where}: give exactly one of 'script' (.dragon text or path) and 'trace' (trace JSON)"
        return cand
    header_workload = None
    if "script" in obj:
        script = obj["script"]
        if not isinstance(script, str):
            cand.problem = f"{where}: 'script' must be a string (.dragon text or a path)"
            return cand
        trace, header_workload, problem = _script_trace(script, where, base)
        if problem:
            cand.problem = problem
            return cand
        cand.trace = trace
    else:
        trace = obj["trace"]
        if isinstance(trace, str):
            try:
                trace = json.loads(trace)
            except json.JSONDecodeError as exc:
                cand.problem = f"{where}: 'trace' is a string but not JSON ({exc.msg} at column {exc.colno})"
                return cand
        if not (isinstance(trace, list) and len(trace) == 2 and isinstance(trace[0], list)):
            cand.problem = f"{where}: 'trace' must be trace JSON: [instructions, decisions]"
            return cand
        cand.trace = trace
    # the workload
    if "workload" in obj and "workload_text" in obj:
        cand.problem = f"{where}: give 'workload' (a path) or 'workload_text', not both"
        return cand
    if "workload_text" in obj:
        if not isinstance(obj["workload_text"], str) or not obj["workload_text"].strip():
            cand.problem = f"{where}: 'workload_text' must be TVMScript text"
            return cand
        cand.workload = obj["workload_text"]
    elif "workload" in obj or header_workload:
        value = obj["workload"] if "workload" in obj else header_workload[0]
        if not isinstance(value, str) or not value.strip():
            cand.problem = f"{where}: 'workload' must be a path to a .tvmscript file"
            return cand
        path = header_workload[1] / value if "workload" not in obj else base / value
        if not path.is_file():
            cand.problem = f"{where}: workload {value!r}: no such file ({path})"
            return cand
        cand.workload = str(path.resolve())
    else:
        cand.problem = f"{where}: missing 'workload' (a .tvmscript path) or 'workload_text'"
    return cand


def _script_trace(script: str, where: str, base: Path) -> tuple:
    """(trace JSON, (header workload, its folder) or None, problem) of a 'script' field."""
    from dragon_dsl import DragonError, to_program
    from dragon_dsl.language.codec.encode import encode

    if "\n" not in script and script.strip().endswith(".dragon"):
        path = base / script.strip()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return (
                None,
                None,
                f"{where}: script {script.strip()!r}: cannot read it ({getattr(exc, 'strerror', None) or exc})",
            )
        shown, folder = str(path), path.parent
    else:
        text, shown, folder = script, "<script>", base
    try:
        program = to_program(text)
        trace = encode(program)
    except DragonError as exc:
        first = next((d for d in exc.diagnostics if d.severity.value == "error"), None)
        detail = first.render(shown) if first is not None else str(exc)
        return None, None, f"{where}: the script has errors: {detail}"
    except Exception as exc:
        return None, None, f"{where}: the script cannot be encoded: {type(exc).__name__}: {exc}"
    header = (program.workload, folder) if program.workload else None
    return trace, header, ""


# --- the results file -----------------------------------------------------------------------------
def read_results(path) -> tuple:
    """(rows in order, whether a cut or unreadable line was dropped). A results file ends every row
    with a newline; a last line without one was cut by a kill. Any line that is not a JSON object
    with an id is dropped and the file rewritten without it, so that its candidate is measured again."""
    path = Path(path)
    if not path.exists():
        return [], False
    data = path.read_bytes()
    parts = data.split(b"\n")
    complete, tail = parts[:-1], parts[-1]
    rows, bad = [], bool(tail.strip())
    for part in complete:
        if not part.strip():
            continue
        try:
            row = json.loads(part.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            bad = True
            continue
        if not isinstance(row, dict) or "id" not in row:
            bad = True
            continue
        rows.append(row)
    if bad:
        from dragon_dsl.language.files import write_text

        write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return rows, bad


class ResultsWriter:
    """Appends rows to the results file: each one flushed to the OS before the next (a killed run
    loses none), fsync'ed at most every SYNC_S seconds and at the end (a machine that goes down
    loses at most the last SYNC_S seconds' rows, which a restart measures again)."""

    SYNC_S = 1.0

    def __init__(self, path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", encoding="utf-8")
        self._synced = time.monotonic()

    def write(self, row: dict) -> None:
        self._f.write(json.dumps(row, ensure_ascii=False, allow_nan=True) + "\n")
        self._f.flush()
        if time.monotonic() - self._synced >= self.SYNC_S:
            os.fsync(self._f.fileno())
            self._synced = time.monotonic()

    def close(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()


# --- measuring --------------------------------------------------------------------------------
def engine_options(target, device: str = "local") -> dict:
    """What the labelling path asks of the engine beyond its defaults: sources deduplicated and,
    on local GPUs, two device workers per GPU (one loads while the other runs). Builds are not
    grouped (`--build-group`): 8 candidates per nvcc call measured no faster than one each
    (benchmarks/results/gpu_measure: the compile time is the kernels', not nvcc's)."""
    from dragon_dsl.engine.targets import parse_device, resolve_target

    gpu_local = resolve_target(target).is_gpu and not parse_device(device).is_remote
    return {"dedupe_sources": True, "device_slots": 2 if gpu_local else 1}


def default_chunk(engine) -> int:
    """Candidates per engine call. On a CPU the device waits for the call's builds (timings never
    share cores with compilers): small calls keep results coming; on GPUs and remote devices
    builds and runs overlap inside a call, and large calls keep every build worker busy."""
    if engine.target.is_gpu or engine.device.is_remote:
        return 1024
    return max(8, 4 * engine.workers)


def measure_batch(
    batch,
    out,
    engine,
    level: str = "time",
    *,
    seeds: int = 3,
    repeat: int = 5,
    number: int | None = None,
    min_repeat_ms: float = 5.0,
    flush_l2: bool = False,
    use_cache: bool = False,
    chunk: int | None = None,
    on_row: Callable[[dict], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    seconds: float | None = None,
) -> Summary:
    """Measure the candidates of BATCH (a path) not yet in OUT (a path) with ENGINE, appending a
    row per candidate to OUT. `on_start(total, to_do)` once the files are read, `on_row(row)` after
    each row is written. With SECONDS, no engine call but the first starts after that long (the
    one running ends first: `summary.left` candidates are left for a rerun, which gets on).
    Raises BatchError when the batch cannot run (no batch file; OUT holds rows of another target
    or level); a bad candidate is a row, never an exception."""
    from dragon_dsl.engine.result import EngineError, Task, level_rank

    level_rank(level)
    t0 = time.perf_counter()
    candidates = read_batch(batch)
    rows, torn = read_results(out)
    target_key = engine.target.key
    _check_rows(rows, out, target_key, level)
    done = {str(row["id"]) for row in rows}
    summary = Summary(total=len(candidates), dropped_torn=torn)
    todo = [c for c in candidates if c.id not in done]
    summary.skipped = len(candidates) - len(todo)
    first_id = _first_ids(rows)
    if on_start is not None:
        on_start(len(candidates), len(todo))
    writer = ResultsWriter(out)
    engine.profile(reset=True)
    try:

        def emit(row: dict) -> None:
            row.setdefault("requested", level)
            row.setdefault("target", target_key)
            writer.write(row)
            summary.counts[row["status"]] = summary.counts.get(row["status"], 0) + 1
            if row.get("duplicate_of"):
                summary.duplicates += 1
            if on_row is not None:
                on_row(row)

        size = chunk or default_chunk(engine)
        deadline = t0 + seconds if seconds else None
        for start in range(0, len(todo), size):
            if start and deadline is not None and time.perf_counter() >= deadline:
                summary.left = len(todo) - start  # stopped between engine calls: nothing is cut
                break
            part = _loaded(todo[start : start + size], engine, batch, emit)
            if not part:
                continue
            tasks = [
                Task(
                    c.workload,
                    c.trace,
                    level=level,
                    seeds=seeds,
                    repeat=repeat,
                    number=number,
                    min_repeat_ms=min_repeat_ms,
                    flush_l2=flush_l2,
                    use_cache=use_cache,
                )
                for c in part
            ]
            wl_hash = {i: engine._workload(c.workload).hash for i, c in enumerate(part)}
            on_result = _row_of_result(part, wl_hash, first_id, emit)
            written = summary.written
            try:
                engine.run(tasks, on_result=on_result)
            except EngineError as exc:
                if summary.written - written < len(part):
                    raise  # nothing measured (no device): the batch cannot run
                # a workload whose reference failed: its candidates have rows that say so; go on
                summary.problems.append(str(exc))
    finally:
        writer.close()
        summary.wall_s = time.perf_counter() - t0
        summary.profile = engine.profile()
    return summary


def _check_rows(rows, out, target_key: str, level: str) -> None:
    """Refuse to append to OUT when its rows were measured for another target or level."""
    for row in rows:
        if row.get("target", target_key) != target_key or row.get("requested", level) != level:
            raise BatchError(
                f"{out} holds results for target {row.get('target')} at level {row.get('requested')!r}: "
                f"measure into another results file, or run with that target and level"
            )


def _first_ids(rows) -> dict:
    """The first id of each (workload hash, trace hash) among rows already written: what a later
    row's duplicate_of names."""
    first_id: dict = {}
    for row in rows:
        if row.get("trace_hash") and not row.get("duplicate_of"):
            first_id.setdefault((row.get("workload_hash"), row["trace_hash"]), str(row["id"]))
    return first_id


def _loaded(cands, engine, batch, emit) -> list:
    """The candidates of one chunk whose workload loads; the others are emitted as invalid rows.

    A chunk's workloads are loaded (and a bad one reported) when the chunk comes: a batch of
    thousands of workloads starts measuring at once, and a rerun loads only what is left."""
    part = []
    for cand in cands:
        if not cand.problem:
            try:
                engine._workload(cand.workload)
            except Exception as exc:
                shown = (
                    cand.workload
                    if len(str(cand.workload)) < 200 and "\n" not in str(cand.workload)
                    else "workload_text"
                )
                cand.problem = f"{batch}:{cand.line}: workload {shown}: {_first_line(exc)}"
        if cand.problem:
            emit({"id": cand.id, "line": cand.line, "status": INVALID, "message": cand.problem})
        else:
            part.append(cand)
    return part


def _row_of_result(part, wl_hash: dict, first_id: dict, emit):
    """The engine's on_result for one chunk: each result as a row naming the first candidate it
    duplicates (the same lowered source, or the same trace), emitted."""

    def on_result(index, result):
        cand = part[index]
        row = {"id": cand.id, "line": cand.line, **result.to_json(), "workload_hash": wl_hash[index]}
        mine = (wl_hash[index], result.trace_hash)
        if result.duplicate_of:  # identical lowered source: built and measured once
            row["duplicate_of"] = first_id.get((wl_hash[index], result.duplicate_of), result.duplicate_of)
        elif mine in first_id and first_id[mine] != cand.id:  # the same trace twice
            row["duplicate_of"] = first_id[mine]
        else:
            first_id.setdefault(mine, cand.id)
        emit({k: row.get(k) for k in ROW_KEYS if k in row})

    return on_result


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]
