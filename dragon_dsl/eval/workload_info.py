"""What the roofline needs to know about a workload: FLOPs, compulsory bytes and compute dtype.

Reading them walks the workload's TensorIR, which is the TVM bridge's work
(`dragon_dsl.tvm.roofline`, where the counting rules are written down); the evaluation
names them here.
"""

from __future__ import annotations

from dragon_dsl.tvm.roofline import WorkloadInfo, analyse, count_ops

__all__ = ["WorkloadInfo", "analyse", "count_ops"]
