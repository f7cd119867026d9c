"""Every metric of the evaluation against values computed by hand (pure, no TVM)."""

import math

import pytest

from dragon_dsl.eval import metrics as M


@pytest.mark.parametrize(
    "values, p, want",
    [
        ([3.0, 1.0, 2.0], 50, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 90, 9.1),  # position 9 * 0.9 = 8.1
        ([10.0, 20.0], 90, 19.0),  # position 0.9
        ([5.0], 90, 5.0),
        ([], 50, None),
    ],
)
def test_percentile(values, p, want):
    got = M.percentile(values, p)
    assert (got is None and want is None) or got == pytest.approx(want)


def test_median_and_geomean():
    assert M.median([4.0, 1.0, 9.0]) == 4.0
    assert M.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert M.geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert M.geomean([]) is None
    with pytest.raises(ValueError):
        M.geomean([1.0, 0.0])


@pytest.mark.parametrize(
    "n, c, k, want",
    [
        (8, 0, 1, 0.0),
        (8, 8, 4, 1.0),
        (8, 2, 1, 2 / 8),
        (8, 2, 4, 1 - math.comb(6, 4) / math.comb(8, 4)),  # 1 - 15/70
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (5, 4, 2, 1.0),  # n - c < k
    ],
)
def test_pass_at_k(n, c, k, want):
    assert M.pass_at_k(n, c, k) == pytest.approx(want)


def test_pass_at_k_rejects_impossible():
    with pytest.raises(ValueError):
        M.pass_at_k(2, 3, 1)
    with pytest.raises(ValueError):
        M.pass_at_k(2, 1, 3)
    assert M.mean_pass_at_k([(4, 1), (4, 0)], 2) == pytest.approx(0.25)


def test_speedup_summary_by_hand():
    base = {"a": 100.0, "b": 50.0, "c": 30.0, "d": None}
    meth = {"a": 50.0, "b": 45.0, "c": None, "d": 1.0}  # 2.0x, 1.111x, unsolved; d has no baseline
    s = M.speedup_summary(base, meth)
    assert s["tasks"] == 3 and s["verified"] == 2
    assert s["per_task"] == {"a": pytest.approx(2.0), "b": pytest.approx(50 / 45), "c": None}
    assert s["share_at_least"] == {"1": pytest.approx(2 / 3), "1.2": pytest.approx(1 / 3), "1.5": pytest.approx(1 / 3)}
    assert s["geomean"] == pytest.approx(math.sqrt(2.0 * 50 / 45))
    assert s["median"] == pytest.approx((2.0 + 50 / 45) / 2)


def test_first_answer_and_taxonomy():
    assert M.first_answer_correctness([True, False, False, True]) == 0.5
    assert M.first_answer_correctness([]) is None
    got = M.taxonomy(
        [
            "ok",
            "parse_error",
            "type_error",
            "type_error",
            "replay_error",
            "build_error",
            "numeric_mismatch",
            "unwritten_output",
            "timeout",
            "launch_error",
        ]
    )
    assert got == {"parse": 1, "type": 2, "replay": 1, "build": 1, "launch": 1, "numeric": 2, "timeout": 1, "slow": 0}
    with pytest.raises(ValueError):
        M.failure_category("exploded")


def test_roofline():
    # 2 GFLOP at 1 TFLOP/s = 2 ms; 1 GB at 1 TB/s = 1 ms: compute bound, 2000 us
    assert M.roofline_bound_us(2e9, 1e9, 1e12, 1e12) == pytest.approx(2000.0)
    assert M.roofline_bound_us(0, 4.8e6, 67e12, 4.8e12) == pytest.approx(1.0)  # H200: 4.8 MB in 1 us
    assert M.roofline_fraction(2000.0, 4000.0) == 0.5
    assert M.roofline_fraction(1.0, None) is None


def _cand(status, lat=None):
    return {"status": status, "latency_us": lat}


