"""The report's figures that cannot flatter the model (report.md from a hand-written results dict):
slow answers in the geomean yet failures in every success figure, the first answers equal to dlight's
script, and the model's own samples apart from the tensor-core candidates it did not write, each row
labelled."""

import pytest

from dragon_dsl.eval import metrics as M
from dragon_dsl.eval import report
from dragon_dsl.eval.results import methods_info

DLIGHT = """workload "{w}.tvmscript"
target "nvidia/nvidia-h100"

b0 = get_sblock("C")
l1, l2 = get_loops(b0)
l3, l4 = split(l1, [None, 64])
bind(l3, "blockIdx.x")
bind(l4, "threadIdx.x")
"""
#: w1's first answer: dlight's script with other names and a comment
COPY = """workload "w1.tvmscript"
target "nvidia/nvidia-h100"

# dlight's
c = get_sblock("C")
i, j = get_loops(c)
io, ii = split(i, [None, 64])
bind(io, "blockIdx.x")
bind(ii, "threadIdx.x")
"""
OTHER = DLIGHT.format(w="w2").replace("[None, 64]", "[None, 32]")


def _c(status, lat, origin=None, script=None):
    c = {"status": status, "latency_us": lat}
    if origin:
        c["origin"] = origin
    if script:
        c["script"] = script
    return c


def _row(w, method, *cands):
    return {
        "workload": w,
        "task": "construction",
        "method": method,
        "status": "measured",
        "reason": "",
        "k": len(cands),
        "candidates": list(cands),
        "time_s": 1.0,
    }


@pytest.fixture
def rendered():
    rows = [
        _row("w1", "dlight", _c("ok", 10.0, script=DLIGHT.format(w="w1"))),
        _row("w2", "dlight", _c("ok", 10.0, script=DLIGHT.format(w="w2"))),
        # all candidates: 10/5 = 2 and 10/8 = 1.25; own samples: 10/10 = 1 and 10/200 = 0.05 (slow)
        _row("w1", "model-best-of-2", _c("ok", 10.0, "model", COPY), _c("ok", 5.0, "tensor_core")),
        _row("w2", "model-best-of-2", _c("ok", 200.0, "model", OTHER), _c("ok", 8.0, "tensor_core")),
        _row("w1", "model-first", _c("ok", 10.0, script=COPY)),  # stored before origins were recorded
        _row("w2", "model-first", _c("ok", 200.0, script=OTHER)),
    ]
    results = {
        "workloads": [
            {"name": w, "family": "mm", "flops": 1e6, "bytes": 1e6, "roofline_us": 1.0} for w in ("w1", "w2")
        ],
        "target": "cuda",
        "device": "cuda",
        "command": ["dragon", "eval"],
        "versions": {},
        "settings": {"budgets": [], "k": 2, "seeds": 1, "repeat": 1},
        "peaks": {"source": "table", "flops": {"fp32": 1e12}, "bytes_per_s": 1e12},
        "startup_s": 0.0,
        "wall_s": 0.0,
        "cache": {"rows_before": 0, "rows_after": 0},
        "problems": [],
        "methods": methods_info(rows),
        "measurements": rows,
    }
    results["metrics"] = M.summarize(results)
    return report.markdown(results)


def test_speedups_count_slow_answers_and_show_own_samples_apart(rendered):
    lines = rendered.splitlines()
    # the count beside a geomean is of the tasks in it (verified, slow included), not of successes
    assert "| method | tasks | verified | >= 1.0x | >= 1.2x | >= 1.5x | geomean | median |" in lines
    # geomean sqrt(2 * 1.25) = 1.58 over every candidate; sqrt(1 * 0.05) = 0.22 over the model's own
    assert any(ln.startswith("| model-best-of-2, all candidates | 2 | 2 | 100% | 100% | 50% | 1.58 |") for ln in lines)
    assert any(ln.startswith("| model-best-of-2, own samples | 2 | 2 | 50% | 0% | 0% | 0.22 |") for ln in lines)
    # the slow w2 answer is in model-first's geomean: sqrt(1 * 0.05), not 1.00 over w1 alone
    assert any(
        ln.startswith("| model-first, origins unrecorded, counted as own | 2 | 2 | 50% | 0% | 0% | 0.22 |")
        for ln in lines
    )


def test_correctness_rows_count_slow_first_answers_as_failures_and_copies_of_dlight(rendered):
    lines = rendered.splitlines()
    assert (
        "| method | task | tasks | solved (ok, within 10x) | verified (slow included) | first answer correct "
        "| first answer slow | first answer = dlight | time median s | time p90 s | pass@k |"
    ) in lines
    # tasks, solved, verified, first answer correct, first answer slow, first answer = dlight, times, pass@k.
    # Every candidate: w2's first answer (200 us, 20x dlight) is slow, a failure; its tensor-core one (8 us)
    # solves w2. pass@1 = (2/2 + 1/2) / 2 = 75%: the slow sample is not correct.
    assert (
        "| model-best-of-2, all candidates | construction | 2 | 2 | 2 | 50% | 1 | 1/2 | 1.00 | 1.00 "
        "| @1: 75%, @2: 100% |"
    ) in lines
    # own samples: w2's only own answer is slow: verified, not solved; pass@1 = (1 + 0) / 2
    assert (
        "| model-best-of-2, own samples | construction | 2 | 1 | 2 | 50% | 1 | 1/2 | 1.00 | 1.00 | @1: 50% |" in lines
    )
    assert (
        "| model-first, origins unrecorded, counted as own | construction | 2 | 1 | 2 | 50% | 1 | 1/2 | 1.00 | 1.00 "
        "| @1: 50% |"
    ) in lines
    assert "model-best-of-2: model 2, tensor_core 2; model-first: unrecorded 2" in rendered
