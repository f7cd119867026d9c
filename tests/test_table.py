"""The instruction table: complete, consistent, and the generated reference is fresh."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dragon_dsl.language import docs
from dragon_dsl.language.table import BY_KIND, BY_NAME, INSTRUCTIONS, REQUIRED

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT.parent / "shared" / "notes" / "TVM-0.27-INSTRUCTIONS.md"

# The 52 kinds of TVM 0.27 (TVM-0.27-INSTRUCTIONS.md, section 3).
KINDS_0_27 = """GetSBlock GetLoops GetChildBlocks GetProducers GetConsumers GetOutputBlocks SampleCategorical
SamplePerfectTile SamplePartitionedTile SampleComputeLocation Split LoopPartition Merge Fuse Reorder
ReorderBlockIterVar AddUnitLoop Parallel Vectorize Unroll Bind CacheRead CacheWrite CacheInplace CacheIndex
ReIndex ReindexCacheRead ReindexCacheWrite ReadAt WriteAt ComputeAt ReverseComputeAt ComputeInline
ReverseComputeInline FuseReductionEpilogue DecomposeReduction RFactor StorageAlign SetScope UnsafeSetDType
Blockize Tensorize Annotate Unannotate TransformLayout TransformBlockLayout DecomposePadding PadEinsum
RollingBuffer UnsafeHideBufferAccess AnnotateBufferAccess EnterPostproc""".split()
PURE = {
    "GetSBlock",
    "GetLoops",
    "GetChildBlocks",
    "GetProducers",
    "GetConsumers",
    "GetOutputBlocks",
    "SampleCategorical",
    "SamplePerfectTile",
    "SamplePartitionedTile",
    "SampleComputeLocation",
}


def test_all_52_kinds_once():
    assert len(KINDS_0_27) == 52
    assert sorted(BY_KIND) == sorted(KINDS_0_27)
    assert len(INSTRUCTIONS) == len(BY_NAME) == 52


def test_kinds_match_the_field_notes_when_available():
    if not NOTES.exists():
        return
    rows = re.findall(r"^\| \d+ \| (\w+) \| (yes|no) \|", NOTES.read_text(encoding="utf-8"), flags=re.M)
    assert {k for k, _ in rows} == set(KINDS_0_27)
    assert {k for k, pure in rows if pure == "yes"} == PURE


def test_purity_and_decisions():
    assert {i.kind for i in INSTRUCTIONS if i.pure} == PURE
    assert {i.kind for i in INSTRUCTIONS if i.decision} == {
        "SampleCategorical",
        "SamplePerfectTile",
        "SamplePartitionedTile",
        "SampleComputeLocation",
    }


def test_slots_are_dense_and_defaults_sane():
    for i in INSTRUCTIONS:
        attrs = []
        for p in i.params:
            if p.slot.section == "attrs":
                attrs += list(p.slot.index) if isinstance(p.slot.index, tuple) else [p.slot.index]
            if p.slot.section == "decision":
                assert i.decision and p.keyword and p.default is None
            if not p.required and p.slot.section != "decision":
                assert p.keyword, f"{i.name}.{p.name}: optional parameters are written as keywords"
            if p.type == "bool":
                assert p.bool_json in ("bool", "int")
                assert p.default is REQUIRED or type(p.default) is (bool if p.bool_json == "bool" else int)
        assert sorted(attrs) == list(range(i.n_attrs)), i.name


def test_generated_reference_is_fresh():
    committed = (ROOT / "docs" / "INSTRUCTIONS.md").read_text(encoding="utf-8")
    assert committed == docs.render(), "run: python -m dragon_dsl.language.docs > docs/INSTRUCTIONS.md"


def test_every_instruction_is_in_one_family_and_groups_name_instructions():
    from dragon_dsl.language.table import BY_NAME, FAMILIES, FAMILY_OF, GROUPS, INST, in_group

    listed = [n for names in FAMILIES.values() for n in names]
    assert sorted(listed) == sorted(BY_NAME), "each instruction in exactly one family"
    assert all(FAMILY_OF[n] == fam for fam, names in FAMILIES.items() for n in names)
    for group, names in GROUPS.items():
        assert names <= set(BY_NAME), f"{group}: {sorted(names - set(BY_NAME))}"
    assert INST.split is BY_NAME["split"] and in_group(INST.split, "loop_making")
    assert in_group(INST.cache_read, "cache") and not in_group(INST.cache_read, "layout")
    with pytest.raises(AttributeError, match="no instruction 'splt'"):
        _ = INST.splt


def test_annotation_keys_are_metaschedules_and_read_by_tokenizer_and_decoder():
    """One list of MetaSchedule's annotation keys: the tokenizer's one-token keys and the decoder's
    keys are views of it (they once disagreed, 13 keys against 15)."""
    from dragon_dsl.language.table import ANNOTATION, ANNOTATION_KEYS, FAMILIES, annotation_keys

    keys = [a.key for a in ANNOTATION_KEYS]
    assert len(keys) == len(set(keys)) == len(ANNOTATION)
    assert all(a.value in ("int", "str", "list", "bool") for a in ANNOTATION_KEYS)
    known = set(FAMILIES) | {"unroll", "vectorize", "parallel", "pipeline", "tiling", "rule"}
    assert all(a.family in known for a in ANNOTATION_KEYS)
    assert set(annotation_keys("unroll")) == {
        "meta_schedule.unroll_explicit",
        "meta_schedule.unroll_implicit",
        "pragma_auto_unroll_max_step",
        "pragma_unroll_explicit",
    }
    # the shipped weights' vocabulary holds exactly these 13 keys as words: token ids depend on it
    assert sum(a.vocabulary for a in ANNOTATION_KEYS) == 13


def test_annotation_keys_cover_metaschedules_traces():
    """Every key MetaSchedule wrote in the recorded traces (tests/data/traces) is in the table,
    and the decoder may write each of them."""
    import json

    from dragon_dsl.language.table import ANNOTATION, ANNOTATION_KEYS, INST, trace_row

    seen = set()
    for name in ("design_spaces.jsonl", "sampled.jsonl"):  # MetaSchedule's (handwritten.jsonl: any key)
        path = ROOT / "tests" / "data" / "traces" / name
        for line in path.read_text(encoding="utf-8").splitlines():
            for js in json.loads(line)["trace"][0] if line.strip() else []:
                row = trace_row(js)
                if row.entry is INST.annotate or row.entry is INST.unannotate:
                    seen.add(row.arg("key"))
    assert seen, "no annotation in the recorded traces"
    assert seen <= set(ANNOTATION), sorted(seen - set(ANNOTATION))
    assert seen <= {a.key for a in ANNOTATION_KEYS if a.decoded}  # the decoder may write every one of them


def test_trace_row_reads_parameters_by_their_slots():
    from dragon_dsl.language.table import INST, trace_row

    row = trace_row(["Split", ["l1", None, "v2"], [True, False], ["l3", "l4"]])
    assert row.entry is INST.split and row.arg("loop") == "l1" and row.arg("factors") == [None, "v2"]
    assert row.arg("preserve_unit_iters") is True and row.outputs == ["l3", "l4"]
    row = trace_row(["CacheRead", ["b0", ["b1"]], [0, "shared"], ["b2"]])
    assert row.arg("consumer_blocks") == ["b1"] and row.arg("storage_scope") == "shared"
    assert trace_row(["NoSuchKind", [], [], []]).entry is None
