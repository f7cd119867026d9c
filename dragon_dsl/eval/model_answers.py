"""The model's method: its answers (`dragon_model.suggest`) generated once per task and kept
under OUT_DIR/model (a rerun reuses them, and so does a run on another machine given that
folder: `dragon eval --generate-only` writes them where there is no GPU), then measured like
every other method's candidates. The model package is an optional part of the installation;
without it (or without its decoder's dependencies) the rows are "not available".
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from dragon_dsl.eval.candidates import Context, digest, measure_scripts, new_row
from dragon_dsl.eval.host import host
from dragon_dsl.language.files import write_json


def model_suggest():
    """`dragon_model.suggest`, or (None, why not): the model is an optional part (`pip install
    little-dragon[model]`)."""
    try:
        import dragon_model
    except ImportError as exc:
        return None, f"the model is not installed: {exc}"
    return dragon_model.suggest, ""


def model(
    ctx: Context,
    entry,
    n: int,
    task: str = "construction",
    script: str | None = None,
    existing_latency_us: float | None = None,
) -> dict:
    """The model's answer(s): n=1 is its first answer, n=k its best of k."""
    name = "model-first" if n == 1 else f"model-best-of-{n}"
    suggest, why = model_suggest()
    extra = {"k": n}
    if task == "improvement":
        extra["existing_latency_us"] = existing_latency_us
    if suggest is None:
        return new_row(entry, task, name, "not_available", why, **extra)
    try:
        texts, gen_s, gen_host, load_s, origins = _suggestions(ctx, entry, suggest, n, task, script)
    except FileNotFoundError as exc:  # no trained weights for this target
        return new_row(entry, task, name, "not_available", f"no model: {exc}", **extra)
    except OtherVersion as exc:  # --generation-version: answers of another decoder, not written yet
        return new_row(entry, task, name, "not_available", str(exc), **extra)
    except ImportError as exc:  # e.g. no xgrammar on a GPU machine that only measures: not the model's failure
        return new_row(
            entry,
            task,
            name,
            "not_available",
            f"the model cannot generate here ({exc}); generate with --generate-only elsewhere",
            **extra,
        )
    except Exception as exc:  # the model's own failure on this task: an unsolved task, with the reason
        return new_row(entry, task, name, reason=f"suggest() raised {type(exc).__name__}: {str(exc)[:200]}", **extra)
    row = new_row(entry, task, name, **extra)
    row["candidates"], row["time_s"] = measure_scripts(
        ctx, entry, texts, f"{ctx.whash(entry.path)}|{name}|{task}|{digest(texts)}", extra_s=gen_s
    )
    if origins is not None and len(origins) == len(texts):  # where each came from (metrics.OWN_ORIGINS)
        row["candidates"] = [dict(c, origin=o) for c, o in zip(row["candidates"], origins, strict=True)]
    row["generation_s"] = gen_s
    row["generated_on"] = gen_host
    if load_s is not None:
        row["model_load_s"] = load_s
    return row


def prefetch_first_answers(ctx: Context, entries: list) -> int:
    """Measure the first answers already written under OUT_DIR/model (`--generate-only`) of every
    entry in one engine call (`candidates.prefetch`); an entry without one is left to `model`,
    which generates it. Returns how many were measured."""
    from dragon_dsl.eval.candidates import prefetch, script_candidate

    jobs = []
    for e in entries:
        path = suggestions_path(ctx, e, 1, "construction", None)
        if not path.exists():
            continue
        texts = json.loads(path.read_text(encoding="utf-8"))["scripts"]
        traces = [t for t, failure in map(script_candidate, texts) if failure is None]
        jobs.append((e, traces, f"{ctx.whash(e.path)}|model-first|construction|{digest(texts)}"))
    return prefetch(ctx, jobs)


def generate(ctx: Context, entry, n: int, task: str = "construction", script: str | None = None) -> dict:
    """Only the model's scripts for a task, into OUT_DIR/model (`dragon eval --generate-only`): the
    generation needs no GPU, so a CPU machine can write them and the GPU run measures them."""
    suggest, why = model_suggest()
    if suggest is None:
        raise ValueError(f"the model is not available: {why}")
    path = suggestions_path(ctx, entry, n, task, script)
    cached = path.exists()
    texts, gen_s, _host, _load_s, _origins = _suggestions(ctx, entry, suggest, n, task, script)
    return {
        "workload": entry.name,
        "task": task,
        "n": n,
        "scripts": len(texts),
        "generation_s": gen_s,
        "cached": cached,
        "file": str(path),
    }


def _suggestions_key(ctx: Context, entry, n: int, task: str, script: str | None) -> str:
    # the model is known by its files where it has weights (a copy of the folder elsewhere finds the
    # answers written with the original), by its path otherwise
    model = _weights(ctx)
    key = [ctx.whash(entry.path), task, n, None if model else ctx.model_path, script, ctx.target.key, model]
    version = ctx.generation_version if ctx.generation_version is not None else generation_version()
    return json.dumps(key + [version] if version is not None else key)


class OtherVersion(LookupError):
    """No stored answers of the decoder version asked for, which this code cannot write."""