def test_summarize_by_hand():
    results = {
        "workloads": [
            {"name": "w1", "family": "mm", "roofline_us": 5.0},
            {"name": "w2", "family": "sm", "roofline_us": 1.0},
        ],
        "measurements": [
            {
                "workload": "w1",
                "task": "construction",
                "method": "unscheduled",
                "status": "measured",
                "candidates": [_cand("ok", 100.0)],
                "time_s": 1.0,
            },
            {
                "workload": "w2",
                "task": "construction",
                "method": "unscheduled",
                "status": "measured",
                "candidates": [_cand("ok", 10.0)],
                "time_s": 3.0,
            },
            {
                "workload": "w1",
                "task": "construction",
                "method": "model-best-of-4",
                "status": "measured",
                "k": 4,
                "candidates": [_cand("parse_error"), _cand("ok", 25.0), _cand("ok", 20.0), _cand("build_error")],
                "time_s": 7.0,
            },
            {
                "workload": "w2",
                "task": "construction",
                "method": "model-best-of-4",
                "status": "measured",
                "k": 4,
                "candidates": [_cand("ok", 8.0), _cand("numeric_mismatch"), _cand("timeout"), _cand("type_error")],
                "time_s": 2.0,
            },
            {
                "workload": "w1",
                "task": "construction",
                "method": "dlight",
                "status": "not_applicable",
                "candidates": [],
                "time_s": None,
            },
        ],
    }
    s = M.summarize(results)
    assert s["baselines"] == ["unscheduled"]
    mb = s["methods"]["model-best-of-4"]
    over = mb["over_unscheduled"]
    assert over["per_task"] == {"w1": pytest.approx(5.0), "w2": pytest.approx(1.25)}
    assert over["geomean"] == pytest.approx(math.sqrt(5.0 * 1.25))
    assert over["share_at_least"] == {"1": 1.0, "1.2": 1.0, "1.5": 0.5}
    t = mb["tasks"]["construction"]
    assert t["first_answer_correct"] == 0.5
    assert t["time_to_verified_s"]["median"] == pytest.approx(4.5)
    assert t["time_to_verified_s"]["p90"] == pytest.approx(2.0 + 0.9 * 5.0)
    # w1: 2 of 4 correct; w2: 1 of 4. pass@1 = (0.5 + 0.25) / 2; pass@2 = ((1 - 1/6) + (1 - 3/6)) / 2
    assert t["pass_at_k"]["1"] == pytest.approx(0.375)
    assert t["pass_at_k"]["2"] == pytest.approx(((1 - 1 / 6) + 0.5) / 2)
    assert t["pass_at_k"]["4"] == pytest.approx(1.0)
    assert mb["taxonomy"] == {
        "parse": 1,
        "type": 1,
        "replay": 0,
        "build": 1,
        "launch": 0,
        "numeric": 1,
        "timeout": 1,
        "slow": 0,
    }
    assert mb["roofline_fraction"]["per_task"] == {"w1": pytest.approx(0.25), "w2": pytest.approx(0.125)}
    assert mb["families"]["unscheduled"]["mm"]["geomean"] == pytest.approx(5.0)
    assert "dlight" not in s["methods"]  # not measured anywhere


def _row(w, method, *cands, task="construction", k=None):
    return {
        "workload": w,
        "task": task,
        "method": method,
        "status": "measured",
        "k": k or len(cands),
        "candidates": list(cands),
        "time_s": 1.0,
    }


def test_a_verified_answer_10x_slower_than_the_baseline_is_slow_a_failure_and_still_verified():
    row = _row
    results = {
        "workloads": [{"name": "w1", "family": "mm"}, {"name": "w2", "family": "sm"}, {"name": "w3", "family": "sm"}],
        "measurements": [
            row("w1", "dlight", _cand("ok", 10.0)),
            row("w1", "unscheduled", _cand("ok", 5000.0)),  # dlight is w1's baseline where measured
            row("w2", "unscheduled", _cand("ok", 10.0)),  # no dlight: the unscheduled program
            row("w1", "model", _cand("ok", 101.0), _cand("ok", 99.0)),  # first: 10.1x dlight
            row("w2", "model", _cand("ok", 100.0)),  # exactly 10x: not slow
            row("w3", "model", _cand("ok", 1e6)),  # no baseline: never slow
            row("w1", "model", _cand("ok", 500.0), task="improvement"),  # 50x dlight: slow
        ],
    }
    t = M.summarize(results)["methods"]["model"]
    c = t["tasks"]["construction"]
    # w1's slow first answer is a failure (not correct) though verified; w2 (10x) and w3 are correct
    assert c["first_answer_correct"] == pytest.approx(2 / 3) and c["first_answer_slow"] == 1
    assert c["first_answer_verified"] == 1.0
    assert c["solved"] == 3 and c["verified"] == 3  # w1's second answer is 9.9x: correct
    # pass@1: w1 1 of 2 ok, w2 1 of 1, w3 1 of 1 -> (0.5 + 1 + 1) / 3 (k = 2 only where n >= 2: not all)
    assert c["pass_at_k"] == {"1": pytest.approx(2.5 / 3)}
    assert t["over_dlight"]["per_task"] == {"w1": pytest.approx(10 / 99)}
    imp = t["tasks"]["improvement"]
    assert imp["solved"] == 0 and imp["verified"] == 1 and imp["first_answer_slow"] == 1
    assert imp["first_answer_correct"] == 0.0 and imp["first_answer_verified"] == 1.0
    assert t["taxonomy"]["slow"] == 2
    assert results["measurements"][3]["candidates"][0]["status"] == "ok"  # the stored results stay as measured


