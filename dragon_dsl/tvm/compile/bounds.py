"""Accesses outside a buffer with no condition around them (`out_of_bounds`): TVM's out-of-bounds
checker's findings in unpredicated blocks, and blocks run for iterator values outside their domain
(`out_of_domain_bindings`)."""

from __future__ import annotations

import re

from dragon_dsl.tvm.compile.realizes import predicated

_ACCESS_PATH = re.compile(r"Access path: <root>(\S+)")


_PATH_STEP = re.compile(r'\.(\w+)(?:\[(?:I\.GlobalVar\("([^"]+)"\)|(\d+))\])?')


_OOB_MESSAGE = re.compile(r"Out of bounds memory access on buffer .*")


def out_of_bounds(mod) -> list:
    """The accesses in the bodies of unpredicated blocks that TVM's out-of-bounds checker finds
    outside their buffers, as its messages (`index ... with bounds [-3, 1026] is outside the range [0, 1024]`).
    The checker reads a block's `where` predicate as no bound, so accesses a predicate guards (the
    padded write-back blocks of 9 of 304 CUDA corpus labels, all verified on a GPU) are left out:
    each finding's access path is followed to its block, and only unpredicated blocks count. A
    conv1d answer of a CUDA model inlined the padding into the convolution and then
    reindexed its input: the reindex block copied `inputs[l + k - 3]` for every l and k, with no
    condition, and the kernel stopped the GPU with an illegal address. Blocks run for iterator values
    outside their domain count too (`out_of_domain_bindings`)."""
    return _checker_findings(mod) + out_of_domain_bindings(mod)


def _checker_findings(mod) -> list:
    """TVM's out-of-bounds checker's findings in unpredicated blocks (`out_of_bounds`)."""
    from tvm.s_tir import analysis

    try:
        analysis.OOBChecker()(mod)
        return []
    except Exception as e:
        text = str(e)
    # a block's read and write regions are its signature, which TVM widens over a padded input
    # that its body reads under a condition (43 of 1,726 corpus scripts, llvm convolutions that
    # inline their padding, all verified): only the accesses themselves count
    unguarded = [
        path
        for path in _ACCESS_PATH.findall(text)
        if ".reads[" not in path and ".writes[" not in path and not _guarded(mod, path)
    ]
    if not unguarded:
        return []
    return _OOB_MESSAGE.findall(text) or [f"an access at {unguarded[0]} is out of bounds"]


def out_of_domain_bindings(mod) -> list:
    """Unpredicated blocks whose loops bind an iterator to values outside its domain, as messages
    (`block 'Y' binds v0 to 0..15 but its domain is 0..7`). The block's body then runs for those
    values too, and TVM's out-of-bounds checker, which reads an iterator as its domain, does not see
    the accesses it makes. TVM 0.27's `rfactor` of a block split with padding (`T.where(i < 8)`)
    keeps the predicate on the rfactor block and leaves the write-back block without it: a
    held-out row sum of the CUDA model wrote Y[8..15] of an 8-element Y and gave wrong results.
    Loops with extents that are not constants bound nothing here."""
    import tvm
    from tvm.s_tir import SBlockRealize
    from tvm.sym import Analyzer
    from tvm.tirx.analysis import undefined_vars

    from dragon_dsl.tvm.blocks import walk

    found = []
    known: set = set()  # loop variables of constant range, bound in the analyzer

    def visit(stmt) -> None:  # pre-order (`walk`): a loop is bound before the blocks under it
        if isinstance(stmt, tvm.tirx.For):
            if isinstance(stmt.min, tvm.tirx.IntImm) and isinstance(stmt.extent, tvm.tirx.IntImm):
                analyzer.bind(stmt.loop_var, tvm.ir.Range.from_min_extent(stmt.min, stmt.extent))
                known.add(stmt.loop_var)
        elif isinstance(stmt, SBlockRealize):
            block = stmt.block
            if not predicated(stmt) and not len(block.match_buffers):
                for iv, value in zip(block.iter_vars, stmt.iter_values):
                    if not (isinstance(iv.dom.min, tvm.tirx.IntImm) and isinstance(iv.dom.extent, tvm.tirx.IntImm)):
                        continue
                    if any(v not in known for v in undefined_vars(value)):  # a symbolic extent: no bound
                        continue
                    lo, hi = int(iv.dom.min), int(iv.dom.min) + int(iv.dom.extent) - 1
                    bound = analyzer.const_int_bound(value)
                    if bound.min_value < lo or bound.max_value > hi:
                        found.append(
                            f"block {block.name_hint!r} binds {iv.var.name} to {bound.min_value}..{bound.max_value} "
                            f"but its domain is {lo}..{hi}"
                        )

    for _, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            analyzer = Analyzer()  # loop variables are distinct objects: one analyzer a function
            walk(func.body, visit)
    return found


#: steps of an access path into a call's arguments (`if_then_else`'s branches) or a conditional
#: statement's branches: the checker does not bound an access by the condition around it (a
#: transposed convolution's input read under `(h + rh) % 2 == 0 and 1 <= (h + rh) // 2 < 9`)
_CONDITIONAL = frozenset({"args", "then_case", "else_case"})


def _guarded(mod, path: str) -> bool:
    """Whether the access at PATH (an access path of TVM's diagnostics) is not counted: under a
    condition (`_CONDITIONAL`), in a block with a `where` predicate or matched buffers (a tensor
    intrinsic's body), or on a path that reaches no block."""
    from tvm.s_tir import SBlockRealize

    steps = _PATH_STEP.findall(path)
    if any(attr in _CONDITIONAL for attr, _, _ in steps):
        return True
    node, realize = mod, None
    for attr, func, index in steps:
        try:
            if attr == "functions":
                node = mod[func]
                continue
            node = getattr(node, attr)
            if index:
                node = node[int(index)]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            break  # inside the access's expressions: the block around it is known by now
        if isinstance(node, SBlockRealize):
            realize = node
    if realize is None or len(realize.block.match_buffers):
        # a tensorized block's body is its intrinsic's implementation, which addresses the buffers
        # it matches in its own way (an AVX-512 dot product reads a 16 x 4 tile as one 64-lane vector)
        return True
    return predicated(realize)


def out_of_bounds_message(found: list) -> str | None:
    """What `out_of_bounds` found, said for the script's author, or None."""
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    what = found[0].removeprefix("Out of bounds memory access on ").replace(". index", ": index").rstrip(".")
    return f"the schedule reads or writes outside a buffer, with no condition around the access: {what}{more}"
