"""Renamed copies of training rows (`renaming.with_renamed_copies`, `train --renamed-copies`): the same
program and schedule under other names for its blocks and allocated buffers.

Data: the llvm corpus' training rows (layer norms with `rfactor`, whose derived blocks are named
after their source: `var_rf`)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from dragon_model.data import example, load_rows
from dragon_model.renaming import renamed_example, with_renamed_copies

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows() -> list:
    return load_rows(ROOT / "data" / "corpus" / "llvm", splits=["train"], target_kind="llvm")


def _names(prompt: str) -> list:
    head = prompt.split("<script>")[0]
    blocks = re.findall(r"^block (\S+) iters", head, flags=re.M)
    return blocks + [b for b in re.findall(r"^buffer (\S+) \S+ alloc$", head, flags=re.M) if b not in blocks]


def test_a_copy_renames_every_block_the_same_way_in_prompt_and_answer(rows):
    row = next(
        r for r in rows if r["family"] == "layer_norm" and r["task"] == "construction" and "rfactor(" in r["script"]
    )
    ex = example(row)
    copy = renamed_example(ex, random.Random(0))
    old, new = _names(ex["prompt"]), _names(copy["prompt"])
    assert len(old) == len(new) >= 3 and not set(old) & set(new)
    mapping = dict(zip(old, new))
    # every old name is gone as a word, also from the answer, and its derived names follow it
    for name in old:
        assert not re.search(rf'"{re.escape(name)}(_\w+)?"', copy["completion"])
        assert not re.search(rf"\b{re.escape(name)}\b", copy["prompt"])
    assert any(f'"{n}_rf"' in copy["completion"] for n in new)
    assert 'get_sblock("root")' in copy["completion"]
    # renaming back gives the row again: nothing but the names changed
    back = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, new)) + r")(?![A-Za-z0-9])")
    inverse = {v: k for k, v in mapping.items()}
    assert back.sub(lambda m: inverse[m.group(1)], copy["prompt"]) == ex["prompt"]
    assert back.sub(lambda m: inverse[m.group(1)], copy["completion"]) == ex["completion"]


def test_each_construction_row_is_followed_by_one_copy(rows):
    out = with_renamed_copies(rows)
    copies = [r for r in out if r["id"].endswith(":renamed")]
    construction = [r for r in rows if r["task"] == "construction"]
    assert len(copies) == len(construction) and len(out) == len(rows) + len(copies)
    for i, r in enumerate(out):
        if r["id"].endswith(":renamed"):
            before = out[i - 1]
            assert r["id"] == before["id"] + ":renamed" and r["task"] == "construction"
            assert r["latency_us"] == before["latency_us"]  # a slow row's copy is left out with it
            assert r["prompt"] != example(before)["prompt"]
    assert with_renamed_copies(rows) == out  # the same seed, the same names
    assert [r["prompt"] for r in with_renamed_copies(rows, seed=1) if r["id"].endswith(":renamed")] != [
        r["prompt"] for r in copies
    ]


def test_a_workload_without_named_blocks_gets_no_copy():
    ex = {"prompt": "<s><workload>target llvm\nbuffer A float32[4] param\n<script>", "completion": "</s>"}
    assert renamed_example(ex, random.Random(0)) is None


def test_the_training_command_takes_the_option():
    import argparse

    from dragon_model.train import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    assert p.parse_args(["c", "-o", "o", "--renamed-copies"]).renamed_copies
    assert not p.parse_args(["c", "-o", "o"]).renamed_copies


def test_improvement_rows_get_copies_when_asked(rows):
    out = with_renamed_copies(rows, seed=3, tasks=("construction", "improvement"))
    copies = [r for r in out if r["id"].endswith(":renamed")]
    improvement = [r for r in copies if r["task"] == "improvement"]
    assert len(copies) == len(rows) and improvement
    ex = example(improvement[0])
    assert "<improve>" in ex["prompt"]
    # the script to improve is renamed as the workload is: it names only the copy's blocks
    original = example(next(r for r in rows if r["id"] + ":renamed" == improvement[0]["id"]))
    assert set(_names(ex["prompt"])).isdisjoint(_names(original["prompt"]))
    for name in _names(original["prompt"]):
        assert f'"{name}"' not in ex["prompt"] and f'"{name}"' not in ex["completion"]
    with pytest.raises(ValueError, match="unknown task"):
        with_renamed_copies(rows, tasks=("search",))


def test_the_training_command_takes_a_seed_and_tasks():
    import argparse

    from dragon_model.train import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(
        ["c", "-o", "o", "--renamed-copies", "--renamed-seed", "7", "--renamed-tasks", "construction,improvement"]
    )
    assert args.renamed_seed == 7 and args.renamed_tasks == ("construction", "improvement")
    assert p.parse_args(["c", "-o", "o"]).renamed_tasks == ("construction",)
    with pytest.raises(SystemExit):
        p.parse_args(["c", "-o", "o", "--renamed-tasks", "search"])
