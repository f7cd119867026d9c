"""nvcc for CUDA builds: TVM 0.27's `tvm.compile` only generates CUDA source, and the
device code is compiled when the module is loaded on a GPU. To find a schedule that
cannot compile on a machine without a GPU, the builder compiles the source itself,
through TVM's own nvcc driver (`tvm.support.nvcc.compile_cuda`, the flags TVM uses in
its nvcc mode) to a cubin for the target's arch (`sm_90a` for the H100 tag).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

CANDIDATE_DIRS = ("/usr/local/cuda/bin",)


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for d in CANDIDATE_DIRS:
        path = Path(d) / "nvcc"
        if path.exists():
            return str(path)
    return None


def ensure_on_path() -> str | None:
    """TVM's driver runs plain `nvcc`: put the one we found on PATH; returns its path."""
    nvcc = find_nvcc()
    if nvcc is not None:
        d = str(Path(nvcc).parent)
        if d not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
    return nvcc


class NvccError(Exception):
    pass


def compile_cubin(source: str, target) -> bytes:
    """CUDA source -> cubin bytes; raises NvccError with nvcc's error lines."""
    from tvm.support import nvcc as tvm_nvcc

    if ensure_on_path() is None:
        raise NvccError("nvcc not found (looked on PATH and in /usr/local/cuda/bin)")
    arch = str(target.attrs.get("arch", "sm_90a"))
    try:
        with target:
            return bytes(tvm_nvcc.compile_cuda(source, target_format="cubin", arch=arch, compiler="nvcc"))
    except RuntimeError as exc:
        raise NvccError(error_lines(str(exc))) from None


def error_lines(text: str, limit: int = 6) -> str:
    """The lines of nvcc/ptxas output that say what is wrong (TVM prepends the whole source)."""
    tail = text.split("Compilation error:", 1)[-1]
    lines = [ln.strip() for ln in tail.splitlines() if "error" in ln.lower() and ln.strip()]
    if not lines:
        lines = [ln.strip() for ln in tail.strip().splitlines()[-limit:]]
    return "nvcc: " + " | ".join(lines[:limit])


# The type traits TVM 0.27's CUDA source declares for NVRTC (`#ifdef __CUDACC_RTC__`): libcu++'s
# <cuda/std/type_traits> and a `namespace std` of using-declarations. Parsing that header is most
# of an NVRTC compile: 0.6 s of a trivial kernel's 0.6 s, 20 ms without it (docs/MEASURE.md).
_TRAITS = re.compile(
    r"\n[ \t]*#include <cuda/std/type_traits>\n[ \t]*namespace std \{\n"
    r"((?:[ \t]*using cuda::std::\w+;\n)+)[ \t]*\}\n"
)


def trim_preamble(code: str) -> str:
    """CODE without TVM's NVRTC type-traits block where nothing in it names a trait the block
    declares (nor libcu++ at all): the kernels compile to the same machine code (their .text
    sections are byte-identical; only libcu++'s unused globals leave the cubin), several times
    faster. CODE itself otherwise."""
    found = _TRAITS.search(code)
    if found is None:
        return code
    rest = code[: found.start()] + "\n" + code[found.end() :]
    names = re.findall(r"using cuda::std::(\w+);", found.group(1))
    uses = _INT_TYPES.sub("", rest)  # the cstdint block stays: it is cheap
    if "cuda::std::" in uses or any(re.search(rf"\b{name}\b", uses) for name in names):
        return code
    return rest


_INT_TYPES = re.compile(r"^[ \t]*(?:#include <cuda/std/cstdint>|using cuda::std::u?int\d+_t;)[ \t]*$", re.M)
