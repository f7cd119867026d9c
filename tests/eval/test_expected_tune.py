"""`methods.expected_tune_s`, the estimate `--stop-after` compares with the time left, against
hand-computed values over fake finished runs (meta.json files only: no TVM)."""

import json
from pathlib import Path

import pytest

from dragon_dsl.eval import methods as m
from dragon_dsl.eval.discover import WorkloadEntry


@pytest.fixture
def ctx(tmp_path):
    c = m.Context(None, tmp_path, m.WallTimes(tmp_path / "wall_times.json"))
    for name in "abcd":
        c.hashes[str(tmp_path / f"{name}.tvmscript")] = f"{ord(name):08d}ffff"
    return c


def entry(ctx, name):
    return WorkloadEntry(name, Path(ctx.out_dir) / f"{name}.tvmscript", "family")


def finished(ctx, name, budget, wall, strategy="evolutionary", trials=None):
    folder = m.ms_folder(ctx, entry(ctx, name), m.ms_name(budget, strategy))
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"trials": trials or budget, "strategy": strategy, "wall_s": wall}))


def test_a_complete_run_takes_no_time(ctx):
    finished(ctx, "a", 64, 30.0)
    assert m.expected_tune_s(ctx, entry(ctx, "a"), 64) == 0.0


def test_own_smaller_run_times_the_ratio_of_the_workloads_with_both(ctx):
    finished(ctx, "a", 16, 10.0), finished(ctx, "a", 64, 30.0)  # ratio 3.0
    finished(ctx, "b", 16, 20.0), finished(ctx, "b", 64, 70.0)  # ratio 3.5
    finished(ctx, "c", 16, 12.0)
    # the upper median of [3.0, 3.5] is 3.5: 12 * 3.5
    assert m.expected_tune_s(ctx, entry(ctx, "c"), 64) == pytest.approx(42.0)


def test_without_pairs_the_ratio_of_trials(ctx):
    finished(ctx, "c", 16, 12.0)
    assert m.expected_tune_s(ctx, entry(ctx, "c"), 64) == pytest.approx(48.0)


def test_no_own_run_the_slowest_finished_one_of_the_method(ctx):
    finished(ctx, "a", 64, 30.0), finished(ctx, "b", 64, 70.0)
    assert m.expected_tune_s(ctx, entry(ctx, "d"), 64) == 70.0
    assert m.expected_tune_s(ctx, entry(ctx, "d"), 16) is None  # nothing known: it may start


def test_random_samples_and_mismatched_meta(ctx):
    finished(ctx, "a", 1, 4.0, strategy="replay-trace"), finished(ctx, "b", 1, 6.0, strategy="replay-trace")
    assert m.expected_tune_s(ctx, entry(ctx, "d"), 1, "replay-trace") == 6.0
    finished(ctx, "c", 64, 999.0, trials=32)  # another budget's run in that folder is not a finished 64
    assert m.expected_tune_s(ctx, entry(ctx, "c"), 64) is None
