"""MetaSchedule's design spaces, sampled: valid schedules without any measurement.

    sampler = SpaceSampler(target)                       # one per process: TVM's rules are built once
    traces = sampler.sample(mod, "cuda", n=16, seed=7)   # post-processed trace JSON, as MetaSchedule
                                                         # would hand them to its builder

A space is one of MetaSchedule's rule sets: "llvm", "cuda" and "cuda-tensorcore" (its
tensor-core rules, post-processors and mutators: the one TVM space that tensorizes fp16, bf16
and int8 GEMMs). Sampling is MetaSchedule's own ReplayTrace strategy: each design space's
sampling instructions are replayed with fresh random decisions and the space's
post-processors are applied; a candidate the post-processors reject is drawn again (TVM
counts those failures). The traces keep their post-processing instructions
(`remove_postproc=False`), as the corpus does, so each replays to the exact schedule that
would have been built.
"""

from __future__ import annotations

import json

#: the spaces each target kind samples by default
SPACES = {"llvm": ("llvm",), "cuda": ("cuda", "cuda-tensorcore")}
#: dtypes whose GEMM-like blocks TVM's tensor-core intrinsics cover
TENSOR_CORE_DTYPES = ("float16", "bfloat16", "int8")


def tensorizes(trace) -> bool:
    """Whether a trace JSON maps blocks onto tensor-core intrinsics (it writes one of the
    annotation keys the table files under the `tensorize` family)."""
    from dragon_dsl.language.table import annotation_keys

    text = json.dumps(trace)
    return any(f'"{key}"' in text for key in annotation_keys("tensorize"))


def may_tensorize(mod) -> bool:
    """Whether the workload reads a tensor-core dtype (only then is the tensor-core space tried)."""
    return any(str(p.ty.dtype) in TENSOR_CORE_DTYPES for p in mod["main"].params)


class SpaceSampler:
    """Samples design spaces of one target; imports MetaSchedule and the tensor intrinsics once."""

    def __init__(self, target):
        import tvm
        from tvm.s_tir import meta_schedule as ms

        from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics

        register_tensor_intrinsics()  # the tensor-core rules name registered intrinsics

        self.ms = ms
        self.target = target if isinstance(target, tvm.target.Target) else tvm.target.Target(target)

    def spaces(self, mod) -> tuple:
        kind = str(self.target.kind.name)
        names = SPACES.get(kind, (kind,))
        return tuple(s for s in names if s != "cuda-tensorcore" or may_tensorize(mod))

    def sample(self, mod, space: str, n: int, seed: int) -> list:
        """Up to `n` post-processed traces (plain JSON) of `space` for `mod`; for the tensor-core
        space only those that really tensorize (its rules fall back to plain tiling elsewhere)."""
        from dragon_dsl.tvm.trace import trace_json

        ms = self.ms
        generator = ms.space_generator.PostOrderApply(sch_rules=space, postprocs=space, mutator_probs=space)
        ctx = ms.TuneContext(
            mod,
            target=self.target,
            space_generator=generator,
            search_strategy=ms.search_strategy.ReplayTrace(max_fail_count=4 * n),
            rand_state=seed,
            num_threads=1,
        )
        designs = ctx.generate_design_space()
        if space == "cuda-tensorcore":
            designs = [d for d in designs if tensorizes(trace_json(d))]
            if not designs:
                return []
        ctx.pre_tuning(max_trials=n, num_trials_per_iter=n, design_spaces=designs)
        try:
            candidates = ctx.generate_measure_candidates() or []
        finally:
            ctx.post_tuning()
        return [trace_json(c.sch) for c in candidates]


def tensor_core_samples(mod, target, n: int = 16, seed: int = 0) -> list:
    """Up to N post-processed candidates (trace JSON) of MetaSchedule's tensor-core space for `mod`,
    as its search would draw them (`SpaceSampler.sample`: every one passed the space's
    post-processors, shared memory within the target's limit among them); empty where the workload
    reads no tensor-core dtype or no block maps onto the intrinsics. About 4-6 s for 16 on one core."""
    if not may_tensorize(mod):
        return []
    return SpaceSampler(target).sample(mod, "cuda-tensorcore", n, seed)
