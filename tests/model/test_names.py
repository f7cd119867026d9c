"""Names a workload's author chose (`dragon_model.names`) and the canonical names of every name a
prompt shows (`renaming.canonical_workload(..., scope="all")`): the same program under other names is
the same prompt, so a model reading it gives the same answer up to names.

Data: every TVMScript workload under tests/ (72 programs: generator families, real operators,
the engine's fault cases), each renamed at random twice."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from dragon_model.names import random_mapping, renamed, renamed_workload, user_names

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = sorted((ROOT / "tests").rglob("*.tvmscript"))
MATMUL = (ROOT / "dragon_dsl" / "examples" / "matmul_256.tvmscript").read_text(encoding="utf-8")


def test_roles_of_a_matmuls_names():
    names = user_names(MATMUL)
    assert names == {
        ("word", "A"): "param",
        ("word", "B"): "param",
        ("word", "C"): "param",
        ("word", "i"): "var",
        ("word", "j"): "var",
        ("word", "k"): "var",
        ("block", "C"): "block",
        ("word", "v_i"): "var",
        ("word", "v_j"): "var",
        ("word", "v_k"): "var",
    }


def test_a_block_and_a_buffer_of_one_name_are_renamed_apart():
    text = renamed(MATMUL, {("block", "C"): "update", ("word", "C"): "out"})
    assert 'T.sblock("update")' in text and "out: T.Buffer" in text and "out[v_i, v_j] = " in text
    assert "C[" not in text and '"C"' not in text


def test_attributes_keywords_strings_and_comments_are_not_names():
    text = MATMUL.replace('T.Buffer((256, 256), "float32")', 'T.Buffer((256, 256), "float32", scope="global")', 1)
    names = {n for _space, n in user_names(text)}
    assert not names & {"T", "I", "Module", "main", "Buffer", "float32", "scope", "global", "root", "SSR", "grid"}
    renamed_text = renamed(text, random_mapping(list(user_names(text)), random.Random(0)))
    assert '# with T.sblock("root"):' in renamed_text and 'scope="global"' in renamed_text


def test_alloc_buffers_are_found_by_their_allocation():
    text = next(p.read_text(encoding="utf-8") for p in WORKLOADS if "alloc_buffer(" in p.read_text(encoding="utf-8"))
    allocated = re.findall(r"^\s*(\w+) = T\.(?:sblock_)?alloc_buffer", text, flags=re.M)
    roles = user_names(text)
    assert allocated and all(roles[("word", n)] == "alloc" for n in allocated)


@pytest.mark.slow
@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: str(p.relative_to(ROOT / "tests")))
def test_renamed_is_the_same_program_with_no_name_left(path):
    from dragon_dsl.tvm.workload import load_workload, structural_hash

    text = path.read_text(encoding="utf-8")
    base = structural_hash(load_workload(text))
    for seed in range(2):
        other, mapping = renamed_workload(text, random.Random(seed))
        assert structural_hash(load_workload(other)) == base
        left = {n for _space, n in user_names(other)} & {n for _space, n in mapping}
        assert not left, f"names left as written: {sorted(left)}"


@pytest.mark.slow
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_every_name_canonical_gives_one_prompt_for_renamed_programs(target):
    from dragon_model.data import prompt_text
    from dragon_model.renaming import canonical_workload

    checked = 0
    for path in WORKLOADS[::2]:
        text = path.read_text(encoding="utf-8")
        want_text, _, mapping = canonical_workload(text, target, scope="all")
        if not mapping:
            continue
        want = prompt_text(want_text, target)
        other, renames = renamed_workload(text, random.Random(checked))
        got_text, _, got_mapping = canonical_workload(other, target, scope="all")
        assert prompt_text(got_text, target) == want, path.name
        # the mappings (blocks, and buffers: `names.canonical`) agree through the renaming: an answer
        # maps back to each one's names
        blocks = {old for (space, old) in renames if space == "block"}
        for (space, old), new in renames.items():
            if new in got_mapping and (space == "block" or old not in blocks):  # a name both: the block's
                assert got_mapping[new] == mapping[old], (path.name, old)
        assert len(got_mapping) >= len(mapping)
        checked += 1
    assert checked >= 25


def test_canonical_names_are_numbered_by_role():
    from dragon_model.names import canonical

    text, names = canonical(MATMUL)
    assert names == {"A": "p0", "B": "p1", "C": "q0"}  # block C and buffer C: the block's name
    assert 'def main(p0: T.Buffer((256, 256), "float32"), p1: T.Buffer' in text
    assert 'T.sblock("q0")' in text and 'x3, x4, x5 = T.axis.remap("SSR", [x0, x1, x2])' in text


@pytest.mark.slow
def test_a_rows_example_under_every_name_canonical():
    from dragon_model.data import prompt_text
    from dragon_model.renaming import canonical_row_example
    from dragon_model.tokenizer import IMPROVE

    row = {
        "workload_text": MATMUL,
        "target": "llvm",
        "task": "improvement",
        "prompt": prompt_text(MATMUL, "llvm", 'b0 = get_sblock("C")\n'),
        "completion": 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n',
    }
    ex = canonical_row_example(row)
    assert "buffer p0 float32[256,256] param" in ex["prompt"] and "block q0 iters S256 S256 R256" in ex["prompt"]
    assert ex["prompt"].split(IMPROVE)[1].startswith('b0 = get_sblock("q0")\n')
    assert ex["completion"] == 'b0 = get_sblock("q0")\nl1, l2, l3 = get_loops(b0)\n'


@pytest.mark.slow
def test_a_model_reading_every_name_canonical_answers_renamed_programs_alike(toy_model):
    """The renaming test at toy size: the same program under other names (every buffer, block, loop
    and iteration variable) gets the same script, up to the block names it looks up."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.generate import Generator
    from dragon_model.replay_state import replay_prefix

    gen = Generator.from_path(toy_model, canonical_names="all", max_statements=10)
    written = 0
    for name in ("matmul_64", "softmax_64", "conv2d_nchw_16"):
        text = (ROOT / "tests" / "data" / "workloads" / f"{name}.tvmscript").read_text(encoding="utf-8")
        want = gen.generate(text, "llvm").body
        other, renames = renamed_workload(text, random.Random(7))
        got = gen.generate(other, "llvm").body
        blocks = {new: old for (space, old), new in renames.items() if space == "block"}
        assert re.sub(r'"([^"]+)"', lambda m: '"' + blocks.get(m.group(1), m.group(1)) + '"', got) == want, name
        env, why = replay_prefix(got, load_workload(other), "llvm")
        assert why is None, why
        written += bool(want.strip())
    assert written, "no script written: the test would hold for any model"
