"""The tensor-core candidate (`api.tensor_core_candidate`): the model writes the
common statements of MetaSchedule's sampled tensor-core candidates and chooses each decision among
theirs; what it lands on is one of those candidates, whole, and it compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

xgr = pytest.importorskip("xgrammar")

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "tests" / "data" / "workloads"
F16_LINEAR = WORKLOADS / "linear_f16_128x256x256.tvmscript"

TILE = "v25, v26, v27 = sample_perfect_tile(l22, n=3, max_innermost_factor=4, decision=[4, 2, 2])\n"


@pytest.fixture(scope="module")
def tokenizer():
    from dragon_model.tokenizer import load_tokenizer

    return load_tokenizer(ROOT / "model" / "weights" / "cuda")


def _accepts(tokenizer, grammar: str, text: str) -> bool:
    from dragon_model.tokenizer import token_strings

    strings = token_strings(tokenizer)
    info = xgr.TokenizerInfo(
        strings, xgr.VocabType.RAW, vocab_size=len(strings), stop_token_ids=[tokenizer.eos_token_id]
    )
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(grammar), terminate_without_stop_token=True)
    return all(m.accept_token(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]) and m.is_terminated()


@pytest.mark.parametrize(
    "choices,text,ok",
    [
        (None, TILE, True),  # forced whole
        (None, TILE.replace("[4, 2, 2]", "[2, 4, 2]"), False),
        (["[4, 2, 2]", "[8, 1, 2]"], TILE.replace("[4, 2, 2]", "[8, 1, 2]"), True),
        (["[4, 2, 2]", "[8, 1, 2]"], TILE.replace("[4, 2, 2]", "[16, 1, 1]"), False),  # a valid tile, not offered
        (["[4, 2, 2]"], TILE.replace("l22", "l23"), False),  # only the decision is chosen
    ],
)
def test_a_template_statement_takes_only_the_offered_decisions(tokenizer, choices, text, ok):
    from dragon_model.decoder_grammar import template_grammar

    assert _accepts(tokenizer, template_grammar(TILE, choices), text) is ok


@pytest.mark.parametrize(
    "workload,target",
    [
        (WORKLOADS / "matmul_64.tvmscript", "cuda"),  # fp32: no tensor cores
        (F16_LINEAR, "llvm"),
    ],
)
def test_no_tensor_core_template_where_none_applies(workload, target):
    from dragon_model.api import tensor_core_template

    assert tensor_core_template(workload, target) is None


def test_the_tensor_core_candidate_is_a_sampled_candidate_that_compiles_once(monkeypatch):
    """`candidates` (k = 2 on a GPU target) offers the tensor-core candidate second: one of the
    sampled candidates, whole, whose main part the model wrote statement for statement; its script
    goes through the compiler once (as `tensor_core_candidate` chose it), not again with the others."""
    from dragon_model import candidates as api
    from dragon_model.generate import header, statements_of
    from dragon_model.renaming import positional_lambdas

    templates: list = []
    compiled: list = []
    sample, check = api.tensor_core_template, api.compile_problem
    monkeypatch.setattr(
        api, "tensor_core_template", lambda *a, **kw: templates.append(sample(*a, **kw)) or templates[-1]
    )
    monkeypatch.setattr(api, "compile_problem", lambda text, *a: compiled.append(text) or check(text, *a))
    answers = api.candidates(F16_LINEAR, "cuda", k=2, model_path=ROOT / "model" / "weights" / "cuda")

    statements, decisions, bodies = templates[0]
    assert len(bodies) == len(decisions) >= 2 and all(len(d) == len(decisions[0]) > 0 for d in decisions)
    chosen = [(text, g) for text, g in answers if g.compiled]
    assert len(chosen) == 1 and answers[1] == chosen[0]
    text, g = chosen[0]
    assert g.body in bodies and g.stop == "eos"
    # the model's part is the chosen candidate's main part, statement for statement (a model under
    # canonical names writes its lambdas' parameters by position: the same index maps to TVM)
    main = g.body.split("\npostproc:\n", 1)[0]
    assert list(statements_of(positional_lambdas(g.completed_from))) == list(statements_of(positional_lambdas(main)))
    assert len(list(statements_of(main))) == len(statements)
    assert "tensorize(" in g.body and "wmma" in g.body
    assert text == header(F16_LINEAR, "nvidia/nvidia-h100") + g.body
    assert compiled.count(text) == 1 and check(text, F16_LINEAR, "cuda") is None
