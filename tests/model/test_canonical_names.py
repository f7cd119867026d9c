"""Canonical names (`renaming.canonical_mapping`, `train --canonical-names`, `Generator(canonical_names=True)`):
a model trained on them reads every workload with its blocks and allocated buffers named `q0`, `q1`,
... in the order its prompt lists them, so the same program under other names is the same prompt,
and its answer comes back in the workload's own names.

Data: the llvm corpus' rows (layer norms whose derived blocks are named after their source: `var_rf`)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from dragon_model.data import example, load_rows, prompt_text
from dragon_model.renaming import canonical_example, canonical_mapping, renamed_row, renamed_words

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows() -> list:
    return load_rows(ROOT / "data" / "corpus" / "llvm", splits=["train"], target_kind="llvm")


def _layer_norm(rows):
    return next(
        r for r in rows if r["family"] == "layer_norm" and r["task"] == "construction" and "rfactor(" in r["script"]
    )


def test_names_follow_the_prompts_order_and_skip_words_it_has():
    prompt = (
        "<s><workload>target llvm\nbuffer A float32[8] param\nbuffer q0 float32[8] param\n"
        "buffer t float32[8] alloc\nbuffer sumsq float32[1] alloc\n"
        "block t iters S8 reads A[v0] writes t[v0]\nblock sumsq iters R8 reads t[v0] writes sumsq[0] init\n"
        "block root iters\n<script>\n"
    )
    # blocks first, then the allocated buffers no block is named after; `q0` is taken by a parameter
    assert canonical_mapping(prompt) == {"t": "q1", "sumsq": "q2"}


def test_the_same_program_under_other_names_is_the_same_canonical_example(rows):
    row = _layer_norm(rows)
    written = canonical_example(example(row))
    for seed in (1, 2, 3):
        other = renamed_row(row, random.Random(seed))
        assert example(other)["prompt"] != example(row)["prompt"]  # the names differ...
        # ...and nothing else does (renamed_row renames the workload and the scripts, not the trace
        # `example` renders the answer from: the answer is compared through the script)
        assert canonical_example(example(other))["prompt"] == written["prompt"]
        assert canonical_example(
            {"prompt": example(other)["prompt"], "completion": other["script"]}
        ) == canonical_example({"prompt": example(row)["prompt"], "completion": row["script"]})
    assert '"q0_rf"' in written["completion"] or '"q1_rf"' in written["completion"]


def test_renaming_back_gives_the_row_again(rows):
    row = _layer_norm(rows)
    ex = example(row)
    mapping = canonical_mapping(ex["prompt"])
    assert len(mapping) >= 3
    back = {new: old for old, new in mapping.items()}
    canon = canonical_example(ex)
    assert renamed_words(canon["prompt"], back) == ex["prompt"]
    assert renamed_words(canon["completion"], back) == ex["completion"]


def test_the_generator_reads_canonical_names_and_answers_in_the_workloads(rows, toy_model):
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.generate import Generator
    from dragon_model.replay_state import replay_prefix

    row = _layer_norm(rows)
    text = row["workload_text"]
    gen = Generator.from_path(toy_model, canonical_names=True, max_statements=12)
    renamed, _slower, mapping = gen._canonical(text, "llvm", None)
    assert mapping and all(
        re.search(rf'T\.sblock\("{new}"\)', renamed) for new in mapping.values() if re.search(r'T\.sblock\("', text)
    )
    assert (
        prompt_text(renamed, "llvm", None)
        == canonical_example({"prompt": prompt_text(text, "llvm", None), "completion": ""})["prompt"]
    )
    out = gen.generate(text, "llvm")
    assert not re.search(r'"q\d+', out.body), out.body  # the workload's own names
    env, why = replay_prefix(out.body, load_workload(text), "llvm")
    assert why is None, why


def test_rl_prompts_of_a_canonical_model_are_its_canonical_prompts(rows):
    from dragon_model.rl import rl_prompts

    row = _layer_norm(rows)
    other = renamed_row(row, random.Random(5))
    plain = rl_prompts([row])[0]
    assert plain == {"prompt": prompt_text(row["workload_text"], "llvm"), "workload_text": row["workload_text"]}
    canon = rl_prompts([row], canonical_names=True)[0]
    assert canon["prompt"] == canonical_example(example(row))["prompt"]
    assert canon["prompt"] == rl_prompts([other], canonical_names=True)[0]["prompt"]  # names do not matter
    # the reward measures the program the prompt shows
    assert prompt_text(canon["workload_text"], "llvm") == canon["prompt"]
