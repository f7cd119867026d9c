"""A GPU script that leaves stages on the host is completed by MetaSchedule's AutoBind rule, one
whose reduction stage its kernel's threads race on has that stage moved to a kernel of its own
(`dragon_model.complete`), and `api.candidates` keeps the completion when the compiler accepts it:
real TVM throughout, a stand-in generator for the model."""

from pathlib import Path

import pytest

from dragon_model import api
from dragon_model import candidates as model_candidates
from dragon_model.complete import bind_host_blocks, separate_racing_stages
from dragon_model.data import body_of_text
from dragon_model.generate import Generation

ROOT = Path(__file__).resolve().parents[2]
TARGET = "nvidia/nvidia-h100"
TRANSPOSE = ROOT / "tests/data/workloads/transpose_64x32.tvmscript"
CONV = ROOT / "tests/data/workloads/c2d_1.tvmscript"
UNBOUND = 'b0 = get_sblock("transpose")\nl1, l2 = get_loops(b0)\nl3 = fuse(l1, l2)\n'
BOUND = UNBOUND + 'l4, l5 = split(l3, [None, 256])\nbind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n'
# the convolution bound, its padding stage left at the root: TVM would run PadInput on the host
CONV_ONLY = (
    'b0 = get_sblock("conv2d_nhwc")\nl1, l2, l3, l4, l5, l6, l7 = get_loops(b0)\n'
    "l8 = fuse(l1, l2, l3, l4)\nl9, l10 = split(l8, [None, 128])\n"
    'bind(l9, "blockIdx.x")\nbind(l10, "threadIdx.x")\n'
)


def _head(workload):
    return f'workload "{workload.name}"\ntarget "{TARGET}"\n\n'


@pytest.mark.parametrize(
    "workload, body, before, after",
    [
        (TRANSPOSE, UNBOUND, "no gpu kernel was generated", ["bind(", '"threadIdx.x"', '"blockIdx.x"']),
        # the padding is inlined into the convolution's kernel (AutoInline), not given a kernel of its own
        (CONV, CONV_ONLY, "block 'padinput' is under no loop bound", ["compute_inline("]),
    ],
    ids=["nothing-bound", "padding-on-the-host"],
)
def test_host_blocks_are_bound_after_the_models_statements(workload, body, before, after):
    assert before in api.compile_problem(_head(workload) + body, workload, TARGET).lower().replace("_", " ")
    completed = bind_host_blocks(_head(workload) + body, workload, TARGET)
    assert completed is not None and completed.startswith(body_of_text(body))  # the model's statements first
    rest = completed[len(body_of_text(body)) :]
    assert all(word in rest for word in after), rest
    assert api.compile_problem(_head(workload) + completed, workload, TARGET) is None
    assert bind_host_blocks(_head(workload) + body, workload, TARGET) == completed  # deterministic


@pytest.mark.parametrize(
    "text, workload",
    [
        (_head(TRANSPOSE) + BOUND, TRANSPOSE),  # nothing on the host: unchanged
        ('workload "transpose_64x32.tvmscript"\ntarget "llvm"\n\n' + UNBOUND, TRANSPOSE),  # not a GPU target
        (_head(TRANSPOSE) + 'b0 = get_sblock("nope")\n', TRANSPOSE),  # does not replay
        (_head(TRANSPOSE) + "not a script (\n", TRANSPOSE),  # does not parse
    ],
    ids=["bound", "cpu", "replay-error", "parse-error"],
)
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
    monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
    ((text, g),) = api.candidates(str(CONV), TARGET, k=1)
    assert gen.calls == 1  # completed, not resampled
    assert g.completed_from == CONV_ONLY and g.compile_problem is None
    assert text == _head(CONV) + bind_host_blocks(_head(CONV) + CONV_ONLY, CONV, TARGET)


def test_candidates_without_completion_resample(monkeypatch):
    gen = Scripted([CONV_ONLY, BOUND])
    monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
    monkeypatch.setattr(model_candidates, "COMPLETE_HOST_BLOCKS", False)
    out = api.candidates(str(CONV), TARGET, k=1, retries=1)
    assert gen.calls == 2 and out[0][1].completed_from is None


