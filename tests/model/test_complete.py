"""A GPU script that leaves stages on the host is completed by MetaSchedule's AutoBind rule
(`dragon_model.complete`), and `api.candidates` keeps the completion when the compiler accepts it:
real TVM throughout, a stand-in generator for the model."""

from pathlib import Path

import pytest
from dragon_model import api
from dragon_model.complete import bind_host_blocks
from dragon_model.data import body_of_text
from dragon_model.generate import Generation

ROOT = Path(__file__).resolve().parents[2]
TARGET = "nvidia/nvidia-h100"
TRANSPOSE = ROOT / "tests/data/workloads/transpose_64x32.tvmscript"
CONV = ROOT / "tests/data/workloads/c2d_1.tvmscript"
UNBOUND = 'b0 = get_sblock("transpose")\nl1, l2 = get_loops(b0)\nl3 = fuse(l1, l2)\n'
BOUND = UNBOUND + 'l4, l5 = split(l3, [None, 256])\nbind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n'
# the convolution bound, its padding stage left at the root: TVM would run PadInput on the host
CONV_ONLY = ('b0 = get_sblock("conv2d_nhwc")\nl1, l2, l3, l4, l5, l6, l7 = get_loops(b0)\n'
             'l8 = fuse(l1, l2, l3, l4)\nl9, l10 = split(l8, [None, 128])\n'
             'bind(l9, "blockIdx.x")\nbind(l10, "threadIdx.x")\n')


def _head(workload):
    return f'workload "{workload.name}"\ntarget "{TARGET}"\n\n'


@pytest.mark.parametrize("workload, body, before", [
    (TRANSPOSE, UNBOUND, "no gpu kernel was generated"),
    (CONV, CONV_ONLY, "block 'padinput' is under no loop bound"),
], ids=["nothing-bound", "padding-on-the-host"])
def test_host_blocks_are_bound_after_the_models_statements(workload, body, before):
    assert before in api.compile_problem(_head(workload) + body, workload, TARGET).lower().replace("_", " ")
    completed = bind_host_blocks(_head(workload) + body, workload, TARGET)
    assert completed is not None and completed.startswith(body_of_text(body))   # the model's statements first
    rest = completed[len(body_of_text(body)):]
    assert 'bind(' in rest and '"threadIdx.x"' in rest and '"blockIdx.x"' in rest
    assert api.compile_problem(_head(workload) + completed, workload, TARGET) is None
    assert bind_host_blocks(_head(workload) + body, workload, TARGET) == completed      # deterministic


@pytest.mark.parametrize("text, workload", [
    (_head(TRANSPOSE) + BOUND, TRANSPOSE),                                   # nothing on the host: unchanged
    ('workload "transpose_64x32.tvmscript"\ntarget "llvm"\n\n' + UNBOUND, TRANSPOSE),   # not a GPU target
    (_head(TRANSPOSE) + 'b0 = get_sblock("nope")\n', TRANSPOSE),             # does not replay
    (_head(TRANSPOSE) + "not a script (\n", TRANSPOSE),                      # does not parse
], ids=["bound", "cpu", "replay-error", "parse-error"])
def test_nothing_to_complete(text, workload):
    target = "llvm" if 'target "llvm"' in text else TARGET
    assert bind_host_blocks(text, workload, target) is None


class Scripted:
    def __init__(self, bodies):
        self.bodies, self.calls, self.max_seconds = list(bodies), 0, 0.0

    def generate(self, workload, target, slower, temperature=0.0, seed=0):
        self.calls += 1
        return Generation(body=self.bodies[self.calls - 1])


def test_candidates_keep_a_completed_first_answer(monkeypatch):
    gen = Scripted([CONV_ONLY, CONV_ONLY + "\n"])
    monkeypatch.setattr(api, "generator", lambda model_path, target: gen)
    (text, g), = api.candidates(str(CONV), TARGET, k=1)
    assert gen.calls == 1                               # completed, not resampled
    assert g.completed_from == CONV_ONLY and g.compile_problem is None
    assert text == _head(CONV) + bind_host_blocks(_head(CONV) + CONV_ONLY, CONV, TARGET)


def test_candidates_without_completion_resample(monkeypatch):
    gen = Scripted([CONV_ONLY, BOUND])
    monkeypatch.setattr(api, "generator", lambda model_path, target: gen)
    monkeypatch.setattr(api, "COMPLETE_HOST_BLOCKS", False)
    out = api.candidates(str(CONV), TARGET, k=1, retries=1)
    assert gen.calls == 2 and out[0][1].completed_from is None
