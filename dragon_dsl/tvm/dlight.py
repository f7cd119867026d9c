"""dlight's default GPU schedule as a trace: the baseline every GPU answer is compared with,
written in the same language as the model's answers.

    trace = dlight_trace(mod, target)     # trace JSON of the first dlight rule that applies, or None

dlight (`tvm.s_tir.dlight`) schedules a function with hand-written rules and no search. Its
`ApplyDefaultSchedule` pass tries the rules in order and keeps the first schedule one returns;
each rule schedules through a `Schedule`, whose trace this module returns. The trace decodes
to a Dragon script that encodes back exactly and replays to dlight's kernel, so `dragon suggest`
can measure dlight's schedule beside the model's candidates in one engine call and show it as a
script, and dlight's schedules can label workloads that were never searched.
"""

from __future__ import annotations


def gpu_rules() -> tuple:
    """dlight's default GPU rules, in the order the engine's dlight baseline applies them."""
    from tvm.s_tir import dlight as dl

    return (dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback())


def dlight_trace(mod, target) -> list | None:
    """(rule name, trace JSON) of dlight's schedule of `main`, or None when no rule applies."""
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.trace import trace_json

    target = tvm_target(target)
    func = mod["main"]
    with target:
        for rule in gpu_rules():
            space = rule.apply(func, target, False)
            if space is None:
                continue
            sch = space[0] if isinstance(space, list) else space
            return type(rule).__name__, trace_json(sch)
    return None
