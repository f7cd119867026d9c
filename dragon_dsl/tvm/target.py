"""Targets as TVM holds them: a tag or a target dict -> `tvm.target.Target`, its kind, TVM's tags."""

from __future__ import annotations

import json
import os

#: TVM target kinds that run on a GPU
GPU_KINDS = ("cuda", "rocm", "vulkan", "metal", "opencl", "webgpu")


class TargetError(ValueError):
    """A target TVM does not accept (an unknown tag or kind, an unknown option)."""


def tvm_target(spec):
    """`tvm.target.Target(spec)` for a tag string or a target dict (a Target passes through);
    TargetError with TVM's own words when TVM refuses it."""
    import tvm

    from dragon_dsl.tvm.errors import tvm_message

    if isinstance(spec, tvm.target.Target):
        return spec
    try:
        return tvm.target.Target(spec)
    except Exception as exc:  # TVM raises its own error types for unknown targets
        raise TargetError(f"target {json.dumps(spec, sort_keys=True)}: {tvm_message(exc)}") from None


def target_kind(spec) -> str:
    """TVM's kind of a target ("llvm", "cuda", ...); TargetError when TVM refuses it."""
    return str(tvm_target(spec).kind.name)


def target_tags() -> list[str]:
    """Every target tag TVM knows, sorted."""
    import tvm

    return sorted(str(t) for t in tvm.target.tag.list_tags())


def tune_target(spec):
    """The Target a MetaSchedule search runs on: an `llvm` target without `num-cores` gets this
    machine's core count (MetaSchedule requires it)."""
    if isinstance(spec, str) and spec.split()[0] == "llvm":
        spec = {"kind": "llvm"}
    if isinstance(spec, dict) and spec.get("kind") == "llvm" and "num-cores" not in spec:
        spec = dict(spec, **{"num-cores": max(1, (os.cpu_count() or 2))})
    return tvm_target(spec)
