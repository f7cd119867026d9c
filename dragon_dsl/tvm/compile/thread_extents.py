"""Thread extents (EXTENT_MISMATCH): one kernel binding a thread axis with two extents, which TVM
launches with one block shape."""

from __future__ import annotations

EXTENT_MISMATCH = "thread_extent_mismatch"


def extent_mismatches(kernel: dict) -> list:
    """EXTENT_MISMATCH problems of one kernel (thread tag -> {extent: first loop bound with it})."""
    out = []
    for tag, loops in kernel.items():
        if len(loops) > 1:
            (e1, n1), (e2, n2) = list(loops.items())[:2]
            out.append(
                (
                    EXTENT_MISMATCH,
                    f"{tag} is bound with extent {e1} (loop {n1}) and {e2} (loop {n2}) in one "
                    f"kernel: a kernel has one block shape, which TVM takes from one of them, so "
                    f"the other loop runs with the wrong number of threads",
                )
            )
    return out
