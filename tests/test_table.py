"""The instruction table: complete, consistent, and the generated reference is fresh."""

from __future__ import annotations

import re
from pathlib import Path

from dragon_dsl import docs
from dragon_dsl.table import BY_KIND, BY_NAME, INSTRUCTIONS, REQUIRED

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
PURE = {"GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers", "GetOutputBlocks",
        "SampleCategorical", "SamplePerfectTile", "SamplePartitionedTile", "SampleComputeLocation"}


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
        "SampleCategorical", "SamplePerfectTile", "SamplePartitionedTile", "SampleComputeLocation"}


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
    assert committed == docs.render(), "run: python -m dragon_dsl.docs > docs/INSTRUCTIONS.md"
