"""Pause Python's cyclic garbage collector around bounded, pure computations.

Parsing a 1,000-instruction script allocates ~100,000 small acyclic objects;
each allocation burst triggers generation-0 collections that cost ~20% of the
parse. The trees are freed by reference counting, so pausing the cyclic
collector for the duration of one call changes no result and leaks nothing.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
