"""`methods.expected_generation_s`, what `--stop-after` expects the model's answers not written yet
to take, over fake answer files (no model, no TVM): a best-of-4 run whose generation phase left
answers undone wrote them while measuring, ran past its deadline and lost its results."""

import json
from pathlib import Path

import pytest

from dragon_dsl.eval import methods as m
from dragon_dsl.eval.discover import WorkloadEntry


@pytest.fixture
def ctx(tmp_path):
    from dragon_dsl.engine import resolve_target

    c = m.Context(
        None,
        tmp_path,
        m.WallTimes(tmp_path / "wall_times.json"),
        model_path=str(tmp_path / "weights"),
        target=resolve_target("llvm"),
        generation_version=21,
    )
    for name in "abcd":
        c.hashes[str(tmp_path / f"{name}.tvmscript")] = f"{ord(name):08d}ffff"
    return c


def entry(ctx, name):
    return WorkloadEntry(name, Path(ctx.out_dir) / f"{name}.tvmscript", "family")


def written(ctx, name, n, seconds, task="construction"):
    path = m.suggestions_path(ctx, entry(ctx, name), n, task, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"scripts": [], "generation_s": seconds}))


def test_unknown_before_any_answer_is_written(ctx):
    assert m.expected_generation_s(ctx, entry(ctx, "a"), 4) is None


def test_written_answers_take_no_time(ctx):
    written(ctx, "a", 4, 160.0)
    assert m.expected_generation_s(ctx, entry(ctx, "a"), 4) == 0.0


def test_the_upper_median_of_the_same_tasks_answers(ctx):
    written(ctx, "a", 4, 40.0), written(ctx, "b", 4, 180.0), written(ctx, "c", 4, 100.0)
    written(ctx, "a", 1, 5.0), written(ctx, "b", 4, 900.0, task="improvement")  # other n, other task
    assert m.expected_generation_s(ctx, entry(ctx, "d"), 4) == 100.0
    written(ctx, "d", 1, 7.0)
    assert m.expected_generation_s(ctx, entry(ctx, "c"), 1) == 7.0  # upper median of [5, 7]


def test_a_file_being_written_is_left_out(ctx):
    written(ctx, "a", 4, 40.0)
    (ctx.out_dir / "model" / "b-construction-n4-000000000000.json").write_text('{"scripts": [')
    assert m.expected_generation_s(ctx, entry(ctx, "c"), 4) == 40.0


def test_improvement_answers_count_each_size_and_the_workloads_own_script(ctx):
    """`expected_improvement_s`: the sum over the run's sizes; a workload's answers to its own script
    take no time once written; unknown while a size has no answer anywhere."""
    e = entry(ctx, "a")
    (ctx.out_dir / "a-start.dragon").write_text("the starting script")
    e.scripts.append(ctx.out_dir / "a-start.dragon")
    assert m.expected_improvement_s(ctx, e, (1, 4)) is None
    written(ctx, "b", 1, 6.0, task="improvement"), written(ctx, "c", 4, 30.0, task="improvement")
    written(ctx, "b", 4, 500.0)  # construction: another task
    assert m.expected_improvement_s(ctx, e, (1, 4)) == 36.0
    assert m.expected_improvement_s(ctx, e, ()) == 0.0  # no model: nothing to write
    path = m.suggestions_path(ctx, e, 1, "improvement", "the starting script")
    path.write_text(json.dumps({"scripts": [], "generation_s": 9.0}))
    assert m.expected_improvement_s(ctx, e, (1, 4)) == 30.0
