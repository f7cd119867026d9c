"""The model's candidates for a workload: the shipped model of a target (`generator`), k scripts
from it (`candidates`: the first greedy, the others sampled), each kept only once it replays from
its own text and, on a GPU, passes the compile and launch checks (`dragon_model.checks`); a script
that leaves stages on the host completed by AutoBind; and on GPUs a tensor-core candidate, the
model's choices inside MetaSchedule's tensor-core design space (`tensor_core_candidate`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dragon_model.checks import compile_problem, header_target, launch_problem, replay_problem, workload_text

#: the shipped models, a folder per target kind: in a checkout and its editable install
#: (`pip install -e '.[model]'`); a wheel leaves their 34 MB out (pyproject.toml)
WEIGHTS = Path(__file__).resolve().parent / "weights"
#: a folder of models the user names, a folder per target kind (`llvm/`, `cuda/`): looked in first
MODEL_DIR_ENV = "DRAGON_MODEL_DIR"


def weights_dirs() -> list[Path]:
    """Where the models of the target kinds are looked for, in order: $DRAGON_MODEL_DIR, then WEIGHTS."""
    named = os.environ.get(MODEL_DIR_ENV)
    return [Path(named), WEIGHTS] if named else [WEIGHTS]


def default_model_path(target: Any = "llvm") -> Path | None:
    """The model of a target kind (`<folder>/<kind>` of `weights_dirs`), when there is one."""
    from dragon_model.render import target_kind

    for folder in weights_dirs():
        path = folder / target_kind(target)
        if (path / "config.json").exists():
            return path
    return None


def no_model_message(target: Any) -> str:
    """What to do when no model of TARGET's kind is installed."""
    from dragon_model.render import target_kind

    kind = target_kind(target)
    where = " or ".join(str(d / kind) for d in weights_dirs())
    return (
        f"no model for target {target!r} (none in {where}): pass --model DIR, set {MODEL_DIR_ENV} to a folder "
        f"holding {kind}/ (a checkout's model/weights), or install from a checkout: pip install -e '.[model]'"
    )


_GENERATORS: dict = {}


def generator(model_path=None, target: Any = "llvm"):
    from dragon_model.generate import Generator

    path = Path(model_path) if model_path else default_model_path(target)
    if path is None:
        raise FileNotFoundError(no_model_message(target))
    key = str(path.resolve())
    if key not in _GENERATORS:
        _GENERATORS[key] = Generator.from_path(path)
    return _GENERATORS[key]


#: seconds one generation may take before its script ends at the next statement boundary (it is
#: then verified, and cut back, like any other): the promise is an answer in seconds
GENERATION_SECONDS = 60.0


#: GPU targets: extra samples drawn, over all k candidates, to replace scripts the compiler rejects
#: without running them (resource limits, no kernel, lowering errors); 0 turns the check off
GPU_RETRIES = 4
#: CPU targets: extra samples drawn to replace scripts that do not replay from their own text
CPU_RETRIES = 2

#: GPU targets: a script that leaves blocks on the host is completed by MetaSchedule's AutoBind rule
#: (`dragon_model.complete`) and kept when the completion passes the compile check
COMPLETE_HOST_BLOCKS = True
#: GPU targets: with k > 1, the second candidate is the model's decisions in MetaSchedule's
#: tensor-core design space where the workload has one (`tensor_core_candidate`): greedy decoding
#: does not open a tensor-core schedule by itself, although such schedules are often the fastest
TENSOR_CORE_CANDIDATE = True
#: how often the tensor-core candidate's decisions are drawn before it is given up
TENSOR_CORE_TRIES = 8


def tensor_core_template(workload, target: Any, n: int = 16, seed: int = 0) -> tuple | None:
    """MetaSchedule's tensor-core candidates for a GPU workload, as the decoder's template: None
    where the workload has none, else (statements, decisions, bodies). N candidates are sampled
    from the space as its search draws them (`design_space.tensor_core_samples`: the GEMM block
    laid out in the intrinsic's 16x16x16 tiles, shared-memory and fragment stages, every candidate
    through the space's post-processors); those whose main part (before `postproc:`) has the
    most common statements apart from decisions are kept. `statements` is the first one's main
    part, `decisions` each kept one's decision texts in order, `bodies` their whole scripts.
    Greedy decoding never opens such a schedule by itself (its labels are a tenth of the
    fine-tuning rows, dlight's GEMM form most of the rest)."""
    from collections import defaultdict

    from dragon_dsl import DragonError, from_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.design_space import tensor_core_samples
    from dragon_dsl.tvm.target import tune_target
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.generate import DECISION, statements_of

    spec = resolve_target(target)
    if not spec.is_gpu:
        return None
    groups: dict = defaultdict(list)
    for trace in tensor_core_samples(load_workload(workload_text(workload)), tune_target(spec.spec), n, seed):
        try:
            body = from_trace_json(trace)
        except DragonError:  # a candidate the codec cannot write exactly: not offered
            continue
        main = list(statements_of(body.split("\npostproc:\n", 1)[0]))
        shape = tuple(DECISION.sub("decision=)", st) for st in main)
        decided = [m.group(1) for m in map(DECISION.search, main) if m]
        groups[shape].append((main, decided, body))
    if not groups:
        return None
    kept = max(groups.values(), key=len)
    return kept[0][0], [d for _m, d, _b in kept], [b for _m, _d, b in kept]


