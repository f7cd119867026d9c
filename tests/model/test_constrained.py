"""Constrained decoding never emits a script that fails the parser, the checker or TVM's replay,
and the statement grammar accepts every real MetaSchedule script."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

DATA = Path(__file__).resolve().parent.parent / "data"
WORKLOADS = ["matmul_64", "sfm_0", "c2d_0", "row_sum_64x256", "matmul_bias_32"]


@pytest.fixture(scope="module")
def random_generator():
    """A random-init toy model: the worst case for the mask and the pruning."""
    from dragon_model.generate import Generator
    from dragon_model.tokenizer import build_tokenizer
    from dragon_model.train import make_model

    tok = build_tokenizer()
    return Generator(make_model(tok, "toy", max_positions=2048, seed=7).eval(), tok, max_statements=10, retries=3)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), workload=st.sampled_from(WORKLOADS), temperature=st.sampled_from([0.0, 1.0, 2.0]))
def test_decoding_never_emits_rejected_text(random_generator, seed, workload, temperature):
    from dragon_dsl import check_text
    from dragon_dsl.language.diagnostics import Severity
    from dragon_dsl.tvm.replay import replay

    path = DATA / "workloads" / f"{workload}.tvmscript"
    g = random_generator.generate(path, {"kind": "llvm", "num-cores": 2}, temperature=temperature, seed=seed)
    program, diags = check_text(g.body)
    assert not [d for d in diags if d.severity is Severity.ERROR], (g.body, diags)
    result = replay(program, path)
    assert result.ok, (g.body, result.diagnostics)
    assert g.stop in ("eos", "retries", "max_statements", "max_tokens")


def test_rejected_statements_are_rolled_back(random_generator):
    """A random model proposes statements TVM or the checker refuses; none of them survives."""
    g = random_generator.generate(DATA / "workloads" / "matmul_64.tvmscript", "llvm", temperature=1.5, seed=3)
    assert g.rejected >= len(g.rejections) > 0
    for stmt, why in g.rejections:
        assert stmt and why
        if why != "statement too long":
            assert stmt not in g.body.splitlines()


def _statements(body: str):
    for line in body.splitlines(keepends=True):
        if line == "\n":
            continue
        yield "\npostproc:\n" if line == "postproc:\n" else line


def _replayed(body: str, mod):
    """The module a script body leaves (it must replay)."""
    from dragon_dsl import check_text
    from dragon_dsl.tvm.replay import replay

    result = replay(check_text(body)[0], mod)
    assert result.ok
    return result.schedule.mod


def test_statement_grammar_accepts_real_scripts():
    """Every statement of real llvm traces is in the grammar of its prefix's state: the mask never
    removes what MetaSchedule itself writes, except a state whose reductions re-run past
    REPEATED_WORK_FACTOR times the program's work, which the decoder refuses on purpose: such a trace
    ends there too (a random sample MetaSchedule's search would measure slow and drop)."""
    import xgrammar as xgr

    from dragon_dsl import from_trace_json
    from dragon_dsl.tvm.compile import repeated_work_message
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.decoder_grammar import statement_grammar
    from dragon_model.replay_state import replay_prefix
    from dragon_model.tokenizer import build_tokenizer, token_strings

    tok = build_tokenizer()
    info = xgr.TokenizerInfo(
        token_strings(tok), xgr.VocabType.RAW, vocab_size=len(tok), stop_token_ids=[tok.eos_token_id]
    )
    compiler = xgr.GrammarCompiler(info, max_threads=1)
    records = [
        json.loads(line)
        for name in ("design_spaces", "sampled")
        for line in open(DATA / "traces" / f"{name}.jsonl", encoding="utf-8")
    ]
    records = [r for r in records if isinstance(r["target"], dict)]
    for rec in random.Random(0).sample(records, 6):
        mod = load_workload(DATA / "workloads" / f"{rec['workload']}.tvmscript")
        prefix = ""
        statements = list(_statements(from_trace_json(rec["trace"])))
        for stmt in statements:
            env, why = replay_prefix(prefix, mod, "llvm")
            if env is None and repeated_work_message(_replayed(prefix, mod), mod):
                assert repeated_work_message(_replayed("".join(statements), mod), mod), (rec["workload"], why)
                break
            assert env is not None, why
            matcher = xgr.GrammarMatcher(
                compiler.compile_grammar(statement_grammar(env)), terminate_without_stop_token=True
            )
            ids = tok(stmt, add_special_tokens=False)["input_ids"]
            assert all(matcher.accept_token(i) for i in ids) and matcher.is_terminated(), (rec["workload"], stmt)
            prefix += stmt


def test_grammar_knows_live_names_and_shapes():
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.decoder_grammar import statement_grammar
    from dragon_model.replay_state import replay_prefix

    mod = load_workload(DATA / "workloads" / "matmul_64.tvmscript")
    body = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4, l5 = split(l1, [8, 8])\n'
    env, why = replay_prefix(body, mod, "llvm")
    assert why is None
    assert set(env.loops) == {"l2", "l3", "l4", "l5"}  # l1 was consumed by split
    assert env.loops["l4"] == 8 and env.counter == 6
    grammar = statement_grammar(env)
    assert '"l6, l7, l8, l9 = " "get_loops(" "b0" ")"' in grammar
    assert "bind(" not in grammar  # no thread axes on a CPU
    assert env.blocks["b0"]["loops"] == 4


def test_unsafe_keywords_are_not_in_the_grammar():
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.decoder_grammar import statement_grammar
    from dragon_model.replay_state import replay_prefix

    env, _ = replay_prefix(
        'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n',
        load_workload(DATA / "workloads" / "matmul_64.tvmscript"),
        "llvm",
    )
    grammar = statement_grammar(env)
    assert "split(" in grammar and "disable_predication" not in grammar and "unsafe_set_dtype" not in grammar


def test_a_sampled_compute_location_goes_only_to_compute_at():
    """sample_compute_location's result may be the root marker (decision -1), not a loop: TVM
    crashes when such a value is annotated, so the grammar offers it to compute_at alone."""
    import xgrammar as xgr

    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.decoder_grammar import statement_grammar
    from dragon_model.replay_state import replay_prefix
    from dragon_model.tokenizer import build_tokenizer, token_strings

    mod = load_workload(DATA / "workloads" / "matmul_relu_64.tvmscript")
    body = 'b0 = get_sblock("C")\nl1 = sample_compute_location(b0, decision=-1)\n'
    env, why = replay_prefix(body, mod, "llvm")
    assert why is None, why
    assert env.locations == ["l1"] and "l1" not in env.loops
    tok = build_tokenizer()
    info = xgr.TokenizerInfo(
        token_strings(tok), xgr.VocabType.RAW, vocab_size=len(tok), stop_token_ids=[tok.eos_token_id]
    )
    compiled = xgr.GrammarCompiler(info, max_threads=1).compile_grammar(statement_grammar(env))

    def accepted(stmt: str) -> bool:
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return all(matcher.accept_token(i) for i in tok(stmt, add_special_tokens=False)["input_ids"])

    assert accepted("compute_at(b0, l1")
    assert not accepted("annotate(l1,")
    assert not accepted("l2, l3 = split(l1,")


def _matcher_for(env, **kw):
    import xgrammar as xgr

    from dragon_model.decoder_grammar import statement_grammar
    from dragon_model.tokenizer import build_tokenizer, token_strings

    tok = build_tokenizer()
    info = xgr.TokenizerInfo(
        token_strings(tok), xgr.VocabType.RAW, vocab_size=len(tok), stop_token_ids=[tok.eos_token_id]
    )
    compiled = xgr.GrammarCompiler(info, max_threads=1).compile_grammar(statement_grammar(env, **kw))

    def accepts(stmt: str, complete: bool = False) -> bool:
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        ok = all(m.accept_token(i) for i in tok(stmt, add_special_tokens=False)["input_ids"])
        return ok and (m.is_terminated() if complete else True)

    return accepts


# (statement, accepted) after `b0 = get_sblock("C"); l1, l2, l3 = get_loops(b0)` on matmul_64
# (extents 64) and a tile sampled for l1
_TILED = (
    'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n'
    "v4, v5 = sample_perfect_tile(l1, n=2, max_innermost_factor=64, decision=[8, 8])\n"
)
TIGHT_CASES = [
    # a tile decision multiplies to the loop's extent
    ("v6, v7, v8 = sample_perfect_tile(l2, n=3, max_innermost_factor=64, decision=[4, 4, 4])\n", True),
    ("v6, v7, v8 = sample_perfect_tile(l2, n=3, max_innermost_factor=64, decision=[4, 4, 2])", False),
    ("v6, v7 = sample_perfect_tile(l2, n=2, max_innermost_factor=64, decision=[1, 1]", False),
    # split of a tiled loop takes its own tile, in order
    ("l6, l7 = split(l1, [v4, v5])\n", True),
    ("l6, l7 = split(l1, [v5, v4]", False),
    ("l6, l7 = split(l2, [v4,", False),
    # constant splits: [None, k] with a positive k
    ("l6, l7 = split(l2, [None, 16])\n", True),
    ("l6, l7 = split(l2, [0,", False),
    ("l6, l7 = split(l2, [None, 0", False),
    # fuse: distinct loops in increasing order
    ("l6 = fuse(l2, l3)\n", True),
    ("l6 = fuse(l3, l2", False),
    ("l6 = fuse(l2, l2", False),
    # blockize: a loop, or distinct blocks with loops in increasing order (a repeated block made a
    # script whose text no longer replayed)
    ("b6 = blockize(l2)\n", True),
    ("b6 = blockize([b0])\n", True),
    ("b6 = blockize([b0, b0", False),
    # vectorize: loops of at most 64 iterations (all are 64 here)
    ("vectorize(l3)\n", True),
    # the section header may follow a statement's newline as one "\n\n" token
    ('annotate(b0, "pragma_unroll_explicit", 1)\n\npostproc:\n', True),
    # annotation keys are MetaSchedule's, each with its kind of value
    ('annotate(b0, "meta_schedule.tiling_structure", "SSRSRS")\n', True),
    ('annotate(b0, "meta_schedule.parallel", "SSRSRS"', False),
    ('annotate(b0, "k"', False),
]


@pytest.mark.parametrize("stmt, accepted", TIGHT_CASES)
def test_grammar_keeps_metaschedule_idioms(stmt, accepted):
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix(_TILED, load_workload(DATA / "workloads" / "matmul_64.tvmscript"), "llvm")
    assert why is None, why
    assert env.tiles == {"l1": ["v4", "v5"]}
    assert _matcher_for(env)(stmt, complete=stmt.endswith("\n")) is accepted


def test_grammar_offers_only_the_instructions_the_model_was_trained_on():
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, _ = replay_prefix(_TILED, load_workload(DATA / "workloads" / "matmul_64.tvmscript"), "llvm")
    accepts = _matcher_for(env, allowed=frozenset({"split", "fuse"}))
    assert accepts("l6 = fuse(l2, l3)\n", complete=True)
    assert not accepts("vectorize(")
    assert not accepts("l6 = add_unit_loop(")


_FUSED = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4 = fuse(l1, l2)\n'  # l4: 4096 iterations


@pytest.mark.parametrize(
    "target, stmt, accepted",
    [
        ("llvm", "v5, v6 = sample_perfect_tile(l4, n=2, max_innermost_factor=64, decision=[64, 64])\n", True),
        ("llvm", "v5, v6 = sample_perfect_tile(l4, n=2, max_innermost_factor=64, decision=[32, 128]", False),
        ("llvm", "v5, v6, v7 = sample_perfect_tile(l4, n=3, max_innermost_factor=64, decision=[1, 4096, 1])\n", True),
        ("llvm", "v5, v6, v7 = sample_perfect_tile(l4, n=3, max_innermost_factor=64, decision=[1, 1, 4096", False),
        ("llvm", "v5 = sample_perfect_tile(l4, n=1,", False),  # one factor: the whole loop
        ("llvm", "v5 = sample_perfect_tile(l3, n=1, max_innermost_factor=64, decision=[64])\n", True),
        ("llvm", "v5, v6 = sample_perfect_tile(l4, n=2, max_innermost_factor=16", False),  # not a CPU rule's
        ("llvm", "v5, v6 = sample_perfect_tile(l4, n=2, decision=", False),  # the cap is always written
        ("cuda", "v5, v6 = sample_perfect_tile(l4, n=2, max_innermost_factor=4, decision=[1024, 4])\n", True),
        ("cuda", "v5, v6 = sample_perfect_tile(l4, n=2, max_innermost_factor=4, decision=[512, 8", False),
        ("cuda", "v5, v6 = sample_perfect_tile(l4, n=2, max_innermost_factor=64, decision=[512, 8])\n", True),
    ],
)
def test_a_tile_ends_within_its_max_innermost_factor(target, stmt, accepted):
    """TVM replays any decision whose product is the extent, but MetaSchedule's sampler never draws
    an innermost factor above `max_innermost_factor`; the llvm model wrote [1, 1, 1, 4464] under a
    cap of 64 for a softmax's rows, and the kernel ran 2,800x slower than the unscheduled program."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix(_FUSED, load_workload(DATA / "workloads" / "matmul_64.tvmscript"), target)
    assert why is None, why
    assert _matcher_for(env)(stmt, complete=stmt.endswith("\n")) is accepted


def test_vectorize_skips_long_loops():
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, _ = replay_prefix(
        'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4 = fuse(l1, l2)\n',
        load_workload(DATA / "workloads" / "matmul_64.tvmscript"),
        "llvm",
    )
    accepts = _matcher_for(env)
    assert env.loops["l4"] == 4096
    assert accepts("vectorize(l3)\n", complete=True)
    assert not accepts("vectorize(l4")


@pytest.mark.parametrize(
    "target, kinded, stmt",
    [
        ("cuda", 'bind(l1, "blockIdx.x")\n', 'bind(l1, "threadIdx.x")\n'),
        ("cuda", 'bind(l1, "blockIdx.x")\n', "unroll(l1)\n"),
        ("llvm", "parallel(l1)\n", "unroll(l1)\n"),
        ("llvm", "unroll(l3)\n", "vectorize(l3)\n"),
        ("llvm", "unroll(l3)\n", "parallel(l3)\n"),
    ],
)
def test_a_loop_takes_one_kind(target, kinded, stmt):
    """bind, parallel, unroll and vectorize take serial loops only. TVM lets `bind` rebind a bound
    loop (a reduction's loop bound to blockIdx.x, then threadIdx.x, replays and builds into a
    kernel thousands of times slower than dlight); no training script gives a loop two kinds."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    prefix = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n'
    env, why = replay_prefix(prefix + kinded, load_workload(DATA / "workloads" / "matmul_64.tvmscript"), target)
    assert env is not None, why
    accepts = _matcher_for(env)
    assert not accepts(stmt, complete=True)
    other = stmt.replace("l1", "l2").replace("l3", "l2")  # the same on the untouched middle loop
    assert accepts(other, complete=True) == (not other.startswith("vectorize"))  # (not innermost)


def test_nested_parallel_loops_are_rejected_while_decoding():
    """TVM's `parallel` accepts a loop inside a parallel one; the CPU build then fails."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    mod = load_workload(DATA / "workloads" / "matmul_64.tvmscript")
    body = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nparallel(l1)\n'
    env, why = replay_prefix(body, mod, "llvm")
    assert why is None, why
    env, why = replay_prefix(body + "parallel(l2)\n", mod, "llvm")
    assert env is None and "parallel" in why


def test_get_sblock_names_an_existing_block_of_main_only():
    """The function name stays at its default (`main`): a free string there let an untrained model
    write junk until the statement grew too long (seen generating for CUDA)."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, _ = replay_prefix("", load_workload(DATA / "workloads" / "matmul_64.tvmscript"), "llvm")
    accepts = _matcher_for(env)
    assert accepts('b0 = get_sblock("C")\n', complete=True)
    assert not accepts('b0 = get_sblock("C", func_name=')
    assert not accepts('b0 = get_sblock("nope"')


# the constants a training corpus wrote (`data.literals_of`), and what the grammar then takes
_LITERALS = {
    "categorical": [[0, 16, 64, 512]],
    "split_factors": [64],
    "annotations": {
        "meta_schedule.parallel": {"int": [32]},
        "meta_schedule.tiling_structure": {"str": ["SSRSRS"]},
        "pragma_auto_unroll_max_step": {"int": [16, 64]},
        "meta_schedule.unroll_explicit": {"sampled": ["value"]},
        "software_pipeline_stage": {"list": ["[0, 0, 2]"]},
    },
}
LITERAL_CASES = [
    ("v6 = sample_categorical([0, 16, 64, 512], [0.25, 0.25, 0.25, 0.25], decision=2)\n", True),
    ("v6 = sample_categorical([0, 164,", False),  # a candidate list never seen
    ("v6 = sample_categorical([0, 16, 64], [", False),
    ("l6, l7 = split(l2, [None, 64])\n", True),
    ("l6, l7 = split(l2, [None, 16", False),  # a constant factor never seen
    ("l6, l7, l8 = split(l2, [None, 64, 64]", False),  # 4096 > the loop's 64 (on a CPU)
    ("l6, l7 = split(l1, [v4, v5])\n", True),  # the sampled tile is not a constant
    ('annotate(b0, "meta_schedule.parallel", 32)\n', True),
    ('annotate(b0, "meta_schedule.parallel", 16', False),  # a value never seen for that key
    ('annotate(b0, "pragma_auto_unroll_max_step", 64)\n', True),
    ('annotate(b0, "meta_schedule.tiling_structure", "SSRSRS")\n', True),
    ('annotate(b0, "meta_schedule.tiling_structure", "SS"', False),
    ('annotate(l2, "software_pipeline_stage", [0, 0, 2])\n', True),
    ('annotate(b0, "meta_schedule.vectorize",', False),  # a key never seen
]
_CATEGORICAL = _TILED + "v6 = sample_categorical([0, 16, 64, 512], [0.25, 0.25, 0.25, 0.25], decision=2)\n"
SAMPLED_CASES = [
    ('annotate(b0, "meta_schedule.unroll_explicit", v6)\n', True),  # a key seen with a sampled value
    ('annotate(b0, "meta_schedule.unroll_explicit", 16', False),
    ('annotate(b0, "meta_schedule.parallel", v6', False),  # ... and only those keys
]


@pytest.mark.parametrize(
    "prefix, stmt, accepted", [(_TILED, *c) for c in LITERAL_CASES] + [(_CATEGORICAL, *c) for c in SAMPLED_CASES]
)
def test_grammar_takes_only_the_constants_of_the_training_corpus(prefix, stmt, accepted):
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix(prefix, load_workload(DATA / "workloads" / "matmul_64.tvmscript"), "llvm")
    assert why is None, why
    assert _matcher_for(env, literals=_LITERALS)(stmt, complete=stmt.endswith("\n")) is accepted


def test_a_constant_split_fits_its_loop_on_cpus_and_a_split_loop_is_split_again_only_within_it():
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    mod = load_workload(DATA / "workloads" / "matmul_64.tvmscript")
    body = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4 = fuse(l1, l2)\nl5, l6 = split(l4, [None, 64])\n'
    env, why = replay_prefix(body, mod, "llvm")
    assert why is None, why
    assert env.split_loops == {"l5", "l6"} and env.loops["l5"] == 64
    old = _matcher_for(env, literals={**_LITERALS, "split_factors": [16, 64]})  # a model without split shapes
    assert not old("l7, l8 = split(l5, [None, 16]")  # never splits a split loop
    accepts = _matcher_for(
        env, literals={**_LITERALS, "split_factors": [16, 64], "split_shapes": ["None,k", "None,k,k"]}
    )
    assert accepts("l7, l8 = split(l3, [None, 64])\n", complete=True)
    assert accepts("l7, l8, l9 = split(l3, [None, 16, 2", complete=False) is False  # 2 was never seen
    assert not accepts("l7, l8, l9 = split(l3, [None, 16, 16]")  # 256 > 64
    assert accepts("l7, l8 = split(l5, [None, 16])\n", complete=True)  # made by a constant split: fits
    assert not accepts("l7, l8, l9 = split(l5, [None, 16, 16]")  # ... and so only within it
    gpu = _matcher_for(
        env.__class__(**{**env.__dict__, "target_kind": "cuda"}),
        literals={**_LITERALS, "split_factors": [16, 64], "split_shapes": ["None,k", "None,k,k"]},
    )
    assert gpu("l7, l8, l9 = split(l3, [None, 64, 64])\n", complete=True)  # cooperative fetch may exceed
    assert not gpu("l7, l8, l9 = split(l5, [None, 64, 64]")  # a split loop never does


_GPU_SPLITS = {
    **_LITERALS,
    "split_factors": [16, 64, 256, 1024],
    "split_shapes": ["None,k", "None,k,k"],
    "categorical": [[32, 64, 128, 256, 512, 1024]],
}
# l2: the 128-long reduction of mean_center's row sums; l1: its 64 rows
REDUCTION_SPLIT_CASES = [
    ("l3, l4 = split(l2, [None, 64])\n", True),
    ("l3, l4, l5 = split(l2, [None, 16, 16]", False),  # 256 > 128
    ("l3, l4 = split(l2, [None, 1024]", False),  # the padding would cut off the loop rfactor takes
    ("l3, l4 = split(l2, [None, 256])\n", True),  # dlight's GeneralReduction split, whatever the extent
    ("l4, l5 = split(l2, [None, v3])\n", True),  # a sampled thread count (MetaSchedule's cross-thread rule)
    ("l3, l4 = split(l1, [None, 1024])\n", True),  # a spatial loop may exceed (cooperative fetches do)
]


@pytest.mark.parametrize("stmt, accepted", REDUCTION_SPLIT_CASES)
def test_a_constant_split_of_a_gpu_reduction_loop_fits_it(stmt, accepted):
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    body = 'b0 = get_sblock("sum")\nl1, l2 = get_loops(b0)\n'
    if "v3" in stmt:
        body += "v3 = sample_categorical([32, 64, 128, 256, 512, 1024], [0.2, 0.2, 0.2, 0.2, 0.1, 0.1], decision=1)\n"
    env, why = replay_prefix(body, load_workload(DATA / "workloads" / "mean_center_64x128.tvmscript"), "cuda")
    assert why is None, why
    assert env.reduction_loops == {"l2"} and env.loops["l2"] == 128
    assert _matcher_for(env, literals=_GPU_SPLITS)(stmt, complete=stmt.endswith("\n")) is accepted


def test_literals_of_a_corpus_are_what_its_scripts_write():
    from dragon_model.data import literals_of

    script = (
        'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n'
        "v4 = sample_categorical([0, 16, 64, 512], [0.25, 0.25, 0.25, 0.25], decision=1)\n"
        'l5, l6 = split(l1, [None, 64])\nannotate(b0, "meta_schedule.unroll_explicit", v4)\n'
        'annotate(b0, "meta_schedule.parallel", 32)\nannotate(l2, "software_pipeline_stage", [0, 0, 2])\n'
        'annotate(b0, "meta_schedule.tiling_structure", "SSRSRS")\n'
    )
    dlight = (
        'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4, l5, l6, l7 = split(l1, [None, 1, 16, 4])\n'
        'b8 = cache_write(b0, 0, "local")\nget_consumers(b8)\nget_consumers(b8)\nget_consumers(b8)\n'
    )
    got = literals_of([{"script": script, "prompt_script": dlight}])
    assert got == {
        "categorical": [[0, 16, 64, 512]],
        "split_factors": [1, 4, 16, 64],
        "split_shapes": ["None,k", "None,k,k,k"],
        "query_repeats": 3,
        "annotations": {
            "meta_schedule.parallel": {"int": [32]},
            "meta_schedule.unroll_explicit": {"sampled": ["value"]},
            "meta_schedule.tiling_structure": {"str": ["SSRSRS"]},
            "software_pipeline_stage": {"list": ["[0, 0, 2]"]},
        },
    }


@pytest.mark.parametrize(
    "stmt, query",
    [
        ("l1, l2, l3 = get_loops(b0)\n", "get_loops(b0)"),
        ('b0 = get_sblock("C")\n', 'get_sblock("C")'),
        ("b5 = get_producers(b0)\n", "get_producers(b0)"),
        ("v4, v5 = sample_perfect_tile(l1, n=2, max_innermost_factor=64, decision=[8, 8])\n", None),  # samples
        ("l6, l7 = split(l1, [v4, v5])\n", None),  # changes
        ('annotate(b0, "pragma_unroll_explicit", 1)\n', None),
    ],
)
def test_queries_are_the_pure_getters(stmt, query):
    from dragon_model.generate import _query

    assert _query(stmt) == query


def test_generation_never_asks_the_same_question_twice_in_a_row(toy_model):
    """The toy model repeats `get_loops(b0)` when nothing stops it (seen: 15 times in a row on
    matmul_64); the generator refuses a query whose answer cannot have changed."""
    from dragon_model.api import candidates
    from dragon_model.generate import _query

    wl = DATA / "workloads" / "matmul_64.tvmscript"
    for _text, g in candidates(str(wl), "llvm", k=2, model_path=str(toy_model), max_seconds=30):
        asked = set()
        for line in g.body.splitlines(keepends=True):
            q = _query(line)
            assert q is None or q not in asked, (q, g.body)
            asked = set() if q is None else asked | {q}


def test_an_inner_thread_loop_longer_than_its_outer_one_is_rejected_while_decoding():
    """On a GPU, binding threadIdx.x inside a shorter threadIdx.x loop makes iterations that never
    run (the compile check would reject the script): the decoder resamples that statement. An
    inner loop no longer than the outer one (MetaSchedule's cooperative fetch) is accepted."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    mod = load_workload(DATA / "workloads" / "matmul_64.tvmscript")
    body = (
        'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4, l5 = split(l1, [2, 32])\n'
        'bind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n'
    )
    env, why = replay_prefix(body, mod, "cuda")
    assert env is not None, why
    env, why = replay_prefix(body + 'l6, l7 = split(l2, [2, 32])\nbind(l6, "threadIdx.x")\n', mod, "cuda")
    assert env is not None, why  # 2 inside 32: fine
    env, why = replay_prefix(body + 'bind(l2, "threadIdx.x")\n', mod, "cuda")
    assert env is None and "binds threadIdx.x (64) inside a loop bound to threadIdx.x (32)" in why
    env, why = replay_prefix(body + 'bind(l2, "threadIdx.x")\n', mod, "llvm")
    assert env is not None, "CPU targets are not checked for thread bindings"


def test_compiled_grammars_stay_within_the_cache_bound(monkeypatch):
    """xgrammar's compiler caches every grammar it compiles unless given a limit (two generation
    processes grew to 8-12 GB without one): the Generator gives its compiler the bound, and
    distinct statement grammars beyond it push the least recently used out."""
    from dragon_model import generate
    from dragon_model.tokenizer import build_tokenizer
    from dragon_model.train import make_model

    monkeypatch.setattr(generate, "GRAMMAR_CACHE_BYTES", 4 * 2**20)
    tok = build_tokenizer()
    gen = generate.Generator(make_model(tok, "toy", max_positions=256, seed=1).eval(), tok)
    assert gen.compiler.cache_limit_bytes == 4 * 2**20
    pad = ' "pad"' * 2000
    sizes = []
    for i in range(40):  # ~0.6 MB each: 24 MB in all
        gen._compile(f'root ::= "a" "{i}"{pad}')
        sizes.append(gen.compiler.get_cache_size_bytes())
    assert sizes[1] > sizes[0] > 0, "compiled grammars are kept while they fit"
    assert max(sizes) <= 4 * 2**20


def test_an_index_map_takes_one_parameter_per_block_iterator_and_refers_to_them():
    """transform_block_layout's lambda: the three forms of the training labels (iterator names of
    the live blocks, i0.., typed iters_k), one parameter per iterator, a body of such names and
    integer casts only (the seventh CUDA model wrote 2 parameters for 4 iterators and bodies naming none)."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix(
        'b0 = get_sblock("C")\n', load_workload(DATA / "workloads" / "matmul_64.tvmscript"), "cuda"
    )
    assert why is None, why
    i, j, k = env.block_iters["b0"]
    accepts = _matcher_for(env)
    assert accepts(f"transform_block_layout(b0, lambda {i}, {j}, {k}: ({i}, {j}, {k}))\n", complete=True)
    assert accepts("transform_block_layout(b0, lambda i0, i1, i2: (i0, i1 // 16, i1 % 16, i2))\n", complete=True)
    assert accepts(
        "transform_block_layout(b0, lambda (iters_0: int64, iters_1: int64, iters_2: int64): "
        "(iters_0, iters_1, iters_2, int64(0)))\n",
        complete=True,
    )
    assert not accepts("transform_block_layout(b0, lambda i0, i1: ")  # 2 parameters for 3 iterators
    assert not accepts("transform_block_layout(b0, lambda i0, i1, i2: (q")  # not a parameter
    assert not accepts("transform_block_layout(b0, lambda i0, i1, i2: (i3")  # 3 parameters: no i3


