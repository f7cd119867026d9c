"""dragon_model: the schedule-writing model, its training and constrained generation.

    import dragon_model
    dragon_model.suggest(workload="mm.tvmscript", target="llvm", script=None, n=3, model_path=None) -> [script text]
    dragon_model.recommend("mm.tvmscript", target="llvm", k=4) -> Recommendation (verified, timed, or searched)

Modules: render (workload -> prompt), names (canonical names for blocks and buffers), tokenizer
(vocabulary from the instruction table), data (corpus rows -> examples), records (training rows
from the pretraining records and the measured corpus), toy_corpus, train (SFT), rl (GRPO from
execution), decoder_grammar + replay_state + generate (constrained decoding), checks, repair,
complete (AutoBind for blocks left on the host), candidates, search (the MetaSchedule fallback),
recommendation and api (the public entry points), evaluate, reachable (can the decoder write the
training labels).
Importing this package imports neither torch nor TVM; the functions below do, when called.
"""

from __future__ import annotations


def suggest(workload=None, target="llvm", script=None, n=1, model_path=None, **kw):
    """Up to n scripts (header included) that check and replay on the workload; see api.suggest."""
    from dragon_model.api import suggest as _suggest

    return _suggest(workload=workload, target=target, script=script, n=n, model_path=model_path, **kw)


def load(model_path=None, target="llvm"):
    """Load the model for a target once per process (imports, weights, grammar compiler), so that a
    later `suggest` pays only for its own request; `dragon eval` times this apart as start-up."""
    from dragon_model.api import generator

    generator(model_path, target)


def with_origins(workload=None, target="llvm", script=None, n=1, model_path=None, **kw):
    """`suggest`'s scripts as (text, origin): "model", "completed" or "tensor_core" (see
    api.candidate_origin); `dragon eval` records each candidate's origin with it."""
    from dragon_model.api import suggest_with_origins

    return suggest_with_origins(workload=workload, target=target, script=script, n=n, model_path=model_path, **kw)


suggest.load = load
suggest.with_origins = with_origins


def recommend(workload, target="llvm", script=None, k=4, model_path=None, **kw):
    """The fastest verified script from k model candidates, or from a budgeted search; see api.recommend."""
    from dragon_model.api import recommend as _recommend

    return _recommend(workload, target=target, script=script, k=k, model_path=model_path, **kw)
