"""The evaluation's log line per measurement (what a device call's log says): elapsed time in the run,
method, task, workload, status, the candidates' outcomes or the reason, and the measurement's duration."""

import pytest

from dragon_dsl.eval import harness

ROW = {"workload": "mm", "task": "construction", "method": "model-best-of-4", "status": "measured", "reason": ""}

CASES = [
    (
        {
            **ROW,
            "candidates": [{"status": "ok"}, {"status": "timeout"}, {"status": "build_error"}, {"status": "timeout"}],
        },
        "[   12.5 s] model-best-of-4 construction mm: measured 1/4 verified, failed: build_error, timeout in 2.5 s",
    ),
    (
        {**ROW, "method": "vendor", "candidates": [{"status": "ok"}]},
        "[   12.5 s] vendor construction mm: measured 1/1 verified in 2.5 s",
    ),
    (
        {**ROW, "status": "not_available", "reason": "the model cannot generate here (no xgrammar)", "candidates": []},
        "[   12.5 s] model-best-of-4 construction mm: not_available (the model cannot generate here (no xgrammar)) in 2.5 s",
    ),
]


@pytest.mark.parametrize("row,expected", CASES)
def test_line(monkeypatch, row, expected):
    monkeypatch.setattr(harness.time, "perf_counter", lambda: 112.5)
    assert harness._line(100.0, 110.0, row) == expected
