"""Racing reductions (RACING_REDUCTION): a reduction block that every thread of its kernel on some
threadIdx axis runs into the same shared elements at once."""

from __future__ import annotations

RACING_REDUCTION = "racing_reduction"


#: the memory scopes every thread of a block (of threads) reads and writes alike: a thread's own
#: `local`, a warp's `warp` and `wmma.*` fragments are not among them
SHARED_SCOPES = frozenset({"global", "shared", "shared.dyn"})


def racing_reductions(kernel: dict) -> list:
    """RACING_REDUCTION messages of one kernel ({"axes": thread tag -> {extent: first loop bound
    with it}, "reductions": (block, the thread tags around it, (buffer, scope) it writes)}), a
    block once."""
    threads = {tag for tag in kernel["axes"] if tag.startswith("threadIdx")}
    out, seen = [], set()
    for block, around, (buffer, scope) in kernel["reductions"]:
        missing = sorted(threads - around)
        if missing and block not in seen:
            seen.add(block)
            axes = " or ".join(missing)
            out.append(
                f"block {block!r} adds into {buffer} ({scope} memory) under no loop bound to {axes}: every "
                f"thread of its kernel on {'those axes' if len(missing) > 1 else 'that axis'} runs the whole "
                f"reduction into the same elements at once, reading values other threads have not written "
                f"yet (a race); bind its loops to those threads as well (a cross-thread reduction) or give "
                f"it a kernel of its own"
            )
    return out