def test_slow_answers_count_in_the_geomean_at_their_speed():
    """The only verified answer of w2 is 20x slower than dlight: it does not solve w2 (a failure) but
    its 0.05x enters the geomean and median over dlight; a method that is not the model (the vendor)
    is labelled alike, and the baselines never are."""
    results = {
        "workloads": [{"name": "w1", "family": "mm"}, {"name": "w2", "family": "mm"}],
        "measurements": [
            _row("w1", "dlight", _cand("ok", 10.0)),
            _row("w2", "dlight", _cand("ok", 10.0)),
            _row("w1", "unscheduled", _cand("ok", 400.0)),  # 40x dlight: a baseline, never slow
            _row("w2", "unscheduled", _cand("ok", 400.0)),
            _row("w1", "model-best-of-2", _cand("ok", 5.0), _cand("build_error")),  # 2x
            _row("w2", "model-best-of-2", _cand("ok", 200.0), _cand("numeric_mismatch")),  # 0.05x, slow
            _row("w1", "vendor", _cand("ok", 150.0)),  # 15x dlight: slow, 1/15x
        ],
    }
    s = M.summarize(results)
    mb = s["methods"]["model-best-of-2"]
    over = mb["over_dlight"]
    assert over["verified"] == 2 and over["per_task"] == {"w1": pytest.approx(2.0), "w2": pytest.approx(0.05)}
    assert over["geomean"] == pytest.approx(math.sqrt(2.0 * 0.05))  # 0.316: not 2.0
    assert over["median"] == pytest.approx((2.0 + 0.05) / 2)
    assert over["share_at_least"]["1"] == 0.5
    assert mb["over_unscheduled"]["geomean"] == pytest.approx(math.sqrt(80.0 * 2.0))
    assert mb["families"]["dlight"]["mm"] == {"tasks": 2, "verified": 2, "geomean": pytest.approx(math.sqrt(0.1))}
    c = mb["tasks"]["construction"]
    assert c["solved"] == 1 and c["verified"] == 2 and c["first_answer_slow"] == 1
    assert c["first_answer_correct"] == 0.5 and c["first_answer_verified"] == 1.0
    # only ok counts: w1 1 of 2 (pass@1 0.5, pass@2 1), w2 0 of 2 (its one verified sample is slow)
    assert c["pass_at_k"] == {"1": pytest.approx(0.25), "2": pytest.approx(0.5)}
    assert mb["roofline_fraction"]["per_task"] == {}  # no roofline in these workloads
    v = s["methods"]["vendor"]
    assert v["over_dlight"]["per_task"] == {"w1": pytest.approx(10 / 150)}
    assert v["tasks"]["construction"]["first_answer_slow"] == 1 and v["taxonomy"]["slow"] == 1
    un = s["methods"]["unscheduled"]
    assert un["tasks"]["construction"]["first_answer_slow"] == 0 and un["tasks"]["construction"]["solved"] == 2
    assert un["tasks"]["construction"]["first_answer_correct"] == 1.0  # a baseline is never slow
    assert un["over_dlight"]["geomean"] == pytest.approx(1 / 40)


