"""What `recommend` shows: the answer without statements that have no effect (the exact
trace kept beside it), and on `improve`, the given script as the answer when nothing beats it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from dragon_model import recommendation

EXAMPLES = Path(__file__).resolve().parents[2] / "dragon_dsl" / "examples"
WORKLOAD = EXAMPLES / "matmul_256.tvmscript"


def _request(**kw):
    engine = SimpleNamespace(target=SimpleNamespace(is_gpu=False))
    base = dict(
        workload=str(WORKLOAD),
        target="llvm",
        wl_text=WORKLOAD.read_text(),
        spec={"kind": "llvm", "num-cores": 2},
        level="time",
        engine=engine,
        log=lambda m: None,
        stage=lambda *a: None,
    )
    return recommendation._Request(**{**base, **kw})


def test_the_shown_answer_has_no_statement_without_effect_and_still_replays():
    pytest.importorskip("tvm")
    from dragon_dsl import check_text, from_trace_json

    trace = json.loads((EXAMPLES / "matmul_256.llvm.trace.json").read_text())
    exact = from_trace_json(trace, workload="matmul_256.tvmscript", target="llvm")
    assert any(d.code == "DRG104" for d in check_text(exact)[1]), "the shipped trace has one"
    shown = recommendation._without_unused(exact, _request())
    assert shown != exact
    assert not [d for d in check_text(shown)[1] if d.severity.value != "info"]
    from dragon_model.checks import replay_problem

    assert replay_problem(shown, WORKLOAD.read_text()) is None


def test_improve_answers_with_the_given_script_when_nothing_beats_it(monkeypatch):
    monkeypatch.setattr(recommendation, "search", lambda *a, **k: [])  # the fallback search finds nothing
    req = _request(given_script='workload "matmul_256.tvmscript"\nb0 = get_sblock("C")\n')
    tried = [
        {"source": "model", "script": "a", "status": "ok", "latency_us": 120.0},
        {"source": "model", "script": "b", "status": "ok", "latency_us": 130.0},
        {"source": "model", "script": "c", "status": "build_error", "latency_us": None},
    ]
    given = SimpleNamespace(ok=True, latency_us=100.0)
    best, note = recommendation._choose(req, tried, given, True, 2, 2)
    assert best["source"] == "given" and best["script"] == req.given_script and best["latency_us"] == 100.0
    assert (
        note
        == "your script is already the fastest of 3 verified candidate(s) (100.000 us; the fastest other: 120.000 us)"
    )


def test_nothing_verified_and_nothing_given_is_no_answer_not_a_crash(monkeypatch):
    monkeypatch.setattr(recommendation, "search", lambda *a, **k: [])
    tried = [{"source": "model", "script": "a", "status": "build_error", "latency_us": None}]
    best, note = recommendation._choose(_request(), tried, None, True, 2, 2)
    assert best is None and note.startswith("no model candidate verified; fell back to a MetaSchedule search")


def test_generation_progress_tells_the_count_and_the_time_to_go(monkeypatch):
    clock = [10.0]
    monkeypatch.setattr(recommendation, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    said = []
    progress = recommendation._generation_progress(_request(stage=lambda *a: said.append(a)), 10.0)
    clock[0] = 40.0
    progress(1, 4)
    clock[0] = 100.0
    progress(4, 4)
    assert said == [("generating", "1/4 candidate(s), about 90 s to go"), ("generating", "4/4 candidate(s)")]
