"""The terms every statement grammar is written in: the state of the schedule a statement may refer
to (`Env`, filled by `replay_state.py`), and the EBNF of a call, its results and each parameter type,
derived from the instruction table (`call_rule`, `results_rule`, `type_rule`), with the names,
tiles, loop runs and annotation values they take in that state. `decoder_grammar` assembles them
into the grammar of the next statement; `decoder_settings` holds the rules tuned to what dlight and
MetaSchedule write."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field

from dragon_dsl.language import table
from dragon_dsl.language.table import INST
from dragon_dsl.tvm.target import GPU_KINDS as _GPU_KINDS

GPU_KINDS = frozenset(_GPU_KINDS)  # targets whose schedules bind threads, not CPU loops (the engine's list)


#: instructions the model never writes: the table's group (they can change results or need registered intrinsics)
EXCLUDED = table.GROUPS["not_decoded"]


#: keyword parameters the model never sets: split's disable_predication lets factors whose product
#: exceeds the extent run out of bounds (a crash or wrong results that replay cannot see)
UNSAFE_KEYWORDS = frozenset({(INST.split.name, "disable_predication")})


#: keyword parameters left at their default: a workload's function is always `main`, and a free
#: string there only gave an untrained model room to write junk until the statement was too long
DEFAULT_KEYWORDS = frozenset({(INST.get_sblock.name, "func_name"), (INST.tensorize.name, "preserve_unit_iters")})


CPU_SCOPES = ("global", "local")


#: the annotation keys MetaSchedule writes on the model's targets, with the kind of their values
#: ("int": an integer or a sampled categorical value): the table's
ANNOTATIONS = {a.key: a.value for a in table.ANNOTATION_KEYS if a.decoded}


PREFIX = table.RESULT_PREFIX


STATIC_RULES = r"""
int ::= "-"? uint
uint ::= "0" | [1-9] [0-9]{0,7}
float ::= "-"? ( [0-9]+ "." [0-9]* ( [eE] [+-]? [0-9]+ )? | "." [0-9]+ ( [eE] [+-]? [0-9]+ )? | [0-9]+ [eE] [+-]? [0-9]+ ) | "inf" | "-inf" | "nan"
number ::= float | int
string ::= "\"" strchar* "\""
strchar ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]
bool ::= "True" | "False"
ident ::= [a-zA-Z_] [a-zA-Z_0-9]*
ix ::= ixprod ( ( " + " | " - " ) ixprod )*
ixprod ::= ixunary ( ( " * " | " // " | " % " ) ixunary )*
ixunary ::= "-" ixunary | ixatom
ixatom ::= ident | uint | "(" ix ( ", " ix )* ")" | ident "(" ( ix ( ", " ix )* )? ")"
index_map ::= "lambda " ( ident ( ", " ident )* | "(" typed ( ", " typed )* ")" )? ": " ix
typed ::= ident ": " ident
buffer ::= "read(" uint ")" | "write(" uint ")"
"""


@dataclass
class Env:
    """What the next statement may refer to."""

    target_kind: str = "llvm"
    counter: int = 0  # the next result number
    blocks: dict = field(default_factory=dict)  # live block name -> facts (loops, children...)
    loops: dict = field(default_factory=dict)  # live loop name -> extent (int or None)
    values: list = field(default_factory=list)  # sampled value names
    tiles: dict = field(default_factory=dict)  # live loop -> its sampled tile values, in order
    categoricals: list = field(default_factory=list)  # values of sample_categorical
    innermost: list = field(default_factory=list)  # live loops vectorize may take (no loop inside)
    split_loops: set = field(default_factory=set)  # loops a constant split made
    reduction_loops: set = field(default_factory=set)  # GPU loops feeding only reduction iterators
    kinded: set = field(default_factory=set)  # live loops already bound, parallel, vectorized or unrolled
    locations: list = field(default_factory=list)  # sampled compute locations (compute_at only)
    loop_children: dict = field(default_factory=dict)  # live loop name -> number of child blocks
    sblock_names: list = field(default_factory=list)  # block names in the scheduled module
    block_iters: dict = field(default_factory=dict)  # live block name -> its iterators' names (None: unknown)
    reindexed: dict = field(default_factory=dict)  # reindex block -> (block it reindexes, "read(0)"...)
    gemm_layouts: dict = field(default_factory=dict)  # GEMM-like block -> dlight's lambdas (`inspect.gemm_layouts`)
    transformed: set = field(default_factory=set)  # blocks a transform_layout has taken
    relaid: set = field(default_factory=set)  # blocks a transform_block_layout has taken
    unit_looped: dict = field(default_factory=dict)  # block -> how many add_unit_loop took it
    gemv: set = field(default_factory=set)  # unit-looped blocks dlight's GEMV analysis accepts
    postproc: bool = False  # `postproc:` already written

    @property
    def gpu(self) -> bool:
        return self.target_kind in GPU_KINDS


def lit(text: str) -> str:
    """An EBNF string literal."""
    return json.dumps(text)


def any_of(items) -> str | None:
    items = list(items)
    if not items:
        return None
    return "(" + " | ".join(items) + ")"


def names_rule(env: Env, kind: str) -> str | None:
    """The rule of the live names of a kind (defined once in the grammar), or None when there is none."""
    names = {"block": env.blocks, "loop": env.loops, "value": env.values, "location": env.locations}.get(kind)
    return f"name_{kind}" if names else None


def categorical_rule(env: Env) -> str | None:
    """The values of sample_categorical (the only sampled values annotations and constant splits take)."""
    return any_of(lit(v) for v in env.categoricals)


def name_rules(env: Env) -> list[str]:
    out = []
    for kind, names in (("block", env.blocks), ("loop", env.loops), ("value", env.values), ("location", env.locations)):
        if names:
            out.append(f"name_{kind} ::= " + " | ".join(lit(n) for n in names))
    return out


def results_rule(env: Env, kind: str, count: int) -> str:
    if count == 0:
        return ""
    names = [f"{PREFIX[kind]}{env.counter + i}" for i in range(count)]
    return lit(", ".join(names) + " = ") + " "


#: parameter types whose grammar is one rule of STATIC_RULES, whatever the state
_FIXED_RULES = {
    "int": "int",
    "float": "number",
    "bool": "bool",
    "str": "string",
    "buffer": "buffer",
    "index_map": "index_map",
    "index_map?": '(index_map | "None")',
}


def type_rule(env: Env, typ: str) -> str | None:
    """The grammar of one parameter type in this state, or None when nothing can fill it."""
    if typ.startswith("list[") and typ.endswith("]"):
        inner = type_rule(env, typ[5:-1])
        if inner is None:
            return None
        if typ[5:-1] in ("block", "loop", "value"):  # a list of objects is never empty where TVM takes one
            return f'("[" {inner} ( ", " {inner} )* "]")'
        return f'("[" ( {inner} ( ", " {inner} )* )? "]")'
    if "|" in typ:
        parts = [r for r in (type_rule(env, t) for t in typ.split("|")) if r]
        return any_of(parts)
    if typ in ("block", "loop", "value"):
        return names_rule(env, typ)
    if typ == "location":  # a live loop or a sampled location
        return any_of([r for r in (names_rule(env, "loop"), names_rule(env, "location")) if r])
    if typ in _FIXED_RULES:
        return _FIXED_RULES[typ]
    if typ == "scope":
        scopes = table.STORAGE_SCOPES if env.gpu else CPU_SCOPES
        return any_of(lit(json.dumps(s)) for s in scopes)
    if typ == "thread" and not env.gpu:  # CPU schedules bind no threads
        return None
    if typ in table.DOMAINS:  # thread axes, dtypes, buffer kinds: the table's strings
        return any_of(lit(json.dumps(s)) for s in table.DOMAINS[typ])
    if typ == "factor":
        return any_of([x for x in (names_rule(env, "value"), "uint", '"None"') if x])
    if typ == "any":
        value = categorical_rule(env)
        scalar = 'number | string | bool | "None"' + (f" | {value}" if value else "")
        return f'(({scalar}) | "[" ( ({scalar}) ( ", " ({scalar}) )* )? "]")'
    return None


def call_rule(env: Env, inst, fixed: dict | None = None) -> str | None:
    """`name(positional, ..., keyword=..., decision=...)`; `fixed` gives some parameters a set grammar."""
    fixed = fixed or {}
    parts = [lit(inst.name + "(")]
    first = True
    for p in inst.params:
        rule = fixed.get(p.name) or type_rule(env, p.type)
        sep = "" if first else '", " '
        if p.variadic and p.name in fixed:  # the fixed rule is the whole list
            parts.append(f"{sep}{rule}")
            first = False
        elif p.variadic:
            if rule is None:
                return None
            parts.append(f'{sep}{rule} ( ", " {rule} )*')
            first = False
        elif not p.keyword:
            if rule is None:
                return None
            parts.append(f"{sep}{rule}")
            first = False
        else:
            if (inst.name, p.name) in UNSAFE_KEYWORDS | DEFAULT_KEYWORDS:
                continue
            if rule is None:
                if p.required:
                    return None
                continue
            kw = f"{sep}{lit(p.name + '=')} {rule}"
            if p.required or p.name in fixed:
                parts.append(kw)
                first = False
            else:  # every instruction the model writes has a positional parameter before its keywords
                parts.append(f"( {kw} )?")
    parts.append('")"')
    return " ".join(parts)


@functools.lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """The divisors of N in increasing order (up to its square root and their cofactors: a row
    count times a row length runs to millions, and every statement's grammar asks again)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(small + [n // d for d in reversed(small) if d * d != n])


def increasing(names, key: str, extra: dict) -> str:
    """One or more distinct NAMES, in increasing number order (rules KEY_name)."""
    names = sorted(names, key=lambda n: int(n[1:]))
    for i, name in enumerate(names):
        later = names[i + 1 :]
        extra[f"{key}_{name}"] = lit(name) + (
            f' ( ", " ( {" | ".join(f"{key}_{n}" for n in later)} ) )?' if later else ""
        )
    return "( " + " | ".join(f"{key}_{n}" for n in names) + " )"


def increasing_loops(env: Env, extra: dict) -> str:
    """One or more distinct live loops, in increasing name order (TVM numbers loops outermost
    first, so a run of loops to fuse is increasing; a repeated loop is never right)."""
    return increasing(env.loops, INST.fuse.name, extra)


def blockize_target(env: Env, extra: dict) -> str | None:
    """A live loop, or a list of distinct blocks that have loops (never the root block), in
    increasing order: TVM 0.27 accepts a repeated block or the root in blockize's list, and a
    script replayed from its text then no longer matches the trace (get_loops binds other counts)."""
    blocks = [b for b, facts in env.blocks.items() if (facts.get("loops") or 0) > 0]
    parts = [
        r
        for r in (
            names_rule(env, "loop"),
            f'("[" {increasing(blocks, INST.blockize.name, extra)} "]")' if blocks else None,
        )
        if r
    ]
    return any_of(parts)


def tile_rule(extent: int, n: int, cap: int, extra: dict) -> str:
    """The rule of n factors (", "-separated) whose product is `extent` and whose last is at most
    `cap`: one rule per remaining extent and count, so each factor is chosen among the divisors of
    what is left that can still end within the cap (always, while two or more factors are left)."""
    key = f"tile{extent}_{n}" if n == 1 or extent <= cap else f"tile{extent}_{n}_c{cap}"
    if key not in extra:
        if n == 1:
            extra[key] = lit(str(extent))
        else:
            extra[key] = " | ".join(
                f"{lit(f'{d}, ')} {tile_rule(extent // d, n - 1, cap, extra)}"
                for d in divisors(extent)
                if n > 2 or extent // d <= cap
            )
    return key


def annotation_values(env: Env, literals: dict | None) -> list:
    """(key rule, value rule) pairs of `annotate`: MetaSchedule's keys by kind of value, or the keys
    and values of the training corpus (`literals`)."""
    cats = categorical_rule(env)
    if literals is None:
        values = {
            "int": "uint" + (f" | {cats}" if cats else ""),
            "str": "string",
            "list": '"[" ( uint ( ", " uint )* )? "]"',
        }
        out = []
        for kind in ("int", "str", "list"):
            keys = [k for k, v in ANNOTATIONS.items() if v == kind]
            out.append((any_of(lit(json.dumps(k)) for k in keys), f"( {values[kind]} )"))
        return out
    out = []
    for key, kinds in literals.get("annotations", {}).items():
        alts = []
        for kind, vals in kinds.items():
            if kind == "sampled":  # a sampled unroll step, a cooperative fetch width
                if cats:
                    alts.append(cats)
            elif kind == "str":
                alts += [lit(json.dumps(v)) for v in vals]
            else:  # ints and lists are written as they are stored
                alts += [lit(str(v)) for v in vals]
        if alts:
            out.append((lit(json.dumps(key)), any_of(alts)))
    return out
