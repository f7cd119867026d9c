"""Which arguments the verifier pre-fills and compares: outputs found from the blocks' writes."""

from __future__ import annotations

from dragon_dsl.engine.signature import signature
from dragon_dsl.tvm.workload import load_workload

from .engine_helpers import workload


def roles(name: str) -> dict:
    return {a.name: a.role for a in signature(load_workload(workload(name))["main"])}


def test_reduction_output_is_not_an_input():
    assert roles("matmul_64") == {"A": "input", "B": "input", "C": "output"}


def test_buffer_read_before_written_is_in_out():
    assert roles("inplace_add_64") == {"A": "inout"}


def test_every_written_argument_is_an_output():
    assert [name for name, role in roles("two_consumers_32").items() if role == "output"] == ["C", "D"]


def test_intermediate_buffers_are_not_arguments():
    assert roles("partial_write") == {"A": "input", "C": "output"}


def test_index_inputs_get_the_extent_they_index():
    args = {a.name: a for a in signature(load_workload(workload("gather_64"))["main"])}
    assert args["Idx"].index_bound == 64 and args["Idx"].dtype == "int32"
    assert args["A"].index_bound is None and args["B"].role == "output"
    dense = signature(load_workload(workload("dense_u8i8_16x32x16"))["main"])
    assert [(a.dtype, a.index_bound) for a in dense] == [("uint8", None), ("int8", None), ("int32", None)]