def _check_version(ctx: Context) -> None:
    """Raise OtherVersion when `ctx.generation_version` names a decoder other than this code's."""
    current = generation_version()
    if ctx.generation_version is not None and ctx.generation_version != current:
        raise OtherVersion(
            f"no answers of decoder version {ctx.generation_version} in {ctx.out_dir / 'model'}; "
            f"this code writes version {current}"
        )


def generation_version() -> int | None:
    """dragon_model's GENERATION_VERSION: the same weights decoded differently write other scripts."""
    try:
        from dragon_model.api import GENERATION_VERSION
    except ImportError:
        return None
    return GENERATION_VERSION


def _weights(ctx: Context) -> str | None:
    """The digest of the model's weights and decoding settings (`dragon_model.json`: a retrained or
    otherwise decoded model never reuses another's scripts)."""
    if "weights" not in ctx.hashes:
        digest = None
        try:
            from dragon_model.api import default_model_path

            folder = Path(ctx.model_path) if ctx.model_path else default_model_path(ctx.target.spec)
        except ImportError:
            folder = None
        files = sorted(Path(folder).glob("*.safetensors")) if folder else []
        if files:
            settings = Path(folder) / "dragon_model.json"
            h = hashlib.sha256()
            for f in files + ([settings] if settings.is_file() else []):
                h.update(f.read_bytes())
            digest = h.hexdigest()[:16]
        ctx.hashes["weights"] = digest
    return ctx.hashes["weights"]


def expected_generation_s(
    ctx: Context, entry, n: int, task: str = "construction", script: str | None = None
) -> float | None:
    """Seconds the model's n answer(s) to a task take to write before they are measured, as
    `--stop-after` needs them: 0 where they are written already (`--generate-only`, an earlier
    run), else the upper median of the generation times of the task's n-answer files written so
    far (None: none yet, unknown). A best-of-4 run whose generation phase left answers undone wrote
    them while measuring, past its deadline, and the command's time limit lost its results."""
    if suggestions_path(ctx, entry, n, task, script).exists():
        return 0.0
    times = []
    for path in (ctx.out_dir / "model").glob(f"*-{task}-n{n}-*.json"):
        try:
            times.append(float(json.loads(path.read_text(encoding="utf-8"))["generation_s"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a file another shard is writing, or not an answer file
    return sorted(times)[len(times) // 2] if times else None


def expected_improvement_s(ctx: Context, entry, sizes) -> float | None:
    """`expected_generation_s` of a workload's improvement answers, one per n of SIZES, summed (None:
    unknown). The script the model improves is the workload's own where it has one; with several,
    the fastest, which only measuring tells, so only the times of answers written so far count."""
    script = entry.scripts[0].read_text(encoding="utf-8") if len(entry.scripts) == 1 else None
    total = 0.0
    for n in sizes:
        seconds = expected_generation_s(ctx, entry, n, "improvement", script)
        if seconds is None:
            return None
        total += seconds
    return total


def suggestions_path(ctx: Context, entry, n: int, task: str, script: str | None) -> Path:
    digest = hashlib.sha256(_suggestions_key(ctx, entry, n, task, script).encode()).hexdigest()[:12]
    return ctx.out_dir / "model" / f"{entry.name}-{task}-n{n}-{digest}.json"


def _suggestions(ctx: Context, entry, suggest, n: int, task: str, script: str | None) -> tuple:
    """(scripts, generation seconds, the host that generated them, seconds this process spent loading
    the model before them or None, each script's origin or None) for a task, generated once and kept
    under OUT_DIR/model (a rerun reuses them, and so does a run on another machine given that folder).
    Loading the model (imports, weights, grammar compiler: once per process, as the language server
    does at start) is start-up, timed apart: the generation seconds are the request's own. The origins
    ("model", "completed", "tensor_core": `dragon_model.api.candidate_origin`) come from
    `suggest.with_origins` where the model offers it; answers stored without them have None."""
    path = suggestions_path(ctx, entry, n, task, script)
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return data["scripts"], data["generation_s"], data.get("host"), data.get("model_load_s"), data.get("origins")
    _check_version(ctx)
    load_s = _load_model(ctx, suggest)
    t0 = time.perf_counter()
    request = dict(workload=str(entry.path), target=ctx.target.spec, script=script, n=n, model_path=ctx.model_path)
    with_origins = getattr(suggest, "with_origins", None)
    if with_origins is not None:
        pairs = list(with_origins(**request))
        texts, origins = [t for t, _ in pairs], [o for _, o in pairs]
    else:
        texts, origins = list(suggest(**request)), None
    gen_s = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "scripts": texts,
        "generation_s": gen_s,
        "key": json.loads(_suggestions_key(ctx, entry, n, task, script)),
        "host": host(),
        "model_load_s": load_s,
        "origins": origins,
    }
    write_json(path, data)  # whole or absent: a killed generation is done again
    return texts, gen_s, data["host"], load_s, origins


def _load_model(ctx: Context, suggest) -> float | None:
    """Seconds spent loading the model for this run's target in this process (0 once loaded), or None
    where the suggestion function offers no separate loading (`suggest.load`)."""
    load = getattr(suggest, "load", None)
    if load is None:
        return None
    t0 = time.perf_counter()
    load(model_path=ctx.model_path, target=ctx.target.spec)
    return time.perf_counter() - t0
