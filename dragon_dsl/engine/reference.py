"""The verifier's reference: the unscheduled workload built for llvm and run on the CPU
(in a build worker), on every input set; stored as `.npz` bytes.

Layout of the archive: `meta` (JSON: verifier version, set names, arguments with
roles) and, per set s and argument a, `s/a/in` (what the kernel reads) and
`s/a/out` (what the reference left in a written argument). bfloat16 arrays are
stored as their uint16 bits.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np

from dragon_dsl.engine.inputs import VERIFIER_VERSION, input_sets, np_dtype
from dragon_dsl.engine.signature import Arg


def config_key(n_random: int) -> str:
    """The verifier configuration a stored reference belongs to."""
    return json.dumps({"verifier": VERIFIER_VERSION, "random_sets": n_random}, sort_keys=True)


@dataclass
class Reference:
    args: list          # [Arg]
    sets: list          # [(name, {arg: input array}, {arg: expected array})]

    @property
    def outputs(self) -> list:
        return [a for a in self.args if a.written]


def _store(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def _restore(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.view(np_dtype(dtype)) if dtype == "bfloat16" else a


def to_bytes(ref: Reference) -> bytes:
    arrays = {"meta": np.frombuffer(json.dumps({
        "verifier": VERIFIER_VERSION, "sets": [name for name, _, _ in ref.sets],
        "args": [a.to_json() for a in ref.args]}).encode(), dtype=np.uint8)}
    for name, inputs, expected in ref.sets:
        for arg, value in inputs.items():
            arrays[f"{name}/{arg}/in"] = _store(value)
        for arg, value in expected.items():
            arrays[f"{name}/{arg}/out"] = _store(value)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def from_bytes(data: bytes) -> Reference:
    with np.load(io.BytesIO(data)) as z:
        meta = json.loads(z["meta"].tobytes().decode())
        args = [Arg.from_json(a) for a in meta["args"]]
        dtypes = {a.name: a.dtype for a in args}
        sets = []
        for name in meta["sets"]:
            inputs = {a.name: _restore(z[f"{name}/{a.name}/in"], a.dtype) for a in args if a.role != "output"}
            expected = {a.name: _restore(z[f"{name}/{a.name}/out"], dtypes[a.name]) for a in args if a.written}
            sets.append((name, inputs, expected))
    return Reference(args, sets)


def merge(parts: list, n_random: int) -> Reference:
    """One reference from parts computed on subsets of the input sets (`compute(only=...)`), in set order."""
    from dragon_dsl.engine.inputs import set_names

    order = {name: i for i, name in enumerate(set_names(n_random))}
    sets = sorted((s for part in parts for s in part.sets), key=lambda s: order[s[0]])
    if [s[0] for s in sets] != set_names(n_random):
        raise ValueError(f"the parts hold sets {[s[0] for s in sets]}, not {set_names(n_random)}")
    return Reference(parts[0].args, sets)


def compute(mod, base_seed: int, n_random: int, only=None) -> Reference:
    """Run the unscheduled workload on llvm over every input set (or the sets numbered in `only`:
    the engine computes the sets of one reference in parallel and merges them)."""
    import tvm

    from dragon_dsl.engine.run import call, make_tensors, read_outputs
    from dragon_dsl.engine.signature import signature

    args = signature(mod["main"])
    executable = tvm.compile(mod, tvm.target.Target({"kind": "llvm"}))
    func = executable.mod["main"]
    dev = tvm.cpu(0)
    sets = []
    for name, inputs in input_sets(args, base_seed, n_random, only):
        tensors = make_tensors(dev, args, inputs)
        call(func, dev, tensors)
        sets.append((name, inputs, read_outputs(args, tensors)))
    return Reference(args, sets)
