"""TVM trace objects -> plain JSON, replay of trace JSON on a fresh schedule, and the trace helpers
every caller shares (prefixes, the objects an instruction bound)."""

from __future__ import annotations

from collections import OrderedDict

from dragon_dsl.language.table import INST
from dragon_dsl.language.table.trace_json import trace_row


def plain(obj):
    """Convert `Trace.as_json()` output to plain Python, the way MetaSchedule's JSONDumps does:
    IntImm(bool) -> bool, IntImm -> int, FloatImm -> float, strings -> str, arrays -> list, maps -> dict."""
    import tvm
    from tvm import tirx

    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, tirx.IntImm):
        dtype = str(getattr(obj, "dtype", None) or getattr(obj, "ty", ""))
        return bool(obj.value) if dtype == "bool" else int(obj.value)
    if isinstance(obj, tirx.FloatImm):
        return float(obj.value)
    if isinstance(obj, (list, tuple)) or type(obj).__name__ == "Array":
        return [plain(x) for x in obj]
    if isinstance(obj, dict) or type(obj).__name__ == "Map":
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, tvm.runtime.String) if hasattr(tvm.runtime, "String") else False:  # pragma: no cover
        return str(obj)
    raise TypeError(f"cannot convert {type(obj).__name__} to plain JSON")


def trace_json(sch) -> list:
    """The plain-JSON trace of a schedule, postprocessing included."""
    return plain(sch.trace.as_json(remove_postproc=False))


def decisions_at(sch, indices) -> dict:
    """{index: plain decision} of the schedule's instructions at INDICES (those with one): what
    `trace_json(sch)[1]` holds for them, without serialising the whole trace (a replay after every
    decoded statement spent 13% of its time there)."""
    trace = sch.trace
    insts = trace.insts
    kept = {}
    for i in indices:
        if 0 <= i < len(insts):
            decision = trace.get_decision(insts[i])
            if decision is not None:
                kept[i] = plain(decision)
    return kept


class UnsafeInstruction(ValueError):
    """An instruction refused before TVM runs it: TVM 0.27 crashes on some of its kind (a segfault,
    which no caller can catch), so the whole unsound kind is refused. `index`: its position."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


def apply(trace, mod, *, seed: int = 1):
    """Apply trace JSON to a fresh schedule of `mod`; returns the schedule (raises TVM's errors, and
    UnsafeInstruction for an instruction that would crash TVM). The tensor intrinsics the trace
    tensorizes with are registered first: without them `dragon-check --level replay` and the
    decoder's replay rejected every tensor-core script ("TensorIntrin ... is not registered")."""
    from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics, tensor_intrin_names

    names = tensor_intrin_names(trace)
    if names:
        register_tensor_intrinsics(names)
    for index in _guarded(trace, mod):
        problem = _checked(trace, index, mod, seed)
        if problem:
            raise UnsafeInstruction(index, problem)
    return _apply(trace, mod, seed)


_CHECKED: OrderedDict[tuple, tuple] = OrderedDict()  # (id(mod), seed, JSON through i) -> (mod, problem)


def _checked(trace, index: int, mod, seed: int) -> str:
    """The problem of guarded instruction INDEX ('' for none). Remembered for the last few hundred
    prefixes: the decoder replays a growing script once per statement, and one look at each
    guarded instruction is enough (the entry keeps `mod` alive, so its id is not reused)."""
    import json

    key = (id(mod), seed, json.dumps(prefix(trace, index + 1)))
    if key in _CHECKED:
        _CHECKED.move_to_end(key)
        return _CHECKED[key][1]
    sch = _apply(prefix(trace, index), mod, seed)
    look = _LOOKS[trace_row(trace[0][index]).entry.name]
    problem = look(sch, trace[0][:index], trace[0][index])
    _CHECKED[key] = (mod, problem)
    if len(_CHECKED) > 512:
        _CHECKED.popitem(last=False)
    return problem


def _apply(trace, mod, seed: int):
    from tvm import s_tir

    sch = s_tir.Schedule(own_module(trace, mod), seed=seed)
    s_tir.Trace.apply_json_to_schedule(trace, sch)
    return sch


def annotates_root(trace) -> bool:
    """Whether the trace annotates (or unannotates) the root block."""
    roots = set()
    for js in trace[0]:
        row = trace_row(js)
        if row.entry is INST.get_sblock and row.arg("name") == "root":
            roots.update(row.outputs)
        elif row.entry in (INST.annotate, INST.unannotate) and row.arg("target") in roots:
            return True
    return False


def own_module(trace, mod):
    """MOD, or a deep copy of it where TRACE annotates the root block. TVM 0.27's schedule then
    changes the caller's module in place with the transformations that follow (after
    `annotate(root, ...)` and a `split`, the module the schedule was made from has the split loops
    too), and workloads are parsed once and shared (`load_workload`): every later replay in the
    process ran on an already scheduled workload, and the decoder offered statements (three loops
    from a two-loop block) that the script's own replay then refused."""
    if not annotates_root(trace):
        return mod
    import tvm
    from tvm_ffi.serialization import from_json_graph_str

    # the copy is made from the module's JSON, saved once per module (the decoder replays the same
    # workload for every statement it judges), and read without `tvm.ir.load_json`'s upgrade pass
    # for JSON of older TVM versions (9 of its 10 ms a copy, on an RMSNorm)
    global _PRISTINE
    pair = _PRISTINE  # one read: another thread may replace it meanwhile
    if pair is None or pair[0] is not mod:
        pair = _PRISTINE = (mod, tvm.ir.save_json(mod))
    return from_json_graph_str(pair[1])


_PRISTINE = None  # (the module own_module copied last, its JSON)


