"""The model's API: scripts for a workload, and the best verified one.

suggest(workload=, target=, script=None, n=1, model_path=None) -> list[str]
    what the language server calls: up to n scripts (header included) that check and
    replay, and on GPU targets compile (`compile_problem`; a rejected one is replaced by a
    further sample); the server builds, verifies and times them itself.

recommend(workload, target="llvm", script=None, k=4, model_path=None, ...) -> Recommendation
    what `dragon suggest` / `dragon improve` print: k candidates from the model (the first
    greedy, the others sampled), validated in parallel by the measurement engine (build,
    numeric check against the unscheduled workload with fresh seeded inputs and
    NaN-poisoned outputs, timing; results cache off), the fastest verified one returned.
    With `script` (improve), the winner must also beat that script's measured latency.
    On a GPU target dlight's schedule, as a script, is measured in the same engine call,
    so the answer is never slower than dlight (`source == "dlight"` when it won). The
    baseline (dlight, or the unscheduled program on CPUs) is timed first: a candidate
    10x slower is stopped early and never shown (`slow`). When no candidate verifies, a
    budgeted MetaSchedule search runs instead and the result says so (`source == "search"`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dragon_dsl.levels import SLOW_FACTOR, is_slow  # a slow verified candidate is never an answer

# how much slower than the unscheduled program a CPU answer may time and still count as no slower
# (the model's training answers use the same margin)
from dragon_model.data import TIMING_NOISE

WEIGHTS = Path(__file__).resolve().parent / "weights"


def default_model_path(target: Any = "llvm") -> Path | None:
    """The shipped model of a target kind (model/weights/<kind>), when it is there."""
    from dragon_model.render import target_kind

    path = WEIGHTS / target_kind(target)
    return path if (path / "config.json").exists() else None


_GENERATORS: dict = {}


def generator(model_path=None, target: Any = "llvm"):
    from dragon_model.generate import Generator

    path = Path(model_path) if model_path else default_model_path(target)
    if path is None:
        raise FileNotFoundError(f"no model for target {target!r}: pass model_path (none shipped in {WEIGHTS})")
    key = str(path.resolve())
    if key not in _GENERATORS:
        _GENERATORS[key] = Generator.from_path(path)
    return _GENERATORS[key]


def _workload_text(workload) -> str:
    if isinstance(workload, str) and "\n" in workload:
        return workload
    return Path(workload).read_text(encoding="utf-8")


def _header_target(target):
    from dragon_dsl.engine import resolve_target

    return resolve_target(target).spec


#: seconds one generation may take before its script ends at the next statement boundary (it is
#: then verified, and cut back, like any other): the promise is an answer in seconds
GENERATION_SECONDS = 60.0


#: GPU targets: extra samples drawn, over all k candidates, to replace scripts the compiler rejects
#: without running them (resource limits, no kernel, lowering errors); 0 turns the check off
GPU_RETRIES = 4
#: CPU targets: extra samples drawn to replace scripts that do not replay from their own text
CPU_RETRIES = 2

#: bumped when decoding changes what the same weights write (evaluation caches key answers by it)
#: 3: the compile check rejects blocks left on the host and over-long inner thread loops;
#: 4: the decoder resamples a statement that makes an over-long inner thread loop;
#: 5: the compile check rejects a kernel binding one thread axis with two extents;
#: 6: the replay refuses a cache_read with consumer blocks that do not read the cached buffer or
#:    that lie inside a blockized block (TVM 0.27 segfaults on both; version 4 died on the second
#:    while writing an H200 improvement answer)
#: 7: a script the compiler rejects for stages left on the host is completed by MetaSchedule's
#:    AutoBind rule (`dragon_model.complete`) and kept when the completion passes the compile check
#: 8: a script completed by AutoBind is replayed from its own text as `dragon-check --level replay`
#:    does before it is kept (5 of 46 version-7 answers did not replay from their text after the
#:    completion; the decoder's own statements are replayed one by one as they are written)
#: 9: every script is replayed from its own text before it is kept, the model's own too (a first
#:    answer of the shipped CUDA model blockized [root, S, S, root, ...]: TVM took it while the
#:    decoder replayed it, and the text then failed `dragon-check --level replay`); blockize's
#:    block list holds distinct blocks with loops, in increasing order; CPU targets draw up to
#:    CPU_RETRIES further samples for a rejected script
#: 10: bind, parallel, unroll and vectorize take serial loops only (the second-generation CUDA
#:    model bound a reduction's loop to blockIdx.x and then to threadIdx.x: it replayed, built and
#:    ran thousands of times slower than dlight)
#: 11: on GPUs, a script that leaves a loop of more than one iteration around a kernel (the host
#:    launches the kernel once per iteration) is replaced by a further sample, as a script the
#:    compiler rejects is (`launch_problem`: 8 of the 15 version-10 reduction answers of the
#:    second-generation model, 6-4,800x slower than dlight where they verified; no training script has one)
#: 12: on GPUs, a script with a kernel that leaves the GPU idle (at most 128 threads in all, each
#:    running 16,384 iterations or more in sequence: `idle_kernels`) is replaced by a further sample
#:    too: 13 of the 15 version-11 reduction answers launched 1 to 224 threads; dlight launches at
#:    least 256 on every held-out workload
#: 13: when no sample passes, one rejected for its speed alone (it runs correctly) is kept before one
#:    the compiler rejects (4 of the 24 version-12 held-out family answers were kept rejected by the
#:    compiler and did not build)
#: 14: the grammar takes what the training labels write: dlight's constant splits ([None, 1, 16, 4],
#:    [16, 8, None, 2]) and splits of a split loop within its extent, splits by a sampled thread count
#:    ([None, v4]), typed index-map lambdas, 1-iteration vectorize on GPUs and a query asked as often
#:    in a row as the labels do. Before it, every dlight GEMM, GEMV, norm and softmax label left the
#:    grammar within its first 15 statements (`python -m dragon_model.reachable`), and the model's
#:    answers on those operators never staged data in shared memory
#: 15: transform_block_layout's lambda takes one parameter per iterator of its block, named as the
#:    labels name them (iterator names of the live blocks, i0.., or typed iters_k), and its body only
#:    such names, sampled values and integer casts: on an fp16 NCHW convolution the seventh CUDA model wrote 18 lambdas the
#:    checker or TVM rejected (2 parameters for 4 iterators, names of no parameter), ran out of
#:    retries in 126 s and showed a script that leaves a block on the host; with the rule, 20 s and
#:    a script that compiles; unannotate takes the keys annotate may write (every tensor-core label
#:    unannotates meta_schedule.auto_tensorize in its postprocessing, which the grammar refused: no
#:    tensor-core label could be written to its end)
#: 16: tensorize takes a live block and an intrinsic of the training corpus's auto_tensorize
#:    annotations, and the decoder's replay registers it (version 15 walked the tensor-core labels
#:    to their first tensorize, which the grammar refused: no answer could use tensor cores); a
#:    statement that leaves a loop iterating both spatial and reduction iterators of a block is
#:    refused (`compile.mixed_loops`: 5 of the 24 version-14 held-out family answers fused a row
#:    sum's loops, bound them to threadIdx.x and left most outputs unwritten), and so is one that
#:    binds a loop of extent 1 inside a longer loop of the same thread axis (2 of the 23 improvement
#:    answers of the first version-16 run left 3 of 4 and 7 of 8 outputs unwritten)
#: 17: a kernel whose workload block keeps at most 128 threads busy, each running 2,048 or more of its
#:    iterations in a row, is replaced by a further sample like an idle one (`starved_kernels`: 10 of
#:    the seventh model's verified answers on the held-out families and operators, 9 of them 11-10,000x
#:    slower than dlight, e.g. a 1 x 15,244 row sum split over 256 threads of which one works)
#: 18: a statement is written in two phases, its head (result names and `instruction(`) from a
#:    grammar of the heads, then the rest from the grammar of that head's alternatives
#:    (`decoder_grammar.statement_phases`: the whole statement's grammar took xgrammar 68 ms a
#:    statement to compile, the phases 7 ms), and text the grammar forces is read by the model in one
#:    forward pass with the token before it (`Generator._forced`); the same language, and the same
#:    greedy answers where the model writes forced text as the tokenizer spells it
#: 19: a statement after which a block reads or writes outside a buffer with no condition or
#:    predicate guarding the access is refused (`compile.out_of_bounds`, TVM's out-of-bounds
#:    checker: an eighth-model conv1d answer inlined the padding and then reindexed the input, and
#:    its kernel stopped the H200 with an illegal address; no corpus script is refused)
#: 20: replays no longer change the workload they start from (`trace.own_module`: after a trace
#:    annotates the root block, TVM 0.27 applies later transformations to the caller's module in
#:    place, and workloads are shared between replays): statements that version 19 rejected, and
#:    answers it derailed, because an earlier replay had already scheduled the workload are written
#:    anew
#: 21: a statement that inlines a cache the script made (`dragon-check` DRG106) is refused: every
#:    dlight-like GEMM answer of the ninth model (5 construction, 7 improvement answers of the
#:    held-out operators) inlined its shared copy of A instead of A's reindex block, 2-4x slower
#:    than dlight; none of the 110k CUDA and llvm training scripts does it
#: 22: on GPUs, a script with a reduction block that all threads of its kernel run into the same
#:    global or shared elements (`compile.RACING_REDUCTION`: a second rfactor computed at the
#:    blockIdx loop with its loops unbound) is one the compiler check rejects, and is replaced by a
#:    further sample: 4 of the ninth model's 24 held-out family construction answers were such row
#:    sums and gave wrong results on the H200; no CUDA training script checked has one. Where every
#:    retry writes it again, the stage gets a kernel of its own instead (`complete.
#:    separate_racing_stages`: the statement that computed it at the kernel's loop left out, then
#:    AutoBind), and AutoBind finds a block left on the host by its place, not by its name (two
#:    rfactor stages share one). An improvement whose every rewrite is rejected gets one script
#:    written from scratch (the construction prompt) before a rejected one is shown: 8 of the 23
#:    held-out family improvement answers were rewrites the launch check had rejected (host loops
#:    launching the kernel up to 262,144 times, one busy thread), shown for want of another
#: 23: a statement that moves a cache the script made to another storage scope (`dragon-check`
#:    DRG107) is refused: with version 22, 6 of the ninth model's 48 improvement answers on the
#:    held-out operators (the 5 linear layers, an attention-values product) wrote `set_scope(b1, 0,
#:    "shared")` after `cache_write(b1, 0, "local")`, a shared-memory accumulator 16-470x slower
#:    than dlight on the H200 (the linear layers' construction answers, without it: 0.73-1.00x of
#:    dlight); none of the 137k CUDA and llvm training scripts does it
#: 24: a statement after which a block runs for iterator values outside its domain, with no
#:    predicate, is refused (`compile.out_of_domain_bindings`, part of `out_of_bounds`: DRG604).
#:    TVM 0.27's `rfactor` of a row reduction whose rows were split with padding leaves the
#:    write-back block without the split's `T.where`: threads past the last row write past the
#:    output. All 4 numeric mismatches of the ninth model's decoder-22 answers on the held-out
#:    families were such row sums (12 more verified by chance in the committed reports)
#: 25: a script completed by AutoBind that runs correctly but slowly (the launch checks) is kept
#:    as such, before the rejected scripts that do not compile, where it was dropped for the script
#:    without its completion (no kernel): 2 of the 5 row-sum construction answers of version 24
#:    (`benchmarks/results/cpu_out_of_domain.md`)
#: 26: after `reindex` of a GEMM-like block's inputs and output (dlight's normal form of matmuls and
#:    convolutions), each reindexed buffer's transform_layout and then the block's
#:    transform_block_layout take only the lambda dlight's own analysis gives
#:    (`inspect.gemm_layouts`, `decoder_grammar._gemm_layouts`): the ninth model wrote these lambdas
#:    wrong in every answer for the held-out NCHW convolutions (the 1x1 one then stopped after 9
#:    statements, the 3x3 one fell back to plain bindings, 5-21x slower than dlight); with the rule
#:    both write dlight's whole tiled, shared-memory schedule. The tensor-core space, which transforms
#:    the block's own buffers instead, keeps its grammar; the reachable training labels are unchanged
#: 27: the AutoBind completion first inlines what it can of the blocks a GPU script leaves on the host
#:    (MetaSchedule's AutoInline with its CUDA defaults, as its own design space does before AutoBind):
#:    with version 26, the ninth model's dlight-like GEMM answers for the held-out linear layers,
#:    GEMVs and LM heads stopped before dlight's last steps (inline the reindex copies, the epilogue
#:    into the accumulator's write-back), and AutoBind gave each left-over copy a kernel of its own:
#:    2-7 kernels where dlight has one, 0.72-0.90x of dlight. Over the 117 distinct completed answers
#:    of the version-26 reports, 320 kernels become 153 (59 answers with fewer, none with more); one
#:    inlined completion does not compile, and there the stages are bound only, as before
#:    (`benchmarks/results/cpu_inline_completion.md`)
#: 28: a block takes a second add_unit_loop only where dlight's GEMV analysis accepts it
#:    (`inspect.is_gemv`, `decoder_grammar._unit_loops`): the ninth model wrote the GEMV normal form
#:    (two unit loops, then two rfactors) for the held-out families' row sums of one input, which
#:    dlight schedules with its Reduction rule (one unit loop, one cross-thread rfactor)
#: 29: a sampled tile's innermost factor is at most its `max_innermost_factor`, which is one of the
#:    values MetaSchedule's rules use on the target (`decoder_grammar.TILE_CAPS`: 64 on CPUs; 4 or 64
#:    on GPUs) and always written: TVM replays any decision, but its sampler never draws more, and no
#:    training script has more. The llvm model wrote [1, 1, 1, 4464] and [1, 1, 1, 3212] under a cap
#:    of 64 for two held-out softmaxes' rows, 2,800x and 140x slower than the unscheduled program.
#:    A statement after which reductions re-run, under loops their iterators do not use, to more
#:    than 100x the program's block instances is refused (`compile.repeated_work_message`): three
#:    more held-out softmax answers recomputed every row's maximum inside another block's loops
#:    (1,904-27,900x the program's work, up to 6,000x slower); no training label exceeds 21x, while
#:    MetaSchedule's random softmax samples reach 288x (slow ones: its search drops them)
#: 30: a statement that leaves a predicated reduction block never running for some of its slices,
#:    which another block reads, is refused (`compile.unreached_iterations`, also a compile check):
#:    two held-out row-sum answers of the ninth CUDA model split the reduction past its extent and
#:    rfactored a loop the padding cut off, so 7 of 8 slices were never written and the write-back
#:    summed garbage (the verifier on the H200 rejected both). None of the 1,726 corpus rows nor the
#:    pretraining records' scripts checked leaves such a slice (dlight initialises its own in a block
#:    without the predicate)
#: 31: on GPUs, a constant split of a loop that drives reduction axes only fits the loop, or is one
#:    of dlight's fixed splits [None, 16] and [None, 256] (`decoder_grammar.DLIGHT_REDUCTION_SPLITS`);
#:    sampled thread counts are kept. The twelfth CUDA model split the reductions of held-out row
#:    and column sums of 64-768 elements by [None, 1024], the form of the row sums it was trained
#:    on at their usual lengths; the rfactor that form needs was refused (the padding cuts its loop
#:    off) and the answers derailed into one thread per row or column, 10-16x slower than dlight.
#:    Of the 8,403 constant splits of reduction loops in the 11,062 distinct CUDA fine-tuning
#:    labels, the 308 that exceed their loop are all dlight's fixed splits
#: 32: on GPUs with k > 1, the second candidate is a tensor-core schedule where the workload has
#:    one (`tensor_core_candidate`): 16 candidates of MetaSchedule's tensor-core space are sampled,
#:    and the model writes their common statements and chooses each decision among theirs. Greedy
#:    decoding wrote no tensor-core answer with any model so far (186 tensor-core labels, a tenth
#:    of the fine-tuning rows), although those labels beat dlight on 219 of the 295 workloads
#:    measured with one (up to 9.5x). Free decoding inside that space was tried first: the model's
#:    own tile factors overran the shared memory on 6 of 7 held-out GEMMs
#: 33: a statement after which a reduction runs an update more than once per initialisation is
#:    refused (`compile.repeated_updates`, also a compile check on every target): a loop no binding
#:    reads, inside a reduction loop or inside a blockized reduction's body. Four held-out
#:    column-sum improvements of version 32 split `add_unit_loop`'s loop by [None, 16] and
#:    blockized the split into the reduction; no block reads that loop, so TVM wrote no predicate
#:    and every sum came out 16 times too large (the verifier rejected all four on an H100). None
#:    of the 1,726 corpus scripts nor any of the 263 verified answers of the decoder-30 and -32
#:    reports has such an update. Also, `compile.unreached_iterations` counts predicated blocks with
#:    no reduction left: the 1 x 5120 column sum's answers rfactored a 1-long reduction split by
#:    [None, 1024] and summed 1,023 slices never written (the improvement failed, the construction
#:    matched by chance)
GENERATION_VERSION = 33

#: GPU targets: complete scripts that leave blocks on the host (see GENERATION_VERSION 7)
COMPLETE_HOST_BLOCKS = True
#: GPU targets: with k > 1, the second candidate is the model's decisions in MetaSchedule's
#: tensor-core design space where the workload has one (`tensor_core_candidate`; GENERATION_VERSION 32)
TENSOR_CORE_CANDIDATE = True
#: how often the tensor-core candidate's decisions are drawn before it is given up
TENSOR_CORE_TRIES = 8


def compile_problem(text: str, workload, target: Any) -> str | None:
    """Why TVM's compiler rejects a script for a GPU target before anything runs, or None: the
    replayed schedule is lowered and checked against the target's limits (shared memory, threads,
    vthreads, vector bytes; a bound kernel exists) and compiled to CUDA source. No GPU, no nvcc:
    the engine's build does the same and then compiles the source."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import compile_problem as problem

    return problem(to_trace_json(text), _workload_text(workload), resolve_target(target).spec)


