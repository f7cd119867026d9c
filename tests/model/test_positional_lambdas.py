"""A lambda's parameters named by position (`renaming.positional_lambdas`): what a model reading
canonical names learns to write, since dlight names them after iteration variables its prompt no
longer shows. The renamed script schedules the workload exactly as the original (TVM compares
index maps by position), and the decoder can write it.

Data: dlight's scripts of the workloads of tests/data/replay_prefix and of one training task of a
real network (data/tasks)."""

from __future__ import annotations

import pytest

from dragon_model.renaming import positional_lambdas
from tests.model.test_plain_labels import GEMM, scheduled

TEXTS = [
    # (script, positional): untyped, typed, a sampled value in the body, two on a line, none
    (
        "transform_block_layout(b1, lambda v_i, v_k: (v_i, v_k))\n",
        "transform_block_layout(b1, lambda i0, i1: (i0, i1))\n",
    ),
    (
        "transform_block_layout(b1, lambda (v_i0: int64, v_i1: int64, v_k: int64): (v_i1, v_k))\n",
        "transform_block_layout(b1, lambda (iters_0: int64, iters_1: int64, iters_2: int64): (iters_1, iters_2))\n",
    ),
    (
        "transform_layout(b7, write(0), lambda i, j: (i // v3, j, i % v3), pad_value=None)\n",
        "transform_layout(b7, write(0), lambda i0, i1: (i0 // v3, i1, i0 % v3), pad_value=None)\n",
    ),
    (
        "cache_index(b1, lambda i0, i1: (i1, i0), lambda j: (j))\n",
        "cache_index(b1, lambda i0, i1: (i1, i0), lambda i0: (i0))\n",
    ),
    ("transform_block_layout(b1, lambda i1, i0: (i0, i1))\n", "transform_block_layout(b1, lambda i0, i1: (i1, i0))\n"),
    ('b0 = get_sblock("lambda")\nl1 = get_loops(b0)\n', 'b0 = get_sblock("lambda")\nl1 = get_loops(b0)\n'),
    # positional already: dlight's GEMM layouts, as the decoder offers them (`gemm_layouts`)
    (
        "transform_layout(b3, write(0), lambda (i0: int64, i1: int64): (int64(0), i0, i1))\n",
        "transform_layout(b3, write(0), lambda (i0: int64, i1: int64): (int64(0), i0, i1))\n",
    ),
]


@pytest.mark.parametrize("script,want", TEXTS)
def test_parameters_are_named_by_position(script, want):
    assert positional_lambdas(script) == want
    assert positional_lambdas(want) == want  # a fixed point


def dlight_cases() -> list:
    """(name, workload text): the replay_prefix workloads (int32 iterators, untyped lambdas) and a
    training task of a real network (a GEMV with an epilogue: int64 iterators, typed lambdas)."""
    from dragon_dsl.language.files import read_json_lines
    from dragon_model.held_out import TASKS_FILE

    cases = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(GEMM.parent.glob("*.tvmscript"))]
    task = next(t for t in read_json_lines(TASKS_FILE) if t["id"] == "1010981691898563817")  # fused_matmul_add3
    return cases + [(task["name"], task["text"])]


@pytest.mark.slow
@pytest.mark.parametrize("case", range(5))
def test_dlights_scripts_renamed_schedule_alike_and_the_decoder_can_write_them(case):
    """dlight's script for each workload, without unused queries (`records --plain-labels`), its
    lambdas named by position: the same schedule, and a script the decoder's grammar can write."""
    import tvm_ffi

    from dragon_dsl.engine import resolve_target
    from dragon_model.api import dlight_script, generator
    from dragon_model.data import body_of_text, without_unused_queries
    from dragon_model.reachable import reachable

    name, text = dlight_cases()[case]
    body = without_unused_queries(body_of_text(dlight_script(text, resolve_target("cuda").spec, name)))
    label = positional_lambdas(body)
    assert "lambda" in body and (label != body or name == GEMM.stem)
    if name.startswith("fused_matmul"):
        assert "lambda (iters_0: int64, iters_1: int64, iters_2: int64): (iters_1, iters_2)" in label
    assert tvm_ffi.structural_equal(scheduled(label, text), scheduled(body, text))
    reach = reachable(generator(None, "cuda"), text, "cuda", label)
    assert reach.ok, reach


