"""The decoder's settings tuned to what dlight and MetaSchedule write, and the rules that apply
them: tile caps and vector lengths (`TILE_CAPS`, `MAX_VECTOR`), the constant splits of the
training corpus and dlight's fixed reduction splits (`constant_splits`), dlight's GEMM layouts
and block layouts after `reindex` (`gemm_layouts`, `block_layouts`), its unit loops
(`unit_loops`), and `tensorize` by the intrinsics MetaSchedule's tensor-core space annotates
(`tensorize_rules`). The terms they are written in come from the instruction table
(`decoder_terms`)."""

from __future__ import annotations

import itertools
import json
import math

from dragon_model.decoder_terms import Env, any_of, call_rule, categorical_rule, lit, results_rule

MAX_TILE_N = 5


#: `max_innermost_factor` of a sampled tile: MetaSchedule's MultiLevelTiling and AddRFactor use 64,
#: its tensor-core tiling 4 (no other value is in either training corpus)
TILE_CAPS = {"gpu": (4, 64), "cpu": (64,)}


MAX_VECTOR = 64  # the longest loop the model may vectorize (MetaSchedule's llvm limit: 64)


#: the constant split factors GPU training labels write past a reduction loop's extent, dlight's
#: fixed thread counts: its GeneralReduction binds [None, 256] of the reduction to threadIdx.x
#: whatever its extent (a 3x3 pooling window's 9 iterations, a softmax row of 16), its Reduction
#: rule splits a reduction whose inner axis is spatial by [None, 16]. Its Reduction rule's
#: cross-thread split of an inner reduction never exceeds the extent (`suggest_threads_per_block`),
#: and nothing can rfactor a loop the padding cut off
DLIGHT_REDUCTION_SPLITS = (16, 256)


MAX_FACTORS = 6


MAX_CATEGORIES = 8  # sample_categorical's candidates (MetaSchedule's unroll steps: 4)


#: constant split shapes of models whose corpus did not record them: MetaSchedule's postprocessors
DEFAULT_SPLIT_SHAPES = ("None,k", "None,k,k")


#: at most this many factor combinations are listed per loop extent (else any seen factor per place)
MAX_COMBOS = 4096


