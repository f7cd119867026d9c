"""TVM's error messages in the product's words: one reading of a TVM exception for every caller."""

from __future__ import annotations

import re

_TRACEBACK = ('File "', "Traceback", "During handling")


def tvm_message(exc: BaseException, limit: int = 600, *, primitive: bool = True) -> str:
    """TVM's message for EXC without the printed IR, the C++ backtrace or a Python traceback.

    A schedule primitive's error keeps only its verdict (after "Error message:"), prefixed with the
    primitive's name when PRIMITIVE (a replay diagnostic names the instruction itself and asks for
    none); a GPU limit's error keeps the limits it lists; a pass's failed check keeps its reason
    (not the module TVM prints after it, underlined); any other keeps its last line."""
    text = str(exc).replace("\x00", "").strip()  # NVRTC's log arrives NUL-padded
    name = None
    if primitive and "An error occurred in the schedule primitive" in text:
        name = text.splitlines()[0].split("primitive", 1)[1].strip(" .'")
    if "Error message:" in text:
        verdict = text.rsplit("Error message:", 1)[1]
        message = " ".join(ln.strip() for ln in verdict.splitlines() if ln.strip())
    elif _PASS_ERROR.search(text):
        # a pass's check: "Check failed: COND (0 vs. 4) : WHY\n\nError in pass: P\nLocation (TVMScript):"
        # and the module printed with its offending part underlined
        head = _PASS_ERROR.split(text, 1)[0]
        lines = [ln.strip() for ln in head.splitlines() if ln.strip() and not ln.strip().startswith(_TRACEBACK)]
        message = " ".join(lines)
        if message.startswith("Check failed:") and " : " in message:
            message = message.split(" : ", 1)[1]
    elif text.startswith("GPU constraint"):
        # "GPU constraint(s) violated:\n    Used threads per block (2048) is greater than ...\n  In function ..."
        # TVM lists a limit once for every place that breaks it (a vector width, once per store):
        # each limit said once, in the order TVM found them
        head, *limits = [ln.strip() for ln in text.split("In function", 1)[0].splitlines() if ln.strip()]
        message = " ".join([head, *dict.fromkeys(limits)])
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(_TRACEBACK)]
        message = lines[-1] if lines else ""
    message = message or type(exc).__name__
    if name:
        message = f"{name}: {message}"
    return message[:limit]


_PASS_ERROR = re.compile(r"\n\s*(?:Error in pass:|Location \(TVMScript\):)")
