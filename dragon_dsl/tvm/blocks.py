"""Walking what a module holds: its TIR statements, and its blocks in program order.

The one walk over TIR statements (`walk`: TVM's Python API offers no visitor for them) and the one
walk over a schedule's block tree (`block_rvs`, `block_names`), for every caller.
"""

from __future__ import annotations

#: the fields of a TIR statement that hold statements
_CHILDREN = ("seq", "body", "block", "init", "then_case", "else_case")


def walk(node, visit) -> None:
    """Call VISIT on NODE and every statement under it, in pre-order."""
    visit(node)
    for child in children(node):
        walk(child, visit)


def children(node) -> list:
    """The statements directly under a TIR statement, in program order."""
    out = []
    for attr in _CHILDREN:
        child = getattr(node, attr, None) if hasattr(node, attr) else None
        if child is None:
            continue
        if attr == "seq":
            out.extend(child)
        elif not isinstance(child, (str, int)):
            out.append(child)
    return out


def block_rvs(sch) -> list:
    """The block random variables of a schedule's `main`, in program order (the root block first);
    [] when its root block is not named "root"."""
    try:
        stack = [sch.get_sblock("root")]
    except Exception:
        return []
    out = []
    while stack:
        rv = stack.pop()
        out.append(rv)
        stack.extend(reversed(list(sch.get_child_blocks(rv))))
    return out


def block_names(source) -> list[str]:
    """The block names of a workload's `main` (a schedule, an IRModule, TVMScript text or a path),
    in program order, the root block first."""
    sch = schedule_of(source)
    return [str(sch.get(rv).name_hint) for rv in block_rvs(sch)]


def schedule_of(source, seed: int = 1):
    """A schedule: SOURCE itself, or a fresh one of the workload SOURCE names (see load_workload)."""
    from tvm import s_tir

    from dragon_dsl.tvm.workload import load_workload

    if isinstance(source, s_tir.Schedule):
        return source
    return s_tir.Schedule(load_workload(source), seed=seed)


def type_key(node) -> str:
    """TVM's type key of an IR node ("s_tir.SBlock", "ir.TensorLoad", "tirx.BufferStore", ...), "" for
    anything else: how TVM 0.27 names node kinds across its Python modules."""
    info = getattr(type(node), "__tvm_ffi_type_info__", None)
    return info.type_key if info is not None else ""


def nodes(root, key: str, order: str = "pre") -> list:
    """Every node of type KEY under ROOT (ROOT included), in ORDER ("pre": a node before what it
    holds, "post": after): TVM's own structural walk, which also enters expressions."""
    import tvm_ffi

    found: list = []
    tvm_ffi.structural_walk(root, lambda n: found.append(n) if type_key(n) == key else None, order=order)
    return found


def sblocks(func) -> list:
    """The blocks of a PrimFunc (its root block first), in program order."""
    return nodes(func.body, "s_tir.SBlock")