def constant_splits(env: Env, inst, extra: dict, literals: dict | None) -> list[str]:
    """Constant splits in the shapes the training corpus writes (`data.split_shape`: MetaSchedule's
    [None, k] and [None, k, j], dlight's [None, 1, 16, 4] and cooperative fetch [16, 8, None, 2]),
    of the integer factors it writes. A loop a constant split made is split again only by factors
    whose product fits its extent (dlight splits a 4-iteration loop by [None, 2]; a derailed model
    chained [None, 64, 64] splits into kernels of billions of predicated iterations). On CPUs every
    split fits its loop (all 47 constant splits of the llvm corpus do); GPU cooperative fetches
    may exceed the fused loop they split (13 of 90 in the CUDA corpus). A GPU loop that drives
    reduction axes only is split by constants that fit it, by dlight's fixed [None, 16] or
    [None, 256] (DLIGHT_REDUCTION_SPLITS), or by a sampled thread count: of the 8,403 constant
    splits of reduction loops in the 11,062 distinct CUDA fine-tuning labels, 308 exceed their
    loop, all of them dlight's fixed splits (pooling windows, depthwise kernels, short softmax
    rows). A CUDA model split the reductions of held-out row and column sums of 64-768
    elements by [None, 1024] (the row sums' form at their usual lengths); the rfactor that form
    needs was then refused (the padding cuts its loop off), and the answers derailed into one
    thread per row or column, 10-16x slower than dlight."""
    res = inst.results
    seen = literals.get("split_factors") if literals is not None else None
    shapes = (literals or {}).get("split_shapes") or DEFAULT_SPLIT_SHAPES
    if not env.loops or (seen is not None and not seen):
        return []
    cats = categorical_rule(env)  # a sampled thread count (cross-thread reductions: [None, v4])
    if seen is None:
        extra["cfactor"] = "([1-9] [0-9]{0,3}" + (f" | {cats}" if cats else "") + ")"
    else:
        extra["cfactor"] = any_of([lit(str(f)) for f in seen] + ([cats] if cats else []))
    recorded = bool((literals or {}).get("split_shapes"))  # a model whose corpus recorded its shapes
    groups: dict = {}  # (extent (None: any factors), a GPU reduction loop) -> loops
    for lp, extent in env.loops.items():
        if lp in env.split_loops and not recorded:
            continue  # earlier models never split a split loop: their decoding stays as it was
        reducing = (
            lp in env.reduction_loops
            and lp not in env.split_loops
            and recorded
            and seen is not None
            and isinstance(extent, int)
        )
        bounded = lp in env.split_loops or (not env.gpu and seen is not None) or reducing
        if bounded and (seen is None or not isinstance(extent, int)):
            continue  # nothing says which constants fit it
        groups.setdefault((extent if bounded else None, reducing), []).append(lp)
    out = []
    for (extent, reducing), group in sorted(
        groups.items(), key=lambda g: (-1 if g[0][0] is None else g[0][0], g[0][1])
    ):
        fitting = seen if extent is None else [f for f in seen if f <= extent]
        # a reduction loop may also take dlight's own fixed splits, [None, 16] and [None, 256]
        general = [(f,) for f in DLIGHT_REDUCTION_SPLITS if reducing and f in seen]
        for shape in shapes:
            places = shape.split(",")
            k = places.count("k")
            combos = None
            if extent is not None and len(fitting) ** k <= MAX_COMBOS:
                combos = [c for c in itertools.product(fitting, repeat=k) if math.prod(c) <= extent]
                combos += [c for c in general if shape == "None,k" and c not in combos]
            if combos is None:  # a seen factor (that fits the loop on its own) in each place
                rule = "cfactor"
                if extent is not None:
                    rule = (
                        extra.setdefault(f"cfactor{extent}", any_of(lit(str(f)) for f in fitting))
                        and f"cfactor{extent}"
                    )
                forms = ['"[" ' + ' ", " '.join(lit("None") if p == "None" else rule for p in places) + ' "]"']
            else:
                forms = [
                    lit("[" + ", ".join("None" if p == "None" else str(next(it)) for p in places) + "]")
                    for c in combos
                    for it in [iter(c)]
                ]
            if reducing and cats:  # a sampled thread count in each place (MetaSchedule's cross-thread reduction)
                forms.append('"[" ' + ' ", " '.join(lit("None") if p == "None" else cats for p in places) + ' "]"')
            if not forms:
                continue
            factors = any_of(forms)
            call = call_rule(env, inst, {"loop": any_of(lit(lp) for lp in group), "factors": factors})
            if call:
                out.append(results_rule(env, res.kind, len(places)) + call)
    return out


#: the annotations whose string values name the intrinsic MetaSchedule's RewriteTensorize applies
TENSORIZE_KEYS = ("meta_schedule.auto_tensorize", "meta_schedule.auto_tensorize_init")


def tensorize_rules(env: Env, inst, literals: dict | None) -> list[str]:
    """tensorize of a live block by an intrinsic the training corpus annotates blocks with (the
    postprocessing of every tensor-core label: get_sblock, unannotate auto_tensorize, tensorize by
    the annotation's value). No intrinsic without literals: a name must be registered in TVM, and
    an untrained guess is not."""
    annotations = (literals or {}).get("annotations", {})
    intrins = sorted({v for key in TENSORIZE_KEYS for v in annotations.get(key, {}).get("str", [])})
    if not intrins or not env.blocks:
        return []
    call = call_rule(env, inst, {"target": "name_block", "tensor_intrin": any_of(lit(json.dumps(n)) for n in intrins)})
    return [call] if call else []


def _dlight_reindexed(env: Env) -> dict:
    """Live reindex blocks of a live GEMM-like block whose lambdas are known -> (that block, buffer)."""
    return {
        r: (m, buf)
        for r, (m, buf) in env.reindexed.items()
        if r in env.blocks and m in env.blocks and buf in env.gemm_layouts.get(m, {})
    }


def gemm_layouts(env: Env, inst) -> list[str]:
    """transform_layout where a GEMM-like block has been reindexed (dlight's normal form of matmuls
    and convolutions): a reindex block's buffer takes only the lambda dlight's analysis gives (A and
    B at `write(0)`, C at `read(0)`), once; other blocks, as any block. The model wrote these
    lambdas wrong (`(0, i1 * 56 + i2, i3)` for `(0, i2 * 56 + i3, i1)`) in 3 of 5 answers for a
    held-out 1x1 convolution, which then stopped; dlight's analysis reproduces all 1,000 such
    statements of 250 dlight training scripts, and no other training script transforms a reindex
    block's layout."""
    known = _dlight_reindexed(env)
    out = []
    for r, (m, buf) in known.items():
        if r in env.transformed:
            continue
        at = "read(0)" if buf == "write(0)" else "write(0)"
        out.append(lit(inst.name + "(") + " " + lit(f"{r}, {at}, {env.gemm_layouts[m][buf]})"))
    others = [b for b in env.blocks if b not in known]
    call = call_rule(env, inst, {"block": any_of(lit(b) for b in others)}) if others else None
    return out + ([call] if call else [])


