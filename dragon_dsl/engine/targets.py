"""Targets and devices as the engine names them.

A target is a TVM target tag (`"nvidia/nvidia-h100"`) or a target dict
(`{"kind": "llvm", "num-cores": 2}`); the shorthands `"llvm"` and `"cuda"` are
resolved here. A device is `"local"` or `"rpc://HOST:PORT/KEY"` (a TVM RPC tracker
and the key its servers registered under). No TVM import at module level: the GPU of
this machine is found with `nvidia-smi`, so a CPU-only parent process stays light;
only resolving `"llvm"` asks LLVM (through TVM, once a process) for this machine's CPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache, lru_cache

from dragon_dsl.tvm.target import GPU_KINDS

DEFAULT_CUDA_TAG = "nvidia/nvidia-h100"


@dataclass(frozen=True)
class TargetSpec:
    """A resolved target: `spec` is what `tvm.target.Target(spec)` accepts."""

    spec: str | dict

    @property
    def key(self) -> str:
        """Canonical JSON: the target's part of a cache key."""
        return json.dumps(self.spec, sort_keys=True, separators=(",", ":"))

    @property
    def kind(self) -> str:
        if isinstance(self.spec, dict):
            return str(self.spec.get("kind", ""))
        if self.spec.startswith("nvidia/"):
            return "cuda"
        return _tag_kind(self.spec)

    @property
    def is_gpu(self) -> bool:
        return self.kind in GPU_KINDS

    @property
    def device_type(self) -> str:
        """The runtime device name (`tvm.runtime.device(name, i)`)."""
        return self.kind if self.is_gpu else "cpu"

    @property
    def num_cores(self) -> int | None:
        if isinstance(self.spec, dict) and "num-cores" in self.spec:
            return int(self.spec["num-cores"])
        return None


def resolve_target(target) -> TargetSpec:
    """`"llvm"` -> {"kind": "llvm", "num-cores": os.cpu_count(), "mcpu": this machine's CPU}
    (`host_cpu`; no "mcpu" where LLVM knows the CPU only as generic); `"cuda"` -> this machine's
    GPU tag when TVM knows it, else "nvidia/nvidia-h100"; tags and dicts pass through (a dict
    without "mcpu" compiles for any x86-64: SSE2, no AVX)."""
    if isinstance(target, TargetSpec):
        return target
    if isinstance(target, dict):
        return TargetSpec(json.loads(json.dumps(target)))
    if not isinstance(target, str) or not target:
        raise ValueError(f"a target is a tag string or a dict, got {target!r}")
    if target == "llvm":
        spec = {"kind": "llvm", "num-cores": os.cpu_count() or 1}
        cpu = host_cpu()
        return TargetSpec(dict(spec, mcpu=cpu) if cpu else spec)
    if target == "cuda":
        gpus = local_gpus()
        return TargetSpec(gpu_tag(gpus[0]) if gpus else DEFAULT_CUDA_TAG)
    if " " in target or target.startswith("-"):
        raise ValueError(f"target {target!r}: TVM 0.27 takes tags or dicts, not command-line strings")
    return TargetSpec(target)


@cache
def host_cpu() -> str | None:
    """LLVM's name for this machine's CPU ("znver4", "skylake-avx512"), so that code built for
    `"llvm"` uses its vector units: TVM's llvm target without "mcpu" builds for a generic x86-64
    (128-bit SSE2 vectors). On a 2-core AMD EPYC (znver4), 50 network tasks' fastest schedules ran
    a median 2.70x over the program as written with it, 2.03x without (benchmarks/results/
    cpu_models.md). None where TVM is missing or names the CPU "generic"."""
    try:
        from tvm.target import codegen
    except ImportError:
        return None
    name = str(codegen.llvm_get_system_cpu())
    return None if name in ("", "generic") else name


@cache
def _tag_kind(tag: str) -> str:
    import tvm  # only for tags that do not say their kind in their name

    return str(tvm.target.Target(tag).kind.name)


@lru_cache(maxsize=1)
def local_gpus() -> tuple:
    """Names of the NVIDIA GPUs this process may use, in device order (empty without nvidia-smi
    or GPUs): nvidia-smi lists every GPU of the machine, CUDA_VISIBLE_DEVICES (indices or UUIDs)
    picks and orders the ones CUDA shows this process."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    found = [
        (m.group(1).strip(), m.group(2).strip())
        for m in re.finditer(r"^GPU \d+: (.+?) \(UUID: ([^)]+)\)", out, flags=re.M)
    ]
    return tuple(name for name, _ in visible(found, os.environ.get("CUDA_VISIBLE_DEVICES")))


def visible(gpus: list, setting) -> list:
    """The (name, uuid) entries of GPUS that CUDA_VISIBLE_DEVICES=SETTING shows, in its order
    (unset: all; CUDA stops at the first entry it cannot match)."""
    if setting is None:
        return list(gpus)
    out = []
    for token in (t.strip() for t in setting.split(",")):
        if token.isdigit() and int(token) < len(gpus):
            match = gpus[int(token)]
        else:
            match = next((g for g in gpus if token and g[1].startswith(token)), None)
        if match is None or match in out:
            break
        out.append(match)
    return out


def gpu_tag(name: str) -> str:
    """TVM's tag for a GPU name ("NVIDIA H100 80GB HBM3" -> "nvidia/nvidia-h100"), or the default."""
    import tvm

    tags = set(tvm.target.tag.list_tags())
    words = name.lower().replace("nvidia ", "").split()
    for n in range(len(words), 0, -1):
        for candidate in (f"nvidia/nvidia-{'-'.join(words[:n])}", f"nvidia/{'-'.join(words[:n])}"):
            if candidate in tags:
                return candidate
    return DEFAULT_CUDA_TAG


@dataclass(frozen=True)
class DeviceSpec:
    """`local`, or a tracker address and key for `rpc://HOST:PORT/KEY`."""

    text: str
    host: str | None = None
    port: int | None = None
    key: str | None = None

    @property
    def is_remote(self) -> bool:
        return self.host is not None


def parse_device(device: str) -> DeviceSpec:
    if device == "local":
        return DeviceSpec("local")
    m = re.fullmatch(r"rpc://([^:/]+):(\d+)/([^/]+)", device or "")
    if m is None:
        raise ValueError(f"device {device!r}: expected 'local' or 'rpc://HOST:PORT/KEY' (a TVM RPC tracker)")
    return DeviceSpec(device, m.group(1), int(m.group(2)), m.group(3))
