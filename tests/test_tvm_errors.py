"""TVM's errors in the product's words (`dragon_dsl.tvm.errors.tvm_message`): each case is a message
TVM 0.27 raised, with the words a user is shown."""

from __future__ import annotations

import pytest

from dragon_dsl.tvm.errors import tvm_message

PASS_CHECK = """Check failed: n_deepest_reduction_loops == reduction_loops.size() (0 vs. 4) : Cross-thread \
reduction requires all the reduction-related loops to be the deepest among all statements outside the desired \
block. However, block Y needs cross-thread reduction, while the reduction-related loops outside of it are not the \
deepest statements, which violates the condition.

Error in pass: _pipeline
Location (TVMScript):
Access path: <root>.functions[I.GlobalVar("main")].body.predicate.ty
Note: The underlined object is the nearest visible parent of this path.

# from tvm.script import ir as I
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    ^^^^^^^^^^^^^^^^^^^^^^^^
    def main(X: T.Buffer((16, 4096), "float16"), Y: T.Buffer((16,), "float32")):
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
"""

GPU_LIMIT = """GPU constraint(s) violated:
    Used threads per block (2048) is greater than the allowed maximum (1024)
  In function main"""


@pytest.mark.parametrize(
    "text, shown",
    [
        (
            PASS_CHECK,
            "Cross-thread reduction requires all the reduction-related loops to be the deepest among all "
            "statements outside the desired block. However, block Y needs cross-thread reduction, while the "
            "reduction-related loops outside of it are not the deepest statements, which violates the condition.",
        ),
        (
            GPU_LIMIT,
            "GPU constraint(s) violated: Used threads per block (2048) is greater than the allowed maximum (1024)",
        ),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: the last line',
            "RuntimeError: the last line",
        ),
    ],
)
def test_tvm_message(text, shown):
    assert tvm_message(ValueError(text)) == shown
