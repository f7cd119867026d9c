"""`dragon suggest --budget SECONDS`: the model's writing stops when the budget is spent,
each generation gets at most the time left, and progress is reported after each candidate."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from dragon_model import candidates as cand

WORKLOAD = Path(__file__).resolve().parents[2] / "dragon_dsl" / "examples" / "matmul_256.tvmscript"


def test_a_budget_ends_the_writing_and_each_generation_gets_the_time_left(monkeypatch):
    clock = [100.0]

    class Gen:  # each generation takes 10 s of a fake clock, and writes a script of its own
        max_seconds = None
        limits: list = []

        def generate(self, workload, target, slower, temperature=0.0, seed=0, template=None):
            self.limits.append(self.max_seconds)
            clock[0] += 10.0
            return SimpleNamespace(body=f'b0 = get_sblock("C")  # {seed}\n', compiled=False)

    gen = Gen()
    monkeypatch.setattr(cand, "generator", lambda *a, **k: gen)
    monkeypatch.setattr(cand, "replay_problem", lambda *a: None)
    monkeypatch.setattr(cand, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    seen = []
    out = cand.candidates(
        str(WORKLOAD), "llvm", k=4, max_seconds=60.0, deadline=125.0, progress=lambda i, n: seen.append((i, n))
    )
    assert len(out) == 3  # the fourth would start after the budget
    assert gen.limits == [25.0, 15.0, 5.0]
    assert seen == [(1, 4), (2, 4), (3, 4)]


def test_without_a_budget_every_candidate_is_written(monkeypatch):
    class Gen:
        max_seconds = None

        def generate(self, workload, target, slower, temperature=0.0, seed=0, template=None):
            return SimpleNamespace(body=f'b0 = get_sblock("C")  # {seed}\n', compiled=False)

    monkeypatch.setattr(cand, "generator", lambda *a, **k: Gen())
    monkeypatch.setattr(cand, "replay_problem", lambda *a: None)
    assert len(cand.candidates(str(WORKLOAD), "llvm", k=4, max_seconds=60.0)) == 4
