"""Real TVM traces round-trip exactly and replay to structurally equal modules.

Fixtures (tests/data, made by tests/data/make_traces.py): MetaSchedule design
spaces and sampled, post-processed candidates for both targets, hand-written
schedules covering all 52 instruction kinds, and the raw records of a short CPU
tuning run. For each trace t:
  * to_trace_json(from_trace_json(t)) == t as plain JSON with types, index maps structurally;
  * replaying the decoded trace on a fresh schedule gives a module structurally
    equal to replaying t (TVM's verify_trace_roundtrip idea).
"""

from __future__ import annotations

from collections import Counter

import pytest
from tracetools import (
    database_module,
    ensure_tensor_intrin,
    fixture_lines,
    graphs,
    traces_equal,
    tuning_records,
    tvm_graphs_equal,
    workload_module,
)

import dragon_dsl
from dragon_dsl.language.table import BY_KIND

LINES = fixture_lines()
TUNED = tuning_records()
ALL = LINES + TUNED


def _id(rec) -> str:
    t = rec["target"]
    tname = t if isinstance(t, str) else t["kind"]
    return f"{rec['source']}:{rec['workload']}:{tname}"


def test_fixture_coverage():
    by_target = Counter()
    workloads = {"cuda": set(), "llvm": set()}
    for rec in LINES:
        if rec["source"] in ("design_space", "sampled"):
            key = "cuda" if isinstance(rec["target"], str) else "llvm"
            workloads[key].add(rec["workload"])
            by_target[(key, rec["source"])] += 1
    assert len(workloads["cuda"]) >= 20 and len(workloads["llvm"]) >= 20, workloads
    assert all(by_target[(k, s)] > 0 for k in ("cuda", "llvm") for s in ("design_space", "sampled"))
    assert any("EnterPostproc" in [i[0] for i in rec["trace"][0]] for rec in LINES if rec["source"] == "sampled")
    assert TUNED, "the tuning fixtures hold records"
    kinds = {inst[0] for rec in ALL for inst in rec["trace"][0]}
    assert sorted(set(BY_KIND) - kinds) == []


def test_every_trace_round_trips_exactly():
    failures = []
    for rec in ALL:
        t = rec["trace"]
        try:
            text = dragon_dsl.from_trace_json(t, workload=f"{rec['workload']}.tvmscript", target=rec["target"])
            back = dragon_dsl.to_trace_json(text)
        except dragon_dsl.DragonError as exc:
            failures.append(f"{_id(rec)}: {exc}")
            continue
        diff = traces_equal(t, back)
        if diff:
            failures.append(f"{_id(rec)}: {diff[:3]}")
    assert failures == [], f"{len(failures)} of {len(ALL)} traces differ:\n" + "\n".join(failures[:20])


def test_split_bools_keep_their_database_encoding():
    """MetaSchedule's database writes Split's bools as 1/0: they stay integers."""
    splits = [i for rec in TUNED for i in rec["trace"][0] if i[0] == "Split"]
    assert splits and all(type(i[2][0]) is int for i in splits)
    rec = TUNED[0]
    back = dragon_dsl.to_trace_json(dragon_dsl.from_trace_json(rec["trace"]))
    assert [i[2] for i in back[0] if i[0] == "Split"] == [i[2] for i in rec["trace"][0] if i[0] == "Split"]


def test_index_maps_are_structurally_equal_for_tvm():
    checked = 0
    for rec in ALL:
        t = rec["trace"]
        found = list(graphs(t))
        if not found:
            continue
        back = list(graphs(dragon_dsl.to_trace_json(dragon_dsl.from_trace_json(t))))
        assert len(back) == len(found)
        for a, b in zip(found, back):
            assert tvm_graphs_equal(a, b), _id(rec)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("rec", ALL, ids=[_id(r) + f":{n}" for n, r in enumerate(ALL)])
def test_replay_of_decoded_trace_is_structurally_equal(rec):
    import tvm

    from dragon_dsl.tvm.trace import apply

    if rec.get("needs_tensor_intrin"):
        ensure_tensor_intrin()
    mod = database_module(rec["db"]) if rec["source"] == "tuned" else workload_module(rec["workload"])
    t = rec["trace"]
    back = dragon_dsl.to_trace_json(dragon_dsl.from_trace_json(t))
    expected = apply(t, mod).mod
    got = apply(back, mod).mod
    tvm.ir.assert_structural_equal(got, expected)


def _partitioned(make_factors):
    """A trace that partitions the inner loop of ew_add_relu_128x64's `add` (extent 64) by real TVM."""
    import tvm

    from dragon_dsl.tvm.trace import trace_json

    sch = tvm.s_tir.Schedule(workload_module("ew_add_relu_128x64"), seed=7)
    _, j = sch.get_loops(sch.get_sblock("add"))
    parts = sch.loop_partition(j, make_factors(sch, j))
    return trace_json(sch), len(parts)


@pytest.mark.parametrize(
    "case,factors,parts",
    [
        ("constants that leave a rest", lambda sch, j: [8, 16], 3),
        ("one constant", lambda sch, j: [40], 2),
        ("a None factor takes the rest", lambda sch, j: [8, None], 2),
        ("sampled perfect tile", lambda sch, j: sch.sample_perfect_tile(j, n=2), 3),
        (
            "sampled partitioned tile",
            lambda sch, j: sch.sample_partitioned_tile(j, n=3, partition_pos=1, innerpart_factor=4),
            4,
        ),
    ],
)
def test_loop_partition_with_a_rest_round_trips_and_replays(case, factors, parts):
    """TVM makes one more part than factors when no factor is None (the rest of the loop)."""
    import tvm

    from dragon_dsl.tvm.trace import apply

    t, made = _partitioned(factors)
    assert made == parts and len(t[0][-1][3]) == parts
    text = dragon_dsl.from_trace_json(t)
    back = dragon_dsl.to_trace_json(text)
    assert traces_equal(t, back) == []
    mod = workload_module("ew_add_relu_128x64")
    tvm.ir.assert_structural_equal(apply(back, mod).mod, apply(t, mod).mod)
    # one name fewer (or more) than TVM binds is a checker error, not a TVM internal error
    names = text.splitlines()[-1].split(" = ")[0].split(", ")
    for wrong in (names[:-1], names + ["l99"]):
        bad = text.replace(", ".join(names) + " =", ", ".join(wrong) + " =")
        _, diags = dragon_dsl.check_text(bad)
        assert "DRG206" in [d.code for d in diags], bad


def test_the_cache_read_guard_replays_only_where_tvm_could_crash():
    """MetaSchedule's GPU tiling names the block itself as cache_read's only consumer, on workloads
    without nested blocks: no prefix is replayed for a look (the look could only find nothing)."""
    from dragon_dsl.tvm.trace import _guarded

    looks = skipped = 0
    mods: dict = {}
    for rec in LINES:
        if rec["source"] != "sampled" or not isinstance(rec["target"], str):
            continue
        mod = mods.get(rec["workload"]) or mods.setdefault(rec["workload"], workload_module(rec["workload"]))
        every, needed = _guarded(rec["trace"]), _guarded(rec["trace"], mod)
        assert set(needed) <= set(every)
        looks += len(every)
        skipped += len(every) - len(needed)
    assert looks and skipped == looks, (looks, skipped)
