"""The model's API: scripts for a workload, and the best verified one.

suggest(workload=, target=, script=None, n=1, model_path=None) -> list[str]
    what the language server calls: up to n scripts (header included) that check and
    replay, and on GPU targets compile (`compile_problem`; a rejected one is replaced by a
    further sample); the server builds, verifies and times them itself.

recommend(workload, target="llvm", script=None, k=4, model_path=None, ...) -> Recommendation
    what `dragon suggest` / `dragon improve` print: k candidates from the model (the first
    greedy, the others sampled), validated in parallel by the measurement engine (build,
    numeric check against the unscheduled workload with fresh seeded inputs and
    NaN-poisoned outputs, timing; results cache off), the fastest verified one returned.
    With `script` (improve), the winner must also beat that script's measured latency.
    On a GPU target dlight's schedule, as a script, is measured in the same engine call,
    so the answer is never slower than dlight (`source == "dlight"` when it won). The
    baseline (dlight, or the unscheduled program on CPUs) is timed first: a candidate
    10x slower is stopped early and never shown (`slow`). When no candidate verifies, a
    budgeted MetaSchedule search runs instead and the result says so (`source == "search"`).

The work is done by one module per concern, re-exported here so that callers keep one address:
`dragon_model.candidates` (the model, its k candidates, the tensor-core candidate),
`dragon_model.checks` (why a script is rejected before it is measured), `dragon_model.recommendation`
(the measured answer), `dragon_model.repair` (the cut-back of a failing script) and
`dragon_model.search` (the MetaSchedule fallback).
"""

from __future__ import annotations

from typing import Any

from dragon_dsl.levels import SLOW_FACTOR, is_slow
from dragon_model.candidates import (
    COMPLETE_HOST_BLOCKS,
    CPU_RETRIES,
    GENERATION_SECONDS,
    GPU_RETRIES,
    TENSOR_CORE_CANDIDATE,
    TENSOR_CORE_TRIES,
    WEIGHTS,
    candidates,
    default_model_path,
    generator,
    tensor_core_candidate,
    tensor_core_template,
)
from dragon_model.checks import compile_problem, launch_problem, replay_problem
from dragon_model.recommendation import RUN_FLOOR_S, Recommendation, cut_seconds, dlight_script, explanation, recommend
from dragon_model.repair import Repair, repair, statement_lines
from dragon_model.search import search

__all__ = [
    "COMPLETE_HOST_BLOCKS",
    "CPU_RETRIES",
    "GENERATION_SECONDS",
    "GENERATION_VERSION",
    "GPU_RETRIES",
    "RUN_FLOOR_S",
    "SLOW_FACTOR",
    "TENSOR_CORE_CANDIDATE",
    "TENSOR_CORE_TRIES",
    "WEIGHTS",
    "Recommendation",
    "Repair",
    "candidate_origin",
    "candidates",
    "compile_problem",
    "cut_seconds",
    "default_model_path",
    "dlight_script",
    "explanation",
    "generator",
    "is_slow",
    "launch_problem",
    "recommend",
    "repair",
    "replay_problem",
    "search",
    "statement_lines",
    "suggest",
    "suggest_with_origins",
    "tensor_core_candidate",
    "tensor_core_template",
]

#: bumped when decoding changes what the same weights write: the evaluation keys its cached answers
#: by it. What each version changed, and why: CHANGELOG.md, "Decoder versions".
GENERATION_VERSION = 33


def suggest(
    workload=None,
    target: Any = "llvm",
    script: str | None = None,
    n: int = 1,
    model_path=None,
    max_seconds: float = GENERATION_SECONDS,
    **_ignored,
) -> list[str]:
    """Up to n scripts that check and replay on the workload (the language server's entry point)."""
    return [text for text, _origin in suggest_with_origins(workload, target, script, n, model_path, max_seconds)]


def suggest_with_origins(
    workload=None,
    target: Any = "llvm",
    script: str | None = None,
    n: int = 1,
    model_path=None,
    max_seconds: float = GENERATION_SECONDS,
    **_ignored,
) -> list[tuple]:
    """`suggest`'s scripts as (text, origin) (`candidate_origin`): `dragon eval` reports the model's
    own samples apart from the candidates it did not write."""
    if workload is None:
        raise ValueError("suggest needs a workload")
    return [
        (text, candidate_origin(g))
        for text, g in candidates(
            workload, target or "llvm", script, k=max(1, n), model_path=model_path, max_seconds=max_seconds
        )
    ][:n]


def candidate_origin(g) -> str:
    """Where a candidate's script comes from: "tensor_core" (a sample of MetaSchedule's tensor-core
    design space whose decisions the model chose: `tensor_core_candidate`), "completed" (the model's
    script with AutoBind's statements added, or a racing stage moved to a kernel of its own), else
    "model" (as the model wrote it)."""
    if getattr(g, "sample", None) is not None:
        return "tensor_core"
    if getattr(g, "completed_from", None) is not None:
        return "completed"
    return "model"
