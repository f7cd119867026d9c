"""The RL reward's stages are the check ladder's levels (dragon_dsl.levels), named by the highest
level a completion PASSED: a type error has passed syntax (reward 0.1), a replay error has passed
types (0.2). The reward once named them by a ladder of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_dsl.levels import LEVELS
from dragon_model.rl import STAGE_REWARD, EngineReward

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "check"


def _body(name: str) -> str:
    """A golden script without its header lines (the workload is given as text, as TRL gives it)."""
    return "\n".join(
        line
        for line in (GOLDEN / name).read_text(encoding="utf-8").splitlines()
        if not line.startswith(("workload", "target"))
    )


def test_stage_names_are_levels_of_the_one_ladder():
    assert [k for k in STAGE_REWARD if k != "none"] == list(LEVELS[: len(STAGE_REWARD) - 1])
    rewards = list(STAGE_REWARD.values())
    assert rewards == sorted(rewards) and len(set(rewards)) == len(rewards)


@pytest.mark.parametrize(
    "script, passed",
    [
        ("syntax_error.dragon", "none"),
        ("type_error.dragon", "syntax"),
        ("replay_error.dragon", "types"),
        ("good_matmul.dragon", "replay"),
    ],
)
def test_stage_is_the_highest_level_passed(script, passed):
    workload = (ROOT / "tests" / "data" / "workloads" / "matmul_64.tvmscript").read_text(encoding="utf-8")
    stage, trace = EngineReward(engine=None).stage_of(_body(script), workload)
    assert stage == passed
    assert (trace is not None) == (passed == "replay")
