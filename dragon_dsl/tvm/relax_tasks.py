"""Tasks of a whole network: a `torch.export` program through TVM's Relax compiler, cut into the fused
TensorIR functions a compiler would schedule one by one.

    tasks, skipped = fused_tasks(exported_program)   # [FusedTask], {"dynamic": n, "no_blocks": n}

The program is imported with TVM's Relax frontend (weights kept as function inputs, as a compiler
that tunes before it binds weights does), then put through the passes of TVM's static-shape tuning
pipeline up to task extraction: DecomposeOpsForInference, CanonicalizeBindings, LegalizeOps,
AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR. Every PrimFunc that `main` calls is a task,
printed as a workload (`main`, `@T.prim_func(s_tir=True)`) and parsed back with `load_workload`.

A model may be built on PyTorch's `meta` device: no weight is ever allocated. Its buffers and
constants (rotary tables, masks) are bound as zeros of their shape, since their values never change a
task's code, only FoldConstant's results.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace


@dataclass
class FusedTask:
    """One fused function of a network: its workload text (function `main`), TVM's structural hash of
    that workload, the name the fusion gave it, and how often the network's `main` calls it."""

    name: str
    text: str
    hash: str
    flops: float
    dtype: str  # the dtype of the last parameter (the output, for call_tir's destination-passing style)
    dtypes: list = field(default_factory=list)  # every parameter dtype, sorted
    count: int = 1


def fused_tasks(exported_program, *, decompose: bool = True):
    """(tasks, skipped) of an `ExportedProgram`: the distinct fused PrimFuncs `main` calls, in the
    order of their first call, and how many were dropped, by reason ("dynamic": a shape that is not
    a constant or a scalar parameter; "no_blocks": nothing to schedule)."""
    if decompose:
        exported_program = exported_program.run_decompositions()
    mod = _optimize(_import(exported_program))
    calls = _call_counts(mod)
    tasks: dict = {}
    skipped: Counter = Counter()
    for gvar_name, count in calls.items():
        func = mod[gvar_name]
        reason = why_unschedulable(func)
        if reason:
            skipped[reason] += count
            continue
        task = task_of(gvar_name, func, count)
        if task.hash in tasks:  # two fused functions the same code after renaming
            tasks[task.hash].count += count
        else:
            tasks[task.hash] = task
    return list(tasks.values()), dict(skipped)


#: tasks already parsed in this process, by the structural hash of the function as fusion made it:
#: parsing is most of a task's cost, and the variants of a network share many functions
_PARSED: dict = {}
_PARSED_MAX = 50_000


def task_of(name: str, func, count: int = 1) -> FusedTask:
    """A fused PrimFunc as a workload: renamed `main`, its fusion attributes dropped, printed, parsed
    back with `load_workload` (so the text is what every other tool reads) and hashed."""
    from dragon_dsl.tvm.workload import structural_hash

    made = _as_main(func)
    key = structural_hash(made)
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = _parsed_task(made)
    return replace(_PARSED[key], name=name, count=count)


def _parsed_task(made) -> FusedTask:
    from dragon_dsl.tvm.workload import estimate_flops, load_workload, structural_hash

    mod = load_workload(made.script())
    main = mod["main"]
    dtypes = [str(info.dtype) for info in _argument_buffers(main)]
    return FusedTask(
        name="",
        text=mod.script(),
        hash=structural_hash(mod),
        flops=estimate_flops(mod),
        dtype=dtypes[-1] if dtypes else "",
        dtypes=sorted(set(dtypes)),
    )


def _as_main(func):
    import tvm

    for key in ("op_pattern", "global_symbol"):
        if func.attrs is not None and key in func.attrs:
            func = func.without_attr(key)
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _argument_buffers(func) -> list:
    """MetaSchedule's reading of a PrimFunc's arguments (dtype and shape of each buffer)."""
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    return list(ArgInfo.from_prim_func(func))


