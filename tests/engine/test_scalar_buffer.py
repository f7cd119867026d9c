"""A workload with a 0-d buffer (a scalar argument) gets a reference and verifies: numpy's
`ascontiguousarray` turned its inputs into shape (1,), which the kernel refused at launch, and every
task of such a network function failed as a reference."""

from __future__ import annotations

from .engine_helpers import DATA


def test_a_zero_dimensional_input_keeps_its_shape(llvm_engine):
    text = (DATA / "scalar_mask.tvmscript").read_text(encoding="utf-8")
    ref = llvm_engine.reference(text)
    bound = ref.args[0]
    assert (bound.name, bound.shape, bound.role) == ("bound", (), "input")
    for _name, inputs, outputs in ref.sets:
        assert inputs["bound"].shape == ()
        n = int(inputs["bound"])
        x, y = inputs["x"], outputs["y"]
        assert list(y) == [x[i] if i < n else 0.0 for i in range(8)]
