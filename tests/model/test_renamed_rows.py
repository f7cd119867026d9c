"""A held-out row under random names (`renaming.renamed_row`, `evaluate --renamed-seed`): the same program
and schedules, every block and allocated buffer renamed the same way in the workload and its scripts,
names derived from them (`sumsq_rf`) with them, and no new name taken from the text's own words."""

import random
import re
from pathlib import Path

import pytest

from dragon_model.data import body_of_text, load_rows
from dragon_model.renaming import intermediate_names, renamed_row

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus" / "llvm"


def _rows():
    rows = load_rows(CORPUS, splits=["test_family"], target_kind="llvm")
    firsts = {}
    for r in rows:  # per family, the first improvement row (it has both scripts)
        if r["task"] == "improvement":
            firsts.setdefault(r["family"], r)
    return sorted(firsts.values(), key=lambda r: r["family"])


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["family"])
def test_a_renamed_row_is_the_same_program_and_schedules_under_new_names(row):
    from dragon_dsl import check_text
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.workload import load_workload

    new = renamed_row(row, random.Random(7))
    old_names, new_names = intermediate_names(row["workload_text"]), intermediate_names(new["workload_text"])
    assert len(old_names) == len(new_names) and not set(old_names) & set(new_names)
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", row["workload_text"] + row["script"] + row["prompt_script"]))
    assert not set(new_names) & words, "a new name is none of the text's own words"
    for key in ("script", "prompt_script"):
        assert not any(f'"{n}' in new[key] for n in old_names), key
        assert replay(check_text(body_of_text(new[key]))[0], load_workload(new["workload_text"])).ok, key
    assert renamed_row(row, random.Random(7)) == new
