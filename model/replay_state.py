"""Incremental replay for decoding: is this prefix a schedule TVM accepts, and what may come next?

After every statement the decoder replays the script so far on a fresh schedule,
exactly as `dragon-check --level replay` does (`dragon_dsl.tvm.replay`, which also
reports decisions TVM would silently repair), and reads the state the next statement's
grammar needs (`grammar.Env`): which blocks and loops are still live, each loop's
extent, how many loops, children, producers and consumers each block has.

Names are matched to TVM's random variables through the replayed trace: TVM records
every applied instruction with its output objects, in the order of the script. What the
objects hold (counts, extents) is read through the TVM bridge (`dragon_dsl.tvm.inspect`);
this module imports no TVM.
"""

from __future__ import annotations

from typing import Optional

from dragon_dsl.table import INST
from dragon_dsl.table.trace_json import trace_row
from dragon_dsl.tvm import inspect
from dragon_dsl.tvm.blocks import block_names

from dragon_model.decoder_grammar import MAX_VECTOR, Env


def replay_prefix(body: str, workload, target_kind: str) -> tuple[Optional[Env], Optional[str]]:
    """(state, None) when the script body checks and replays; (None, why) otherwise."""
    from dragon_dsl import check_text
    from dragon_dsl.diagnostics import Severity
    from dragon_dsl.tvm.replay import replay

    program, diags = check_text(body)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        return None, f"{errors[0].code}: {errors[0].message}"
    result = replay(program, workload)
    if not result.ok:
        bad = [d for d in result.diagnostics if d.severity is Severity.ERROR]
        return None, (f"{bad[0].code}: {bad[0].message}" if bad else "replay failed")
    if body.rstrip().rsplit("\n", 1)[-1].startswith("parallel(") and inspect.nested_parallel(result.schedule):
        # TVM accepts the instruction, but the CPU build fails: "Nested parallel loop is not
        # supported by threadpool"; reject it here, where the statement can still be resampled
        return None, "parallel: a loop inside (or around) this one is parallel already; the CPU thread pool cannot nest them"
    from dragon_dsl.tvm.compile import mixed_loop_message, mixed_loops

    mixed = mixed_loop_message(mixed_loops(result.schedule.mod))
    if mixed:   # no training script mixes them; a derailing model binds such a loop next (a race)
        return None, mixed
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


def state_of(trace: list, sch, target_kind: str) -> Env:
    env = Env(target_kind=target_kind)
    insts = list(sch.trace.insts)  # read before any query below appends to it
    named: list[tuple[str, object]] = []
    for js, inst in zip(trace[0], insts):
        row = trace_row(js)  # the instruction as the table reads it: no JSON positions here
        if row.entry is INST.enter_postproc:
            env.postproc = True
        elif row.entry is INST.sample_perfect_tile and row.arg("loop") is not None:
            env.tiles[row.arg("loop")] = list(row.outputs)  # the loop it tiles -> its values (split takes them)
        elif row.entry is INST.sample_categorical:
            env.categoricals.extend(row.outputs)
        elif row.entry is INST.split and any(f is None or f == "None" or type(f) is int for f in row.arg("factors", [])):
            env.split_loops.update(row.outputs)  # a constant split's loops (grammar: not split by constants again)
        for name, rv in zip(row.outputs, inst.outputs):
            if row.entry is INST.sample_compute_location:
                # a sampled location may be the root or "inline" marker, which `get` cannot show and
                # no instruction but compute_at / reverse_compute_at may take (TVM segfaults on
                # `annotate(root_marker, ...)`): it is a location, not a loop
                env.locations.append(name)
                continue
            named.append((name, rv))
    env.counter = sum(len(trace_row(js).outputs) for js in trace[0])
    for name, rv in named:
        kind = name[:1]
        if kind == "v":
            env.values.append(name)
            continue
        if not inspect.alive(sch, rv):  # the object no longer exists in the module
            continue
        if kind == "b":
            env.blocks[name] = inspect.block_counts(sch, rv)
            env.block_iters[name] = inspect.block_iters(sch, rv)
        elif kind == "l":
            env.loops[name] = inspect.loop_extent(sch, rv)
            if not inspect.serial(sch, rv):
                env.kinded.add(name)
            children = inspect.loop_children(sch, rv)
            env.loop_children[name] = None if children is None else len(children)
            extent = env.loops[name]
            if not children or extent is None:
                continue
            # a loop vectorize may take (see grammar.MAX_VECTOR): innermost, of 2..MAX_VECTOR
            # iterations; on GPUs also with loops of one iteration inside, and of one iteration
            # anywhere (a no-op there, which dlight writes: CPU builds need 2 lanes)
            if (env.gpu and extent == 1) or (2 <= extent <= MAX_VECTOR
                                            and inspect.innermost(sch, rv, children, unit_inside=env.gpu)):
                env.innermost.append(name)
    env.sblock_names = _sblock_names(sch)
    return env


def _sblock_names(sch) -> list[str]:
    """Block names of the scheduled module, in program order (root first), each once."""
    names = block_names(sch)
    return sorted(set(names), key=names.index)