def test_a_task_whose_only_verified_answer_is_slow_is_verified_but_not_solved():
    """w's only verified answer is 30x slower than dlight: a failure in every success figure (not
    solved, no correct first answer, no correct sample in pass@k), but verified, and in the speed-up
    figures at its 1/30x; the model's own samples (the same candidates here) follow the same rules."""
    results = {
        "workloads": [{"name": "w", "family": "mm"}],
        "measurements": [
            _row("w", "dlight", _cand("ok", 10.0)),
            _row("w", "model-best-of-2", _from("model", "ok", 300.0), _from("model", "build_error")),
        ],
    }
    mb = M.summarize(results)["methods"]["model-best-of-2"]
    for e in (mb, mb["own_samples"]):
        c = e["tasks"]["construction"]
        assert c["n"] == 1 and c["solved"] == 0 and c["verified"] == 1
        assert c["first_answer_correct"] == 0.0 and c["first_answer_verified"] == 1.0 and c["first_answer_slow"] == 1
        assert c["pass_at_k"] == {"1": 0.0, "2": 0.0}
        assert e["over_dlight"]["verified"] == 1 and e["over_dlight"]["geomean"] == pytest.approx(1 / 30)
        assert e["over_dlight"]["share_at_least"]["1"] == 0.0
        assert e["families"]["dlight"]["mm"] == {"tasks": 1, "verified": 1, "geomean": pytest.approx(1 / 30)}
        assert e["taxonomy"]["slow"] == 1 and e["taxonomy"]["build"] == 1


def test_improvement_speedup_over_existing():
    results = {
        "workloads": [{"name": "w", "family": "f", "roofline_us": None}],
        "measurements": [
            {
                "workload": "w",
                "task": "improvement",
                "method": "model-first",
                "status": "measured",
                "k": 1,
                "existing_latency_us": 30.0,
                "candidates": [_cand("ok", 20.0)],
                "time_s": 1.0,
            }
        ],
    }
    t = M.summarize(results)["methods"]["model-first"]["tasks"]["improvement"]
    assert t["speedup_over_existing"]["per_task"] == {"w": pytest.approx(1.5)}
    assert t["first_answer_correct"] == 1.0


@pytest.mark.parametrize(
    "methods, want",
    [
        (["dlight", "metaschedule-16", "metaschedule-64", "model-first"], "metaschedule-64"),
        (["metaschedule-256", "metaschedule-64"], "metaschedule-256"),
        (["metaschedule-x", "ms-random", "dlight"], None),
        ([], None),
    ],
)
def test_search_method_is_the_largest_budget(methods, want):
    assert M.search_method(methods) == want


def test_time_ratio_by_hand():
    # search: 100 s, 60 s, 80 s (median 80); method solved a and c in 4 s and 10 s (median 7)
    t = M.time_ratio({"a": 100.0, "b": 60.0, "c": 80.0}, {"a": 4.0, "c": 10.0})
    assert t["median_s"] == pytest.approx(7.0) and t["search_median_s"] == pytest.approx(80.0)
    assert t["ratio_of_medians"] == pytest.approx(80.0 / 7.0)
    assert t["per_task"] == {"a": pytest.approx(25.0), "c": pytest.approx(8.0)}
    assert t["median_per_task"] == pytest.approx(16.5) and t["tasks_both"] == 2
    empty = M.time_ratio({"a": 100.0}, {})
    assert empty["ratio_of_medians"] is None and empty["median_per_task"] is None and empty["tasks_both"] == 0