def why_unschedulable(func) -> str:
    """Why a fused function is no task: "dynamic" (a symbolic shape or a scalar parameter),
    "no_blocks" (no block to schedule), else ""."""
    import tvm

    from dragon_dsl.tvm.blocks import sblocks

    try:
        infos = _argument_buffers(func)
    except Exception:  # MetaSchedule refuses arguments that are not buffers
        return "dynamic"
    if len(infos) != len(func.params):
        return "dynamic"
    for info in infos:
        if not hasattr(info, "shape") or any(not isinstance(d, (int, tvm.tirx.IntImm)) for d in info.shape):
            return "dynamic"
    return "" if len(sblocks(func)) > 1 else "no_blocks"


def _call_counts(mod) -> dict:
    """{PrimFunc name: number of call_tir sites in `main`}, in order of the first call."""
    import tvm
    from tvm import relax

    counts: dict = {}
    tir_calls = {"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad"}

    def visit(expr):
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.name in tir_calls:
            gvar = expr.args[0]
            if isinstance(gvar, tvm.ir.GlobalVar) and isinstance(mod[gvar], tvm.tirx.PrimFunc):
                counts[gvar.name_hint] = counts.get(gvar.name_hint, 0) + 1

    relax.analysis.post_order_visit(mod["main"], visit)
    return counts


def _optimize(mod):
    """TVM's static-shape tuning pipeline, up to the point where MetaSchedule extracts its tasks."""
    import tvm
    from tvm import relax

    passes = [
        relax.transform.DecomposeOpsForInference(),
        relax.transform.CanonicalizeBindings(),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DeadCodeElimination(),
    ]
    with tvm.target.Target({"kind": "llvm"}):
        return tvm.transform.Sequential(passes)(mod)


def _import(exported_program):
    """The Relax module of a decomposed ExportedProgram, its parameters as inputs of `main`."""
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    importer = _importer_class(ExportedProgramImporter)()
    return importer.from_exported_program(_WithoutParameterValues(exported_program), True, False, False, None)


class _WithoutParameterValues:
    """An ExportedProgram whose parameter values are not handed over: the importer keeps parameters as
    inputs and would otherwise copy every weight into TVM only to attach it to `main`."""

    def __init__(self, program):
        self._program = program

    def __getattr__(self, name):
        return getattr(self._program, name)

    def named_parameters(self):
        return iter(())


def _importer_class(base):
    """The frontend's importer, with three repairs: a tensor on the `meta` device becomes zeros of its
    shape; a matmul or convolution of fp16 or bf16 inputs, which the frontend always types float32
    (`out_dtype="float32"`), is cast back to its inputs' dtype at once, as PyTorch types it (the bias
    added next would otherwise be refused); and a result whose dtype differs from the one PyTorch
    recorded for its node is cast to it (a later concat refuses mixed dtypes)."""
    import numpy as np
    import tvm
    from tvm import relax

    class Importer(base):
        @property
        def block_builder(self):
            return self._builder

        @block_builder.setter
        def block_builder(self, builder):
            self._builder = _HalfPrecisionBuilder(builder)

        @staticmethod
        def _convert_pytorch_tensor_to_tvm(tensor_value):
            if tensor_value.device.type == "meta":
                return tvm.runtime.tensor(np.zeros(tuple(tensor_value.shape), dtype=_numpy_dtype(tensor_value.dtype)))
            return base._convert_pytorch_tensor_to_tvm(tensor_value)

        def create_convert_map(self):
            converters = {key: self._dtype_kept(fn) for key, fn in super().create_convert_map().items()}
            converters.setdefault("any.default", self._any)  # T5's fp16 overflow guard; the frontend has none
            return converters

        def _any(self, node):
            x = self.env[node.args[0]]
            flat = self.block_builder.emit(relax.op.max(relax.op.astype(x, "int32")))
            return self.block_builder.emit(relax.op.greater(flat, relax.const(0, "int32")))

        def _dtype_kept(self, fn):
            def convert(node, *rest):
                result = fn(node, *rest)
                want = _torch_dtype_name(node.meta.get("val")) if hasattr(node, "meta") else None
                ty = getattr(result, "ty", None) if isinstance(result, relax.Expr) else None
                if want and isinstance(ty, relax.TensorType) and str(ty.dtype) not in ("", "void", want):
                    return self.block_builder.emit(relax.op.astype(result, want))
                return result

            return convert

    return Importer


