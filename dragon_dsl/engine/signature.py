"""Which arguments of a workload's `main` are inputs, outputs or both (runs where TVM is imported).

Rule (TVM 0.27 keeps a function's buffers as its parameters, each a Var with a
BufferType): walk the SBlocks in pre-order, which is program order. A parameter
that some block writes is an output; if some block reads it before any earlier
block wrote it (a block's own reads count as before its writes), it is in-out
(like `inplace_add_64`). Reduction blocks do not list the buffer they update
among their reads, so `C` of a matmul stays a pure output. Everything else is
an input. MetaSchedule's ArgInfo gives shapes and dtypes only, not this.

Integer inputs used as indices (`A[Idx[i], j]`) must hold valid indices: when
a load of the input is exactly an index of another access (possibly under a
cast), its values are drawn from [0, extent of that axis); inside a larger
index expression only 0 is known to be safe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dragon_dsl.tvm.blocks import nodes, sblocks, type_key


@dataclass(frozen=True)
class Arg:
    name: str
    shape: tuple
    dtype: str
    role: str  # "input" | "output" | "inout"
    index_bound: int | None = None

    @property
    def written(self) -> bool:
        return self.role != "input"

    def to_json(self) -> dict:
        out = asdict(self)
        out["shape"] = list(self.shape)
        return out

    @classmethod
    def from_json(cls, data: dict) -> Arg:
        return cls(data["name"], tuple(data["shape"]), data["dtype"], data["role"], data.get("index_bound"))


def _param_of(var, params):
    for p in params:
        if p.same_as(var):
            return p
    return None


def signature(func) -> list:
    """The arguments of a PrimFunc, in order, with their roles (see the module docstring)."""
    params = list(func.params)
    shapes = {}
    for p in params:
        ty = p.ty
        if not hasattr(ty, "shape"):
            raise ValueError(f"argument {p.name} is not a buffer: the engine measures functions of buffers only")
        try:
            shapes[p.name] = tuple(int(s) for s in ty.shape)
        except (TypeError, ValueError):
            raise ValueError(f"argument {p.name} has a symbolic shape; the engine needs static shapes") from None

    blocks = sblocks(func)
    written, read_first = set(), set()
    for block in blocks:
        for region in block.reads:
            p = _param_of(region.source, params)
            if p is not None and p.name not in written:
                read_first.add(p.name)
        for region in block.writes:
            p = _param_of(region.source, params)
            if p is not None:
                written.add(p.name)

    bounds = _index_bounds(func, params)
    args = []
    for p in params:
        role = ("inout" if p.name in read_first else "output") if p.name in written else "input"
        dtype = str(p.ty.dtype)
        bound = bounds.get(p.name) if role == "input" and _is_int(dtype) else None
        args.append(Arg(p.name, shapes[p.name], dtype, role, bound))
    return args


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _index_bounds(func, params) -> dict:
    import tvm_ffi

    bounds: dict = {}

    def visit_access(buffer_var, indices):
        ty = getattr(buffer_var, "ty", None)
        shape = getattr(ty, "shape", None)
        for axis, index in enumerate(indices):
            for load in nodes(index, "ir.TensorLoad", order="post"):
                p = _param_of(load.source, params)
                if p is None or not _is_int(str(p.ty.dtype)):
                    continue
                direct = index.same_as(load) or (type_key(index).endswith("Cast") and index.value.same_as(load))
                try:
                    extent = int(shape[axis]) if shape is not None else 1
                except (TypeError, ValueError):
                    extent = 1
                bound = extent if direct else 1
                bounds[p.name] = min(bounds.get(p.name, bound), bound)

    def visit(node):
        key = type_key(node)
        if key == "ir.TensorLoad":
            visit_access(node.source, node.indices)
        elif key == "tirx.BufferStore":
            visit_access(node.buffer, node.indices)

    tvm_ffi.structural_walk(func.body, visit)
    return {name: max(1, b) for name, b in bounds.items()}