def launch_problem(text: str, workload) -> str | None:
    """Why a GPU script is slow before anything runs, or None: a loop of more than one iteration
    left around a kernel, which the host runs, launching the kernel once per iteration
    (`dragon_dsl.tvm.compile.launch_loops`), or a kernel that leaves the GPU idle (`idle_kernels`).
    TVM compiles and runs both correctly."""
    from dragon_dsl import DragonError, to_trace_json
    from dragon_dsl.tvm.compile import launch_problem as problem

    try:
        trace = to_trace_json(text)
    except DragonError:  # a script that does not check: replay_problem's to report
        return None
    return problem(trace, _workload_text(workload))


def replay_problem(text: str, workload) -> str | None:
    """The first error `dragon-check --level replay` reports for a script, or None: a script that
    did not come from the decoder statement by statement (AutoBind's completion) is replayed from
    its own text, as a user's check would, before it is kept."""
    from dragon_dsl.levels import check_text_at_level

    report = check_text_at_level(text, level="replay", workload=_workload_text(workload))
    errors = [d for d in report.diagnostics if d.severity.name == "ERROR"]
    return errors[0].message if errors else None


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
    for trace in tensor_core_samples(load_workload(_workload_text(workload)), tune_target(spec.spec), n, seed):
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
    head = header(workload, _header_target(target))
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
    run correctly) before the others."""
    from dragon_model.complete import bind_host_blocks, separate_racing_stages
    from dragon_model.data import body_of_text
    from dragon_model.decoder_grammar import GPU_KINDS
    from dragon_model.generate import header
    from dragon_model.render import target_kind

    gen = generator(model_path, target)
    gen.max_seconds = float(max_seconds)
    slower = body_of_text(script) if script else None
    head = header(workload, _header_target(target))
    k = max(1, k)
    gpu = target_kind(target) in GPU_KINDS
    extra = (GPU_RETRIES if gpu else CPU_RETRIES) if retries is None else retries
    out, rejected, seen = [], [], set()

    def consider(g) -> None:
        """Keep generation G in `out` when it passes, else in `rejected` with why."""
        # the decoder replayed each statement as it came; the whole text is replayed once more, as
        # `dragon-check --level replay` does, so that no shown script fails its user's check
        problem = replay_problem(head + g.body, workload) if g.body.strip() else None
        slow = False  # rejected for its speed only: it compiles and runs correctly
        if problem is None and gpu and extra:
            # (the tensor-core candidate was compiled as it was chosen: not again)
            problem = None if g.compiled else compile_problem(head + g.body, workload, target)
            if problem is None:
                problem = launch_problem(head + g.body, workload)
                slow = problem is not None
        if problem is not None and not slow and COMPLETE_HOST_BLOCKS and gpu and extra:
            # the host stages inlined where AutoInline can, then bound; where that does not compile (an
            # inlined stage that leaves a global buffer inside a kernel), bound only
            tried: set = set()
            for inline in (True, False):
                completed = bind_host_blocks(head + g.body, workload, target, inline=inline)
                if completed is None or completed in seen or completed in tried:
                    continue  # none, shown before, or the inlined text again (nothing could be inlined)
                tried.add(completed)
                # AutoBind's statements come from a replayed schedule, not from the decoder, which
                # replays every statement it keeps: the completed text must replay as dragon-check does
                again = replay_problem(head + completed, workload) or compile_problem(
                    head + completed, workload, target
                )
                too_slow = launch_problem(head + completed, workload) if again is None else None
                if again is None:  # the model's statements, then AutoBind's for the stages it left on the host
                    # (one the launch check finds slow runs correctly: shown, if at all, before one
                    # that does not compile)
                    g.completed_from, g.body, problem, slow = g.body, completed, too_slow, too_slow is not None
                    seen.add(completed)
                    break
        if problem is None:
            out.append((head + g.body, g))
        else:
            g.compile_problem = problem
            rejected.append((not slow, head + g.body, g))

    # on GPUs the second candidate is a tensor-core schedule where the workload has one: the
    # model's decisions in MetaSchedule's tensor-core design space (`tensor_core_candidate`); the
    # first stays the model's own greedy answer
    tc = tensor_core_template(workload, target) if gpu and k > 1 and TENSOR_CORE_CANDIDATE else None
    i = 0
    while len(out) < k and i < k + extra:
        g = tensor_core_candidate(gen, workload, target, slower, tc, seed=seed + i) if i == 1 and tc else None
        if g is None:
            g = gen.generate(workload, target, slower, temperature=0.0 if i == 0 else temperature, seed=seed + i)
        i += 1
        if g.body not in seen:
            seen.add(g.body)
            consider(g)
    if slower is not None and not out and extra:
        # every rewrite of the given script was rejected (the families' row sums: each rewrite
        # launched kernels from host loops or kept one thread busy): a script written from
        # scratch, as for the construction task, before a rejected one is shown
        g = gen.generate(workload, target, None, temperature=0.0, seed=seed + i)
        if g.body not in seen:
            seen.add(g.body)
            g.from_scratch = True
            consider(g)
    if not out and gpu and extra and COMPLETE_HOST_BLOCKS:
        # no sample passes: a reduction stage the kernel's threads race on gets a kernel of its own,
        # in the first rejected script that has one (after the samples: a resampled row sum that
        # reduces across threads in one kernel is kept before three kernels)
        for j, (_, text, g) in enumerate(rejected):
            separated = separate_racing_stages(text, workload, target)
            if separated is not None and not (
                replay_problem(head + separated, workload) or launch_problem(head + separated, workload)
            ):
                g.completed_from, g.body, g.compile_problem = g.body, separated, None
                out.append((head + separated, g))
                del rejected[j]
                break
    rejected.sort(key=lambda r: r[0])  # a slow script that runs before one the compiler rejects
    return out + [(text, g) for _, text, g in rejected[: k - len(out)]]


def suggest(
    workload=None,
    target: Any = "llvm",
    script: str | None = None,
    n: int = 1,
    model_path=None,
    max_seconds: float = GENERATION_SECONDS,
    **_ignored,
) -> list[str]:
    """Up to n scripts that check and replay on the workload (the language server's entry point)."""
    if workload is None:
        raise ValueError("suggest needs a workload")
    return [
        text
        for text, _g in candidates(
            workload, target or "llvm", script, k=max(1, n), model_path=model_path, max_seconds=max_seconds
        )
    ][:n]


#: seconds every device run may take whatever the baseline (loading the module, uploading inputs,
#: comparing outputs)
RUN_FLOOR_S = 15.0


def cut_seconds(baseline_us: float, seeds: int = 3, repeat: int = 5, cap_s: float = 120.0) -> float:
    """A device run's time limit once the baseline's latency is known: the verifier's runs (`seeds`
    random sets and two edge sets) and the timer's `repeat` runs of a kernel SLOW_FACTOR times the
    baseline, twice over, on top of RUN_FLOOR_S; never above `cap_s`."""
    runs = seeds + 2 + repeat
    return min(cap_s, RUN_FLOOR_S + 2.0 * runs * SLOW_FACTOR * baseline_us * 1e-6)


@dataclass
class Recommendation:
    script: str | None
    verified: bool
    latency_us: float | None
    source: str  # "model", "dlight" (GPU baseline), "search", or
    # "unscheduled" (CPU: nothing beat the program as written)
    candidates_tried: int
    baseline: float | None = None  # the baseline's latency (us): dlight on GPUs, unscheduled on CPUs
    baseline_kind: str | None = None
    speedup_vs_baseline: float | None = None
    unscheduled_us: float | None = None
    speedup_vs_unscheduled: float | None = None
    dlight_us: float | None = None  # GPU targets: dlight's default schedule, the baseline there
    speedup_vs_dlight: float | None = None
    given_latency_us: float | None = None  # improve: the script it had to beat
    speedup_vs_given: float | None = None
    explanation: str | None = None
    candidates: list = field(default_factory=list)  # per candidate: source, status, latency, statements
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def dlight_script(workload_text: str, spec, workload_name: str | None = None) -> str | None:
    """dlight's schedule of the workload as a Dragon script (header included), or None when no
    dlight rule applies."""
    from dragon_dsl import from_trace_json
    from dragon_dsl.tvm.dlight import dlight_trace
    from dragon_dsl.tvm.workload import load_workload

    found = dlight_trace(load_workload(workload_text), spec)
    return None if found is None else from_trace_json(found[1], workload=workload_name, target=spec)


def _entry(source: str, text: str, res, **extra) -> dict:
    return {
        "source": source,
        "script": text,
        "status": res.status.value,
        "latency_us": res.latency_us,
        "message": res.message[:300],
        **extra,
    }


def _mark_slow(tried: list, baseline_us: float | None) -> None:
    """Verified candidates slower than SLOW_FACTOR x the baseline become `slow` (never an answer)."""
    if not baseline_us:
        return
    for c in tried:
        if c["status"] == "ok" and is_slow(c["latency_us"], baseline_us):
            c["status"] = "slow"
            c["message"] = f"verified, but {c['latency_us'] / baseline_us:.1f}x slower than the baseline"


def recommend(
    workload,
    target: Any = "llvm",
    script: str | None = None,
    k: int = 4,
    model_path=None,
    search_trials: int = 16,
    level: str = "time",
    engine=None,
    use_model: bool = True,
    timeout_s: float = 120.0,
    seed: int = 0,
    max_seconds: float = GENERATION_SECONDS,
    log=lambda msg: None,
    stage=lambda name, detail="": None,
) -> Recommendation:
    """See the module docstring. On a GPU target dlight's schedule, written as a script, is measured
    beside the model's candidates in the same engine call, so the answer is never slower than dlight
    and says which it is (`source`). At level `time` the baseline (dlight on GPUs, the unscheduled
    program on CPUs) is timed first: every candidate's device run is then stopped once it has run
    long enough to be SLOW_FACTOR times slower (`cut_seconds`), and a verified candidate that slow is
    `slow`, not an answer. `stage(name, detail)` reports progress: loading, generating, measuring."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.engine import Engine
    from dragon_model.generate import header

    wl_text = _workload_text(workload)
    spec = _header_target(target)
    own = engine is None
    engine = engine or Engine(spec, cache=False, timeout_s=timeout_s)
    name = None if isinstance(workload, str) and "\n" in workload else Path(workload).name
    run_timeout_s = engine.run_timeout_s  # a caller's engine gets its limit back
    try:
        gpu = engine.target.is_gpu
        kind = "dlight" if gpu else "unscheduled"
        base_us = None
        if level == "time":
            stage("measuring", f"the {kind} baseline")
            base = engine.baseline(wl_text, kind=kind)
            if base.ok and base.latency_us:
                base_us = base.latency_us
                engine.run_timeout_s = cut_seconds(base_us, cap_s=engine.run_timeout_s)
        given = None
        if script is not None:
            (given,) = engine.measure(wl_text, [to_trace_json(script)], level=level, use_cache=False)
            if not given.ok:
                raise ValueError(f"the script to improve does not pass {level}: {given.status}: {given.message}")
        tried, cands = [], []
        if use_model:
            stage("generating", f"{k} candidate(s)")
            try:
                cands = candidates(
                    workload, target, script, k=k, model_path=model_path, seed=seed, max_seconds=max_seconds
                )
            except FileNotFoundError as exc:
                log(f"model: {exc}")
        texts = [("model", t, g) for t, g in cands]
        if gpu:
            dl = dlight_script(wl_text, spec, name)
            if dl is not None:
                texts.append(("dlight", dl, None))
        if texts:
            stage("measuring", f"{len(texts)} script(s)")
            results = engine.measure(wl_text, [to_trace_json(t) for _s, t, _g in texts], level=level, use_cache=False)
            for (source, text, g), res in zip(texts, results):
                extra = {"statements": g.statements, "rejected": g.rejected, "stop": g.stop} if g else {}
                tried.append(_entry(source, text, res, **extra))
            _mark_slow(tried, base_us)
            model_ok = [c for c in tried if c["source"] == "model" and c["status"] == "ok"]
            if cands and not model_ok:  # cut the greedy script back to what passes
                fixed = repair(engine, wl_text, cands[0][1].body, level, result=results[0])
                if fixed.result.ok and fixed.body.strip():
                    tried.append(
                        _entry(
                            "model",
                            header(workload, spec) + fixed.body,
                            fixed.result,
                            statements=cands[0][1].statements - fixed.dropped,
                            rejected=0,
                            stop="repaired",
                        )
                    )
                    tried[-1]["message"] = f"the greedy script cut by {fixed.dropped} statement(s)"
                    _mark_slow(tried[-1:], base_us)
            if cands:
                n_ok = sum(c["status"] == "ok" for c in tried if c["source"] == "model")
                log(f"model: {n_ok} of {sum(c['source'] == 'model' for c in tried)} candidate(s) verified")
        best = _best(tried, given) if use_model else None  # --no-model: a search, raced against dlight
        note = ""
        # on a CPU the unscheduled program is what an answer must beat, as dlight on a GPU: a model
        # answer slower than it is no answer, and the search runs instead
        plain_us = base_us if not gpu else None
        if best is not None and best["source"] == "model" and plain_us and best["latency_us"] > plain_us * TIMING_NOISE:
            note = (
                f"every verified model candidate was slower than the unscheduled program "
                f"({best['latency_us']:.1f} us against {plain_us:.1f} us)"
            )
            best = None
        if best is None:
            model_tried = [c for c in tried if c["source"] == "model"]
            if not note:
                note = (
                    (
                        "no model candidate verified"
                        if not any(c["status"] == "ok" for c in model_tried)
                        else "no model candidate beat the given script"
                    )
                    if model_tried
                    else "no model"
                )
            note += f"; fell back to a MetaSchedule search of {search_trials} trials"
            log(note)
            stage("searching", f"{search_trials} trials")
            found = search(wl_text, spec, search_trials, n=max(1, k), engine=engine)
            if found:
                results = engine.measure(wl_text, [to_trace_json(t) for t in found], level=level, use_cache=False)
                for text, res in zip(found, results):
                    tried.append(_entry("search", text, res))
                _mark_slow(tried, base_us)
            best = _best([c for c in tried if c["source"] in ("search", "dlight")], given)
        elif best["source"] == "dlight" and any(c["source"] == "model" for c in tried):
            note = "dlight's schedule was faster than every model candidate"
        if (
            plain_us
            and (best is None or best["latency_us"] > plain_us * TIMING_NOISE)
            and (given is None or not given.latency_us or plain_us < given.latency_us)
        ):
            # nothing beats the program as written: the answer is no schedule at all
            best = {
                "source": "unscheduled",
                "script": "",
                "status": "ok",
                "latency_us": plain_us,
                "message": "the workload as written, without a schedule",
            }
            note = (
                note + "; " if note else ""
            ) + "nothing found beats the unscheduled program: the answer is no schedule"
        rec = Recommendation(
            script=None,
            verified=False,
            latency_us=None,
            source=best["source"] if best else "search",
            candidates_tried=len(tried),
            candidates=tried,
            note=note,
        )
        if given is not None:
            rec.given_latency_us = given.latency_us
        if base_us:
            rec.baseline, rec.baseline_kind = base_us, kind
            setattr(rec, f"{kind}_us", base_us)
        if best is None:
            rec.note += "; no verified schedule found"
            return rec
        rec.script = _with_header(best["script"], workload, spec)
        rec.verified = True
        rec.latency_us = best["latency_us"]
        if base_us and rec.latency_us:
            rec.speedup_vs_baseline = base_us / rec.latency_us
            setattr(rec, f"speedup_vs_{kind}", rec.speedup_vs_baseline)
        if given is not None and given.latency_us and rec.latency_us:
            rec.speedup_vs_given = given.latency_us / rec.latency_us
        rec.explanation = explanation(rec.script, workload, spec)
        return rec
    finally:
        engine.run_timeout_s = run_timeout_s
        if own:
            engine.close()


def statement_lines(body: str) -> list[str]:
    """The statements of a generated body, one per line (section headers belong to the next)."""
    from dragon_dsl.language.table import SECTIONS

    headers = {f"{name}:" for name in SECTIONS}
    lines, pending = [], ""
    for line in body.splitlines(keepends=True):
        if not line.strip() or line.strip() in headers:  # a blank line or `postproc:`
            pending += line
        else:
            lines.append(pending + line)
            pending = ""
    return lines


@dataclass
class Repair:
    body: str  # the longest prefix found that passes (the whole body when it does)
    result: Any  # the engine's Result for it
    first_result: Any  # the Result of the whole body
    dropped: int = 0  # statements cut from the end
    measured: int = 1  # engine measurements spent


def repair(engine, workload_text: str, body: str, level: str = "verify", result=None) -> Repair:
    """The compiler's last word on a generated body: measured as is, and when it fails (a build
    error, a numeric mismatch...), cut back to the longest statement prefix that passes, found by
    bisection. Every prefix the generator kept replays. On a CPU the empty prefix is the
    unscheduled program, which passes, so the answer always passes unless the workload itself
    does not. On a GPU a prefix builds only once its loops are bound to threads: the search starts
    at the prefix that ends with the last `bind`, and when even that fails, the body stays as it
    was (failing)."""
    from dragon_dsl import to_trace_json
    from dragon_model.data import CALL

    def measure(text):
        (res,) = engine.measure(workload_text, [to_trace_json(text)], level=level, use_cache=False)
        return res

    first = result if result is not None else measure(body)
    out = Repair(body=body, result=first, first_result=first, measured=int(result is None))
    if first.ok:
        return out
    lines = statement_lines(body)
    floor = 0
    if engine.target.is_gpu:
        binds = [i for i, line in enumerate(lines) if (m := CALL.search(line)) and m.group(1) == "bind"]
        if not binds:
            return out
        floor = binds[-1] + 1
        if floor >= len(lines):
            return out
    lo, hi, lo_res = floor, len(lines), None  # invariant: prefix hi fails; prefix lo passes (checked last)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        res = measure("".join(lines[:mid]))
        out.measured += 1
        if res.ok:
            lo, lo_res = mid, res
        else:
            hi = mid
    if lo_res is None:
        lo_res = measure("".join(lines[:lo]))
        out.measured += 1
        if not lo_res.ok:  # a GPU body whose bound prefix fails already: nothing to cut back to
            return out
    out.body, out.result, out.dropped = "".join(lines[:lo]), lo_res, len(lines) - lo
    return out


def _best(tried: list, given) -> dict | None:
    ok = [c for c in tried if c["status"] == "ok"]
    if given is not None and given.latency_us:
        ok = [c for c in ok if c["latency_us"] is not None and c["latency_us"] < given.latency_us]
    if not ok:
        return None
    return min(ok, key=lambda c: c["latency_us"] if c["latency_us"] is not None else float("inf"))


def _with_header(text: str, workload, spec) -> str:
    from dragon_dsl import from_trace_json, to_trace_json

    name = None if isinstance(workload, str) and "\n" in workload else Path(workload).name
    return from_trace_json(to_trace_json(text), workload=name, target=spec)


def explanation(script: str, workload, target) -> str | None:
    """The explanation graph from `dragon_dsl.explain`, when that module is installed."""
    try:
        from dragon_dsl.explain import explain
    except ImportError:
        return None
    try:
        return explain(script, workload, target)
    except Exception as exc:
        return f"# explanation unavailable: {type(exc).__name__}: {str(exc)[:200]}"


def search(workload_text: str, target_spec, trials: int, n: int = 4, engine=None) -> list[str]:
    """A budgeted MetaSchedule search through the measurement engine (its runner verifies every
    trial); its best distinct schedules as scripts, fastest first."""
    from dragon_dsl.engine import Engine, builder_and_runner
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.tuning import search_scripts
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(workload_text)
    own = engine is None
    engine = engine or Engine(target_spec, cache=False)
    try:
        return search_scripts(mod, tvm_target(target_spec), trials, n, *builder_and_runner(engine, workload=mod))
    finally:
        if own:
            engine.close()