def test_summarize_compares_every_method_with_the_search():
    results = {
        "workloads": [
            {"name": "w1", "family": "mm", "roofline_us": None},
            {"name": "w2", "family": "mm", "roofline_us": None},
        ],
        "measurements": [
            {
                "workload": "w1",
                "task": "construction",
                "method": "metaschedule-64",
                "status": "measured",
                "candidates": [_cand("ok", 10.0)],
                "time_s": 90.0,
            },
            {
                "workload": "w2",
                "task": "construction",
                "method": "metaschedule-64",
                "status": "measured",
                "candidates": [_cand("ok", 4.0)],
                "time_s": 30.0,
            },
            {
                "workload": "w1",
                "task": "construction",
                "method": "metaschedule-16",
                "status": "measured",
                "candidates": [_cand("ok", 20.0)],
                "time_s": 45.0,
            },
            {
                "workload": "w1",
                "task": "construction",
                "method": "model-first",
                "status": "measured",
                "k": 1,
                "candidates": [_cand("ok", 8.0)],
                "time_s": 3.0,
            },
            {
                "workload": "w2",
                "task": "construction",
                "method": "model-first",
                "status": "measured",
                "k": 1,
                "candidates": [_cand("build_error")],
                "time_s": 2.0,
            },  # unsolved: its time counts nowhere
        ],
    }
    s = M.summarize(results)
    assert s["search"] == "metaschedule-64"
    mf = s["methods"]["model-first"]
    assert mf["over_search"]["per_task"] == {"w1": pytest.approx(1.25), "w2": None}
    assert mf["over_search"]["share_at_least"]["1"] == 0.5
    assert mf["time_vs_search"]["median_s"] == pytest.approx(3.0)
    assert mf["time_vs_search"]["search_median_s"] == pytest.approx(60.0)
    assert mf["time_vs_search"]["ratio_of_medians"] == pytest.approx(20.0)
    assert mf["time_vs_search"]["per_task"] == {"w1": pytest.approx(30.0)}
    assert s["methods"]["metaschedule-16"]["over_search"]["per_task"] == {"w1": pytest.approx(0.5)}
    assert "over_search" not in s["methods"]["metaschedule-64"]


DLIGHT_W1 = """workload "w1.tvmscript"
target "nvidia/nvidia-h100"

b0 = get_sblock("C")
l1, l2 = get_loops(b0)
l3, l4 = split(l1, [None, 64])
bind(l3, "blockIdx.x")
bind(l4, "threadIdx.x")
"""
#: dlight's w1 script as a model writes it: other names, a comment, spacing and a query nothing uses
MODEL_W1 = """workload "w1.tvmscript"
target "nvidia/nvidia-h100"

# the rows of C over blocks of 64 threads
blk = get_sblock("C")
i, j = get_loops(blk)
again = get_sblock("C")
bx, tx = split(i, [None,   64])
bind(bx, "blockIdx.x")
bind(tx, "threadIdx.x")
"""
DLIGHT_W2 = DLIGHT_W1.replace("w1.tvmscript", "w2.tvmscript")
#: w2's first answer differs from dlight's by one split factor
MODEL_W2 = DLIGHT_W2.replace("[None, 64]", "[None, 128]")


def _scripted(status, lat, script, **extra):
    return dict(_cand(status, lat), script=script, **extra)


def test_same_script_normalises_names_comments_spacing_and_unused_queries():
    assert M.same_script(MODEL_W1, DLIGHT_W1) is True
    assert M.same_script(MODEL_W2, DLIGHT_W2) is False
    assert M.same_script(MODEL_W1, None) is None
    # scripts that do not encode are compared as whitespace-free statement lists
    assert M.same_script("foo( a ,b)\n\n# c\n", "foo(a,b)") is True
    assert M.same_script("foo(a, b)", "foo(b, a)") is False


#: dlight's layout of a block, and the same layout as a model under canonical names writes it
DLIGHT_LAYOUT = """b0 = get_sblock("C")
transform_block_layout(b0, lambda v_i, v_j: (v_i * 64 + v_j,))
"""
MODEL_LAYOUT = DLIGHT_LAYOUT.replace("v_i, v_j: (v_i * 64 + v_j,)", "i0, i1: (i0 * 64 + i1,)")


def test_same_script_names_lambda_parameters_by_position():
    """TVM compares index maps by position: a lambda whose parameters have other names is the same
    schedule; one whose body differs is not."""
    assert MODEL_LAYOUT != DLIGHT_LAYOUT
    assert M.same_script(MODEL_LAYOUT, DLIGHT_LAYOUT) is True
    assert M.same_script(MODEL_LAYOUT.replace("* 64", "* 32"), DLIGHT_LAYOUT) is False