def tensor_core_candidate(gen, workload, target: Any, slower: str | None, template: tuple, seed: int = 0):
    """The tensor-core candidate the model chooses (`tensor_core_template`): it writes the
    candidates' common statements and picks each decision among theirs, greedily; the candidate
    it lands on is the answer, post-processing included (`Generation.completed_from`: the part the
    model wrote). One the compiler rejects (a vectorised cast of the accumulator on its way out:
    "tvm_access_ptr element type must match") is dropped and the model chooses again, up to
    TENSOR_CORE_TRIES times; None when none passes."""
    from dragon_model.generate import header

    statements, decisions, bodies = template
    head = header(workload, header_target(target))
    live = list(range(len(bodies)))
    for _ in range(TENSOR_CORE_TRIES):
        if not live:
            break
        g = gen.generate(
            workload, target, slower, temperature=0.0, seed=seed, template=(statements, [decisions[i] for i in live])
        )
        if g.sample is None:
            return None
        pick = live.pop(g.sample)
        if compile_problem(head + bodies[pick], workload, target) is None:
            g.completed_from, g.body, g.compiled = g.body, bodies[pick], True
            return g
    return None


@dataclass
class _Pool:
    """The generations of one `candidates` call: those that pass in `out` as (text, Generation), the
    rejected ones in `rejected` as (not rejected for its speed alone, text, Generation), and every
    body seen, so that none is considered twice."""

    workload: Any
    target: Any
    head: str
    gpu: bool
    extra: int
    out: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    seen: set = field(default_factory=set)

    def add(self, g) -> None:
        """Consider generation G unless its body was seen before."""
        if g.body not in self.seen:
            self.seen.add(g.body)
            self.consider(g)

    def consider(self, g) -> None:
        """Keep generation G in `out` when it passes, else in `rejected` with why."""
        head, workload, target = self.head, self.workload, self.target
        # the decoder replayed each statement as it came; the whole text is replayed once more, as
        # `dragon-check --level replay` does, so that no shown script fails its user's check
        problem = replay_problem(head + g.body, workload) if g.body.strip() else None
        slow = False  # rejected for its speed only: it compiles and runs correctly
        if problem is None and self.gpu and self.extra:
            # (the tensor-core candidate was compiled as it was chosen: not again)
            problem = None if g.compiled else compile_problem(head + g.body, workload, target)
            if problem is None:
                problem = launch_problem(head + g.body, workload)
                slow = problem is not None
        if problem is not None and not slow and COMPLETE_HOST_BLOCKS and self.gpu and self.extra:
            completed = self.complete_host_blocks(g)
            if completed is not None:
                problem, slow = completed
        if problem is None:
            self.out.append((head + g.body, g))
        else:
            g.compile_problem = problem
            self.rejected.append((not slow, head + g.body, g))

    def complete_host_blocks(self, g) -> tuple | None:
        """G's body completed by AutoBind, when a completion replays and compiles: G then holds it
        (`completed_from` the model's own body), and the answer is (the launch check's finding or
        None, whether it is slow only); None when no completion passes."""
        from dragon_model.complete import bind_host_blocks

        head, workload, target = self.head, self.workload, self.target
        # the host stages inlined where AutoInline can, then bound; where that does not compile (an
        # inlined stage that leaves a global buffer inside a kernel), bound only
        tried: set = set()
        for inline in (True, False):
            completed = bind_host_blocks(head + g.body, workload, target, inline=inline)
            if completed is None or completed in self.seen or completed in tried:
                continue  # none, shown before, or the inlined text again (nothing could be inlined)
            tried.add(completed)
            # AutoBind's statements come from a replayed schedule, not from the decoder, which
            # replays every statement it keeps: the completed text must replay as dragon-check does
            again = replay_problem(head + completed, workload) or compile_problem(head + completed, workload, target)
            too_slow = launch_problem(head + completed, workload) if again is None else None
            if again is None:  # the model's statements, then AutoBind's for the stages it left on the host
                # (one the launch check finds slow runs correctly: shown, if at all, before one
                # that does not compile)
                g.completed_from, g.body = g.body, completed
                self.seen.add(completed)
                return too_slow, too_slow is not None
        return None

    def separate_racing_stages(self) -> None:
        """A reduction stage the kernel's threads race on gets a kernel of its own, in the first
        rejected script that has one; that script then passes (after the samples: a resampled row
        sum that reduces across threads in one kernel is kept before three kernels)."""
        from dragon_model.complete import separate_racing_stages

        head, workload = self.head, self.workload
        for j, (_, text, g) in enumerate(self.rejected):
            separated = separate_racing_stages(text, workload, self.target)
            if separated is not None and not (
                replay_problem(head + separated, workload) or launch_problem(head + separated, workload)
            ):
                g.completed_from, g.body, g.compile_problem = g.body, separated, None
                self.out.append((head + separated, g))
                del self.rejected[j]
                break


