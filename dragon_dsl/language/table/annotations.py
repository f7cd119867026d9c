"""MetaSchedule's annotation keys: the one list of the keys MetaSchedule (TVM 0.27) writes or
removes with `annotate`/`unannotate`, read by explain, the decoder's grammar and the tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnnotationKey:
    """An annotation key MetaSchedule (TVM 0.27) writes or removes in the traces it makes.

    value:      "int" (an integer, or a sampled categorical's value), "str", "list" (of ints), "bool".
    family:     what it is about, in the words of the instruction families (explain groups by it).
    role:       within the family, what the value means when it matters ("max_step", ...).
    decoded:    the schedule model may write it (MetaSchedule writes it on CPUs and on GPUs
                without tensor cores, the targets the model is trained on).
    vocabulary: one token of the model's tokenizer. Fixed with the shipped weights: changing it
                changes every later token id.
    """

    key: str
    value: str
    writer: str
    family: str
    role: str = ""
    decoded: bool = True
    vocabulary: bool = True


_MS_UNROLL = "ParallelizeVectorizeUnroll"
_MS_TILING = "MultiLevelTiling"
ANNOTATION_KEYS: tuple[AnnotationKey, ...] = (
    AnnotationKey("meta_schedule.unroll_explicit", "int", _MS_UNROLL, "unroll", "max_step_explicit"),
    AnnotationKey("meta_schedule.unroll_implicit", "int", _MS_UNROLL, "unroll", "max_step_implicit"),
    AnnotationKey("meta_schedule.vectorize", "int", _MS_UNROLL, "vectorize", "max_extent"),
    AnnotationKey("meta_schedule.parallel", "int", _MS_UNROLL, "parallel", "max_extent"),
    AnnotationKey(
        "meta_schedule.cooperative_fetch", "int", _MS_TILING + " (GPU shared-memory reuse)", "cache", "vector_lanes"
    ),
    AnnotationKey("meta_schedule.random_compute_producer", "int", "AddRFactor", "compute_location"),
    AnnotationKey(
        "meta_schedule.thread_extent_low_inclusive", "int", _MS_TILING + " (GPU)", "thread_binding", "thread_extent"
    ),
    AnnotationKey(
        "meta_schedule.thread_extent_high_inclusive", "int", _MS_TILING + " (GPU)", "thread_binding", "thread_extent"
    ),
    AnnotationKey(
        "pragma_auto_unroll_max_step", "int", "RewriteParallelVectorizeUnroll (postprocessor)", "unroll", "max_step"
    ),
    AnnotationKey(
        "pragma_unroll_explicit", "int", "RewriteParallelVectorizeUnroll (postprocessor)", "unroll", "explicit"
    ),
    AnnotationKey("meta_schedule.tiling_structure", "str", _MS_TILING, "tiling", "structure"),
    AnnotationKey(
        "schedule_rule", "str", "the space generator (removes a workload's own rule marker)", "rule", vocabulary=False
    ),
    AnnotationKey(
        "software_pipeline_stage", "list", _MS_TILING + " (GPU software pipeline)", "pipeline", vocabulary=False
    ),
    AnnotationKey(
        "software_pipeline_order", "list", _MS_TILING + " (GPU software pipeline)", "pipeline", vocabulary=False
    ),
    AnnotationKey(
        "software_pipeline_async_stages", "list", _MS_TILING + " (GPU software pipeline)", "pipeline", vocabulary=False
    ),
    AnnotationKey("meta_schedule.auto_tensorize", "str", "MultiLevelTilingTensorCore", "tensorize", decoded=False),
    AnnotationKey(
        "meta_schedule.auto_tensorize_init",
        "str",
        "MultiLevelTilingTensorCore",
        "tensorize",
        decoded=False,
        vocabulary=False,
    ),
    AnnotationKey(
        "meta_schedule.layout_rewrite_preproc", "bool", "RewriteLayout (postprocessor)", "layout", decoded=False
    ),
)
ANNOTATION: dict[str, AnnotationKey] = {a.key: a for a in ANNOTATION_KEYS}


def annotation_keys(family: str | None = None, role: str | None = None) -> tuple[str, ...]:
    """The keys of one family (and role), in table order."""
    return tuple(
        a.key for a in ANNOTATION_KEYS if (family is None or a.family == family) and (role is None or a.role == role)
    )