@pytest.mark.slow
def test_a_canonical_training_example_names_its_lambdas_by_position():
    from dragon_model.data import prompt_text
    from dragon_model.renaming import canonical_row_example
    from dragon_model.tokenizer import IMPROVE

    text = (GEMM.parent / "rms_norm_llm_dtypef16_m128_n4096_rms1.tvmscript").read_text(encoding="utf-8")
    script = 'b0 = get_sblock("root")\nb1, b2, b3 = get_child_blocks(b0)\ntransform_block_layout(b1, lambda v_i, v_k: (v_i, v_k))\n'
    row = {"workload_text": text, "target": "cuda", "task": "improvement", "prompt": prompt_text(text, "cuda", script)}
    ex = canonical_row_example(dict(row, completion=script))
    assert ex["completion"].endswith("transform_block_layout(b1, lambda i0, i1: (i0, i1))\n")
    assert "lambda i0, i1: (i0, i1)" in ex["prompt"].split(IMPROVE)[1] and "v_i" not in ex["prompt"].split(IMPROVE)[1]


@pytest.mark.slow
def test_the_decoder_can_write_a_canonical_models_label_of_a_real_networks_gemv(monkeypatch):
    """`reachable` judges a canonical model's label as it is trained (`as_canonical`): dlight's
    typed lambda, named after iteration variables the canonical prompt renames, is refused unless its
    parameters are named by position."""
    import json

    from dragon_dsl.engine import resolve_target
    from dragon_model import renaming
    from dragon_model.api import dlight_script
    from dragon_model.candidates import WEIGHTS
    from dragon_model.data import body_of_text
    from dragon_model.reachable import judge_rows

    name, text = dlight_cases()[-1]
    body = body_of_text(dlight_script(text, resolve_target("cuda").spec, name))
    row = {
        "workload_text": text,
        "target": "cuda",
        "task": "construction",
        "family": name,
        "prompt": "",
        "completion": body,
    }
    facts = dict(json.loads((WEIGHTS / "cuda" / "dragon_model.json").read_text()), canonical_names="all")
    assert judge_rows([row], "cuda", facts)[0]["ok"]
    monkeypatch.setattr(renaming, "positional_lambdas", lambda s: s)  # as the first canonical model learned them
    refused = judge_rows([row], "cuda", facts)[0]
    assert not refused["ok"] and refused["refused"].startswith("transform_block_layout(b1, lambda (v_i0: int64")


def test_a_canonical_mapping_renames_buffers_only_in_the_blocks_get_sblock_names():
    from dragon_model.names import NameMap
    from dragon_model.renaming import renamed_strings

    # blocks T_add and C, buffers A, x, C (as block C's output) and T_add
    mapping = NameMap({"T_add": "q0", "C": "q1"}, {"A": "p0", "x": "p1", "C": "p2", "T_add": "a0"})
    assert mapping == {"A": "p0", "x": "p1", "T_add": "q0", "C": "q1"}  # a block's name where one is both
    script = (
        'b1 = get_sblock("A_reindex_pad_shared.dyn_wmma.matrix_a_o")\nbind(l2, "threadIdx.x")\n'
        'b3 = get_sblock("T_add")\nannotate(b3, "pragma", "C")\nb4 = get_sblock("C_rf")\n'
        'b5 = get_sblock("C_reindex_shared.dyn_wmma.accumulator_o")\nb6 = get_sblock("T_add_local")\n'
    )
    renamed = renamed_strings(script, mapping)
    assert renamed == (
        'b1 = get_sblock("p0_reindex_pad_shared.dyn_wmma.matrix_a_o")\nbind(l2, "threadIdx.x")\n'
        'b3 = get_sblock("q0")\nannotate(b3, "pragma", "q1")\nb4 = get_sblock("q1_rf")\n'
        'b5 = get_sblock("p2_reindex_shared.dyn_wmma.accumulator_o")\nb6 = get_sblock("a0_local")\n'
    )
    from dragon_model.renaming import renamed_words

    assert renamed_words(renamed, mapping.back()) == script  # an answer's names given back
