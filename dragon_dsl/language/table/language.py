"""The words of the language that are not instructions: the domains of string-typed parameters,
the kinds of random variables, the `explain:` section's entries, header directives and
reserved names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# ---- domains of string-typed parameters ------------------------------------

STORAGE_SCOPES = (
    "global",
    "shared",
    "shared.dyn",
    "local",
    "warp",
    "wmma.matrix_a",
    "wmma.matrix_b",
    "wmma.accumulator",
    "m16n8k8.matrixA",
    "m16n8k8.matrixB",
    "m16n8k8.matrixC",
    "global.texture",
    "global.texture-nhwc",
    "global.texture-weight",
    "local.fragment",
)
THREAD_AXES = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
    "vthread",
    "vthread.x",
    "vthread.y",
    "vthread.z",
)
DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
BUFFER_KINDS = ("read", "write")

DOMAINS: dict[str, tuple[str, ...]] = {
    "thread": THREAD_AXES,
    "dtype": DTYPES,
    "buffer_kind": BUFFER_KINDS,
}
#: Scopes are open-ended in TVM (a target may define more); these are checked loosely:
#: an unknown scope is an error only when it does not look like one (see checker).
# The name prefix of each kind of random variable, as TVM names them in traces (b0, l1, v2);
# a sampled compute location is a loop to TVM.
RESULT_PREFIX = {"block": "b", "loop": "l", "value": "v", "location": "l"}
#: The kinds of random variable a reference-typed parameter accepts (the checker, the decoder and
#: the editor's completion read it); a compute_at location may be a loop or a sampled location.
REF_KINDS: dict[str, tuple[str, ...]] = {
    "block": ("block",),
    "loop": ("loop",),
    "value": ("value",),
    "block|loop": ("block", "loop"),
    "location": ("loop", "location"),
}
SCOPE_PREFIXES = ("global", "shared", "local", "warp", "wmma.", "m16n8k8.", "metal.")


# ---- the explanation graph ---------------------------------------------------------
# Entries of the `explain:` section. They never affect the trace a script encodes.


@dataclass(frozen=True)
class ExplainKind:
    name: str
    doc: str
    links: dict[str, tuple[str, ...]] = field(default_factory=dict)  # keyword -> kinds it may point to
    free_data: bool = False  # accepts other keyword arguments with literal values


EXPLAIN_KINDS: dict[str, ExplainKind] = {
    k.name: k
    for k in (
        ExplainKind(
            "fact",
            "A fact about the program, e.g. loop extents or arithmetic intensity.",
            {"about": ("instruction",)},
            free_data=True,
        ),
        ExplainKind(
            "rationale", "Why a group of instructions was chosen.", {"because": ("fact",), "produces": ("instruction",)}
        ),
        ExplainKind("effect", "The expected effect of a choice.", {"of": ("rationale",)}, free_data=True),
    )
}

#: Header directives.
DIRECTIVES: dict[str, str] = {
    "workload": "The workload file (relative path) the script schedules.",
    "target": 'The target: a tag string such as "nvidia/nvidia-h100", or a JSON object.',
}

#: Names that cannot be bound by a script.
RESERVED = frozenset({"None", "True", "False", "inf", "nan", "lambda", "read", "write", "_"} | set(DTYPES))
