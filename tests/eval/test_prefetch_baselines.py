"""`dragon eval` measures a phase's baselines in one engine call (`methods.prefetch_baselines`):
their builds share the build workers instead of running one workload at a time (dlight took
about 3 s per workload on the H200 host, serially). The rows are the ones a call per workload
gives, with each one's own build and device seconds as its wall time."""

from pathlib import Path
from types import SimpleNamespace

from dragon_dsl.engine import Result, Status
from dragon_dsl.eval import methods as m
from dragon_dsl.eval.candidates import Context
from dragon_dsl.eval.store import WallTimes

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("transpose_64x32", "matmul_64", "row_sum_64x256")


class StubEngine:
    """Answers baselines without measuring: a batch call, and the one-workload calls it replaces."""

    def __init__(self):
        self.target = SimpleNamespace(is_gpu=True)
        self.batches, self.singles = [], []

    def baselines(self, workloads, kind="unscheduled", level="time", **timing):
        self.batches.append((list(workloads), kind, level, timing))
        return [
            Result(Status.OK, latency_us=10.0 + i, latencies_us=[10.0 + i], build_s=1.5, run_s=0.25, level="time")
            for i, _ in enumerate(workloads)
        ]

    def baseline(self, workload, kind="unscheduled", level="time", **timing):
        self.singles.append((workload, kind, level))
        return Result(Status.OK, latency_us=99.0, latencies_us=[99.0], level=level, cached=True)


def _entries():
    return [
        SimpleNamespace(
            path=ROOT / "tests/data/workloads" / f"{n}.tvmscript", name=n, family="f", params={}, scripts=[]
        )
        for n in NAMES
    ]


def test_one_engine_call_for_the_phase_and_rows_from_it(tmp_path):
    engine = StubEngine()
    ctx = Context(engine, tmp_path, WallTimes(tmp_path / "walls.json"), seeds=2, repeat=4)
    entries = _entries()
    assert m.prefetch_baselines(ctx, entries, "dlight") == 3
    assert len(engine.batches) == 1
    workloads, kind, level, timing = engine.batches[0]
    assert kind == "dlight" and level == "time" and timing == {"seeds": 2, "repeat": 4}
    rows = [m.baseline(ctx, e, "dlight") for e in entries]
    assert engine.singles == []  # nothing measured workload by workload
    assert [r["candidates"][0]["latency_us"] for r in rows] == [10.0, 11.0, 12.0]
    assert all(r["time_s"] == 1.75 and not r["candidates"][0]["cached"] for r in rows)
    # a later run finds the wall times stored and measures nothing in a batch
    again = Context(engine, tmp_path, WallTimes(tmp_path / "walls.json"), seeds=2, repeat=4)
    assert m.prefetch_baselines(again, entries, "dlight") == 0 and len(engine.batches) == 1
    assert m.baseline(again, entries[0], "dlight")["time_s"] == 1.75 and len(engine.singles) == 2  # verify, time


def test_no_batch_for_one_workload_or_dlight_on_a_cpu(tmp_path):
    engine = StubEngine()
    ctx = Context(engine, tmp_path, WallTimes(tmp_path / "walls.json"))
    assert m.prefetch_baselines(ctx, _entries()[:1], "unscheduled") == 0
    engine.target.is_gpu = False
    assert m.prefetch_baselines(ctx, _entries(), "dlight") == 0 and engine.batches == []


class StubRunEngine(StubEngine):
    """Also answers `run` (traces) and `measure` (what the per-workload path calls)."""

    def __init__(self):
        super().__init__()
        self.target = SimpleNamespace(is_gpu=True, key="stub-cuda", spec="cuda")
        self.runs, self.measured = [], []

    def run(self, tasks, baselines=(), on_result=None):
        self.runs.append(list(tasks))
        return [
            Result(Status.OK, latency_us=5.0, latencies_us=[5.0], build_s=1.0, run_s=0.5, level="time")
            if i == 0
            else Result(Status.NUMERIC_MISMATCH, "wrong", build_s=1.0, run_s=0.25, level="verify")
            for i, _ in enumerate(tasks)
        ]

    def measure(self, workload, traces, **kw):
        self.measured.append(workload)
        return [Result(Status.OK, latency_us=7.0, latencies_us=[7.0], level=kw.get("level", "time")) for _ in traces]


BODY = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n'


def test_first_answers_written_beforehand_are_measured_in_one_call(tmp_path, monkeypatch):
    from dragon_dsl.eval import model_answers
    from dragon_dsl.language.files import write_json

    monkeypatch.setattr(model_answers, "model_suggest", lambda: (lambda **kw: [BODY], ""))
    engine = StubRunEngine()
    ctx = Context(engine, tmp_path, WallTimes(tmp_path / "walls.json"), model_path=str(tmp_path / "no-weights"))
    entries = _entries()
    (tmp_path / "model").mkdir()
    for e in entries[:2]:  # written by --generate-only; the third is not
        write_json(
            model_answers.suggestions_path(ctx, e, 1, "construction", None),
            {"scripts": [BODY], "generation_s": 2.0, "host": None},
        )
    assert m.prefetch_first_answers(ctx, entries) == 2
    assert len(engine.runs) == 1 and len(engine.runs[0]) == 2
    rows = [m.model(ctx, e, 1) for e in entries]
    assert engine.measured == [str(entries[2].path)] * 2  # only the third: verify, then time
    assert [r["candidates"][0]["status"] for r in rows[:2]] == ["ok", "numeric_mismatch"]
    assert rows[0]["time_s"] == 2.0 + 1.5 and rows[1]["time_s"] is None  # generation + its own seconds
