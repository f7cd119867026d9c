"""Features of a scheduled program, for a cost model that chooses what to measure.

    extractor = ScheduleFeatures("nvidia/nvidia-h100")   # one per process
    row = extractor.of(schedule)                         # a fixed-length list of floats

MetaSchedule's own feature extractor (`PerStoreFeature`: 164 numbers per buffer store of the
lowered program: loop structure, arithmetic, memory access, thread binding, vectorization,
allocation) is what its XGBoost cost model reads, one row per store, and sums the rows'
predictions. A candidate here becomes one row: the sum and the maximum over its stores, their
count, and log2 of the stores' summed float operations (`FEATURE_COUNT` numbers in all), so that
one model compares candidates of one workload and across workloads alike.
"""

from __future__ import annotations

import math

#: PerStoreFeature's numbers per store (TVM 0.27, extract_workload off)
PER_STORE = 164
#: sum and max over the stores, the store count and log2 of the summed float operations
FEATURE_COUNT = 2 * PER_STORE + 2


class ScheduleFeatures:
    """MetaSchedule's per-store features of scheduled programs for one target, pooled to one row."""

    def __init__(self, target):
        import tvm
        from tvm.s_tir import meta_schedule as ms

        from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics

        register_tensor_intrinsics()  # a TuneContext imports every intrinsic otherwise: a minute
        self.ms = ms
        self.target = target if isinstance(target, tvm.target.Target) else tvm.target.Target(target)
        self.extractor = ms.feature_extractor.PerStoreFeature(extract_workload=False)

    def of(self, schedule) -> list[float]:
        """One row of FEATURE_COUNT numbers for a schedule (an `s_tir.Schedule` of the workload);
        a ValueError when MetaSchedule extracts nothing from it."""
        import numpy as np
        from tvm.s_tir.meta_schedule.arg_info import ArgInfo

        mod = schedule.mod
        ctx = self.ms.TuneContext(mod=mod, target=self.target, task_name="features")
        cand = self.ms.MeasureCandidate(schedule, ArgInfo.from_prim_func(mod["main"]))
        feats = self.extractor.extract_from(ctx, [cand])[0].numpy()
        if feats.ndim != 2 or feats.shape[0] == 0 or feats.shape[1] != PER_STORE:
            raise ValueError(f"no per-store features (shape {tuple(feats.shape)})")
        feats = np.nan_to_num(feats.astype("float64"))
        # PerStoreFeature's first four numbers: log2(1 + x) of a store's float multiply-adds,
        # additions and subtractions, multiplications, divisions and remainders
        flops = float(np.sum(np.exp2(feats[:, :4]) - 1.0))
        return [*feats.sum(axis=0), *feats.max(axis=0), float(feats.shape[0]), math.log2(1.0 + max(flops, 0.0))]
