"""The instruction table: the single source of truth for the Dragon language.

One `Instruction` per TVM schedule instruction kind (52 in TVM 0.27). It says
what the instruction is called in a script, how its parameters are typed, in
which slot of TVM's trace JSON each parameter lives (TVM order), the defaults
TVM writes, the results it binds and the shape of its sampling decision. The
checker, the codec, the formatter, the language server, the editor grammar
and the model's tokenizer all read this table; none of them names an
instruction on its own.

Trace JSON of one instruction (TVM `TraceNode::AsJSON`):
    [ /* 0: kind */ "Split", /* 1: inputs */ [...], /* 2: attrs */ [...], /* 3: outputs */ [...] ]
and the decisions of the trace: [[instruction index, decision], ...].

Modules: schema (the entry types), instructions (the entries, their families and groups; the
entries written by group in instructions_query, _loops, _caches, _blocks, _layouts, _make),
annotations (MetaSchedule's annotation keys), language (domains, explanation entries,
directives, reserved names), trace_json (positions in trace JSON). Import from here.
"""

from __future__ import annotations

from dragon_dsl.language.table.annotations import ANNOTATION, ANNOTATION_KEYS, AnnotationKey, annotation_keys
from dragon_dsl.language.table.instructions import (
    BY_KIND,
    BY_NAME,
    FAMILIES,
    FAMILY_OF,
    GROUPS,
    INST,
    INSTRUCTIONS,
    SECTIONS,
    in_group,
)
from dragon_dsl.language.table.language import (
    BUFFER_KINDS,
    DIRECTIVES,
    DOMAINS,
    DTYPES,
    EXPLAIN_KINDS,
    REF_KINDS,
    RESERVED,
    RESULT_PREFIX,
    SCOPE_PREFIXES,
    STORAGE_SCOPES,
    THREAD_AXES,
    ExplainKind,
)
from dragon_dsl.language.table.schema import (
    DECISION,
    REQUIRED,
    TRACE_SCHEMA,
    TVM_VERSION,
    At,
    In,
    Instruction,
    Param,
    Results,
    Slot,
    literal_text,
)
from dragon_dsl.language.table.trace_json import JSON_ATTRS, JSON_INPUTS, JSON_KIND, JSON_OUTPUTS, TraceRow, trace_row

__all__ = [
    "ANNOTATION",
    "ANNOTATION_KEYS",
    "AnnotationKey",
    "annotation_keys",
    "BY_KIND",
    "BY_NAME",
    "FAMILIES",
    "FAMILY_OF",
    "GROUPS",
    "INST",
    "INSTRUCTIONS",
    "SECTIONS",
    "in_group",
    "BUFFER_KINDS",
    "DIRECTIVES",
    "DOMAINS",
    "DTYPES",
    "EXPLAIN_KINDS",
    "REF_KINDS",
    "RESERVED",
    "RESULT_PREFIX",
    "SCOPE_PREFIXES",
    "STORAGE_SCOPES",
    "THREAD_AXES",
    "ExplainKind",
    "DECISION",
    "REQUIRED",
    "TRACE_SCHEMA",
    "TVM_VERSION",
    "At",
    "In",
    "Instruction",
    "Param",
    "Results",
    "Slot",
    "literal_text",
    "JSON_ATTRS",
    "JSON_INPUTS",
    "JSON_KIND",
    "JSON_OUTPUTS",
    "TraceRow",
    "trace_row",
]
