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

import itertools
import json
import re
from dataclasses import dataclass

from dragon_dsl.language import table
from dragon_dsl.language.table import INST
from dragon_model.decoder_settings import (
    MAX_CATEGORIES,
    MAX_TILE_N,
    TILE_CAPS,
    block_layouts,
    constant_splits,
    gemm_layouts,
    tensorize_rules,
    unit_loops,
)
from dragon_model.decoder_terms import (
    ANNOTATIONS,
    EXCLUDED,
    STATIC_RULES,
    Env,
    annotation_values,
    any_of,
    blockize_target,
    call_rule,
    increasing_loops,
    lit,
    name_rules,
    results_rule,
    tile_rule,
)

#: the schedule fact (of `Env.blocks` / `Env.loop_children`) that counts a lookup's results
_COUNT_FACTS = {
    INST.get_loops.name: "loops",
    INST.get_child_blocks.name: "children",
    INST.get_producers.name: "producers",
    INST.get_consumers.name: "consumers",
    INST.get_output_blocks.name: "outputs",
}


#: instructions that give a serial loop its kind
_LOOP_KINDS = (INST.bind, INST.parallel, INST.unroll, INST.vectorize)


def instruction_rules(env: Env, inst, extra: dict, literals: dict | None = None) -> list[str]:
    """Alternatives of one instruction in this state (none when it cannot be written here)."""
    res = inst.results
    if inst in _LOOP_KINDS:
        return _loop_kind_rules(env, inst)
    if table.in_group(inst, "annotation"):
        return _annotation_rules(env, inst, literals)
    if inst is INST.get_sblock and env.sblock_names:  # only blocks that exist in the module
        names = "(" + " | ".join(lit(json.dumps(n)) for n in env.sblock_names) + ")"
        return _with_results(env, res.kind, res.count, call_rule(env, inst, {"name": names}))
    if inst is INST.sample_categorical:
        return _categorical_rules(env, inst, literals)
    if inst.decision == "index":  # an index into the candidates: small
        return _with_results(env, res.kind, res.count, call_rule(env, inst, {"decision": "[0-9]"}))
    if inst is INST.tensorize:
        return tensorize_rules(env, inst, literals)
    if inst is INST.transform_layout and env.gemm_layouts:
        return gemm_layouts(env, inst)
    if inst is INST.transform_block_layout and env.block_iters:
        return block_layouts(env, inst, extra)
    if inst is INST.add_unit_loop:
        return unit_loops(env, inst)
    if res.count == 0:
        call = call_rule(env, inst)
        return [call] if call else []
    if inst is INST.blockize:
        target = blockize_target(env, extra)
        return _with_results(env, res.kind, res.count, call_rule(env, inst, {"target": target}) if target else None)
    if inst is INST.fuse and env.loops:  # consecutive loops, outermost first: names in increasing order
        return _with_results(env, res.kind, res.count, call_rule(env, inst, {"loops": increasing_loops(env, extra)}))
    if isinstance(res.count, int):
        return _with_results(env, res.kind, res.count, call_rule(env, inst))
    if res.count == "n":
        return _tile_rules(env, inst, extra)
    if res.count == "factors":
        return _split_rules(env, inst, extra, literals)
    if res.count == "*":
        return _lookup_rules(env, inst)
    return []


def _with_results(env: Env, kind: str, count: int, call: str | None) -> list[str]:
    """CALL (None: it cannot be written here) with its COUNT results of KIND, as alternatives."""
    return [results_rule(env, kind, count) + call] if call else []


def _loop_kind_rules(env: Env, inst) -> list[str]:
    """bind, parallel, unroll, vectorize of a serial loop: a loop takes one kind. TVM lets `bind`
    rebind a bound loop, and a model that bound a reduction's loop to blockIdx.x, then to
    threadIdx.x, ran thousands of times slower than dlight (none of the 41,844 training scripts gives
    a loop a second kind); vectorize takes innermost loops of 2..MAX_VECTOR iterations only
    (`Env.innermost`)."""
    loops = [lp for lp in (env.innermost if inst is INST.vectorize else env.loops) if lp not in env.kinded]
    call = call_rule(env, inst, {"loop": any_of(lit(lp) for lp in loops)}) if loops else None
    return [call] if call else []


