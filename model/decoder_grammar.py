"""The grammar of the next statement, generated from the instruction table and the schedule's state.

The Lark grammar (grammar/dragon.lark) is generic: it accepts any call with any
arguments. Decoding needs a much tighter language, and the instruction table
has everything to write it: each instruction's positional and keyword
parameters with their types, its results and its decision shape. On top of the
table, the state of the schedule replayed so far (`Env`, filled from TVM by
`replay_state.py`) narrows every typed position:

- a `block` / `loop` / `value` position accepts only the names that are defined
  *and still live* in the schedule (a loop that `split` consumed is gone);
- results are the names the canonical form derives (kind prefix + one counter),
  and their number is the one TVM will produce (`get_loops(b1)` binds exactly as
  many loops as b1 has; `split` as many as it has factors);
- a tile decision has exactly `n` factors whose product is that loop's extent (the
  factors are generated digit by digit from a rule per remaining extent, so the mask
  cannot leave a partial decision that no factor completes), and its innermost factor is at
  most its `max_innermost_factor`, one of the values MetaSchedule's rules use on the target
  (TILE_CAPS): TVM replays any decision, but its sampler never draws a larger innermost
  factor, and a whole row as one innermost tile ran a softmax 2,800x slower on a CPU;
- `split` of a loop that has a sampled tile takes exactly that tile's values, in order;
  otherwise its factors are constants (`None` and integers), as in MetaSchedule's traces;
- `vectorize` takes innermost loops of up to MAX_VECTOR iterations, and of at least 2 on CPUs
  (a 1-lane vector, a long one or one around an allocation fails to build there; dlight's GPU
  schedules vectorize 1-iteration loops);
- `bind`, `parallel`, `unroll` and `vectorize` take serial loops only: a loop has one kind;
- `annotate` / `unannotate` use MetaSchedule's keys, each with its kind of value;
- `sample_categorical` has uniform probabilities, and only its values go into
  `annotate` (the other sampled values are tile factors);
- with `allowed` (the instructions of the model's training corpus), no instruction the
  model has never seen is offered; with `literals` (`data.literals_of` the same corpus),
  `sample_categorical` takes only the candidate lists it has seen, a constant split only its
  integer factors, and `annotate` only its keys with their values (an untrained guess such as
  a split by 2222 x 2222 builds a kernel that runs for minutes);
- `tensorize` takes a live block and an intrinsic the training corpus annotates blocks with
  (`meta_schedule.auto_tensorize`), the only names that are registered and that it has seen;
- thread axes, storage scopes and dtypes come from the table's domains, and only
  where the target has them (no `bind` on a CPU); unsafe instructions are left out.

`statement_grammar(env)` returns an EBNF string for xgrammar whose root is one
statement followed by a newline (or, once, the `postproc:` section header).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
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
MAX_TILE_N = 5
#: `max_innermost_factor` of a sampled tile: MetaSchedule's MultiLevelTiling and AddRFactor use 64,
#: its tensor-core tiling 4 (no other value is in either training corpus)
TILE_CAPS = {"gpu": (4, 64), "cpu": (64,)}
MAX_VECTOR = 64  # the longest loop the model may vectorize (MetaSchedule's llvm limit: 64)
#: the constant split factors GPU training labels write past a reduction loop's extent, dlight's
#: fixed thread counts: its GeneralReduction binds [None, 256] of the reduction to threadIdx.x
#: whatever its extent (a 3x3 pooling window's 9 iterations, a softmax row of 16), its Reduction
#: rule splits a reduction whose inner axis is spatial by [None, 16]. Its Reduction rule's
#: cross-thread split of an inner reduction never exceeds the extent (`suggest_threads_per_block`),
#: and nothing can rfactor a loop the padding cut off
DLIGHT_REDUCTION_SPLITS = (16, 256)
#: the annotation keys MetaSchedule writes on the model's targets, with the kind of their values
#: ("int": an integer or a sampled categorical value): the table's
ANNOTATIONS = {a.key: a.value for a in table.ANNOTATION_KEYS if a.decoded}
MAX_FACTORS = 6
#: the schedule fact (of `Env.blocks` / `Env.loop_children`) that counts a lookup's results
_COUNT_FACTS = {
    INST.get_loops.name: "loops",
    INST.get_child_blocks.name: "children",
    INST.get_producers.name: "producers",
    INST.get_consumers.name: "consumers",
    INST.get_output_blocks.name: "outputs",
}
PREFIX = table.RESULT_PREFIX

#: instructions that give a serial loop its kind
_LOOP_KINDS = (INST.bind, INST.parallel, INST.unroll, INST.vectorize)

MAX_CATEGORIES = 8  # sample_categorical's candidates (MetaSchedule's unroll steps: 4)

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


def _alts(items) -> str | None:
    items = list(items)
    if not items:
        return None
    return "(" + " | ".join(items) + ")"


def _names(env: Env, kind: str) -> str | None:
    """The rule of the live names of a kind (defined once in the grammar), or None when there is none."""
    names = {"block": env.blocks, "loop": env.loops, "value": env.values, "location": env.locations}.get(kind)
    return f"name_{kind}" if names else None


def _categorical_names(env: Env) -> str | None:
    """The values of sample_categorical (the only sampled values annotations and constant splits take)."""
    return _alts(lit(v) for v in env.categoricals)


def _name_rules(env: Env) -> list[str]:
    out = []
    for kind, names in (("block", env.blocks), ("loop", env.loops), ("value", env.values), ("location", env.locations)):
        if names:
            out.append(f"name_{kind} ::= " + " | ".join(lit(n) for n in names))
    return out


def _outputs(env: Env, kind: str, count: int) -> str:
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
        return _alts(parts)
    if typ in ("block", "loop", "value"):
        return _names(env, typ)
    if typ == "location":  # a live loop or a sampled location
        return _alts([r for r in (_names(env, "loop"), _names(env, "location")) if r])
    if typ in _FIXED_RULES:
        return _FIXED_RULES[typ]
    if typ == "scope":
        scopes = table.STORAGE_SCOPES if env.gpu else CPU_SCOPES
        return _alts(lit(json.dumps(s)) for s in scopes)
    if typ == "thread" and not env.gpu:  # CPU schedules bind no threads
        return None
    if typ in table.DOMAINS:  # thread axes, dtypes, buffer kinds: the table's strings
        return _alts(lit(json.dumps(s)) for s in table.DOMAINS[typ])
    if typ == "factor":
        return _alts([x for x in (_names(env, "value"), "uint", '"None"') if x])
    if typ == "any":
        value = _categorical_names(env)
        scalar = 'number | string | bool | "None"' + (f" | {value}" if value else "")
        return f'(({scalar}) | "[" ( ({scalar}) ( ", " ({scalar}) )* )? "]")'
    return None


def _call(env: Env, inst, fixed: dict | None = None) -> str | None:
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
def _divisors(n: int) -> tuple[int, ...]:
    """The divisors of N in increasing order (up to its square root and their cofactors: a row
    count times a row length runs to millions, and every statement's grammar asks again)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(small + [n // d for d in reversed(small) if d * d != n])


def _increasing(names, key: str, extra: dict) -> str:
    """One or more distinct NAMES, in increasing number order (rules KEY_name)."""
    names = sorted(names, key=lambda n: int(n[1:]))
    for i, name in enumerate(names):
        later = names[i + 1 :]
        extra[f"{key}_{name}"] = lit(name) + (
            f' ( ", " ( {" | ".join(f"{key}_{n}" for n in later)} ) )?' if later else ""
        )
    return "( " + " | ".join(f"{key}_{n}" for n in names) + " )"


def _increasing_loops(env: Env, extra: dict) -> str:
    """One or more distinct live loops, in increasing name order (TVM numbers loops outermost
    first, so a run of loops to fuse is increasing; a repeated loop is never right)."""
    return _increasing(env.loops, "fuse", extra)


def _blockize_target(env: Env, extra: dict) -> str | None:
    """A live loop, or a list of distinct blocks that have loops (never the root block), in
    increasing order: TVM 0.27 accepts a repeated block or the root in blockize's list, and a
    script replayed from its text then no longer matches the trace (get_loops binds other counts)."""
    blocks = [b for b, facts in env.blocks.items() if (facts.get("loops") or 0) > 0]
    parts = [
        r for r in (_names(env, "loop"), f'("[" {_increasing(blocks, "blockize", extra)} "]")' if blocks else None) if r
    ]
    return _alts(parts)


def _tile_rule(extent: int, n: int, cap: int, extra: dict) -> str:
    """The rule of n factors (", "-separated) whose product is `extent` and whose last is at most
    `cap`: one rule per remaining extent and count, so each factor is chosen among the divisors of
    what is left that can still end within the cap (always, while two or more factors are left)."""
    key = f"tile{extent}_{n}" if n == 1 or extent <= cap else f"tile{extent}_{n}_c{cap}"
    if key not in extra:
        if n == 1:
            extra[key] = lit(str(extent))
        else:
            extra[key] = " | ".join(
                f"{lit(f'{d}, ')} {_tile_rule(extent // d, n - 1, cap, extra)}"
                for d in _divisors(extent)
                if n > 2 or extent // d <= cap
            )
    return key


def _annotation_values(env: Env, literals: dict | None) -> list:
    """(key rule, value rule) pairs of `annotate`: MetaSchedule's keys by kind of value, or the keys
    and values of the training corpus (`literals`)."""
    cats = _categorical_names(env)
    if literals is None:
        values = {
            "int": "uint" + (f" | {cats}" if cats else ""),
            "str": "string",
            "list": '"[" ( uint ( ", " uint )* )? "]"',
        }
        out = []
        for kind in ("int", "str", "list"):
            keys = [k for k, v in ANNOTATIONS.items() if v == kind]
            out.append((_alts(lit(json.dumps(k)) for k in keys), f"( {values[kind]} )"))
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
            out.append((lit(json.dumps(key)), _alts(alts)))
    return out


#: constant split shapes of models whose corpus did not record them: MetaSchedule's postprocessors
DEFAULT_SPLIT_SHAPES = ("None,k", "None,k,k")
#: at most this many factor combinations are listed per loop extent (else any seen factor per place)
MAX_COMBOS = 4096


def _constant_splits(env: Env, inst, extra: dict, literals: dict | None) -> list[str]:
    """Constant splits in the shapes the training corpus writes (`data.split_shape`: MetaSchedule's
    [None, k] and [None, k, j], dlight's [None, 1, 16, 4] and cooperative fetch [16, 8, None, 2]),
    of the integer factors it writes. A loop a constant split made is split again only by factors
    whose product fits its extent (dlight splits a 4-iteration loop by [None, 2]; a derailed model
    chained [None, 64, 64] splits into kernels of billions of predicated iterations). On CPUs every
    split fits its loop (all 47 constant splits of the llvm corpus do); GPU cooperative fetches
    may exceed the fused loop they split (13 of 90 in the CUDA corpus). A GPU loop that drives
    reduction axes only is split by constants that fit it, by dlight's fixed [None, 16] or
    [None, 256] (DLIGHT_REDUCTION_SPLITS), or by a sampled thread count: of the 8,403 constant
    splits of reduction loops in the 11,062 distinct CUDA fine-tuning labels, 308 exceed their
    loop, all of them dlight's fixed splits (pooling windows, depthwise kernels, short softmax
    rows). The twelfth CUDA model split the reductions of held-out row and column sums of 64-768
    elements by [None, 1024] (the row sums' form at their usual lengths); the rfactor that form
    needs was then refused (the padding cuts its loop off), and the answers derailed into one
    thread per row or column, 10-16x slower than dlight."""
    res = inst.results
    seen = literals.get("split_factors") if literals is not None else None
    shapes = (literals or {}).get("split_shapes") or DEFAULT_SPLIT_SHAPES
    if not env.loops or (seen is not None and not seen):
        return []
    cats = _categorical_names(env)  # a sampled thread count (cross-thread reductions: [None, v4])
    if seen is None:
        extra["cfactor"] = "([1-9] [0-9]{0,3}" + (f" | {cats}" if cats else "") + ")"
    else:
        extra["cfactor"] = _alts([lit(str(f)) for f in seen] + ([cats] if cats else []))
    recorded = bool((literals or {}).get("split_shapes"))  # a model whose corpus recorded its shapes
    groups: dict = {}  # (extent (None: any factors), a GPU reduction loop) -> loops
    for lp, extent in env.loops.items():
        if lp in env.split_loops and not recorded:
            continue  # earlier models never split a split loop: their decoding stays as it was
        reducing = (
            lp in env.reduction_loops
            and lp not in env.split_loops
            and recorded
            and seen is not None
            and isinstance(extent, int)
        )
        bounded = lp in env.split_loops or (not env.gpu and seen is not None) or reducing
        if bounded and (seen is None or not isinstance(extent, int)):
            continue  # nothing says which constants fit it
        groups.setdefault((extent if bounded else None, reducing), []).append(lp)
    out = []
    for (extent, reducing), group in sorted(
        groups.items(), key=lambda g: (-1 if g[0][0] is None else g[0][0], g[0][1])
    ):
        fitting = seen if extent is None else [f for f in seen if f <= extent]
        # a reduction loop may also take dlight's own fixed splits, [None, 16] and [None, 256]
        general = [(f,) for f in DLIGHT_REDUCTION_SPLITS if reducing and f in seen]
        for shape in shapes:
            places = shape.split(",")
            k = places.count("k")
            combos = None
            if extent is not None and len(fitting) ** k <= MAX_COMBOS:
                combos = [c for c in itertools.product(fitting, repeat=k) if math.prod(c) <= extent]
                combos += [c for c in general if shape == "None,k" and c not in combos]
            if combos is None:  # a seen factor (that fits the loop on its own) in each place
                rule = "cfactor"
                if extent is not None:
                    rule = (
                        extra.setdefault(f"cfactor{extent}", _alts(lit(str(f)) for f in fitting)) and f"cfactor{extent}"
                    )
                forms = ['"[" ' + ' ", " '.join(lit("None") if p == "None" else rule for p in places) + ' "]"']
            else:
                forms = [
                    lit("[" + ", ".join("None" if p == "None" else str(next(it)) for p in places) + "]")
                    for c in combos
                    for it in [iter(c)]
                ]
            if reducing and cats:  # a sampled thread count in each place (MetaSchedule's cross-thread reduction)
                forms.append('"[" ' + ' ", " '.join(lit("None") if p == "None" else cats for p in places) + ' "]"')
            if not forms:
                continue
            factors = _alts(forms)
            call = _call(env, inst, {"loop": _alts(lit(lp) for lp in group), "factors": factors})
            if call:
                out.append(_outputs(env, res.kind, len(places)) + call)
    return out


def instruction_rules(env: Env, inst, extra: dict, literals: dict | None = None) -> list[str]:
    """Alternatives of one instruction in this state (none when it cannot be written here)."""
    res = inst.results
    out: list[str] = []
    if inst in _LOOP_KINDS:  # a loop takes one kind: TVM lets `bind` rebind a bound loop, and the
        # second-generation CUDA model's reductions bound one loop to blockIdx.x, then to threadIdx.x
        # (none of the 41,844 training scripts gives a loop a second kind); vectorize takes innermost
        # loops of 2..MAX_VECTOR iterations only (Env.innermost)
        loops = [lp for lp in (env.innermost if inst is INST.vectorize else env.loops) if lp not in env.kinded]
        call = _call(env, inst, {"loop": _alts(lit(lp) for lp in loops)}) if loops else None
        return [call] if call else []
    if table.in_group(inst, "annotation"):  # MetaSchedule's keys, each with its kind of value
        if inst is INST.unannotate:  # MetaSchedule's keys and those annotate may write: every tensor-core
            # label removes meta_schedule.auto_tensorize in its postprocessing (before version 15 no
            # tensor-core label could be written to its end)
            keys = dict.fromkeys(list(ANNOTATIONS) + list((literals or {}).get("annotations", {})))
            call = _call(env, inst, {"key": _alts(lit(json.dumps(k)) for k in keys)})
            return [call] if call else []
        for key, value in _annotation_values(env, literals):
            call = _call(env, inst, {"key": key, "value": value})
            if call:
                out.append(call)
        return out
    if inst is INST.get_sblock and env.sblock_names:  # only blocks that exist in the module
        names = "(" + " | ".join(lit(json.dumps(n)) for n in env.sblock_names) + ")"
        call = _call(env, inst, {"name": names})
        return [_outputs(env, res.kind, res.count) + call] if call else []
    if inst is INST.sample_categorical:  # as many probabilities as candidates; the decision indexes them
        seen = literals.get("categorical") if literals is not None else None
        lists = (
            [(lit(json.dumps(c)), len(c)) for c in seen]
            if seen is not None
            else [('"[" ' + ' ", " '.join(["int"] * k) + ' "]"', k) for k in range(1, MAX_CATEGORIES + 1)]
        )
        for cands, k in lists:
            probs = lit("[" + ", ".join([repr(1 / k)] * k) + "]")  # MetaSchedule's are uniform
            decision = "(" + " | ".join(lit(str(i)) for i in range(k)) + ")"
            call = _call(env, inst, {"candidates": cands, "probs": probs, "decision": decision})
            if call:
                out.append(_outputs(env, res.kind, res.count) + call)
        return out
    if inst.decision == "index":  # an index into the candidates: small
        call = _call(env, inst, {"decision": "[0-9]"})
        return [_outputs(env, res.kind, res.count) + call] if call else []
    if inst is INST.tensorize:
        return _tensorize(env, inst, literals)
    if inst is INST.transform_layout and env.gemm_layouts:
        return _gemm_layouts(env, inst)
    if inst is INST.transform_block_layout and env.block_iters:
        return _block_layouts(env, inst, extra)
    if inst is INST.add_unit_loop:
        return _unit_loops(env, inst)
    if res.count == 0:
        call = _call(env, inst)
        return [call] if call else []
    if inst is INST.blockize:
        target = _blockize_target(env, extra)
        call = _call(env, inst, {"target": target}) if target else None
        return [_outputs(env, res.kind, res.count) + call] if call else []
    if inst is INST.fuse and env.loops:  # consecutive loops, outermost first: names in increasing order
        call = _call(env, inst, {"loops": _increasing_loops(env, extra)})
        return [_outputs(env, res.kind, res.count) + call] if call else []
    if isinstance(res.count, int):
        call = _call(env, inst)
        return [_outputs(env, res.kind, res.count) + call] if call else []
    if res.count == "n":  # sample_perfect_tile: per extent of live loops, per n
        by_extent: dict[int, list[str]] = {}
        for loop, extent in env.loops.items():
            if isinstance(extent, int) and extent >= 1:
                by_extent.setdefault(extent, []).append(loop)
        for extent, loops in sorted(by_extent.items()):
            extra[f"loops{extent}"] = " | ".join(lit(lp) for lp in loops)
            for n, cap in itertools.product(range(1, MAX_TILE_N + 1), TILE_CAPS["gpu" if env.gpu else "cpu"]):
                if n == 1 and extent > cap:
                    continue
                decision = '"[" ' + _tile_rule(extent, n, cap, extra) + ' "]"'
                call = _call(
                    env,
                    inst,
                    {
                        "loop": f"loops{extent}",
                        "n": lit(str(n)),
                        "max_innermost_factor": lit(str(cap)),
                        "decision": decision,
                    },
                )
                if call:
                    out.append(_outputs(env, res.kind, n) + call)
        return out
    if res.count == "factors":  # split: a loop's own sampled tile, or constant factors
        for loop, values in env.tiles.items():
            if loop in env.loops and values:
                call = _call(env, inst, {"loop": lit(loop), "factors": '"[" ' + lit(", ".join(values)) + ' "]"'})
                if call:
                    out.append(_outputs(env, res.kind, len(values)) + call)
        out += _constant_splits(env, inst, extra, literals)
        return out
    if res.count == "*":  # the count is a fact of the schedule: one alternative per argument
        arg = inst.params[0]
        fact = _COUNT_FACTS.get(inst.name)
        if fact is None:
            return []
        candidates = []
        if "block" in arg.type:
            candidates += [(b, facts.get(fact)) for b, facts in env.blocks.items()]
        if "loop" in arg.type and fact == "children":
            candidates += [(lp, env.loop_children.get(lp)) for lp in env.loops]
        for name, count in candidates:
            if count is None:
                continue
            call = _call(env, inst, {arg.name: lit(name)})
            if call:
                out.append(_outputs(env, res.kind, count) + call)
        return out
    return out


#: the annotations whose string values name the intrinsic MetaSchedule's RewriteTensorize applies
TENSORIZE_KEYS = ("meta_schedule.auto_tensorize", "meta_schedule.auto_tensorize_init")


def _tensorize(env: Env, inst, literals: dict | None) -> list[str]:
    """tensorize of a live block by an intrinsic the training corpus annotates blocks with (the
    postprocessing of every tensor-core label: get_sblock, unannotate auto_tensorize, tensorize by
    the annotation's value). No intrinsic without literals: a name must be registered in TVM, and
    an untrained guess is not."""
    annotations = (literals or {}).get("annotations", {})
    intrins = sorted({v for key in TENSORIZE_KEYS for v in annotations.get(key, {}).get("str", [])})
    if not intrins or not env.blocks:
        return []
    call = _call(env, inst, {"target": "name_block", "tensor_intrin": _alts(lit(json.dumps(n)) for n in intrins)})
    return [call] if call else []


def _dlight_reindexed(env: Env) -> dict:
    """Live reindex blocks of a live GEMM-like block whose lambdas are known -> (that block, buffer)."""
    return {
        r: (m, buf)
        for r, (m, buf) in env.reindexed.items()
        if r in env.blocks and m in env.blocks and buf in env.gemm_layouts.get(m, {})
    }


def _gemm_layouts(env: Env, inst) -> list[str]:
    """transform_layout where a GEMM-like block has been reindexed (dlight's normal form of matmuls
    and convolutions): a reindex block's buffer takes only the lambda dlight's analysis gives (A and
    B at `write(0)`, C at `read(0)`), once; other blocks, as any block. The model wrote these
    lambdas wrong (`(0, i1 * 56 + i2, i3)` for `(0, i2 * 56 + i3, i1)`) in 3 of 5 answers for a
    held-out 1x1 convolution, which then stopped; dlight's analysis reproduces all 1,000 such
    statements of 250 dlight training scripts, and no other training script transforms a reindex
    block's layout."""
    known = _dlight_reindexed(env)
    out = []
    for r, (m, buf) in known.items():
        if r in env.transformed:
            continue
        at = "read(0)" if buf == "write(0)" else "write(0)"
        out.append(lit(inst.name + "(") + " " + lit(f"{r}, {at}, {env.gemm_layouts[m][buf]})"))
    others = [b for b in env.blocks if b not in known]
    call = _call(env, inst, {"block": _alts(lit(b) for b in others)}) if others else None
    return out + ([call] if call else [])


def _unit_loops(env: Env, inst) -> list[str]:
    """add_unit_loop of a block (no training label takes a loop: dlight's rules take blocks, and
    MetaSchedule's spaces never write it) once, or twice where dlight's GEMV analysis accepts the
    block (`inspect.is_gemv`): its GEMV rule alone gives one block two unit loops (the vector
    chunk's and the batch's); its Reduction, GeneralReduction and Fallback rules add one, and
    MetaSchedule's spaces none. Without the rule the CUDA model wrote the GEMV normal form for
    row sums of one input, then a GEMV's two rfactors: 0.01-0.3x dlight's cross-thread reduction."""
    blocks = [b for b in env.blocks if env.unit_looped.get(b, 0) == 0 or (env.unit_looped[b] == 1 and b in env.gemv)]
    call = _call(env, inst, {"target": _alts(lit(b) for b in blocks)}) if blocks else None
    return [_outputs(env, inst.results.kind, inst.results.count) + call] if call else []


def _block_layouts(env: Env, inst, extra: dict) -> list[str]:
    """transform_block_layout of each block whose iterators are known: a lambda of exactly one
    parameter per iterator, named as the training labels name them (iterator names of the live
    blocks: dlight names a decode GEMV's reduction `lambda v_i, v_k` after the iterators of the
    blocks it came from; `i0, i1, ...`; or typed `(iters_0: int64, ...)`), whose body refers to such
    names and sampled values only, with integer casts as its only calls. Without it the seventh CUDA
    model wrote lambdas of 2 parameters for a block of 4 iterators and bodies naming no parameter
    (18 statements the checker or TVM rejected in one answer, which then ran out of retries)."""
    pool = list(dict.fromkeys(nm for it in env.block_iters.values() if it for nm in it))
    if not pool:
        return []
    extra["ixv_pool_name"] = " | ".join(lit(nm) for nm in pool)
    _index_rules("ixv_pool", pool + list(env.values), extra)
    out = []
    # a GEMM-like block whose reindexed buffers took dlight's layouts takes dlight's own lambda
    # (`_gemm_layouts`): the block's iterators fused as its buffers were, once
    dlight = {m for r, (m, _b) in _dlight_reindexed(env).items() if r in env.transformed}
    for m in dlight:
        if m not in env.relaid:
            out.append(lit(inst.name + "(") + " " + lit(f"{m}, {env.gemm_layouts[m]['block']})"))
    for block, iters in env.block_iters.items():
        if not iters or block not in env.blocks or block in dlight:
            continue
        n = len(iters)
        ints, typed = [f"i{k}" for k in range(n)], [f"iters_{k}" for k in range(n)]
        for key, names in ((f"ixv_i{n}", ints), (f"ixv_iters{n}", typed)):
            if key not in extra:
                _index_rules(key, names + list(env.values), extra)
        forms = [
            ('"lambda " ' + ' ", " '.join(["ixv_pool_name"] * n), "ixv_pool"),
            (lit("lambda " + ", ".join(ints)), f"ixv_i{n}"),
            (lit("lambda (" + ", ".join(f"{nm}: int64" for nm in typed) + ")"), f"ixv_iters{n}"),
        ]
        for head, body in forms:
            call = _call(env, inst, {"block": lit(block), "index_map": f'{head} ": " {body}'})
            if call:
                out.append(call)
    return out


def _index_rules(key: str, names: list, extra: dict) -> None:
    """The rule KEY (and its parts, into EXTRA): an index expression (STATIC_RULES' `ix`) whose
    variables are NAMES only, and whose only calls are integer casts."""
    atom = " | ".join(lit(nm) for nm in dict.fromkeys(names))
    extra[key] = f'{key}_p ( ( " + " | " - " ) {key}_p )*'
    extra[f"{key}_p"] = f'{key}_u ( ( " * " | " // " | " % " ) {key}_u )*'
    extra[f"{key}_u"] = f'"-" {key}_u | {key}_a'
    # the only call in the training labels' index maps: int64(0)
    extra[f"{key}_a"] = f'{atom} | uint | "(" {key} ( ", " {key} )* ")" | ("int64" | "int32") "(" {key} ")"'


def allowed_instructions(env: Env, allowed: frozenset | None = None) -> list:
    return [
        i
        for i in table.INSTRUCTIONS
        if not i.section and i.name not in EXCLUDED and (allowed is None or i.name in allowed)
    ]


def statement_alternatives(
    env: Env, exclude: frozenset = frozenset(), allowed: frozenset | None = None, literals: dict | None = None
) -> tuple[list[str], dict]:
    """The next statement's alternatives (each an EBNF sequence: its result names, its call) and
    the helper rules they use (name -> body); the arguments are `statement_grammar`'s."""
    extra: dict = {}
    alts = []
    for inst in allowed_instructions(env, allowed):
        if inst.name in exclude:
            continue
        alts += instruction_rules(env, inst, extra, literals)
    return alts, extra


def _root(env: Env, stmt: str | None) -> str:
    """The root rule: a statement (STMT: the rule that writes it; None: there is none) and its newline,
    or the section header."""
    root = [f"{stmt} {lit(chr(10))}"] if stmt else []
    if not env.postproc:
        # the section header may end a statement: the tokenizer writes ")\n\npostproc:" with one
        # "\n\n" token, which a statement ending at its first "\n" could never produce
        if stmt:
            root.append(f"{stmt} {lit(chr(10) * 2 + 'postproc:' + chr(10))}")
        root.append(lit("\npostproc:\n"))
    return "root ::= " + " | ".join(root or [lit("\n")])


def statement_grammar(
    env: Env, exclude: frozenset = frozenset(), allowed: frozenset | None = None, literals: dict | None = None
) -> str:
    """EBNF (xgrammar dialect) for one statement and its newline in this state; `exclude` names
    instructions not to offer here (the generator's memory of what TVM just rejected), `allowed`
    the only ones to offer (the instructions of the model's training corpus; None: all), `literals`
    the constants it has seen (`data.literals_of`; None: any)."""
    alts, extra = statement_alternatives(env, exclude, allowed, literals)
    lines = [_root(env, "stmt" if alts else None)]
    if alts:
        lines.append("stmt ::= " + "\n    | ".join(alts))
    lines += [f"{k} ::= {v}" for k, v in sorted(extra.items())]
    lines += _name_rules(env)
    return "\n".join(lines) + "\n" + STATIC_RULES


# ---- one statement in two phases --------------------------------------------------------------
# A whole statement's grammar is 10-40 KB (every live name, tile and constant of every instruction)
# and xgrammar compiles it anew for every statement: 68 ms a statement over the CUDA corpus' labels.
# The decoder writes a statement's head first (its result names and `instruction(`), from a grammar
# of the heads alone, then the rest, from the grammar of the alternatives with that head. The two
# phases accept exactly the statements of `statement_grammar` (no token of the vocabulary reaches
# past an instruction's opening parenthesis: tests/model/test_statement_phases.py).

_LITERAL = json.JSONDecoder()
_STATIC = dict(line.split(" ::= ", 1) for line in STATIC_RULES.strip().splitlines())  # name -> body
_RULE_NAME = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|([A-Za-z_][A-Za-z_0-9]*)')


def head_of(alt: str) -> tuple[str, str]:
    """An alternative -> (its head: the text of its leading literals up to the instruction's `(`, the
    rest of the alternative as EBNF)."""
    head, pos = "", 0
    while not head.endswith("("):
        while pos < len(alt) and alt[pos] == " ":
            pos += 1
        text, pos = _LITERAL.raw_decode(alt, pos)  # every alternative starts with literals (`_call`)
        head += text
    return head, alt[pos:].strip()


@dataclass
class StatementPhases:
    """The grammars of one statement's two phases: `head` (the heads, or the section header) and,
    per head, `rest(head)` (what may follow it, with the statement's newline)."""

    env: Env
    heads: dict  # head text -> the rests of its alternatives
    extra: dict  # helper rules of the alternatives
    names: list  # the live-name rules

    @property
    def head(self) -> str:
        heads = [lit(h) for h in self.heads] + ([] if self.env.postproc else [lit("\npostproc:\n")])
        return "root ::= " + " | ".join(heads or [lit("\n")]) + "\n"

    def rest(self, head: str) -> str:
        body = "(" + " | ".join(r or '""' for r in self.heads[head]) + ")"
        rules = dict(self.extra)
        rules.update(line.split(" ::= ", 1) for line in self.names)
        rules.update(_STATIC)
        used, todo = [], [body]
        seen = set()
        while todo:  # only the rules the rest refers to (xgrammar compiles every rule it is given)
            for m in _RULE_NAME.finditer(todo.pop()):
                name = m.group(1)
                if name and name in rules and name not in seen:
                    seen.add(name)
                    used.append(name)
                    todo.append(rules[name])
        env = self.env
        ends = [lit("\n")] + ([lit("\n\npostproc:\n")] if not env.postproc else [])
        lines = [f"root ::= rest ({' | '.join(ends)})", f"rest ::= {body}"]
        return "\n".join(lines + [f"{k} ::= {rules[k]}" for k in sorted(used)]) + "\n"


def statement_phases(
    env: Env, exclude: frozenset = frozenset(), allowed: frozenset | None = None, literals: dict | None = None
) -> StatementPhases:
    """`statement_grammar`'s language in two phases (`StatementPhases`)."""
    alts, extra = statement_alternatives(env, exclude, allowed, literals)
    heads: dict = {}
    for alt in alts:
        head, rest = head_of(alt)
        heads.setdefault(head, []).append(rest)
    return StatementPhases(env, heads, extra, _name_rules(env))


# ---- a design space's statements, decisions chosen by the model ---------------------------------
def template_grammar(stmt: str, choices: list | None = None) -> str:
    """The grammar of one statement of a design space's candidates (`api.tensor_core_candidate`):
    STMT as written, its `decision=` value one of CHOICES (texts, e.g. "[1, 4, 2]" or "3": the
    decisions of the sampled candidates that agree with the decisions written before), which the
    model chooses; without CHOICES the statement is forced whole."""
    line = stmt if stmt.endswith("\n") else stmt + "\n"
    if not choices:
        return f"root ::= {lit(line)}\n"
    cut = line.rindex("decision=") + len("decision=")
    return f"root ::= {lit(line[:cut])} {_alts(lit(c) for c in sorted(set(choices)))} {lit(')' + chr(10))}\n"
