"""The MetaSchedule method measures the fastest valid record of its database: read through the
bridge's one reader of tuning records (dragon_dsl.tvm.database), failures (1e10 s) skipped."""

from __future__ import annotations

import json

from dragon_dsl.eval.metaschedule import best_record


def _record(trace_tag, secs):
    return json.dumps([0, [[[["GetSBlock", [], [trace_tag, "main"], ["b0"]]], []], secs, {"kind": "llvm"}, []]])


def test_fastest_valid_record_first_of_equals(tmp_path):
    assert best_record(tmp_path) == (None, None, 0, 0)
    (tmp_path / "database_tuning_record.json").write_text(
        "\n".join(
            [
                _record("failed", [1e10, 1e10]),
                _record("slow", [3e-6, 5e-6]),
                _record("unmeasured", None),
                _record("fast", [1e-6, 2e-6]),
                _record("fast-too", [2e-6, 1e-6]),
            ]
        )
        + "\n"
    )
    trace, us, n, valid = best_record(tmp_path)
    assert trace[0][0][2][0] == "fast" and abs(us - 1.5) < 1e-9 and (n, valid) == (5, 3)


def test_only_failures(tmp_path):
    (tmp_path / "database_tuning_record.json").write_text(_record("failed", [1e10]) + "\n")
    assert best_record(tmp_path) == (None, None, 1, 0)
