"""model/evaluate.py at level `time`: a verified answer more than 10x slower than the unscheduled
program is `slow`, a failure in every correctness figure (correct, correct as generated, pass@k), as
in `dragon eval`, while its speed still counts (fake generator and engine: no model, no TVM)."""

from types import SimpleNamespace

import pytest


def _res(status, latency_us=None):
    return SimpleNamespace(ok=status == "ok", latency_us=latency_us, status=SimpleNamespace(value=status), message="")


class _Engine:
    """Unscheduled program: 10 us; the corpus' script: 5 us; the samples: LATENCIES."""

    def __init__(self, samples):
        self.samples = samples

    def baseline(self, text, kind):
        assert kind == "unscheduled"
        return _res("ok", 10.0)

    def measure(self, text, traces, level, use_cache):
        return [_res("ok", 5.0)] if traces == ["corpus"] else list(self.samples)


@pytest.fixture
def answer_with(monkeypatch):
    import dragon_dsl
    import dragon_model.api as api
    import dragon_model.data as data
    from dragon_model import evaluate
    from dragon_model.repair import Repair

    def run(first, samples, k):
        monkeypatch.setattr(dragon_dsl, "to_trace_json", lambda body: body)
        monkeypatch.setattr(data, "row_target", lambda r: "llvm")
        monkeypatch.setattr(api, "repair", lambda engine, text, body, level: Repair(body, first, first))
        gen = SimpleNamespace(generate=lambda *a, **kw: SimpleNamespace(body="b", statements=1, rejected=0, stop="eos"))
        row = {"workload_text": "w", "workload": "w", "family": "f", "script": "corpus"}
        return evaluate.answer(gen, _Engine(samples), "construction", row, "time", k)

    return run


def test_a_first_answer_10x_slower_than_the_program_is_slow_not_correct(answer_with):
    from dragon_model.evaluate import summarize

    slow = answer_with(_res("ok", 101.0), [], 1)  # 10.1x the unscheduled program's 10 us
    fine = answer_with(_res("ok", 100.0), [], 1)  # exactly 10x: not slow
    assert slow["status"] == slow["status_as_generated"] == "slow"
    assert fine["status"] == "ok"
    assert slow["speedup_vs_unscheduled"] == pytest.approx(10 / 101)  # its speed still counts
    f = summarize([slow, fine])
    t = f["tasks"]["construction"]
    assert t["correct"] == 1 and t["first_answer_correctness"] == 0.5 and t["correct_as_generated"] == 1
    assert t["failures"] == {"slow": 1}
    assert f["speed"]["construction"]["timed"] == 2


def test_pass_at_k_counts_no_slow_sample(answer_with):
    # the first answer failed; of the 3 samples one is ok (20 us), one slow (500 us), one failed
    a = answer_with(_res("build_error"), [_res("ok", 20.0), _res("ok", 500.0), _res("numeric_mismatch")], 4)
    assert a["status"] == "build_error" and a["unscheduled_us"] == 10.0
    assert a["k_passed_as_generated"] == 1
    assert a["best_of_k_us"] == 20.0
    only_slow = answer_with(_res("build_error"), [_res("ok", 500.0)], 2)
    assert only_slow["k_passed_as_generated"] == 0 and only_slow["best_of_k_us"] == 500.0
