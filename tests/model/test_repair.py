"""The compiler's cut-back of a generated script (`api.repair`): the longest statement prefix
that passes, found by bisection; and how a body splits into statements."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dragon_model.api import repair, statement_lines

BODY = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4 = fuse(l1, l2)\n\npostproc:\nparallel(l4)\nvectorize(l3)\n'


def test_statements_keep_the_section_header_with_the_next_statement():
    lines = statement_lines(BODY)
    assert len(lines) == 5 and "".join(lines) == BODY  # nothing lost
    assert lines[3] == "\npostproc:\nparallel(l4)\n"


@dataclass
class _Result:
    ok: bool
    status: str = "ok"
    message: str = ""


@dataclass
class _Target:
    is_gpu: bool = False


class _Engine:
    """Passes a script of at least `floor` and at most `limit` statements; counts its measurements."""

    def __init__(self, limit: int, floor: int = 0, gpu: bool = False):
        self.limit, self.floor, self.calls = limit, floor, 0
        self.target = _Target(gpu)

    def measure(self, workload, traces, level="verify", use_cache=True):
        from dragon_dsl import from_trace_json

        self.calls += 1
        n = len(statement_lines(from_trace_json(traces[0])))
        ok = self.floor <= n <= self.limit
        return [_Result(ok, "ok" if ok else "build_error")]


@pytest.mark.parametrize("limit, kept", [(5, 5), (4, 4), (3, 3), (1, 1), (0, 0)])
def test_repair_keeps_the_longest_passing_prefix(limit, kept):
    engine = _Engine(limit)
    fixed = repair(engine, "workload", BODY)
    assert fixed.result.ok
    assert len(statement_lines(fixed.body)) == kept and fixed.dropped == 5 - kept
    assert BODY.startswith(fixed.body)
    assert fixed.first_result.ok is (limit >= 5)
    assert engine.calls == fixed.measured <= 5  # bisection: about log2(n) + 1 measurements


GPU_BODY = (
    'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nl4 = fuse(l1, l2)\nl5, l6 = split(l4, [None, 32])\n'
    'bind(l5, "blockIdx.x")\nbind(l6, "threadIdx.x")\nl7, l8 = split(l3, [None, 4])\nunroll(l8)\n'
)


@pytest.mark.parametrize("limit, kept", [(8, 8), (7, 7), (6, 6), (5, None)])
def test_gpu_repair_starts_at_the_last_bind(limit, kept):
    """On a GPU a prefix without its thread bindings does not build: the cut-back searches only
    prefixes that keep every `bind`; when the shortest of them fails, the body stays as it was."""
    engine = _Engine(limit, floor=6, gpu=True)
    fixed = repair(engine, "workload", GPU_BODY)
    if kept is None:
        assert not fixed.result.ok and fixed.body == GPU_BODY and fixed.dropped == 0
    else:
        assert fixed.result.ok and len(statement_lines(fixed.body)) == kept
    assert engine.calls == fixed.measured <= 3
