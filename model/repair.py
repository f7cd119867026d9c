"""The compiler's last word on a generated body (`repair`): measured as is, and when it fails, cut
back to the longest statement prefix that passes; and the statements of a body, one per line
(`statement_lines`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def statement_lines(body: str) -> list[str]:
    """The statements of a generated body, one per line (section headers belong to the next)."""
    from dragon_dsl.language.table import SECTIONS

    headers = {f"{name}:" for name in SECTIONS}
    lines, pending = [], ""
    for line in body.splitlines(keepends=True):
        if not line.strip() or line.strip() in headers:  # a blank line or `postproc:`
            pending += line
        else:
            lines.append(pending + line)
            pending = ""
    return lines


@dataclass
class Repair:
    body: str  # the longest prefix found that passes (the whole body when it does)
    result: Any  # the engine's Result for it
    first_result: Any  # the Result of the whole body
    dropped: int = 0  # statements cut from the end
    measured: int = 1  # engine measurements spent


def repair(engine, workload_text: str, body: str, level: str = "verify", result=None) -> Repair:
    """The compiler's last word on a generated body: measured as is, and when it fails (a build
    error, a numeric mismatch...), cut back to the longest statement prefix that passes, found by
    bisection. Every prefix the generator kept replays. On a CPU the empty prefix is the
    unscheduled program, which passes, so the answer always passes unless the workload itself
    does not. On a GPU a prefix builds only once its loops are bound to threads: the search starts
    at the prefix that ends with the last `bind`, and when even that fails, the body stays as it
    was (failing)."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.language.table import INST
    from dragon_model.data import CALL

    def measure(text):
        (res,) = engine.measure(workload_text, [to_trace_json(text)], level=level, use_cache=False)
        return res

    first = result if result is not None else measure(body)
    out = Repair(body=body, result=first, first_result=first, measured=int(result is None))
    if first.ok:
        return out
    lines = statement_lines(body)
    floor = 0
    if engine.target.is_gpu:
        binds = [i for i, line in enumerate(lines) if (m := CALL.search(line)) and m.group(1) == INST.bind.name]
        if not binds:
            return out
        floor = binds[-1] + 1
        if floor >= len(lines):
            return out
    lo, hi, lo_res = floor, len(lines), None  # invariant: prefix hi fails; prefix lo passes (checked last)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        res = measure("".join(lines[:mid]))
        out.measured += 1
        if res.ok:
            lo, lo_res = mid, res
        else:
            hi = mid
    if lo_res is None:
        lo_res = measure("".join(lines[:lo]))
        out.measured += 1
        if not lo_res.ok:  # a GPU body whose bound prefix fails already: nothing to cut back to
            return out
    out.body, out.result, out.dropped = "".join(lines[:lo]), lo_res, len(lines) - lo
    return out