def _annotation_rules(env: Env, inst, literals: dict | None) -> list[str]:
    """annotate and unannotate by MetaSchedule's keys, each with its kind of value. unannotate also
    takes the keys annotate may write: every tensor-core label removes meta_schedule.auto_tensorize
    in its postprocessing, and without it no tensor-core label could be written to its end."""
    if inst is INST.unannotate:
        keys = dict.fromkeys(list(ANNOTATIONS) + list((literals or {}).get("annotations", {})))
        call = call_rule(env, inst, {"key": any_of(lit(json.dumps(k)) for k in keys)})
        return [call] if call else []
    out = []
    for key, value in annotation_values(env, literals):
        call = call_rule(env, inst, {"key": key, "value": value})
        if call:
            out.append(call)
    return out


def _categorical_rules(env: Env, inst, literals: dict | None) -> list[str]:
    """sample_categorical: as many probabilities as candidates (uniform, as MetaSchedule's are), the
    decision an index into them; the candidate lists of the training corpus when it recorded them."""
    res = inst.results
    seen = literals.get("categorical") if literals is not None else None
    lists = (
        [(lit(json.dumps(c)), len(c)) for c in seen]
        if seen is not None
        else [('"[" ' + ' ", " '.join(["int"] * k) + ' "]"', k) for k in range(1, MAX_CATEGORIES + 1)]
    )
    out = []
    for cands, k in lists:
        probs = lit("[" + ", ".join([repr(1 / k)] * k) + "]")  # MetaSchedule's are uniform
        decision = "(" + " | ".join(lit(str(i)) for i in range(k)) + ")"
        out += _with_results(
            env, res.kind, res.count, call_rule(env, inst, {"candidates": cands, "probs": probs, "decision": decision})
        )
    return out


def _tile_rules(env: Env, inst, extra: dict) -> list[str]:
    """sample_perfect_tile: per extent of live loops, per number of factors and innermost cap
    (TILE_CAPS), the decisions whose product is the extent."""
    res = inst.results
    by_extent: dict[int, list[str]] = {}
    for loop, extent in env.loops.items():
        if isinstance(extent, int) and extent >= 1:
            by_extent.setdefault(extent, []).append(loop)
    out = []
    for extent, loops in sorted(by_extent.items()):
        extra[f"loops{extent}"] = " | ".join(lit(lp) for lp in loops)
        for n, cap in itertools.product(range(1, MAX_TILE_N + 1), TILE_CAPS["gpu" if env.gpu else "cpu"]):
            if n == 1 and extent > cap:
                continue
            decision = '"[" ' + tile_rule(extent, n, cap, extra) + ' "]"'
            fixed = {
                "loop": f"loops{extent}",
                "n": lit(str(n)),
                "max_innermost_factor": lit(str(cap)),
                "decision": decision,
            }
            out += _with_results(env, res.kind, n, call_rule(env, inst, fixed))
    return out


def _split_rules(env: Env, inst, extra: dict, literals: dict | None) -> list[str]:
    """split: a loop by its own sampled tile, or by constant factors (`constant_splits`)."""
    res = inst.results
    out = []
    for loop, values in env.tiles.items():
        if loop in env.loops and values:
            call = call_rule(env, inst, {"loop": lit(loop), "factors": '"[" ' + lit(", ".join(values)) + ' "]"'})
            out += _with_results(env, res.kind, len(values), call)
    return out + constant_splits(env, inst, extra, literals)


def _lookup_rules(env: Env, inst) -> list[str]:
    """A lookup whose count of results is a fact of the schedule (`_COUNT_FACTS`): one alternative
    per block or loop it may ask about, with as many results as that one has."""
    res = inst.results
    arg = inst.params[0]
    fact = _COUNT_FACTS.get(inst.name)
    if fact is None:
        return []
    candidates = []
    if "block" in arg.type:
        candidates += [(b, facts.get(fact)) for b, facts in env.blocks.items()]
    if "loop" in arg.type and fact == "children":
        candidates += [(lp, env.loop_children.get(lp)) for lp in env.loops]
    out = []
    for name, count in candidates:
        if count is not None:
            out += _with_results(env, res.kind, count, call_rule(env, inst, {arg.name: lit(name)}))
    return out


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
    lines += name_rules(env)
    return "\n".join(lines) + "\n" + STATIC_RULES


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
        text, pos = _LITERAL.raw_decode(alt, pos)  # every alternative starts with literals (`call_rule`)
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
    return StatementPhases(env, heads, extra, name_rules(env))


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
    return f"root ::= {lit(line[:cut])} {any_of(lit(c) for c in sorted(set(choices)))} {lit(')' + chr(10))}\n"
