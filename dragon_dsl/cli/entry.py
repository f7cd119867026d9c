"""The console scripts: each runs its command's `main` and turns a missing optional dependency
into one line that says which extra to install, instead of a traceback.

`pip install little-dragon` gives the language tools (dragon-fmt, dragon-check up to
`--level types`, the language server's editing features); TVM, the model, training and the
evaluation come with the extras `[tvm]`, `[model]`, `[train]` and `[eval]` (pyproject.toml).
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

#: a top-level module -> the extra that installs it
EXTRA_OF = {
    "tvm": "tvm",
    "tvm_ffi": "tvm",
    "numpy": "tvm",
    "psutil": "tvm",
    "xgboost": "tvm",
    "cloudpickle": "tvm",
    "tornado": "tvm",
    "torch": "model",
    "transformers": "model",
    "tokenizers": "model",
    "safetensors": "model",
    "xgrammar": "model",
    "accelerate": "train",
    "trl": "train",
    "peft": "train",
    "datasets": "eval",
    "pyarrow": "eval",
    "matplotlib": "eval",
}


#: the torch build every extra with the model needs first: a plain `pip install torch` pulls a
#: multi-GB CUDA build (README)
TORCH_PIN = "torch==2.13.0"


def checkout_root() -> Path | None:
    """The source checkout this package runs from (an editable install, or the tree itself), else
    None (an installed wheel)."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        return root if 'name = "little-dragon"' in pyproject.read_text(encoding="utf-8") else None
    except OSError:
        return None


def install_hint(extra: str) -> str:
    """The command that installs EXTRA where this package runs: from a checkout, an editable
    install of it (torch pinned first where the extra brings the model); the package's name
    on the index is not published yet, so it is named as what to use once it is."""
    root = checkout_root()
    torch = f"pip install {TORCH_PIN} && " if extra in ("model", "train") else ""
    if root is not None:
        where = "." if Path.cwd().resolve() == root else str(root)
        return f"{torch}pip install -e '{where}[{extra}]' (once published: pip install 'little-dragon[{extra}]')"
    return f"{torch}pip install 'little-dragon[{extra}]'"


def missing_extra(exc: BaseException):
    """(module, extra) when EXC is the import of a module an extra provides, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    root = exc.name.split(".")[0]
    return (root, EXTRA_OF[root]) if root in EXTRA_OF else None


def run(prog: str, target: str, argv=None) -> int:
    """Run `module:function` (TARGET) as the command PROG; exit status 2, with one line on standard
    error, when what it needs is not installed."""
    module, _, function = target.partition(":")
    try:
        return getattr(import_module(module), function)(argv)
    except ModuleNotFoundError as exc:
        found = missing_extra(exc)
        if found is None:
            raise
        name, extra = found
        print(f"{prog}: this needs {name}, which is not installed: {install_hint(extra)}", file=sys.stderr)
        return 2


def dragon() -> None:
    sys.exit(run("dragon", "dragon_dsl.cli.main:main"))


def dragon_fmt() -> None:
    sys.exit(run("dragon-fmt", "dragon_dsl.cli.fmt:main"))


def dragon_check() -> None:
    sys.exit(run("dragon-check", "dragon_dsl.cli.check:main"))


def dragon_lsp() -> None:
    sys.exit(run("dragon-lsp", "dragon_lsp.server:main"))