def prefix(trace: list, n: int) -> list:
    """The first n instructions of trace JSON, with their decisions."""
    insts, decisions = trace
    return [insts[:n], [d for d in decisions if d[0] < n]]


def _guarded(trace, mod=None) -> list:
    """Positions of the instructions that need a look at the schedule before TVM applies them:
    every `reorder_block_iter_var` (TVM 0.27 segfaults on a block without iteration variables), and
    `cache_read` with consumer blocks (TVM 0.27 segfaults in CacheRead when the only consumer
    named is the block that writes the buffer, and when the block or a consumer lies inside a
    blockized block; tests/golden/check/cache_read_*.dragon).

    With MOD, those that cannot meet either condition are left out (each look replays the trace up
    to the instruction): the only consumer named is the block itself (it reads the buffer it
    caches: that is the read it names), while no block lies inside another, neither in MOD nor
    after an earlier blockize or tensorize. MetaSchedule's GPU tiling writes exactly these."""
    rows = [trace_row(inst) for inst in trace[0]]
    nested = mod is None or _nested_blocks(mod)
    out = []
    for i, row in enumerate(rows):
        if row.entry is INST.reorder_block_iter_var:
            out.append(i)  # on a block without iteration variables (the root) TVM 0.27 segfaults
        elif row.entry is INST.blockize or row.entry is INST.tensorize:
            nested = True
        elif row.entry is INST.cache_read and row.arg("consumer_blocks"):
            if nested or any(c != row.arg("block") for c in row.arg("consumer_blocks")):
                out.append(i)
    return out


_NESTED: OrderedDict[int, tuple] = OrderedDict()  # id(mod) -> (mod, whether a block holds another)


def _nested_blocks(mod) -> bool:
    """Whether a block of MOD's functions (other than a root block) holds another block."""
    from dragon_dsl.tvm.blocks import children

    found = _NESTED.get(id(mod))
    if found is not None and found[0] is mod:
        return found[1]

    def holds(node, depth: int) -> bool:
        if type(node).__name__ == "SBlock":
            if depth >= 2:  # the root block, then a block, then this one
                return True
            depth += 1
        return any(holds(child, depth) for child in children(node))

    nested = any(holds(func.body, 0) for _gv, func in mod.functions_items() if hasattr(func, "body"))
    _NESTED[id(mod)] = (mod, nested)
    if len(_NESTED) > 64:
        _NESTED.popitem(last=False)
    return nested


def _cache_read_consumer_problem(sch, before: list, inst) -> str:
    """Why the consumer blocks of this CacheRead (trace JSON) are not consumers of the buffer it
    caches, '' when they are. `sch` has replayed the JSON instructions BEFORE it."""
    names = named_objects(before, sch)
    row = trace_row(inst)
    block_name, consumers, index = row.arg("block"), row.arg("consumer_blocks"), row.arg("read_buffer_index")
    if block_name not in names or any(c not in names for c in consumers):
        return ""  # TVM reports an undefined name itself
    block = sch.get(names[block_name])
    if not 0 <= index < len(block.reads):
        return ""  # TVM's own error says which indices are valid
    buffer = block.reads[index].source
    for name in [block_name, *consumers]:
        scope = _scope_block(sch, names[name])
        if scope is not None:
            return (
                f"block {sch.get(names[name]).name_hint!r} lies inside block {scope!r}, not directly in the "
                f"function's root block; TVM 0.27 crashes on cache_read with consumer blocks there "
                f"(leave consumer_blocks out to cache for every consumer)"
            )
    for name in consumers:
        consumer = sch.get(names[name])
        if not any(region.source.same_as(buffer) for region in consumer.reads):
            writes = any(region.source.same_as(buffer) for region in consumer.writes)
            return (
                f"consumer block {consumer.name_hint!r} does not read buffer {buffer.name!r}"
                + (" (it writes it: TVM 0.27 crashes on such a cache_read)" if writes else "")
                + "; the consumer blocks of cache_read must read the buffer it caches"
            )
    return ""


def _reorder_iter_var_problem(sch, before: list, inst) -> str:
    """Why this ReorderBlockIterVar (trace JSON) would crash TVM, '' when it would not: its block has
    no iteration variables (the function's root block), which TVM 0.27 reorders into a segfault
    instead of an error. `sch` has replayed the JSON instructions BEFORE it."""
    names = named_objects(before, sch)
    block_name = trace_row(inst).arg("block")
    if block_name not in names:
        return ""  # TVM reports an undefined name itself
    block = sch.get(names[block_name])
    if len(block.iter_vars) == 0:
        return f"block {block.name_hint!r} has no iteration variables to reorder (TVM 0.27 crashes on it)"
    return ""


#: the look each guarded instruction kind gets (`_guarded` says which instructions are guarded)
_LOOKS = {
    INST.cache_read.name: _cache_read_consumer_problem,
    INST.reorder_block_iter_var.name: _reorder_iter_var_problem,
}


def _scope_block(sch, block_rv):
    """The name of the block that BLOCK_RV lies in, None when that is the root block."""
    from tvm import s_tir

    sref = sch.get_sref(block_rv).parent
    while sref is not None and not isinstance(sref.stmt, s_tir.SBlock):
        sref = sref.parent
    if sref is None or sref.parent is None:  # the root block's sref has no parent
        return None
    return sref.stmt.name_hint


def named_objects(insts: list, sch) -> dict:
    """{trace JSON name: random variable}: the outputs of the JSON instructions INSTS (a trace's
    first part), which `sch` replayed one to one (its trace records each instruction it applied,
    with its output objects, in order)."""
    names = {}
    for json_inst, inst in zip(insts, sch.trace.insts):
        names.update(zip(trace_row(json_inst).outputs, inst.outputs))
    return names