RACING = ROOT / "tests/data/racing/row_sum.dragon"
ROW_SUM = ROOT / "tests/data/racing/reduction_typed_axis1_dtypef16_m16_n4096_opsum.tvmscript"
# the same row sum as one cross-thread reduction: a row per thread block, 256 threads adding its columns
BOUND_ROW_SUM = (
    'b0 = get_sblock("Y")\nl1, l2 = get_loops(b0)\nl3, l4 = split(l2, [None, 256])\n'
    'bind(l1, "blockIdx.x")\nbind(l4, "threadIdx.x")\n'
)


def test_a_racing_stage_gets_a_kernel_of_its_own():
    """The model's row sum: its second rfactor stage is computed at the blockIdx loop and left
    unbound (a race the compile check names). The separated script is the model's statements but
    the one that put the stage there, then AutoBind's for the stage (found by its place: both
    rfactor stages are named Y_rf); it compiles, and races no more."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.compile import RACING_REDUCTION, kernel_shapes, schedule, thread_binding_problems
    from dragon_dsl.tvm.workload import load_workload

    text = RACING.read_text(encoding="utf-8")
    assert "a race" in api.compile_problem(text, ROW_SUM, TARGET)
    assert bind_host_blocks(text, ROW_SUM, TARGET) is None  # nothing on the host to complete
    separated = separate_racing_stages(text, ROW_SUM, TARGET)
    mine = body_of_text(text).splitlines()
    moved = [i for i, line in enumerate(mine) if line.startswith("reverse_compute_at(")]
    assert len(moved) == 1 and separated.splitlines()[: len(mine) - 1] == mine[: moved[0]] + mine[moved[0] + 1 :]
    assert api.compile_problem(_head(ROW_SUM) + separated, ROW_SUM, TARGET) is None
    mod = schedule(load_workload(str(ROW_SUM)), {"trace": to_trace_json(separated)}, None)
    assert not [k for k, _ in thread_binding_problems(mod) if k == RACING_REDUCTION] and len(kernel_shapes(mod)) == 3
    assert separate_racing_stages(text, ROW_SUM, TARGET) == separated  # deterministic
    assert separate_racing_stages(_head(TRANSPOSE) + BOUND, TRANSPOSE, TARGET) is None  # no race: unchanged
    assert separate_racing_stages(text.replace("nvidia/nvidia-h100", "llvm"), ROW_SUM, "llvm") is None


def test_candidates_separate_a_racing_stage_when_no_sample_passes(monkeypatch):
    """The greedy answer and every retry race: the first of them gets its stage a kernel of its own
    (after the retries: a sample that reduces across threads in one kernel would come first)."""
    body = body_of_text(RACING.read_text(encoding="utf-8"))
    gen = Scripted([body, body + "\n"])
    monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
    ((text, g),) = api.candidates(str(ROW_SUM), TARGET, k=1, retries=1)
    assert gen.calls == 2 and g.completed_from == body and g.compile_problem is None
    assert text == _head(ROW_SUM) + separate_racing_stages(_head(ROW_SUM) + body, ROW_SUM, TARGET)
    gen = Scripted([body, BOUND_ROW_SUM])
    monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
    ((text, g),) = api.candidates(str(ROW_SUM), TARGET, k=1, retries=1)
    assert g.completed_from is None and text == _head(ROW_SUM) + body_of_text(BOUND_ROW_SUM)


BLOCKIZED = ROOT / "tests/data/out_of_domain/row_max_blockize_answer.dragon"
ROW_MAX = ROOT / "tests/data/out_of_domain/reduction_typed_axis1_dtypef32_m8_n4096_opmax.tvmscript"


def test_a_completion_that_is_only_slow_is_kept_before_one_that_does_not_compile(monkeypatch):
    """The model's row max (8 rows), refused its rfactor, ended in a `blockize` and left the row sum
    on the host: no kernel. AutoBind's completion binds the rows to threads: it compiles and runs
    correctly, but one thread does all the work (the launch check). With no sample passing, that
    completion is what is shown, not the script that does not compile."""
    text = BLOCKIZED.read_text(encoding="utf-8")
    body = body_of_text(text)
    assert "no GPU kernel" in api.compile_problem(text, ROW_MAX, TARGET)
    completed = bind_host_blocks(text, ROW_MAX, TARGET)
    assert api.compile_problem(_head(ROW_MAX) + completed, ROW_MAX, TARGET) is None
    assert "busy" in api.launch_problem(_head(ROW_MAX) + completed, ROW_MAX)
    gen = Scripted([body, body + "\n"])
    monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
    ((shown, g),) = api.candidates(str(ROW_MAX), TARGET, k=1, retries=1)
    assert gen.calls == 2  # slow: a further sample was drawn
    assert g.completed_from == body and "busy" in g.compile_problem
    assert shown == _head(ROW_MAX) + completed


class ByPrompt:
    """A stand-in model: REWRITE for the improvement prompt, SCRATCH for the construction prompt."""

    def __init__(self, rewrite, scratch):
        self.rewrite, self.scratch, self.prompts, self.max_seconds = rewrite, scratch, [], 0.0

    def generate(self, workload, target, slower, temperature=0.0, seed=0):
        self.prompts.append("improvement" if slower else "construction")
        return Generation(body=self.rewrite + "\n" * len(self.prompts) if slower else self.scratch)


# the transpose's outer loop left around its kernel: the host launches it 64 times (launch_problem)
HOST_LOOP = UNBOUND.replace(
    "l3 = fuse(l1, l2)\n", 'l3, l4 = split(l2, [None, 32])\nbind(l3, "blockIdx.x")\nbind(l4, "threadIdx.x")\n'
)


def test_an_improvement_whose_every_rewrite_is_rejected_is_written_from_scratch(monkeypatch):
    assert "launches the kernel once per iteration" in api.launch_problem(_head(TRANSPOSE) + HOST_LOOP, TRANSPOSE)
    gen = ByPrompt(HOST_LOOP, BOUND)
    monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
    ((text, g),) = api.candidates(str(TRANSPOSE), TARGET, script=_head(TRANSPOSE) + HOST_LOOP, k=1, retries=2)
    assert gen.prompts == ["improvement"] * 3 + ["construction"]
    assert g.from_scratch and text == _head(TRANSPOSE) + body_of_text(BOUND)
    # a construction task has no rewrite to fall back from: the slow script is shown, as before
    gen = ByPrompt(HOST_LOOP, HOST_LOOP)
    ((text, g),) = api.candidates(str(TRANSPOSE), TARGET, k=1, retries=2)
    assert gen.prompts == ["construction"] * 3 and not g.from_scratch and g.compile_problem


@pytest.mark.parametrize("name", ["matmul_relu_64", "conv2d_nchw_bias_bn_relu_16"])
def test_copies_and_epilogues_left_on_the_host_run_inside_the_kernel(name):
    """dlight's script cut before its last steps (inline the reindex copies, the epilogue into the
    accumulator's write-back): the completion inlines them (MetaSchedule's AutoInline) instead of
    binding each to a kernel of its own, and the schedule has dlight's number of kernels. An earlier
    CUDA model stopped there on the held-out linear layers: four kernels, 0.72-0.90x of dlight."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import kernel_shapes
    from dragon_dsl.tvm.trace import apply
    from dragon_dsl.tvm.workload import load_workload

    workload = ROOT / f"tests/data/workloads/{name}.tvmscript"
    text = workload.read_text(encoding="utf-8")
    full = body_of_text(api.dlight_script(text, resolve_target("cuda").spec, workload.name))
    lines = full.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if " = get_producers(" in line)
    body = "".join(lines[:cut])

    def kernels(script):
        return len(kernel_shapes(apply(to_trace_json(script), load_workload(text)).mod))

    completed = bind_host_blocks(_head(workload) + body, workload, TARGET)
    assert completed is not None and completed.startswith(body)
    assert "compute_inline(" in completed[len(body) :]
    assert kernels(completed) == kernels(full) == 1
    assert api.compile_problem(_head(workload) + completed, workload, TARGET) is None
