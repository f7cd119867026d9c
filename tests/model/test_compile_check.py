"""GPU candidates are checked by TVM's compiler before anyone sees them (`api.compile_problem`), and
a rejected one is replaced by a further sample (`api.candidates`): real TVM for the check, a stand-in
generator for the resampling."""

from pathlib import Path

import pytest

from dragon_model import api
from dragon_model import candidates as model_candidates
from dragon_model.generate import Generation

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "tests/data/workloads/transpose_64x32.tvmscript"
HEAD = 'workload "transpose_64x32.tvmscript"\ntarget "nvidia/nvidia-h100"\n\n'
PREFIX = 'b0 = get_sblock("transpose")\nl1, l2 = get_loops(b0)\nl3 = fuse(l1, l2)\n'


@pytest.mark.parametrize(
    "body, problem",
    [
        (PREFIX + 'l4, l5 = split(l3, [None, 256])\nbind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n', None),
        (PREFIX, "no gpu kernel was generated"),
        (
            PREFIX + 'l4, l5 = split(l3, [None, 2048])\nbind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n',
            "threads per block",
        ),
    ],
)
def test_compile_problem(body, problem):
    found = api.compile_problem(HEAD + body, WORKLOAD, "nvidia/nvidia-h100")
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found.lower().replace("_", " ")


class Scripted:
    """Writes the given bodies in turn, whatever the temperature."""

    def __init__(self, bodies):
        self.bodies, self.calls, self.max_seconds = list(bodies), [], 0.0

    def generate(self, workload, target, slower, temperature=0.0, seed=0):
        self.calls.append((temperature, seed))
        return Generation(body=self.bodies[len(self.calls) - 1])


@pytest.fixture
def scripted(monkeypatch):
    def install(bodies, passes, replays=lambda text: True):
        gen = Scripted(bodies)
        monkeypatch.setattr(model_candidates, "generator", lambda model_path, target: gen)
        monkeypatch.setattr(
            model_candidates, "compile_problem", lambda text, w, t: None if passes(text) else "rejected"
        )
        monkeypatch.setattr(
            model_candidates, "replay_problem", lambda text, w: None if replays(text) else "does not replay"
        )
        return gen

    return install


def test_a_rejected_first_answer_is_replaced_by_the_next_sample(scripted):
    gen = scripted(["bad\n", "bad\n", "good 1\n", "good 2\n"], passes=lambda text: "good" in text)
    out = api.candidates(str(WORKLOAD), "nvidia/nvidia-h100", k=1)
    assert [t.split("\n\n", 1)[1] for t, _ in out] == ["good 1\n"]
    assert gen.calls == [(0.0, 0), (0.8, 1), (0.8, 2)]  # greedy, then samples; the duplicate is skipped


def test_too_few_pass_the_rejected_fill_the_list_after_the_passing(scripted):
    gen = scripted(
        ["bad a\n", "good\n", "bad b\n", "bad c\n", "bad d\n", "bad e\n"], passes=lambda text: text.endswith("good\n")
    )
    out = api.candidates(str(WORKLOAD), "nvidia/nvidia-h100", k=2, retries=2)
    assert [t.split("\n\n", 1)[1] for t, _ in out] == ["good\n", "bad a\n"]
    assert len(gen.calls) == 4 and out[1][1].compile_problem == "rejected"


def test_no_compile_check_on_cpus(scripted):
    gen = scripted(["anything\n"], passes=lambda text: False)
    out = api.candidates(str(WORKLOAD), "llvm", k=1)
    assert len(out) == 1 and out[0][1].compile_problem is None and len(gen.calls) == 1


@pytest.mark.parametrize("target", ["llvm", "nvidia/nvidia-h100"])
def test_a_script_that_does_not_replay_from_its_text_is_replaced(scripted, target):
    """The decoder replays statement by statement; the whole text is replayed once more, as
    dragon-check does, and a script that fails is replaced by a further sample on every target."""
    gen = scripted(["unreplayable\n", "good\n"], passes=lambda text: True, replays=lambda text: "good" in text)
    out = api.candidates(str(WORKLOAD), target, k=1)
    assert [t.split("\n\n", 1)[1] for t, _ in out] == ["good\n"] and len(gen.calls) == 2


