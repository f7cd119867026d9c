"""Incremental replay for decoding: is this prefix a schedule TVM accepts, and what may come next?

After every statement the decoder replays the script so far on a fresh schedule,
exactly as `dragon-check --level replay` does (`dragon_dsl.tvm.replay`, which also
reports decisions TVM would silently repair), and reads the state the next statement's
grammar needs (`grammar.Env`): which blocks and loops are still live, each loop's
extent, how many loops, children, producers and consumers each block has.

After a query statement (get_loops, get_producers, a sample_*) the state is the accepted script's
before it plus the query's own names (`_ACCEPTED`): the query cannot change the module. The script
is still checked and replayed whole, so the verdict is the full replay's.

Names are matched to TVM's random variables through the replayed trace: TVM records
every applied instruction with its output objects, in the order of the script. What the
objects hold (counts, extents) is read through the TVM bridge (`dragon_dsl.tvm.inspect`);
this module imports no TVM.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

from dragon_dsl.language.table import INST
from dragon_dsl.language.table.trace_json import trace_row
from dragon_dsl.tvm import inspect
from dragon_dsl.tvm.blocks import block_names
from dragon_model.decoder_settings import MAX_VECTOR
from dragon_model.decoder_terms import Env

#: warnings of `dragon-check` that the decoder treats as errors: what they flag replays and builds,
#: but no training script does it and it only ever made an answer slower (DRG106: a cache inlined
#: again; DRG107: a cache moved to another storage scope)
REFUSED_WARNINGS = frozenset({"DRG106", "DRG107"})


def replay_prefix(body: str, workload, target_kind: str, *, last_is_new: bool = False) -> tuple[Env | None, str | None]:
    """(state, None) when the script body checks and replays; (None, why) otherwise.
    LAST_IS_NEW: every statement but the last was accepted before (the decoder's prefix), so a
    refusal can only be the last one's, and the search for the statement TVM rejects starts there."""
    from dragon_dsl import check_text
    from dragon_dsl.language.diagnostics import Severity
    from dragon_dsl.tvm.replay import replay

    program, diags = check_text(body)
    errors = [d for d in diags if d.severity is Severity.ERROR or d.code in REFUSED_WARNINGS]
    if errors:
        return None, f"{errors[0].code}: {errors[0].message}"
    result = replay(program, workload, replays_before=len(program.instructions) - 1 if last_is_new else 0)
    if not result.ok:
        bad = [d for d in result.diagnostics if d.severity is Severity.ERROR]
        return None, (f"{bad[0].code}: {bad[0].message}" if bad else "replay failed")
    if body.rstrip().rsplit("\n", 1)[-1].startswith(INST.parallel.name + "(") and inspect.nested_parallel(
        result.schedule
    ):
        # TVM accepts the instruction, but the CPU build fails: "Nested parallel loop is not
        # supported by threadpool"; reject it here, where the statement can still be resampled
        return (
            None,
            "parallel: a loop inside (or around) this one is parallel already; the CPU thread pool cannot nest them",
        )
    before = _accepted_before(body, workload, target_kind, result.trace)
    if before is not None:
        env = _after_query(before, result.trace, result.schedule)
    else:
        env, why = _judged_state(result, target_kind)
        if env is None:
            return None, why
    _remember(body, workload, target_kind, result.trace, env)
    return env, None


def _judged_state(result, target_kind: str) -> tuple[Env | None, str | None]:
    """The state after a replayed script, or why the schedule it leaves is refused (a loop mixing
    spatial and reduction iterators, an unconditional access outside a buffer, a predicated block
    that never runs for some of its elements, an update run more than once per initialisation,
    reductions re-run to many times the program's work; on GPUs a thread loop longer than its
    outer one)."""
    from dragon_dsl.tvm.compile import (
        mixed_loop_message,
        mixed_loops,
        out_of_bounds,
        out_of_bounds_message,
        repeated_update_message,
        repeated_updates,
        repeated_work_message,
        unreached_iterations,
        unreached_message,
    )

    mixed = mixed_loop_message(mixed_loops(result.schedule.mod))
    if mixed:  # no training script mixes them; a derailing model binds such a loop next (a race)
        return None, mixed
    outside = out_of_bounds_message(out_of_bounds(result.schedule.mod))
    if outside:  # it would build and then crash, or read garbage: no corpus script does it
        return None, outside
    unreached = unreached_message(unreached_iterations(result.schedule.mod))
    if unreached:  # the elements never written are read as garbage: no training label leaves one
        return None, unreached
    twice = repeated_update_message(repeated_updates(result.schedule.mod))
    if twice:  # the same values added again and again: a wrong result
        return None, twice
    repeated = repeated_work_message(result.schedule.mod, result.workload)
    if repeated:  # it verifies, thousands of times slower than the program: no training label does it
        return None, repeated
    env = state_of(result.trace, result.schedule, target_kind)
    if env.gpu:
        from dragon_dsl.tvm.compile import LOOP_PAST_OUTER, thread_binding_problems

        # an inner thread loop longer than its outer one on the same axis: no later instruction undoes
        # it and the compile check would reject the script, so this statement is resampled now.
        # (A block left on the host is not rejected while writing: masking the end of the script
        # until every block is bound made the model derail instead, 2 of 2 padded convolutions.)
        nested = [msg for kind, msg in thread_binding_problems(result.schedule.mod) if kind == LOOP_PAST_OUTER]
        if nested:
            return None, nested[0]
    return env, None


# ---- the accepted prefixes: a query statement only adds names to their state -----------------------

# (id(workload), target kind, body) -> (workload, trace JSON, state): the last accepted scripts. The
# decoder replays the whole script after every statement; after a query (get_loops, get_producers,
# a sample_*: `pure` in the instruction table) the module is the one the accepted script before it
# left, so every fact of the state but the query's own names is that script's, and the checks of the
# module (mixed loops, thread loops) found nothing then either. The entry keeps the workload alive,
# so its id is not reused. Refused scripts are never remembered.
# The replay itself is not made incremental: TVM 0.27 applies trace JSON only from an empty name
# table (Trace.apply_json_to_schedule), Trace.apply_to_schedule only to objects its own trace bound,
# and InstructionKind's apply function is not exposed to Python, so applying just the new statement
# to `Schedule.copy()` would mean rewriting TVM's JSON-to-call translation for every instruction.
_ACCEPTED: OrderedDict[tuple, tuple] = OrderedDict()


def _remember(body: str, workload, target_kind: str, trace: list, env: Env) -> None:
    """Keep an accepted script's trace and state for the query that may follow it."""
    _ACCEPTED[(id(workload), target_kind, body)] = (workload, trace, env)
    _ACCEPTED.move_to_end((id(workload), target_kind, body))
    if len(_ACCEPTED) > 64:
        _ACCEPTED.popitem(last=False)


def _accepted_before(body: str, workload, target_kind: str, trace: list) -> Env | None:
    """The state of the accepted script that BODY extends by one query instruction, None when there
    is none (not remembered, more than one instruction added, or one that changes the module). The
    remembered trace must be this one's prefix: the state's names are that trace's."""
    from dragon_dsl.tvm.trace import prefix

    head = body.rstrip("\n")
    found = _ACCEPTED.get((id(workload), target_kind, head[: head.rfind("\n") + 1]))
    if found is None or found[0] is not workload or not trace[0]:
        return None
    _, before, env = found
    n = len(before[0])
    row = trace_row(trace[0][-1])
    if len(trace[0]) != n + 1 or row.entry is None or not row.entry.pure or prefix(trace, n) != before:
        return None
    return env


def _after_query(before: Env, trace: list, sch) -> Env:
    """The state after a query instruction (the last of TRACE, which SCH replayed): BEFORE, the
    state of the script without it, with the query's own names added as `state_of` adds them."""
    env = copy.deepcopy(before)
    inst = sch.trace.insts[len(trace[0]) - 1]  # read before any query below appends to the trace
    for name, rv in _note_instruction(env, trace_row(trace[0][-1]), inst):
        _note_object(env, sch, name, rv)
    return env


def state_of(trace: list, sch, target_kind: str) -> Env:
    env = Env(target_kind=target_kind)
    insts = list(sch.trace.insts)  # read before any query below appends to it
    named: list[tuple[str, object]] = []
    for js, inst in zip(trace[0], insts):
        named += _note_instruction(env, trace_row(js), inst)
    for name, rv in named:
        _note_object(env, sch, name, rv)
    rvs = dict(named)
    for main in dict.fromkeys(m for m, _buf in env.reindexed.values()):
        if main in env.blocks and main in rvs:  # dlight's lambdas for its reindexed buffers (grammar)
            layouts = inspect.gemm_layouts(sch, rvs[main])
            if layouts is not None:
                env.gemm_layouts[main] = layouts
    for block in env.unit_looped:  # a second unit loop only where dlight's GEMV rule writes one (grammar)
        if block in env.blocks and block in rvs and inspect.is_gemv(sch, rvs[block]):
            env.gemv.add(block)
    env.sblock_names = _sblock_names(sch)
    return env


def _buffer_text(raw) -> str:
    """A buffer argument of trace JSON (`[index, 0 for read | 1 for write]`) as Dragon writes it."""
    index, kind = raw
    return f"{'write' if kind else 'read'}({index})"


def _note_instruction(env: Env, row, inst) -> list[tuple[str, object]]:
    """Record what one instruction (its trace row, and TVM's record of it) tells the grammar by
    itself; returns its named outputs whose objects the schedule is asked about."""
    if row.entry is INST.enter_postproc:
        env.postproc = True
    elif row.entry is INST.sample_perfect_tile and row.arg("loop") is not None:
        env.tiles[row.arg("loop")] = list(row.outputs)  # the loop it tiles -> its values (split takes them)
    elif row.entry is INST.sample_categorical:
        env.categoricals.extend(row.outputs)
    elif row.entry is INST.reindex and row.outputs and row.arg("block") is not None:
        env.reindexed[row.outputs[0]] = (row.arg("block"), _buffer_text(row.arg("buffer")))
    elif row.entry is INST.transform_layout and row.arg("block") is not None:
        env.transformed.add(row.arg("block"))
    elif row.entry is INST.transform_block_layout and row.arg("block") is not None:
        env.relaid.add(row.arg("block"))
    elif row.entry is INST.add_unit_loop and str(row.arg("target", "")).startswith("b"):
        env.unit_looped[row.arg("target")] = env.unit_looped.get(row.arg("target"), 0) + 1
    elif row.entry is INST.split and any(f is None or f == "None" or type(f) is int for f in row.arg("factors", [])):
        env.split_loops.update(row.outputs)  # a constant split's loops (grammar: not split by constants again)
    env.counter += len(row.outputs)
    named = []
    for name, rv in zip(row.outputs, inst.outputs):
        if row.entry is INST.sample_compute_location:
            # a sampled location may be the root or "inline" marker, which `get` cannot show and
            # no instruction but compute_at / reverse_compute_at may take (TVM segfaults on
            # `annotate(root_marker, ...)`): it is a location, not a loop
            env.locations.append(name)
            continue
        named.append((name, rv))
    return named


def _note_object(env: Env, sch, name: str, rv) -> None:
    """Record what the schedule holds for one named output: a value's name, a live block's counts and
    iterators, a live loop's extent, kind, children and whether vectorize may take it."""
    kind = name[:1]
    if kind == "v":
        env.values.append(name)
        return
    if not inspect.alive(sch, rv):  # the object no longer exists in the module
        return
    if kind == "b":
        env.blocks[name] = inspect.block_counts(sch, rv)
        env.block_iters[name] = inspect.block_iters(sch, rv)
    elif kind == "l":
        env.loops[name] = inspect.loop_extent(sch, rv)
        if env.gpu and inspect.reduction_loop(sch, rv):
            env.reduction_loops.add(name)
        if not inspect.serial(sch, rv):
            env.kinded.add(name)
        children = inspect.loop_children(sch, rv)
        env.loop_children[name] = None if children is None else len(children)
        extent = env.loops[name]
        if not children or extent is None:
            return
        # a loop vectorize may take (see grammar.MAX_VECTOR): innermost, of 2..MAX_VECTOR
        # iterations; on GPUs also with loops of one iteration inside, and of one iteration
        # anywhere (a no-op there, which dlight writes: CPU builds need 2 lanes)
        if (env.gpu and extent == 1) or (
            2 <= extent <= MAX_VECTOR and inspect.innermost(sch, rv, children, unit_inside=env.gpu)
        ):
            env.innermost.append(name)


def _sblock_names(sch) -> list[str]:
    """Block names of the scheduled module, in program order (root first), each once."""
    names = block_names(sch)
    return sorted(set(names), key=names.index)
