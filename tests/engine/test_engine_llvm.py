"""The engine on llvm: real fixture schedules verify and time; wrong, partial and broken
candidates come back as data; the results cache answers repeats."""

from __future__ import annotations

import pytest

from dragon_dsl.engine import Status

from .engine_helpers import (
    LLVM,
    MISSING_BLOCK,
    fixture_traces,
    float16_accumulator,
    partial_write,
    plain_schedule,
    workload,
)


@pytest.mark.parametrize("name", ["matmul_64", "softmax_64", "gather_64", "inplace_add_64", "dense_u8i8_16x32x16"])
def test_fixture_schedules_verify(llvm_engine, name):
    traces = fixture_traces(name, LLVM)
    assert traces
    results = llvm_engine.measure(workload(name), traces, level="verify", use_cache=False)
    for r in results:
        assert r.status is Status.OK, r.message
        assert r.n_checked == 3 + 2  # three random input sets, zeros, large values
        assert r.latency_us is None and r.build_s > 0 and r.run_s > 0


def test_time_level_gives_a_median_of_repeats(llvm_engine):
    (r,) = llvm_engine.measure(
        workload("matmul_64"), fixture_traces("matmul_64", LLVM, limit=1), level="time", repeat=4, use_cache=False
    )
    assert r.ok and len(r.latencies_us) == 4 and all(t > 0 for t in r.latencies_us)
    ordered = sorted(r.latencies_us)
    assert r.latency_us == pytest.approx((ordered[1] + ordered[2]) / 2)


def test_wrong_result_is_a_numeric_mismatch(llvm_engine):
    (r,) = llvm_engine.measure(workload("matmul_64"), [float16_accumulator()], level="verify", use_cache=False)
    assert r.status is Status.NUMERIC_MISMATCH, r.message
    assert "output C" in r.message and r.max_abs_err > 1e-3 and r.level == "verify"


def test_output_never_written_is_caught(llvm_engine):
    (r,) = llvm_engine.measure(workload("partial_write"), [partial_write()], level="time", use_cache=False)
    assert r.status is Status.UNWRITTEN_OUTPUT, r.message
    assert "32 of 64 values were never written" in r.message and r.latency_us is None


def test_replay_errors_carry_tvms_message(llvm_engine):
    rejected = [[["Split", ["l0"], [], ["l1"]]], []]  # caught by the Dragon decoder before TVM sees it
    missing, bad = llvm_engine.measure(workload("matmul_64"), [MISSING_BLOCK, rejected], level="time")
    assert missing.status is Status.REPLAY_ERROR
    assert "Cannot find a block with the name: no_such_block" in missing.message
    assert bad.status is Status.REPLAY_ERROR and bad.message.startswith("trace rejected")


def test_results_cache_answers_repeats_and_duplicates(llvm_engine):
    trace = plain_schedule("matmul_64", "C")
    first, duplicate = llvm_engine.measure(workload("matmul_64"), [trace, trace], level="verify")
    assert first.ok and not first.cached and duplicate.cached and duplicate.n_checked == first.n_checked
    (again,) = llvm_engine.measure(workload("matmul_64"), [trace], level="verify")
    assert again.cached and again.n_checked == first.n_checked and again.trace_hash == first.trace_hash
    (build_only,) = llvm_engine.measure(workload("matmul_64"), [trace], level="build")
    assert build_only.cached  # a verified result answers a build request
    (timed,) = llvm_engine.measure(workload("matmul_64"), [trace], level="time")
    assert not timed.cached and timed.latency_us is not None  # but not a timing request
    (fresh,) = llvm_engine.measure(workload("matmul_64"), [trace], level="verify", use_cache=False)
    assert not fresh.cached and fresh.ok


def test_baselines(llvm_engine):
    # on a CPU the unscheduled program is the verifier's reference itself: timed, not compared with
    # its own outputs; so is the same program as a candidate (an empty trace: one in every workload
    # of a label batch), while any scheduled candidate is compared on every input set
    base = llvm_engine.baseline(workload("matmul_64"), kind="unscheduled", use_cache=False)
    assert base.ok and base.latency_us > 0 and base.n_checked == 0
    scheduled = fixture_traces("matmul_64", LLVM, limit=1)[0]
    same, other = llvm_engine.measure(workload("matmul_64"), [[[], []], scheduled], level="time", use_cache=False)
    assert same.ok and same.latency_us > 0 and same.n_checked == 0
    assert other.ok and other.n_checked == 5
    with pytest.raises(ValueError):
        llvm_engine.baseline(workload("matmul_64"), kind="dlight")


def test_run_measures_baselines_beside_the_tasks(llvm_engine):
    """`run(tasks, baselines=...)`: the tasks' Results in order, then one per baseline, in one call."""
    from dragon_dsl.engine import Task

    tasks = [
        Task(workload("matmul_64"), t, level="verify", use_cache=False)
        for t in fixture_traces("matmul_64", LLVM, limit=1)
    ]
    assert tasks
    results = llvm_engine.run(
        tasks, baselines=[(workload("matmul_64"), "unscheduled"), (workload("row_sum_64x256"), "unscheduled")]
    )
    assert len(results) == len(tasks) + 2
    assert all(r.ok for r in results)
    matmul, row_sum = results[len(tasks) :]
    # in order: the unscheduled 64^3 matmul does 16x the work of the 64x256 row sum
    assert matmul.latency_us > 2 * row_sum.latency_us > 0
    with pytest.raises(ValueError, match="dlight"):
        llvm_engine.run([], baselines=[(workload("matmul_64"), "dlight")])