def unit_loops(env: Env, inst) -> list[str]:
    """add_unit_loop of a block (no training label takes a loop: dlight's rules take blocks, and
    MetaSchedule's spaces never write it) once, or twice where dlight's GEMV analysis accepts the
    block (`inspect.is_gemv`): its GEMV rule alone gives one block two unit loops (the vector
    chunk's and the batch's); its Reduction, GeneralReduction and Fallback rules add one, and
    MetaSchedule's spaces none. Without the rule the CUDA model wrote the GEMV normal form for
    row sums of one input, then a GEMV's two rfactors: 0.01-0.3x dlight's cross-thread reduction."""
    blocks = [b for b in env.blocks if env.unit_looped.get(b, 0) == 0 or (env.unit_looped[b] == 1 and b in env.gemv)]
    call = call_rule(env, inst, {"target": any_of(lit(b) for b in blocks)}) if blocks else None
    return [results_rule(env, inst.results.kind, inst.results.count) + call] if call else []


def block_layouts(env: Env, inst, extra: dict) -> list[str]:
    """transform_block_layout of each block whose iterators are known: a lambda of exactly one
    parameter per iterator, named as the training labels name them (iterator names of the live
    blocks: dlight names a decode GEMV's reduction `lambda v_i, v_k` after the iterators of the
    blocks it came from; `i0, i1, ...`; or typed `(iters_0: int64, ...)`), whose body refers to such
    names and sampled values only, with integer casts as its only calls. Without it a CUDA
    model wrote lambdas of 2 parameters for a block of 4 iterators and bodies naming no parameter
    (18 statements the checker or TVM rejected in one answer, which then ran out of retries)."""
    pool = list(dict.fromkeys(nm for it in env.block_iters.values() if it for nm in it))
    if not pool:
        return []
    extra["ixv_pool_name"] = " | ".join(lit(nm) for nm in pool)
    _index_rules("ixv_pool", pool + list(env.values), extra)
    out = []
    # a GEMM-like block whose reindexed buffers took dlight's layouts takes dlight's own lambda
    # (`gemm_layouts`): the block's iterators fused as its buffers were, once
    dlight = {m for r, (m, _b) in _dlight_reindexed(env).items() if r in env.transformed}
    for m in dlight:
        if m not in env.relaid:
            out.append(lit(inst.name + "(") + " " + lit(f"{m}, {env.gemm_layouts[m]['block']})"))
    for block, iters in env.block_iters.items():
        if not iters or block not in env.blocks or block in dlight:
            continue
        n = len(iters)
        ints, typed = [f"i{k}" for k in range(n)], [f"iters_{k}" for k in range(n)]
        for key, names in ((f"ixv_i{n}", ints), (f"ixv_iters{n}", typed)):
            if key not in extra:
                _index_rules(key, names + list(env.values), extra)
        forms = [
            ('"lambda " ' + ' ", " '.join(["ixv_pool_name"] * n), "ixv_pool"),
            (lit("lambda " + ", ".join(ints)), f"ixv_i{n}"),
            (lit("lambda (" + ", ".join(f"{nm}: int64" for nm in typed) + ")"), f"ixv_iters{n}"),
        ]
        for head, body in forms:
            call = call_rule(env, inst, {"block": lit(block), "index_map": f'{head} ": " {body}'})
            if call:
                out.append(call)
    return out


def _index_rules(key: str, names: list, extra: dict) -> None:
    """The rule KEY (and its parts, into EXTRA): an index expression (STATIC_RULES' `ix`) whose
    variables are NAMES only, and whose only calls are integer casts."""
    atom = " | ".join(lit(nm) for nm in dict.fromkeys(names))
    extra[key] = f'{key}_p ( ( " + " | " - " ) {key}_p )*'
    extra[f"{key}_p"] = f'{key}_u ( ( " * " | " // " | " % " ) {key}_u )*'
    extra[f"{key}_u"] = f'"-" {key}_u | {key}_a'
    # the only call in the training labels' index maps: int64(0)
    extra[f"{key}_a"] = f'{atom} | uint | "(" {key} ( ", " {key} )* ")" | ("int64" | "int32") "(" {key} ")"'
