"""The best verified script for a workload (`recommend`, what `dragon suggest` and `dragon improve`
print): the model's candidates, and on a GPU dlight's script, measured in one engine call against
the baseline; the fastest verified one, else a budgeted MetaSchedule search, else (on a CPU) no
schedule at all when nothing beats the program as written."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dragon_dsl.levels import SLOW_FACTOR, is_slow  # a slow verified candidate is never an answer
from dragon_model.candidates import GENERATION_SECONDS, candidates
from dragon_model.checks import header_target, workload_text

# how much slower than the unscheduled program a CPU answer may time and still count as no slower
# (the model's training answers use the same margin)
from dragon_model.data import TIMING_NOISE
from dragon_model.repair import repair
from dragon_model.search import search

#: seconds every device run may take whatever the baseline (loading the module, uploading inputs,
#: comparing outputs)
RUN_FLOOR_S = 15.0


def cut_seconds(baseline_us: float, seeds: int = 3, repeat: int = 5, cap_s: float = 120.0) -> float:
    """A device run's time limit once the baseline's latency is known: the verifier's runs (`seeds`
    random sets and two edge sets) and the timer's `repeat` runs of a kernel SLOW_FACTOR times the
    baseline, twice over, on top of RUN_FLOOR_S; never above `cap_s`."""
    runs = seeds + 2 + repeat
    return min(cap_s, RUN_FLOOR_S + 2.0 * runs * SLOW_FACTOR * baseline_us * 1e-6)


@dataclass
class Recommendation:
    script: str | None
    verified: bool
    latency_us: float | None
    source: str  # "model", "dlight" (GPU baseline), "search", "given" (improve: nothing beat the
    # script given) or "unscheduled" (CPU: nothing beat the program as written)
    candidates_tried: int
    baseline: float | None = None  # the baseline's latency (us): dlight on GPUs, unscheduled on CPUs
    baseline_kind: str | None = None
    speedup_vs_baseline: float | None = None
    unscheduled_us: float | None = None
    speedup_vs_unscheduled: float | None = None
    dlight_us: float | None = None  # GPU targets: dlight's default schedule, the baseline there
    speedup_vs_dlight: float | None = None
    given_latency_us: float | None = None  # improve: the script it had to beat
    speedup_vs_given: float | None = None
    explanation: str | None = None
    candidates: list = field(default_factory=list)  # per candidate: source, status, latency, statements
    note: str = ""
    # the answer exactly as measured: `script` leaves out the queries whose results nothing uses
    # (dragon-check's DRG104; the schedule is the same), this keeps them (the trace TVM ran)
    exact_script: str | None = None
    verified_candidates: int = 0  # how many of the candidates passed (improve: what the given script beat)

    def to_json(self) -> dict:
        return asdict(self)


def dlight_script(workload_text: str, spec, workload_name: str | None = None) -> str | None:
    """dlight's schedule of the workload as a Dragon script (header included), or None when no
    dlight rule applies."""
    from dragon_dsl import from_trace_json
    from dragon_dsl.tvm.dlight import dlight_trace
    from dragon_dsl.tvm.workload import load_workload

    found = dlight_trace(load_workload(workload_text), spec)
    return None if found is None else from_trace_json(found[1], workload=workload_name, target=spec)


def _entry(source: str, text: str, res, **extra) -> dict:
    return {
        "source": source,
        "script": text,
        "status": res.status.value,
        "latency_us": res.latency_us,
        "message": res.message[:300],
        **extra,
    }


def _mark_slow(tried: list, baseline_us: float | None) -> None:
    """Verified candidates slower than SLOW_FACTOR x the baseline become `slow` (never an answer)."""
    if not baseline_us:
        return
    for c in tried:
        if c["status"] == "ok" and is_slow(c["latency_us"], baseline_us):
            c["status"] = "slow"
            c["message"] = f"verified, but {c['latency_us'] / baseline_us:.1f}x slower than the baseline"


@dataclass
class _Request:
    """One `recommend` call's workload, target, level and engine, and the baseline's latency once
    timed."""

    workload: Any
    target: Any
    wl_text: str
    spec: Any
    level: str
    engine: Any
    log: Any
    stage: Any
    base_us: float | None = None
    given_script: str | None = None  # improve: the script to beat

    def measure(self, texts: list, what: str = "") -> list:
        """The engine's results for scripts TEXTS, results cache off; with WHAT, each result as it
        comes is reported as a stage (`measuring`, "i/n WHAT")."""
        from dragon_dsl import to_trace_json
        from dragon_dsl.engine import Task

        tasks = [Task(self.wl_text, to_trace_json(t), level=self.level, use_cache=False) for t in texts]
        done = []

        def measured(_index, _result) -> None:
            done.append(_index)
            self.stage("measuring", f"{len(done)}/{len(tasks)} {what}")

        return self.engine.run(tasks, on_result=measured if what else None)


def recommend(
    workload,
    target: Any = "llvm",
    script: str | None = None,
    k: int = 4,
    model_path=None,
    search_trials: int = 16,
    level: str = "time",
    engine=None,
    use_model: bool = True,
    timeout_s: float = 120.0,
    seed: int = 0,
    max_seconds: float = GENERATION_SECONDS,
    log=lambda msg: None,
    stage=lambda name, detail="": None,
    budget_s: float | None = None,
) -> Recommendation:
    """See the module docstring. On a GPU target dlight's schedule, written as a script, is measured
    beside the model's candidates in the same engine call, so the answer is never slower than dlight
    and says which it is (`source`). At level `time` the baseline (dlight on GPUs, the unscheduled
    program on CPUs) is timed first: every candidate's device run is then stopped once it has run
    long enough to be SLOW_FACTOR times slower (`cut_seconds`), and a verified candidate that slow is
    `slow`, not an answer. `stage(name, detail)` reports progress: loading, generating, measuring
    (i of n, as each candidate is written and as each result comes). BUDGET_S bounds the model's
    writing time: a generation running when it is spent ends at the statement it is on and no other
    starts (`candidates`' deadline); what was written is measured as any candidate is, and the best
    verified one is the answer."""
    from dragon_dsl.engine import Engine

    wl_text = workload_text(workload)
    spec = header_target(target)
    own = engine is None
    engine = engine or Engine(spec, cache=False, timeout_s=timeout_s)
    req = _Request(workload, target, wl_text, spec, level, engine, log, stage, given_script=script)
    run_timeout_s = engine.run_timeout_s  # a caller's engine gets its limit back
    try:
        kind = "dlight" if engine.target.is_gpu else "unscheduled"
        if level == "time":
            req.base_us = _time_baseline(req, kind)
        given = None
        if script is not None:
            stage("measuring", "the given script")
            (given,) = req.measure([script])
            if not given.ok:
                raise ValueError(f"the script to improve does not pass {level}: {given.status}: {given.message}")
        tried = _measure_candidates(
            req,
            script,
            use_model,
            dict(k=k, model_path=model_path, seed=seed, max_seconds=max_seconds, budget_s=budget_s),
        )
        best, note = _choose(req, tried, given, use_model, search_trials, k)
        return _recommendation(req, kind, tried, best, note, given)
    finally:
        engine.run_timeout_s = run_timeout_s
        if own:
            engine.close()


def _time_baseline(req: _Request, kind: str) -> float | None:
    """The baseline's latency (dlight on GPUs, the unscheduled program on CPUs), or None when it
    failed; every later device run is then cut at SLOW_FACTOR times it (`cut_seconds`)."""
    req.stage("measuring", f"the {kind} baseline")
    base = req.engine.baseline(req.wl_text, kind=kind)
    if base.ok and base.latency_us:
        req.engine.run_timeout_s = cut_seconds(base.latency_us, cap_s=req.engine.run_timeout_s)
        return base.latency_us
    return None


def _measure_candidates(req: _Request, script: str | None, use_model: bool, generation: dict) -> list:
    """The model's candidates (`candidates` with GENERATION's arguments) and, on a GPU, dlight's
    script, measured in one engine call, as entries; when no model candidate passes, the greedy
    script cut back to what passes (`repair`) is measured too."""
    tried, cands = [], []
    if use_model:
        k, budget_s = generation["k"], generation.pop("budget_s")
        req.stage("generating", f"0/{k} candidate(s)" + (f", {budget_s:.0f} s budget" if budget_s else ""))
        if budget_s:
            generation["deadline"] = time.monotonic() + budget_s
        try:
            cands = candidates(
                req.workload,
                req.target,
                script,
                progress=_generation_progress(req, time.monotonic()),
                **generation,
            )
        except FileNotFoundError as exc:
            req.log(f"model: {exc}")
    texts = [("model", t, g) for t, g in cands]
    if req.engine.target.is_gpu:
        name = None if isinstance(req.workload, str) and "\n" in req.workload else Path(req.workload).name
        dl = dlight_script(req.wl_text, req.spec, name)
        if dl is not None:
            texts.append(("dlight", dl, None))
    if not texts:
        return tried
    req.stage("measuring", f"0/{len(texts)} script(s)")
    results = req.measure([t for _s, t, _g in texts], "script(s)")
    for (source, text, g), res in zip(texts, results):
        extra = {"statements": g.statements, "rejected": g.rejected, "stop": g.stop} if g else {}
        tried.append(_entry(source, text, res, **extra))
    _mark_slow(tried, req.base_us)
    model_ok = [c for c in tried if c["source"] == "model" and c["status"] == "ok"]
    if cands and not model_ok:  # cut the greedy script back to what passes
        _add_repaired(req, tried, cands[0][1], results[0])
    if cands:
        n_ok = sum(c["status"] == "ok" for c in tried if c["source"] == "model")
        req.log(f"model: {n_ok} of {sum(c['source'] == 'model' for c in tried)} candidate(s) verified")
    return tried


def _generation_progress(req: _Request, start: float):
    """`candidates`' progress as stages: i of n written, and while more are to come, the time they
    may take at the pace so far."""

    def progress(i: int, n: int) -> None:
        left = (time.monotonic() - start) / i * (n - i) if 0 < i < n else 0
        req.stage("generating", f"{i}/{n} candidate(s)" + (f", about {left:.0f} s to go" if left >= 1 else ""))

    return progress


def _add_repaired(req: _Request, tried: list, greedy, result) -> None:
    """The greedy generation's body cut back to its longest passing prefix, added to TRIED when
    that prefix passes and is not empty."""
    from dragon_model.generate import header

    fixed = repair(req.engine, req.wl_text, greedy.body, req.level, result=result)
    if fixed.result.ok and fixed.body.strip():
        tried.append(
            _entry(
                "model",
                header(req.workload, req.spec) + fixed.body,
                fixed.result,
                statements=greedy.statements - fixed.dropped,
                rejected=0,
                stop="repaired",
            )
        )
        tried[-1]["message"] = f"the greedy script cut by {fixed.dropped} statement(s)"
        _mark_slow(tried[-1:], req.base_us)


def _choose(req: _Request, tried: list, given, use_model: bool, search_trials: int, k: int) -> tuple:
    """The answer among TRIED, as (entry or None, note): the fastest verified model or dlight script
    (one that beats GIVEN, the script to improve); else a MetaSchedule search's; and on a CPU the
    program as written, without a schedule, when nothing beats it."""
    best = _best(tried, given) if use_model else None  # --no-model: a search, raced against dlight
    note = ""
    # on a CPU the unscheduled program is what an answer must beat, as dlight on a GPU: a model
    # answer slower than it is no answer, and the search runs instead
    plain_us = req.base_us if not req.engine.target.is_gpu else None
    if best is not None and best["source"] == "model" and plain_us and best["latency_us"] > plain_us * TIMING_NOISE:
        note = (
            f"every verified model candidate was slower than the unscheduled program "
            f"({best['latency_us']:.1f} us against {plain_us:.1f} us)"
        )
        best = None
    if best is None:
        note = _search_instead(req, tried, note, search_trials, k)
        best = _best([c for c in tried if c["source"] in ("search", "dlight")], given)
    elif best["source"] == "dlight" and any(c["source"] == "model" for c in tried):
        note = "dlight's schedule was faster than every model candidate"
    if best is None and given is not None and given.ok:
        # improve: nothing written beats the script given, which is then the answer, not a failure
        n = sum(c["status"] == "ok" for c in tried)
        best = {"source": "given", "script": req.given_script, "status": "ok", "latency_us": given.latency_us}
        fastest = min((c["latency_us"] for c in tried if c["status"] == "ok" and c["latency_us"]), default=None)
        note = f"your script is already the fastest of {n + 1} verified candidate(s)" + (
            f" ({given.latency_us:.3f} us; the fastest other: {fastest:.3f} us)" if fastest and given.latency_us else ""
        )
    if (
        plain_us
        and (best is None or best["latency_us"] > plain_us * TIMING_NOISE)
        and (given is None or not given.latency_us or plain_us < given.latency_us)
    ):
        # nothing beats the program as written: the answer is no schedule at all
        if best is not None and best["source"] == "given":
            note = ""  # the given script is not the fastest after all
        best = {
            "source": "unscheduled",
            "script": "",
            "status": "ok",
            "latency_us": plain_us,
            "message": "the workload as written, without a schedule",
        }
        note = (note + "; " if note else "") + "nothing found beats the unscheduled program: the answer is no schedule"
    return best, note


def _search_instead(req: _Request, tried: list, note: str, search_trials: int, k: int) -> str:
    """A budgeted MetaSchedule search when no model candidate is the answer: its scripts measured
    and added to TRIED; the note saying why it ran."""
    model_tried = [c for c in tried if c["source"] == "model"]
    if not note:
        note = (
            (
                "no model candidate verified"
                if not any(c["status"] == "ok" for c in model_tried)
                else "no model candidate beat the given script"
            )
            if model_tried
            else "no model"
        )
    note += f"; fell back to a MetaSchedule search of {search_trials} trials"
    req.log(note)
    req.stage("searching", f"{search_trials} trials")
    found = search(req.wl_text, req.spec, search_trials, n=max(1, k), engine=req.engine)
    if found:
        for text, res in zip(found, req.measure(found, "search script(s)")):
            tried.append(_entry("search", text, res))
        _mark_slow(tried, req.base_us)
    return note


def _recommendation(req: _Request, kind: str, tried: list, best: dict | None, note: str, given) -> Recommendation:
    """The Recommendation of answer BEST (None: no verified schedule), with its speedups over the
    baseline and the given script, and its explanation."""
    rec = Recommendation(
        script=None,
        verified=False,
        latency_us=None,
        source=best["source"] if best else "search",
        candidates_tried=len(tried),
        candidates=tried,
        note=note,
    )
    if given is not None:
        rec.given_latency_us = given.latency_us
    base_us = req.base_us
    if base_us:
        rec.baseline, rec.baseline_kind = base_us, kind
        setattr(rec, f"{kind}_us", base_us)
    if best is None:
        rec.note += "; no verified schedule found"
        return rec
    rec.exact_script = _with_header(best["script"], req.workload, req.spec)
    rec.script = _without_unused(rec.exact_script, req)
    rec.verified_candidates = sum(c["status"] == "ok" for c in tried)
    rec.verified = True
    rec.latency_us = best["latency_us"]
    if base_us and rec.latency_us:
        rec.speedup_vs_baseline = base_us / rec.latency_us
        setattr(rec, f"speedup_vs_{kind}", rec.speedup_vs_baseline)
    if given is not None and given.latency_us and rec.latency_us:
        rec.speedup_vs_given = given.latency_us / rec.latency_us
    rec.explanation = explanation(rec.script, req.workload, req.spec)
    return rec


def _without_unused(text: str, req: _Request) -> str:
    """TEXT without the queries whose results nothing uses (dragon-check's DRG104 warnings, which
    would fail `dragon-check --strict` on the answer as shown; the schedule is the same), kept only
    when it still replays from its own text; else TEXT as it is."""
    from dragon_model.checks import replay_problem
    from dragon_model.data import body_of_text, without_unused_queries

    if not text.strip():
        return text
    body = body_of_text(text)
    lean = without_unused_queries(body)
    if lean == body:
        return text
    shown = _with_header(lean, req.workload, req.spec)
    return shown if replay_problem(shown, req.wl_text) is None else text


def _best(tried: list, given) -> dict | None:
    ok = [c for c in tried if c["status"] == "ok"]
    if given is not None and given.latency_us:
        ok = [c for c in ok if c["latency_us"] is not None and c["latency_us"] < given.latency_us]
    if not ok:
        return None
    return min(ok, key=lambda c: c["latency_us"] if c["latency_us"] is not None else float("inf"))


def _with_header(text: str, workload, spec) -> str:
    from dragon_dsl import from_trace_json, to_trace_json

    name = None if isinstance(workload, str) and "\n" in workload else Path(workload).name
    return from_trace_json(to_trace_json(text), workload=name, target=spec)


def explanation(script: str, workload, target) -> str | None:
    """The explanation graph from `dragon_dsl.explain`, when that module is installed."""
    try:
        from dragon_dsl.explain import explain
    except ImportError:
        return None
    try:
        return explain(script, workload, target)
    except Exception as exc:
        return f"# explanation unavailable: {type(exc).__name__}: {str(exc)[:200]}"
