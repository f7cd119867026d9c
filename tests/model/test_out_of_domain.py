"""A block whose loops run it for iterator values outside its domain, with no predicate, is an
out-of-bounds access (`compile.out_of_domain_bindings`): `dragon-check --level replay` reports it
(DRG604) and the decoder refuses the statement that makes it.

Data: tests/data/out_of_domain/ (a shown answer that did it; its README says where it comes from)."""

from __future__ import annotations

from pathlib import Path

from dragon_dsl import check_text
from dragon_dsl.levels import check_text_at_level
from dragon_dsl.tvm.compile import out_of_domain_bindings
from dragon_dsl.tvm.replay import replay
from dragon_dsl.tvm.workload import load_workload
from dragon_model.generate import statements_of
from dragon_model.replay_state import replay_prefix

DATA = Path(__file__).resolve().parent.parent / "data" / "out_of_domain"
ANSWER = DATA / "row_sum_answer.dragon"
WORKLOAD = DATA / "reduction_typed_axis1_dtypef32_m8_n768_opsum.tvmscript"


def _scheduled(text: str):
    result = replay(check_text(text)[0], load_workload(WORKLOAD))
    assert result.ok
    return result.schedule.mod


def test_the_write_back_block_is_found_running_past_its_rows():
    found = out_of_domain_bindings(_scheduled(ANSWER.read_text(encoding="utf-8")))
    assert "block 'Y' binds v0 to 0..15 but its domain is 0..7" in found


def test_dragon_check_reports_it_at_replay():
    report = check_text_at_level(ANSWER.read_text(encoding="utf-8"), level="replay", workload=load_workload(WORKLOAD))
    assert [d.code for d in report.diagnostics if d.severity.value == "error"] == ["DRG604"]


def test_the_decoder_refuses_the_rfactor_that_drops_the_predicate():
    body = ANSWER.read_text(encoding="utf-8").split("\n\n", 1)[1]
    stmts = list(statements_of(body))
    at = next(i for i, s in enumerate(stmts) if "rfactor(" in s)
    mod = load_workload(WORKLOAD)
    env, why = replay_prefix("".join(stmts[:at]), mod, "cuda")
    assert env is not None, why
    env, why = replay_prefix("".join(stmts[: at + 1]), mod, "cuda")
    assert env is None and "binds v0 to 0..15 but its domain is 0..7" in why, why


def test_a_padded_split_with_its_predicate_is_not_flagged():
    """The same split without rfactor: the block keeps `T.where(... < 8)`, nothing runs past."""
    body = ANSWER.read_text(encoding="utf-8").split("\n\n", 1)[1]
    head = ANSWER.read_text(encoding="utf-8").split("\n\n", 1)[0] + "\n\n"
    stmts = list(statements_of(body))
    at = next(i for i, s in enumerate(stmts) if "rfactor(" in s)
    assert out_of_domain_bindings(_scheduled(head + "".join(stmts[:at]))) == []