LAUNCHED = (
    'b0 = get_sblock("transpose")\nl1, l2 = get_loops(b0)\nl3, l4 = split(l2, [None, 32])\n'
    'bind(l3, "blockIdx.x")\nbind(l4, "threadIdx.x")\n'
)
BOUND = PREFIX + 'l4, l5 = split(l3, [None, 256])\nbind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n'


@pytest.mark.parametrize(
    "body, loops",
    [
        (BOUND, None),
        (LAUNCHED, "l1"),  # the 64 rows stay a host loop around the kernel
        (
            LAUNCHED.replace("l3, l4 = split(l2", "l3, l4 = split(l1").replace(
                'bind(l3, "blockIdx.x")', 'bind(l3, "blockIdx.x")\nbind(l2, "blockIdx.y")'
            ),
            None,
        ),  # both bound
        (
            'b0 = get_sblock("transpose")\nl1, l2 = get_loops(b0)\nl3, l4 = split(l1, [2, None])\n'
            'l5 = fuse(l4, l2)\nl6, l7 = split(l5, [None, 256])\nbind(l6, "blockIdx.x")\nbind(l7, "threadIdx.x")\n',
            "l3",
        ),
    ],
)
def test_launch_problem(body, loops):
    """A loop of more than one iteration around a kernel stays on the host, which launches the kernel
    once per iteration: TVM compiles it and it runs correctly, but slowly."""
    assert api.compile_problem(HEAD + body, WORKLOAD, "nvidia/nvidia-h100") is None
    found = api.launch_problem(HEAD + body, WORKLOAD)
    if loops is None:
        assert found is None
    else:
        assert found is not None and "launches the kernel once per iteration" in found


def test_a_kernel_launched_from_a_host_loop_is_replaced_by_the_next_sample(scripted):
    gen = scripted([LAUNCHED, BOUND], passes=lambda text: True)
    out = api.candidates(str(WORKLOAD), "nvidia/nvidia-h100", k=1)
    assert [t.split("\n\n", 1)[1] for t, _ in out] == [BOUND] and len(gen.calls) == 2
    alone = scripted([LAUNCHED], passes=lambda text: True)
    kept = api.candidates(str(WORKLOAD), "nvidia/nvidia-h100", k=1, retries=0)  # no retries: nothing checked
    assert len(kept) == 1 and len(alone.calls) == 1


MATMUL = ROOT / "tests/data/workloads/matmul_64.tvmscript"
MM_HEAD = 'workload "matmul_64.tvmscript"\ntarget "nvidia/nvidia-h100"\n\n'
MM = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n'
MM_BOUND = MM + 'l4 = fuse(l1, l2)\nl5, l6 = split(l4, [None, 128])\nbind(l5, "blockIdx.x")\nbind(l6, "threadIdx.x")\n'
MM_IDLE = MM + 'l4, l5 = split(l1, [16, 4])\nbind(l4, "threadIdx.x")\n'


