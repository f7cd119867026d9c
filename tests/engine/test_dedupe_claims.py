"""`dragon measure`'s dedupe claims a candidate's program twice: its scheduled module right after
the replay (before any check or lowering), then, for GPU targets, its lowered source. A copy found
at the first claim costs no lowering; one found at the second still holds its first claim, so
its own copies get the result it gets."""

from __future__ import annotations

import pytest

from dragon_dsl.engine import Engine, Status, Task
from dragon_dsl.engine.build import build, lowered_key, scheduled_key

from .engine_helpers import H100, fixture_traces, too_many_threads, workload

TAG = "t0"


def same_program(trace: list) -> list:
    """TRACE with a GetSBlock of its first block in front: another trace, the same scheduled module."""
    insts, decisions = trace
    first = next(inst for inst in insts if inst[0] == "GetSBlock")
    extra = ["GetSBlock", [], list(first[2]), ["b_same"]]
    return [[extra] + insts, [[index + 1, decision] for index, decision in decisions]]


def noted(trace: list) -> list:
    """TRACE with a block annotation the lowering drops: another scheduled module, the same source."""
    insts, decisions = trace
    block = next(inst for inst in insts if inst[0] == "GetSBlock")[3][0]
    return [insts + [["Annotate", [block, '"kept by nothing"'], ["dragon.note"], []]], decisions]


@pytest.fixture(scope="module")
def matmul():
    import tvm

    from dragon_dsl.tvm.workload import load_workload

    return load_workload(workload("matmul_64")), tvm.target.Target(H100), fixture_traces("matmul_64", H100, limit=1)[0]


def keys_of(mod, trace, target):
    from dragon_dsl.tvm.compile import checked_schedule

    phases: dict = {}
    scheduled = checked_schedule(mod, {"trace": trace}, target, phases)
    return scheduled_key(scheduled, TAG), lowered_key(phases["lowered"], TAG)


def test_the_annotated_trace_differs_before_lowering_only(matmul):
    mod, target, trace = matmul
    first, second = keys_of(mod, trace, target), keys_of(mod, noted(trace), target)
    assert first[0] != second[0] and first[1] == second[1]
    assert keys_of(mod, same_program(trace), target) == first


def test_a_copy_of_a_claimed_scheduled_module_is_found_before_the_checks(matmul, tmp_path):
    mod, target, trace = matmul
    s_key, _ = keys_of(mod, trace, target)
    (tmp_path / s_key).touch()  # another build holds it
    reply = build(mod, {"trace": same_program(trace)}, target, tmp_path / "out", {"dir": str(tmp_path), "tag": TAG})
    assert (reply["status"], reply["source_key"], reply["claimed"]) == ("duplicate", s_key, [])
    assert not (tmp_path / "out").exists()


def test_a_copy_found_at_the_lowered_source_keeps_its_first_claim(matmul, tmp_path):
    mod, target, trace = matmul
    s_key, l_key = keys_of(mod, noted(trace), target)
    (tmp_path / l_key).touch()
    reply = build(mod, {"trace": noted(trace)}, target, tmp_path / "out", {"dir": str(tmp_path), "tag": TAG})
    assert (reply["status"], reply["source_key"], reply["claimed"]) == ("duplicate", l_key, [s_key])
    assert (tmp_path / s_key).exists()


def test_a_candidate_failing_the_checks_holds_its_claim_and_its_copy_gets_the_failure(matmul, tmp_path):
    mod, target, _ = matmul
    bad = too_many_threads()
    first = build(mod, {"trace": bad}, target, tmp_path / "a", {"dir": str(tmp_path), "tag": TAG})
    assert first["status"] == "build_error" and len(first["claimed"]) == 1
    copy = build(mod, {"trace": same_program(bad)}, target, tmp_path / "b", {"dir": str(tmp_path), "tag": TAG})
    assert (copy["status"], copy["source_key"]) == ("duplicate", first["claimed"][0])


@pytest.mark.slow
def test_copies_at_either_claim_get_the_first_builds_verdict_in_one_engine_call(matmul):
    """One build worker, so the builds reply in order: B is built; A (B's source, another module)
    is B's copy at the second claim; C (A's module) is A's copy at the first and gets B's verdict
    through A; G is the copy of F, which breaks the GPU's limits."""
    _, _, trace = matmul
    wl = workload("matmul_64")
    traces = {
        "B": trace,
        "A": noted(trace),
        "C": same_program(noted(trace)),
        "F": too_many_threads(),
        "G": same_program(too_many_threads()),
    }
    engine = Engine(H100, workers=1, timeout_s=120.0, cache=False, dedupe_sources=True)
    try:
        results = dict(zip(traces, engine.run([Task(wl, t, level="build") for t in traces.values()])))
        assert (engine.stats()["build_jobs"], engine.duplicate_sources) == (5, 3)
    finally:
        engine.close()
    assert results["B"].status is Status.OK and not results["B"].duplicate_of
    for name in ("A", "C"):
        assert results[name].status is Status.OK and results[name].duplicate_of == results["B"].trace_hash, name
    assert results["F"].status is Status.BUILD_ERROR and not results["F"].duplicate_of
    assert (results["G"].status, results["G"].message) == (Status.BUILD_ERROR, results["F"].message)
    assert results["G"].duplicate_of == results["F"].trace_hash
