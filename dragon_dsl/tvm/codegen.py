"""Code generation views: the CUDA source TVM generates for a scheduled module."""

from __future__ import annotations


class NoKernel(RuntimeError):
    """TVM generated no CUDA module: the schedule binds no loop to blockIdx/threadIdx."""


def cuda_source(mod, target="nvidia/nvidia-h100") -> str:
    """The CUDA C++ that TVM generates (no GPU needed: the device code is only compiled when loaded);
    NoKernel when TVM generated none."""
    import tvm

    exe = tvm.compile(mod, target=tvm.target.Target(target))
    # Only `kind` and `inspect_source` are safe here: any other attribute of a
    # module is looked up as a kernel function, which needs a CUDA runtime.
    for m in _modules(exe.mod):
        if m.kind == "cuda":
            return m.inspect_source()
    raise NoKernel("no CUDA module was generated")


def _modules(root):
    out, stack = [], [root]
    while stack:
        m = stack.pop()
        out.append(m)
        stack.extend(m.imports)
    return out