@pytest.mark.parametrize(
    "body, idle, starved",
    [
        (MM_BOUND, None, None),  # 4,096 threads
        (MM_IDLE, (16, 16384), None),  # 16 threads, 16,384 each
        # 64 threads of 4,096 iterations each: launched threads alone pass, the workload's block does not
        (MM + 'l4, l5 = split(l1, [8, 8])\nbind(l4, "blockIdx.x")\nbind(l5, "threadIdx.x")\n', None, (64, 4096)),
        # 64 x 4 threads of 1,024 iterations each: fewer in a row than STARVED_SERIAL
        (MM + 'l4, l5 = split(l2, [None, 4])\nbind(l1, "blockIdx.x")\nbind(l5, "threadIdx.x")\n', None, None),
        (MM + 'l4, l5 = split(l1, [8, 8])\nbind(l4, "threadIdx.x")\n', (8, 32768), None),
        # a vthread runs inside its thread: 4 threads, 65,536 iterations each
        (MM + 'l4, l5 = split(l1, [16, 4])\nbind(l4, "vthread.x")\nbind(l5, "threadIdx.x")\n', (4, 65536), None),
    ],
)
def test_idle_kernels(body, idle, starved):
    """A kernel of at most 128 threads in all, each running 16,384 iterations or more in sequence,
    leaves the GPU idle: TVM compiles it and it runs correctly, but slowly. So does one whose
    workload block keeps at most 128 threads busy with 2,048 or more each (`starved_kernels`)."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.blocks import block_names
    from dragon_dsl.tvm.compile import idle_kernels, schedule
    from dragon_dsl.tvm.workload import load_workload

    assert api.compile_problem(MM_HEAD + body, MATMUL, "nvidia/nvidia-h100") is None
    scheduled = schedule(load_workload(MATMUL), {"trace": to_trace_json(MM_HEAD + body)}, None)
    assert idle_kernels(scheduled) == ([] if idle is None else [(*idle, "C")])
    both = idle or starved
    assert idle_kernels(scheduled, set(block_names(MATMUL))) == ([] if both is None else [(*both, "C")])
    found = api.launch_problem(MM_HEAD + body, MATMUL)
    assert (found is None) == (both is None)
    if both is not None:
        assert f"keeps {both[0]} threads in all busy, each running {both[1]:,} of its iterations" in found


ROW = ROOT / "tests/data/workloads/row_sum_1x15244.tvmscript"
ROW_HEAD = 'workload "row_sum_1x15244.tvmscript"\ntarget "nvidia/nvidia-h100"\n\n'
ROW_LOOPS = 'b0 = get_sblock("Y")\nl1, l2 = get_loops(b0)\n'


@pytest.mark.parametrize(
    "body, starved",
    [
        # the seventh model's answer: 256 threads launched, one with work, 15,244 sums in a row (245x dlight)
        (
            ROW_LOOPS + 'l3 = fuse(l1)\nl4, l5 = split(l3, [None, 256])\nbind(l4, "blockIdx.x")\n'
            'bind(l5, "threadIdx.x")\n',
            (1, 15244),
        ),
        # dlight's way: the reduction split across 256 threads (TVM's cross-thread reduction), 60 each
        (ROW_LOOPS + 'l3, l4 = split(l2, [None, 256])\nbind(l1, "blockIdx.x")\nbind(l4, "threadIdx.x")\n', None),
    ],
)
def test_starved_kernels(body, starved):
    """A block of the workload whose iterations keep at most 128 threads busy, each running 2,048 or
    more in sequence, leaves the GPU idle however many threads are launched."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.blocks import block_names
    from dragon_dsl.tvm.compile import idle_kernels, schedule
    from dragon_dsl.tvm.workload import load_workload

    assert api.compile_problem(ROW_HEAD + body, ROW, "nvidia/nvidia-h100") is None
    original = load_workload(ROW)
    scheduled = schedule(original, {"trace": to_trace_json(ROW_HEAD + body)}, None)
    assert idle_kernels(scheduled) == [], "launched threads alone do not show it"
    assert idle_kernels(scheduled, set(block_names(original))) == ([] if starved is None else [(*starved, "Y")])
    found = api.launch_problem(ROW_HEAD + body, ROW)
    assert (found is None) == (starved is None)
    if starved is not None:
        assert f"keeps 1 thread in all busy, each running {starved[1]:,} of its iterations" in found


def test_a_kernel_that_leaves_the_gpu_idle_is_replaced_by_the_next_sample(scripted):
    gen = scripted([MM_IDLE, MM_BOUND], passes=lambda text: True)
    out = api.candidates(str(MATMUL), "nvidia/nvidia-h100", k=1)
    assert [t.split("\n\n", 1)[1] for t, _ in out] == [MM_BOUND] and len(gen.calls) == 2


def test_when_nothing_passes_a_slow_script_is_kept_before_one_the_compiler_rejects(scripted):
    gen = scripted(["broken\n", MM_IDLE], passes=lambda text: "broken" not in text)
    out = api.candidates(str(MATMUL), "nvidia/nvidia-h100", k=1, retries=1)
    assert [t.split("\n\n", 1)[1] for t, _ in out] == [MM_IDLE] and len(gen.calls) == 2
    assert "idle" in out[0][1].compile_problem
