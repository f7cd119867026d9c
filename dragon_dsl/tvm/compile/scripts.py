"""Traces as the scripts every producer keeps: the corpus build, the pretraining records and the
label search's mutants. A kept script says exactly its trace (`exact_script`: decoded, printed,
encoded again and compared, up to what the codec drops on purpose: index maps' source spans), and
passes the compile check every shown script passes (`checked_scripts`: replay, the GPU checks,
`tvm.compile`)."""

from __future__ import annotations

from collections import Counter


def exact_script(trace, workload_file: str, target) -> tuple:
    """(Dragon text for TRACE, the trace that text encodes to); ValueError when the text does not
    encode back to TRACE. The returned trace is the exact encoding, so that a stored script and
    its trace agree exactly."""
    from dragon_dsl import from_trace_json, to_trace_json
    from dragon_dsl.language.codec.equal import traces_equal

    text = from_trace_json(trace, workload=workload_file, target=target)
    encoded = to_trace_json(text)
    diffs = traces_equal(encoded, trace)
    if diffs:
        raise ValueError(f"the script does not encode back to its trace ({diffs[0]})")
    return text, encoded


def rejection_reason(exc: BaseException) -> str:
    """The word a record counts a refused trace under: replay, gpu_check or compile."""
    return {"ReplayError": "replay", "BuildError": "gpu_check"}.get(type(exc).__name__, "compile")


def checked_scripts(traces, mod, target, workload_file: str, header, rejected: Counter):
    """(script text, statements) of each trace, in order, whose script `exact_script` keeps and that
    passes the compile check (`compile_checked`); each other trace is counted in REJECTED by its
    reason (codec, replay, gpu_check, compile). Lazy: a caller that wants the first stops the
    checks there."""
    from dragon_dsl.tvm.compile.build import compile_checked

    for trace in traces:
        try:
            text, encoded = exact_script(trace, workload_file, header)
        except Exception:
            rejected["codec"] += 1
            continue
        try:
            compile_checked(mod, {"trace": encoded}, target)
        except Exception as exc:
            rejected[rejection_reason(exc)] += 1
            continue
        yield text, len(encoded[0])