def test_first_answers_equal_to_dlights_script_are_counted():
    """w1's first answer is dlight's script written otherwise: counted; w2's differs; w3's dlight row
    records no script (results of older code): left out of n. Only the first candidate counts."""
    results = {
        "workloads": [{"name": w, "family": "mm"} for w in ("w1", "w2", "w3")],
        "measurements": [
            _row("w1", "dlight", _scripted("ok", 10.0, DLIGHT_W1)),
            _row("w2", "dlight", _scripted("ok", 10.0, DLIGHT_W2)),
            _row("w3", "dlight", _cand("ok", 10.0)),
            _row("w1", "model-best-of-2", _scripted("ok", 10.0, MODEL_W1), _scripted("ok", 9.0, MODEL_W2)),
            _row("w2", "model-best-of-2", _scripted("ok", 12.0, MODEL_W2), _scripted("ok", 10.0, DLIGHT_W2)),
            _row("w3", "model-best-of-2", _scripted("ok", 10.0, DLIGHT_W1)),
            _row("w1", "model-best-of-2", _scripted("ok", 10.0, MODEL_W1), task="improvement"),
            _row("w1", "unscheduled", _cand("ok", 100.0)),
        ],
    }
    s = M.summarize(results)
    t = s["methods"]["model-best-of-2"]["tasks"]
    assert t["construction"]["first_answer_equals_dlight"] == {"count": 1, "n": 2}
    assert t["improvement"]["first_answer_equals_dlight"] == {"count": 1, "n": 1}
    # a baseline without scripts has nothing to compare; dlight's own script is dlight's
    assert s["methods"]["unscheduled"]["tasks"]["construction"]["first_answer_equals_dlight"] == {"count": 0, "n": 0}
    assert s["methods"]["dlight"]["tasks"]["construction"]["first_answer_equals_dlight"] == {"count": 2, "n": 2}


def _from(origin, status, lat=None):
    return dict(_cand(status, lat), origin=origin)


def test_own_samples_leave_out_the_candidates_the_model_did_not_write():
    """Tensor-core candidates (MetaSchedule's design space) are the fastest here: with them the model
    doubles dlight; over its own samples (written, completed by AutoBind, or of unrecorded origin) it
    does not. The first answer over its own samples is its first own candidate."""
    results = {
        "workloads": [{"name": "w1", "family": "mm"}, {"name": "w2", "family": "mm"}],
        "measurements": [
            _row("w1", "dlight", _cand("ok", 10.0)),
            _row("w2", "dlight", _cand("ok", 16.0)),
            _row(
                "w1",
                "model-best-of-4",
                _from("model", "ok", 20.0),
                _from("tensor_core", "ok", 5.0),
                _from("model", "ok", 40.0),
                _from("model", "build_error"),
            ),
            _row(
                "w2",
                "model-best-of-4",
                _from("tensor_core", "ok", 8.0),
                _from("model", "build_error"),
                _cand("ok", 16.0),  # no origin recorded: the model's own
                _from("completed", "ok", 12.0),
            ),
        ],
    }
    mb = M.summarize(results)["methods"]["model-best-of-4"]
    assert mb["origins"] == {"completed": 1, "model": 4, "tensor_core": 2, "unrecorded": 1}
    # every candidate: 10/5 and 16/8
    assert mb["over_dlight"]["per_task"] == {"w1": pytest.approx(2.0), "w2": pytest.approx(2.0)}
    assert mb["over_dlight"]["geomean"] == pytest.approx(2.0)
    c = mb["tasks"]["construction"]
    assert c["first_answer_correct"] == 1.0 and c["pass_at_k"]["1"] == pytest.approx(0.75)
    assert c["pass_at_k"]["4"] == pytest.approx(1.0)
    # the model's own: 10/20 and 16/12
    own = mb["own_samples"]
    assert own["over_dlight"]["per_task"] == {"w1": pytest.approx(0.5), "w2": pytest.approx(16 / 12)}
    assert own["over_dlight"]["geomean"] == pytest.approx(math.sqrt(0.5 * 16 / 12))
    assert own["over_dlight"]["share_at_least"]["1"] == 0.5
    oc = own["tasks"]["construction"]
    assert oc["first_answer_correct"] == 0.5  # w2's first own candidate did not build
    assert oc["solved"] == 2 and oc["pass_at_k"] == {"1": pytest.approx(2 / 3), "2": pytest.approx(1.0)}
    assert own["taxonomy"]["build"] == 2 and "own_samples" not in own
    assert "own_samples" not in M.summarize(results)["methods"]["dlight"]
