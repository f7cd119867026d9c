"""Grouped builds (`Engine(build_group=N)`, build.build_group): several candidates of one
workload compiled as one library. Every candidate must get the result it gets when built
alone, whatever else is in its group: a replay error, a candidate whose lowering fails (which
breaks the shared compile: each is then built alone), a wrong result."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_dsl.engine import Engine, Status

from .engine_helpers import (
    LLVM,
    MISSING_BLOCK,
    fixture_traces,
    float16_accumulator,
    plain_schedule,
    too_many_threads,
    workload,
)


def _candidates():
    good = fixture_traces("matmul_64", LLVM)
    return {
        "fixture 0": good[0],
        "replay error": MISSING_BLOCK,
        "fixture 1": good[1],
        "wrong result": float16_accumulator(),
        "plain": plain_schedule("matmul_64", "C"),
    }


# (the group's members, what each one's result must be)
CASES = {
    "all build": ["fixture 0", "fixture 1", "plain"],
    "with a replay error and a wrong result": ["fixture 0", "replay error", "wrong result", "plain"],
    "with a lowering failure": ["fixture 0", "thread binding on a CPU", "plain"],
}


@pytest.fixture(scope="module")
def engines():
    alone = Engine(LLVM, workers=1, cache=False)
    grouped = Engine(LLVM, workers=1, cache=False, build_group=8)
    yield alone, grouped
    alone.close()
    grouped.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_group_gives_each_candidate_its_own_result(engines, case):
    alone, grouped = engines
    known = {**_candidates(), "thread binding on a CPU": too_many_threads()}
    traces = [known[name] for name in CASES[case]]
    jobs = alone.stats()["build_jobs"], grouped.stats()["build_jobs"]
    expected = alone.measure(workload("matmul_64"), traces, level="verify")
    got = grouped.measure(workload("matmul_64"), traces, level="verify")
    assert alone.stats()["build_jobs"] - jobs[0] == len(traces)
    assert grouped.stats()["build_jobs"] - jobs[1] == 1  # one job for the whole group
    assert [(r.status, r.level, r.n_checked) for r in got] == [(r.status, r.level, r.n_checked) for r in expected]
    for r, e in zip(got, expected):
        if e.status is not Status.OK:
            assert r.message == e.message


@pytest.mark.parametrize("level", ["build", "verify"])
def test_a_groups_library_goes_when_its_last_candidate_is_done(engines, level):
    _, grouped = engines
    known = _candidates()
    results = grouped.measure(
        workload("matmul_64"), [known["fixture 0"], known["fixture 1"], known["plain"]], level=level
    )
    assert all(r.ok for r in results)
    assert not list(grouped._workdir.rglob("mod.so"))


def test_grouped_candidates_are_timed_through_their_own_entry(engines):
    _, grouped = engines
    known = _candidates()
    fast, slow = grouped.measure(workload("matmul_64"), [known["fixture 0"], known["plain"]], level="time", repeat=3)
    # a grouped library has no "main": timing it by the wrong name would be a launch error
    assert fast.ok and slow.ok and len(fast.latencies_us) == len(slow.latencies_us) == 3, (fast.message, slow.message)


def test_group_replies_share_one_library_with_one_entry_each(tmp_path):
    import tvm

    from dragon_dsl.engine.build import build_group
    from dragon_dsl.tvm.workload import load_workload

    known = _candidates()
    sources = [{"trace": known[name]} for name in ("fixture 0", "replay error", "plain")]
    replies = build_group(load_workload(workload("matmul_64")), sources, tvm.target.Target(LLVM), tmp_path)
    assert [r["status"] for r in replies] == ["ok", "replay_error", "ok"]
    assert replies[0]["artifact"] == replies[2]["artifact"] == str(tmp_path / "mod.so")
    assert (replies[0]["entry"], replies[2]["entry"]) == ("main_c0", "main_c2")
    lib = tvm.runtime.load_module(replies[0]["artifact"])
    assert lib["main_c0"] is not None and lib["main_c2"] is not None
    assert all(r["build_s"] > 0 for r in replies)


def test_a_lowering_failure_falls_back_to_one_build_each(tmp_path):
    import tvm

    from dragon_dsl.engine.build import build_group
    from dragon_dsl.tvm.workload import load_workload

    sources = [{"trace": plain_schedule("matmul_64", "C")}, {"trace": too_many_threads()}]
    replies = build_group(load_workload(workload("matmul_64")), sources, tvm.target.Target(LLVM), tmp_path)
    assert [r["status"] for r in replies] == ["ok", "build_error"]
    assert Path(replies[0]["artifact"]).parent == tmp_path / "c0" and "entry" not in replies[0]


@pytest.mark.parametrize("size", [0, -1, 1.5, "8"])
def test_build_group_must_be_a_positive_integer(size):
    with pytest.raises(ValueError, match="build_group must be a positive integer"):
        Engine(LLVM, workers=1, cache=False, build_group=size)


@pytest.mark.parametrize(
    "counts, workers, most, sizes",
    [
        ([], 4, 8, []),
        ([0], 4, 8, [[]]),
        ([1], 4, 8, [[1]]),
        ([5], 1, 8, [[5]]),
        ([12], 1, 8, [[6, 6]]),  # two groups, as even as can be
        ([64], 16, 8, [[4] * 16]),  # every worker busy rather than 8 groups of 8
        ([64], 2, 8, [[8] * 8]),
        ([10], 16, 8, [[1] * 10]),  # more workers than candidates: one each
        ([9], 2, 4, [[3, 3, 3]]),
        ([7], 3, 1, [[1] * 7]),  # grouping off
        # many workloads in one call: the size is the call's, not each workload's own share
        ([42] * 24, 16, 8, [[7] * 6] * 24),
        ([42, 3, 1], 16, 8, [[3] * 14, [3], [1]]),  # 16 jobs for 16 workers
        ([10, 10], 16, 8, [[1] * 10] * 2),
        ([10, 10], 4, 8, [[5, 5], [5, 5]]),
        ([17, 0, 2], 2, 8, [[6, 6, 5], [], [2]]),
    ],
)
def test_group_sizes(counts, workers, most, sizes):
    from dragon_dsl.engine.batch import group_sizes

    got = group_sizes(counts, workers, most)
    assert got == sizes and [sum(g) for g in got] == counts
    assert all(max(g) <= max(1, most) and max(g) - min(g) <= 1 for g in got if g)
    if sum(counts):
        assert sum(len(g) for g in got) >= min(workers, sum(counts))
