"""Schedule suggestions for the editor, validated before they are offered (runs in a worker process).

Candidates come from the schedule model when one is configured and
`dragon_model` provides `suggest(...)` (a rewrite's request and selected lines go
to it as `prompt=` and `lines=` when it takes them); until then, from a short
budgeted MetaSchedule search (`ms.tune_tir`) on the workload, which rewrites the
whole schedule and follows no request. Every candidate is then
checked like `dragon-check --level time`: replayed, built, verified against the
unscheduled workload and timed by the measurement engine (`dragon_dsl.engine`)
on the configured device. Only candidates that pass are returned, fastest first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dragon_dsl import check_text
from dragon_dsl.levels import check_text_at_level, resolve_workload
from dragon_lsp.tasks import NO_WORKLOAD, engine_for


def suggest(
    text: str,
    path: str | None,
    workload: str | None,
    target: Any,
    device: str,
    mode: str,
    options: dict,
    progress: Callable = lambda *a: None,
) -> dict:
    program, _diags = check_text(text)
    wl = resolve_workload(program, path, workload)
    if wl is None:
        return {"error": NO_WORKLOAD}
    if not Path(wl).exists():
        return {"error": f"the workload {wl} does not exist"}
    n = int(options.get("candidates", 3))
    timeout = float(options.get("timeout", 300))
    measure = engine_for(device, timeout)
    current = None
    if mode == "rewrite":
        progress("measuring the current schedule", 2)
        current = _validate(text, path, wl, target, measure)
        if current is None:
            return {
                "error": "the current schedule does not pass build, verify and time; fix it first "
                "(or use 'Suggest a schedule')"
            }
    progress("looking for candidates", 5)
    texts, source = _model_candidates(
        options.get("modelPath"),
        wl,
        target,
        text,
        mode,
        n,
        {"prompt": options.get("prompt"), "lines": options.get("lines")},
    )
    if texts is None:
        texts = _search(
            wl, target, device, int(options.get("trials", 16)), options.get("builder", "auto"), n, program, progress
        )
        source = "search"
    out = []
    for i, cand in enumerate(texts):
        progress(
            f"validating candidate {i + 1}/{len(texts)}: replay, build, verify, time", 60 + 35 * i // max(1, len(texts))
        )
        figures = _validate(cand, path, wl, target, measure)
        if figures is None:
            continue
        if current is not None and figures["latency_us"] >= current["latency_us"]:
            continue
        out.append({"text": cand, "figures": figures, "source": source})
    out.sort(key=lambda s: s["figures"]["latency_us"])
    progress("done", 100)
    return {"suggestions": out[:n], "current": current, "candidates": len(texts), "source": source}


def _validate(text, path, wl, target, measure) -> dict | None:
    report = check_text_at_level(
        text, path or "<script>", level="time", workload=str(wl), target=target, engine_for=measure
    )
    if report.errors or not report.figures.get("latency_us"):
        return None
    return dict(report.figures)


def _model_candidates(model_path, wl, target, text, mode, n, extra):
    """Scripts from the model: `dragon_model.suggest(workload=, target=, script=, n=, model_path=)` -> [text],
    with `prompt=` (the user's request) and `lines=` ((first, last) selected lines) when given and taken."""
    if not model_path:
        return None, None
    try:
        import dragon_model
    except ImportError:
        return None, None
    fn = getattr(dragon_model, "suggest", None)
    if fn is None:
        return None, None
    try:
        params = inspect.signature(fn).parameters
        takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):
        params, takes_all = {}, False
    more = {k: v for k, v in extra.items() if v is not None and (takes_all or k in params)}
    texts = fn(
        workload=str(wl), target=target, script=text if mode == "rewrite" else None, n=n, model_path=model_path, **more
    )
    return [str(t) for t in texts], "model"


# ---- the budgeted search --------------------------------------------------------------------------


def _search(wl, target, device, trials, builder_kind, n, program, progress) -> list[str]:
    from dragon_dsl.tvm.target import tune_target
    from dragon_dsl.tvm.tuning import search_scripts
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(Path(wl))
    tgt = tune_target(target)
    builder, runner = _builder_runner(builder_kind, tgt, device, mod)
    progress(f"searching: {trials} MetaSchedule trials on {tgt.kind.name}", 10)
    return search_scripts(
        mod, tgt, trials, n, builder, runner, workload_header=program.workload, target_header=program.target
    )


def _builder_runner(kind, target, device, mod):
    """The engine's MetaSchedule builder and runner when it has them (its runner also verifies
    each candidate against the workload), else TVM's stock ones (or, with builder "in-process",
    TVM's build and run functions called in this worker)."""
    from dragon_dsl.tvm.tuning import stock_builder_runner

    if kind == "auto":
        try:
            from dragon_dsl.engine import builder_and_runner

            return builder_and_runner(target, workload=mod, device=device)
        except (ImportError, AttributeError, TypeError):
            kind = "local"
    return stock_builder_runner(kind)
