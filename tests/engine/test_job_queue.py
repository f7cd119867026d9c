"""The build pool's queue (pool.JobQueue): which queued job a free worker takes. No TVM needed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dragon_dsl.engine.pool import JobQueue


@dataclass
class Job:
    payload: dict


def build(wkey, n):
    return Job({"op": "build", "wkey": wkey, "n": n})


def names(jobs):
    return [j.payload.get("wkey", "ref") + str(j.payload.get("n", "")) for j in jobs]


def pop_all(q):
    out = []
    while q:
        out.append(q.popleft())
    return out


def test_fifo_keeps_the_order_jobs_came_in():
    q = JobQueue()
    jobs = [build("a", 0), build("b", 0), Job({"op": "reference", "wkey": "a"}), build("a", 1)]
    for j in jobs:
        q.append(j)
    assert pop_all(q) == jobs
    with pytest.raises(IndexError):
        q.popleft()


# each case: the jobs appended (workload key, seconds its build takes), and the order the queue
# hands them out when every job is observed right after it is popped (one worker)
CASES = [
    # one probe of each workload first (in the order they came), then the slowest workload's
    (
        "probe each, then the slowest first",
        [("a", 1), ("a", 1), ("b", 5), ("b", 5), ("c", 2), ("c", 2)],
        ["a0", "b2", "c4", "b3", "c5", "a1"],
    ),
    # estimates are means over every reply so far: b's second build is fast, so c's go before b's third
    (
        "estimates follow the replies",
        [("b", 3), ("b", 0.5), ("b", 0.5), ("c", 2), ("c", 2)],
        ["b0", "c3", "b1", "c4", "b2"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_longest_first_order(case):
    _, jobs, expected = case
    q = JobQueue(longest_first=True)
    seconds = {}
    for n, (wkey, s) in enumerate(jobs):
        q.append(build(wkey, n))
        seconds[f"{wkey}{n}"] = s
    order = []
    while q:
        job = q.popleft()
        name = names([job])[0]
        order.append(name)
        q.observe(job, seconds[name])
    assert order == expected


def test_jobs_without_a_workload_key_go_first_and_in_order():
    q = JobQueue(longest_first=True)
    q.append(build("a", 0))
    refs = [Job({"op": "reference", "wkey": "a", "n": i}) for i in range(3)]
    for r in refs:
        q.append(r)
    q.append(Job({"op": "shutdown"}))
    got = pop_all(q)
    assert got[:3] == refs and got[3].payload == {"op": "shutdown"} and got[4].payload["wkey"] == "a"


def test_a_group_with_a_probe_running_waits_behind_unprobed_groups():
    q = JobQueue(longest_first=True)
    for n, w in enumerate("aab"):
        q.append(build(w, n))
    first = q.popleft()  # a's probe, still running
    assert names([first, q.popleft()]) == ["a0", "b2"]


def test_a_job_put_back_goes_first_in_its_group():
    q = JobQueue(longest_first=True)
    q.append(build("a", 0))
    q.append(build("a", 1))
    job = q.popleft()
    q.appendleft(job)
    assert names(pop_all(q)) == ["a0", "a1"]


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from("abcd"), st.booleans()),
        st.tuples(st.just("pop"), st.floats(0, 10), st.booleans()),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops, st.booleans())
def test_every_job_is_popped_once_and_a_group_keeps_its_order(steps, longest_first):
    q = JobQueue(longest_first=longest_first)
    appended, popped, n = [], [], 0
    for step in steps:
        if step[0] == "append":
            job = build(step[1], n) if step[2] else Job({"op": "reference", "wkey": step[1], "n": n})
            n += 1
            q.append(job)
            appended.append(job)
        elif q:
            job = q.popleft()
            popped.append(job)
            if step[2]:
                q.observe(job, step[1])
        assert len(q) == len(appended) - len(popped)
    popped += pop_all(q)
    assert sorted(j.payload["n"] for j in popped) == list(range(n))
    for key in {JobQueue.key(j) for j in appended}:
        same = [j.payload["n"] for j in popped if JobQueue.key(j) == key]
        assert same == sorted(same)


@pytest.mark.slow
def test_the_engine_takes_longest_first_or_fifo_only():
    from dragon_dsl.engine import Engine

    with pytest.raises(ValueError, match="build_order must be 'longest-first' or 'fifo'"):
        Engine("llvm", workers=1, cache=False, build_order="shortest")