class _HalfPrecisionBuilder:
    """A Relax BlockBuilder that casts a float32-typed matmul or convolution of half-precision inputs
    back to their dtype as it emits it; everything else goes to the builder unchanged."""

    HALF = ("float16", "bfloat16")
    #: operators TVM 0.27 computes only in float16 or float32 (layer_norm's kernel, group_norm's typing,
    #: power's "only applies to float")
    FLOAT32_ONLY = ("relax.nn.layer_norm", "relax.nn.group_norm", "relax.power")
    #: what the frontend writes torch.clamp with tensor bounds as
    CLAMPS = ("relax.maximum", "relax.minimum")

    def __init__(self, builder):
        self._builder = builder

    def __getattr__(self, name):
        return getattr(self._builder, name)

    def emit(self, expr, name_hint: str = ""):
        from tvm import relax

        op = getattr(expr, "op", None) if isinstance(expr, relax.Call) else None
        if getattr(op, "name", "") in self.FLOAT32_ONLY:
            upcast = self._upcast_bf16(expr)
            if upcast is not None:
                return upcast
        if getattr(op, "name", "") in self.CLAMPS:
            expr = self._bound_like_input(expr)
        var = self._builder.emit(expr, name_hint)
        attrs = getattr(expr, "attrs", None) if isinstance(expr, relax.Call) else None
        if attrs is not None and str(getattr(attrs, "out_dtype", "")) == "float32" and expr.args:
            ty = getattr(expr.args[0], "ty", None)
            if isinstance(ty, relax.TensorType) and str(ty.dtype) in self.HALF:
                return self._builder.emit(relax.op.astype(var, str(ty.dtype)))
        return var

    def _bound_like_input(self, call):
        """clamp's bound in its input's dtype: a tensor bound (T5's fp16 guard, a float32 scalar tensor)
        does not change the dtype of what PyTorch clamps, but the frontend passes it as it is."""
        from tvm import relax

        x, bound = call.args
        want, have = _dtype_of(x), _dtype_of(bound)
        if want and have and want != have:
            return relax.Call(call.op, [x, self._builder.emit(relax.op.astype(bound, want))], call.attrs)
        return call

    def _upcast_bf16(self, call):
        """A bf16 operator computed in float32, as mixed-precision compilers do, and cast back; None
        when no input is bf16."""
        from tvm import relax

        if not any(_dtype_of(a) == "bfloat16" for a in call.args):
            return None
        args = [
            self._builder.emit(relax.op.astype(a, "float32")) if _dtype_of(a) == "bfloat16" else a for a in call.args
        ]
        result = self._builder.emit(relax.Call(call.op, args, call.attrs))
        return self._builder.emit(relax.op.astype(result, "bfloat16"))


def _dtype_of(expr) -> str:
    """The dtype of a Relax tensor expression, "" for anything else."""
    from tvm import relax

    ty = getattr(expr, "ty", None)
    return str(ty.dtype) if isinstance(ty, relax.TensorType) else ""


def _torch_dtype_name(value) -> str | None:
    dtype = getattr(value, "dtype", None)
    return str(dtype).replace("torch.", "") if dtype is not None and hasattr(value, "shape") else None


def _numpy_dtype(torch_dtype):
    name = str(torch_dtype).replace("torch.", "")
    if name == "bfloat16":  # numpy has no bfloat16 of its own; TVM reads ml_dtypes'
        import ml_dtypes

        return ml_dtypes.bfloat16
    return name