def test_prepare_stores_references_in_the_cache(llvm_engine):
    from dragon_dsl.engine import keys
    from dragon_dsl.engine.reference import config_key, from_bytes

    names = ["row_sum_64x256", "transpose_64x32"]
    llvm_engine.prepare([workload(n) for n in names], seeds=4)
    for name in names:
        data = llvm_engine.cache.get_reference(keys.load(workload(name)).hash, config_key(4))
        ref = from_bytes(data)
        assert [s[0] for s in ref.sets] == ["random0", "random1", "random2", "random3", "zeros", "large"]
        assert [a.name for a in ref.outputs] == (["row_sum"] if name.startswith("row") else ["B"])


def test_reference_of_a_workload_too_large_for_the_database(llvm_engine, monkeypatch):
    """A reference over the database's blob limit is kept in a file beside it: Engine.reference
    gives it (the vendor baseline of `dragon eval` once read it from the cache and crashed on big
    workloads), and a later run finds it instead of computing it again (a resumed evaluation
    spent minutes on the CPU references of large GEMMs)."""
    from dragon_dsl.engine import keys
    from dragon_dsl.engine.reference import config_key, from_bytes

    monkeypatch.setattr(type(llvm_engine.cache), "MAX_REFERENCE_BYTES", 16)
    ref = llvm_engine.reference(workload("inplace_add_64"), seeds=2)
    key = (keys.load(workload("inplace_add_64")).hash, config_key(2))
    assert llvm_engine.cache.reference_file(*key).is_file()
    kept = from_bytes(llvm_engine.cache.get_reference(*key))
    assert [s[0] for s in ref.sets] == [s[0] for s in kept.sets] == ["random0", "random1", "zeros", "large"]


def test_a_reference_computed_in_parts_stays_in_parts(llvm_engine, monkeypatch):
    """A big workload's input sets are computed by several build workers at once; the reference is
    their folder of parts, read by the device workers as it is (no merged copy is written: for an
    RMSNorm of 7671 x 2560 that copy was 7 s of the engine's process), and it holds what one
    computation of every set gives, in set order."""
    from pathlib import Path

    import numpy as np

    from dragon_dsl.engine import engine as engine_module
    from dragon_dsl.engine import keys, reference
    from dragon_dsl.engine.reference import config_key, from_bytes
    from dragon_dsl.engine.worker import _parse

    monkeypatch.setattr(engine_module, "SMALL_REFERENCE_FLOPS", 0)
    ref = llvm_engine.reference(workload("transpose_64x32"), seeds=5)
    wl = keys.load(workload("transpose_64x32"))
    folder = Path(llvm_engine._known_reference(wl, 5))
    assert sorted(f.name for f in folder.iterdir()) == [f"part{i}.npz" for i in range(7)]
    whole = reference.compute(_parse(wl.text), wl.seed, 5)
    cached = from_bytes(llvm_engine.cache.get_reference(wl.hash, config_key(5)))
    for got in (ref, cached):
        assert [s[0] for s in got.sets] == [s[0] for s in whole.sets]
        for (_, ins, outs), (_, want_ins, want_outs) in zip(got.sets, whole.sets):
            assert all(np.array_equal(ins[a], want_ins[a]) for a in want_ins)
            assert all(np.array_equal(outs[a], want_outs[a]) for a in want_outs)
    # and a candidate verified against it passes
    (result,) = llvm_engine.measure(workload("transpose_64x32"), [[[], []]], level="verify", seeds=5, use_cache=False)
    assert result.ok, result.message


def test_a_large_reference_in_parts_is_cached_as_its_parts(tmp_path, monkeypatch):
    """Over the database's limit, a reference computed in parts is kept in the cache as a copy of
    its parts; a later engine verifies against that folder where it is, computing nothing."""
    from pathlib import Path

    from dragon_dsl.engine import Engine, keys
    from dragon_dsl.engine import engine as engine_module
    from dragon_dsl.engine.cache import ResultsCache
    from dragon_dsl.engine.reference import config_key

    monkeypatch.setattr(engine_module, "SMALL_REFERENCE_FLOPS", 0)
    monkeypatch.setattr(ResultsCache, "MAX_REFERENCE_BYTES", 16)
    wl = keys.load(workload("transpose_64x32"))
    path = tmp_path / "results.sqlite"
    with Engine(LLVM, workers=2, cache=path) as first:
        first.prepare([workload("transpose_64x32")], seeds=3)
        kept = first.cache.reference_path(wl.hash, config_key(3))
    assert kept.is_dir() and sorted(f.name for f in kept.iterdir()) == [f"part{i}.npz" for i in range(5)]
    with Engine(LLVM, workers=2, cache=path) as second:
        monkeypatch.setattr(second, "_submit_reference", lambda *a: pytest.fail("computed again"))
        assert Path(second._known_reference(wl, 3)) == kept
        (result,) = second.measure(workload("transpose_64x32"), [[[], []]], level="verify", seeds=3, use_cache=False)
    assert result.ok, result.message