def candidates(
    workload,
    target: Any = "llvm",
    script: str | None = None,
    k: int = 4,
    model_path=None,
    temperature: float = 0.8,
    seed: int = 0,
    max_seconds: float = GENERATION_SECONDS,
    retries: int | None = None,
    progress=None,
    deadline: float | None = None,
) -> list:
    """k generations (the first greedy, the others sampled), as (script text with header, Generation);
    duplicates dropped. Each script is replayed from its own text (`replay_problem`, as dragon-check
    does) before it is kept. On a GPU target a script the compiler rejects (`compile_problem`) for stages
    left on the host is first completed by AutoBind (`dragon_model.complete`; the Generation keeps
    the model's own body in `completed_from`); one still rejected is replaced by a further sample, up to
    `retries` (GPU_RETRIES; on CPUs CPU_RETRIES) in all, and so is one that would launch a kernel from
    a host loop or leave the GPU idle (`launch_problem`). When every rewrite of SCRIPT is rejected,
    one script is written from scratch (the construction prompt; `Generation.from_scratch`). When
    none passes, the first rejected one with a reduction stage its kernel's threads race on has that
    stage moved to a kernel of its own (`complete.separate_racing_stages`). The
    rejected ones fill the list only when too few pass, those rejected for their speed alone (they
    run correctly) before the others. PROGRESS(kept, k) is called after each generation. DEADLINE (a
    `time.monotonic()` instant, the user's budget) gives each generation at most the time left, at
    whose end it stops at the statement it is on, and starts none after it (the first always runs):
    what was written by then is the answer's candidates."""
    from dragon_model.data import body_of_text
    from dragon_model.decoder_terms import GPU_KINDS
    from dragon_model.generate import header
    from dragon_model.render import target_kind

    gen = generator(model_path, target)
    gen.max_seconds = float(max_seconds)
    slower = body_of_text(script) if script else None
    head = header(workload, header_target(target))
    k = max(1, k)
    gpu = target_kind(target) in GPU_KINDS
    extra = (GPU_RETRIES if gpu else CPU_RETRIES) if retries is None else retries
    pool = _Pool(workload, target, head, gpu, extra)

    # on GPUs the second candidate is a tensor-core schedule where the workload has one: the
    # model's decisions in MetaSchedule's tensor-core design space (`tensor_core_candidate`); the
    # first stays the model's own greedy answer
    tc = tensor_core_template(workload, target) if gpu and k > 1 and TENSOR_CORE_CANDIDATE else None
    i = 0
    while len(pool.out) < k and i < k + extra:
        if deadline is not None:  # the user's budget: the time left, and no generation after it
            left = deadline - time.monotonic()
            if left <= 0 and i > 0:
                break
            gen.max_seconds = max(1.0, min(float(max_seconds), left))
        g = tensor_core_candidate(gen, workload, target, slower, tc, seed=seed + i) if i == 1 and tc else None
        if g is None:
            g = gen.generate(workload, target, slower, temperature=0.0 if i == 0 else temperature, seed=seed + i)
        i += 1
        pool.add(g)
        if progress is not None:
            progress(len(pool.out), k)
    if slower is not None and not pool.out and extra:
        # every rewrite of the given script was rejected (each launched kernels from host loops or
        # kept one thread busy): a script written from scratch, as for the construction task,
        # before a rejected one is shown
        g = gen.generate(workload, target, None, temperature=0.0, seed=seed + i)
        if g.body not in pool.seen:
            g.from_scratch = True
        pool.add(g)
    if not pool.out and gpu and extra and COMPLETE_HOST_BLOCKS:
        pool.separate_racing_stages()
    pool.rejected.sort(key=lambda r: r[0])  # a slow script that runs before one the compiler rejects
    return pool.out + [(text, g) for _, text, g in pool.rejected[: k - len(pool.out)]]
