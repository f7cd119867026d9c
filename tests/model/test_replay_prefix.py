"""The decoder's replay after every statement (`replay_state.replay_prefix`) gives the same verdict
and state whether it reuses the state of the accepted script before (a query statement) or replays
and reads everything afresh, for every prefix of real scripts and for refused statements.

Data: tests/data/replay_prefix/answers.jsonl, greedy answers of the gen3 CUDA model (four
workloads, copied beside it) and of model/weights/llvm, each with the statements the decoder
refused on the way; and a few hand-written and sampled traces of tests/data/traces."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dragon_model import replay_state
from dragon_model.generate import statements_of
from dragon_model.replay_state import replay_prefix

DATA = Path(__file__).resolve().parent.parent / "data"
ANSWERS = [json.loads(line) for line in (DATA / "replay_prefix" / "answers.jsonl").read_text().splitlines()]
TRACES = [
    ("handwritten", 0),
    ("handwritten", 1),
    ("handwritten", 5),
    ("sampled", 0),
    ("sampled", 40),
    ("design_spaces", 10),
]


def _mod(path: Path):
    from dragon_dsl.tvm.workload import load_workload

    return load_workload(path)


def _fresh(body: str, mod, kind: str):
    """replay_prefix with nothing remembered: everything replayed and read afresh. The remembered
    scripts are put back afterwards, so the incremental walk goes on as the decoder's would."""
    saved = dict(replay_state._ACCEPTED)
    replay_state._ACCEPTED.clear()
    try:
        return replay_prefix(body, mod, kind)
    finally:
        replay_state._ACCEPTED.clear()
        replay_state._ACCEPTED.update(saved)


def _same(body: str, mod, kind: str, last_is_new: bool = False):
    """The verdict of BODY as the decoder gets it (LAST_IS_NEW: its statements but the last were
    accepted before), after asserting it equals the fresh replay's, which searches the whole script
    for the statement TVM rejects."""
    env, why = replay_prefix(body, mod, kind, last_is_new=last_is_new)
    fresh_env, fresh_why = _fresh(body, mod, kind)
    assert why == fresh_why, body
    assert (env is None) == (fresh_env is None), body
    if env is not None:
        assert dataclasses.asdict(env) == dataclasses.asdict(fresh_env), body
    return env, why


def _walk(body: str, mod, kind: str, refused: dict) -> int:
    """Judge every prefix of BODY as the decoder does (the refused candidates at a point first);
    returns how many statements were accepted."""
    replay_state._ACCEPTED.clear()
    assert _same("", mod, kind)[0] is not None
    done, accepted = "", 0
    for stmt in statements_of(body):
        for bad in refused.get(done, []):
            assert _same(done + bad, mod, kind, last_is_new=True)[0] is None, bad
        env, why = _same(done + stmt, mod, kind, last_is_new=True)
        if env is None:
            return accepted
        done += stmt
        accepted += 1
    return accepted


@pytest.mark.parametrize(
    "answer", ANSWERS, ids=[a["workload"].rsplit("/", 1)[-1][:40] + "-" + a["target"] for a in ANSWERS]
)
def test_decoded_answers_replay_the_same_incrementally(answer):
    mod = _mod(DATA / "replay_prefix" / answer["workload"])
    refused: dict = {}
    for r in answer["refused"]:
        refused.setdefault(r["after"], []).append(r["statement"])
    assert _walk(answer["body"], mod, answer["target"], refused) == len(list(statements_of(answer["body"])))


@pytest.mark.parametrize("source,line", TRACES)
def test_fixture_traces_replay_the_same_incrementally(source, line):
    from dragon_model.data import script_body

    row = json.loads((DATA / "traces" / f"{source}.jsonl").read_text().splitlines()[line])
    kind = row["target"]["kind"] if isinstance(row["target"], dict) else "cuda"
    mod = _mod(DATA / "workloads" / f"{row['workload']}.tvmscript")
    body = script_body(row["trace"])
    # every statement of these MetaSchedule traces is one the decoder accepts
    assert _walk(body, mod, kind, {}) == len(list(statements_of(body)))


ROW_SUM = DATA / "workloads" / "row_sum_64x256.tvmscript"
LOOPS = 'b0 = get_sblock("row_sum")\nl1, l2 = get_loops(b0)\n'


@pytest.mark.parametrize("kind", ["llvm", "cuda"])
def test_refused_statements_leave_the_next_candidate_alone(kind):
    """A mixed fuse (refused on the module it leaves), a statement TVM rejects and one the checker
    rejects, each tried before a query and a schedule change on the same prefix."""
    mod = _mod(ROW_SUM)
    refused = {LOOPS: ["l3 = fuse(l1, l2)\n", "l3, l4 = split(l1, [3, 5])\n", "l3 = get_loops(b9)\n"]}
    body = LOOPS + "l3, l4 = get_loops(b0)\nl5, l6 = split(l2, [None, 4])\nl7, l8, l9 = get_loops(b0)\n"
    assert _walk(body, mod, kind, refused) == 5
    why = replay_prefix(LOOPS + "l3 = fuse(l1, l2)\n", mod, kind)[1]
    assert "iterates both spatial and reduction iterators" in why


def test_a_query_reuses_the_state_before_it(monkeypatch):
    """The speed-up is taken: after an accepted script, a query reads only its own outputs."""
    mod = _mod(ROW_SUM)
    replay_state._ACCEPTED.clear()
    assert replay_prefix('b0 = get_sblock("row_sum")\n', mod, "llvm")[0] is not None
    full_reads = []
    monkeypatch.setattr(replay_state, "state_of", lambda *a: full_reads.append(a) or pytest.fail("read afresh"))
    env, why = replay_prefix(LOOPS, mod, "llvm")
    assert why is None and not full_reads
    assert list(env.loops) == ["l1", "l2"] and env.counter == 3


def test_a_refused_statement_after_an_accepted_prefix_costs_one_replay(monkeypatch):
    """The decoder's prefix is known to replay: TVM's refusal of the new statement is found with one
    replay of the script, not a search over its prefixes, and reads the same."""
    from dragon_dsl.tvm import trace as trace_mod

    mod = _mod(ROW_SUM)
    body = LOOPS + "l3, l4 = split(l2, [None, 4])\nl5, l6 = split(l1, [None, 8])\nl7 = fuse(l5, l6)\n"
    assert replay_prefix(body, mod, "llvm")[0] is not None
    bad = body + "l8, l9 = split(l3, [3, 5])\n"  # 3 * 5 is not the loop's extent
    applied = []
    real = trace_mod._apply
    monkeypatch.setattr(trace_mod, "_apply", lambda *a: applied.append(len(a[0][0])) or real(*a))
    env, why = replay_prefix(bad, mod, "llvm", last_is_new=True)
    assert env is None and applied == [len(list(statements_of(bad)))]
    applied.clear()
    assert _fresh(bad, mod, "llvm") == (None, why) and len(applied) > 2