def test_tensorize_takes_a_live_block_and_an_intrinsic_the_corpus_annotates_blocks_with():
    """Every tensor-core label ends with get_sblock, unannotate(auto_tensorize) and tensorize by
    the annotation's value; the grammar offers exactly those intrinsics (registered, and seen),
    on blocks, and nothing to a model whose corpus never annotated one (before version 16 it
    refused every tensorize, so no answer could use tensor cores)."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.replay_state import replay_prefix

    env, why = replay_prefix(
        'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n',
        load_workload(DATA / "workloads" / "matmul_64.tvmscript"),
        "cuda",
    )
    assert why is None, why
    literals = {
        **_LITERALS,
        "annotations": {
            **_LITERALS["annotations"],
            "meta_schedule.auto_tensorize": {
                "str": ["wmma_sync_16x16x16_f16f16f32", "wmma_load_16x16x16_f16_a_shared_dyn"]
            },
            "meta_schedule.auto_tensorize_init": {"str": ["wmma_fill_16x16x16_f32"]},
        },
    }
    accepts = _matcher_for(env, literals=literals)
    assert accepts('tensorize(b0, "wmma_sync_16x16x16_f16f16f32")\n', complete=True)
    assert accepts('tensorize(b0, "wmma_fill_16x16x16_f32")\n', complete=True)
    assert not accepts('tensorize(b0, "dot_4x4')  # an intrinsic the corpus never named
    assert not accepts("tensorize(l1,")  # the labels tensorize blocks
    assert not accepts('tensorize(b0, "wmma_sync_16x16x16_f16f16f32", preserve_unit_iters')
    assert not _matcher_for(env, literals=_LITERALS)("tensorize(")  # no auto_tensorize in its corpus


@given(st.integers(1, 20000), st.integers(1, 3000))
@settings(max_examples=300, deadline=None)
def test_tile_factors_are_every_divisor_in_increasing_order(n, root):
    """A tile's factors are offered from `_divisors`: every divisor once, in increasing order (a
    square's root too)."""
    from dragon_model.decoder_terms import divisors as _divisors

    assert list(_divisors(n)) == [d for d in range(1, n + 1) if n % d == 0]
    square = list(_divisors(root * root))
    assert square.count(root) == 1 and square == sorted(square) and square[-1] == root * root
