"""A toy corpus in the real corpus's row format, from the fixture traces of a source checkout.

    python -m dragon_model.toy_corpus OUT_DIR [--target llvm|cuda|all] [--fixtures DIR]

The fixtures are a source checkout's `tests/data` (its `traces/design_spaces.jsonl`,
`traces/sampled.jsonl` and `workloads/*.tvmscript`), found beside the package when it runs from a
checkout; an installed package has no tests, so `--fixtures` (`build(..., fixtures=DIR)`) names
them there.

Until `dragon_dsl/corpus/build.py` has written a real corpus, this is what the
training commands, the tests and CI run on. Rows are the fixtures' MetaSchedule
design spaces and post-processed samples (tensorizing hand-written traces are
left out: they need intrinsics registered in every process). Families are
operator kinds named from the fixture workloads; a few whole families are held out
(`test_family`), a few workloads of training families are `test_shape`.

The fixtures carry no measurements, so `latency_us` and friends are null and an
improvement row pairs two schedules of one workload without knowing which is
faster (the real corpus orders its pairs by measured latency).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

#: the fixtures of the checkout this module runs from (absent from an installed wheel)
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "data"

#: fixture workload -> operator family
FAMILY_OF = {
    "matmul_64": "matmul",
    "matmul_31x31x17": "matmul",
    "matmul_relu_64": "matmul_epilogue",
    "matmul_bias_32": "matmul_epilogue",
    "gmm_0": "batch_matmul",
    "bmm_4x32": "batch_matmul",
    "dense_u8i8_16x32x16": "matmul",
    "tbg_0": "batch_matmul",
    "c1d_0": "conv1d",
    "c2d_0": "conv2d",
    "c2d_1": "conv2d",
    "conv2d_nchw_16": "conv2d",
    "c3d_3": "conv3d",
    "dep_3": "depthwise_conv2d",
    "dil_3": "conv2d_dilated",
    "grp_3": "conv2d_grouped",
    "t2d_0": "conv2d_transpose",
    "cap_3": "capsule_conv2d",
    "cbr_3": "conv2d_bn_relu",
    "conv2d_nchw_bias_bn_relu_16": "conv2d_bn_relu",
    "nrm_0": "norm",
    "sfm_0": "softmax",
    "sfm_1": "softmax",
    "softmax_64": "softmax",
    "max_pool2d_16": "pool",
    "pool_chain_1d": "pool",
    "row_sum_64x256": "reduction",
    "mean_center_64x128": "reduction",
    "ew_add_relu_128x64": "elementwise",
    "transpose_64x32": "permute",
    "gather_64": "elementwise",
    "inplace_add_64": "elementwise",
    "two_consumers_32": "elementwise",
}
#: families never seen in training
HELD_OUT_FAMILIES = ("depthwise_conv2d", "norm", "conv2d_transpose", "reduction")
#: workloads of training families kept for the shape test
HELD_OUT_SHAPES = ("sfm_1", "c2d_1", "matmul_31x31x17")


def split_of(workload: str) -> str:
    if FAMILY_OF.get(workload, "other") in HELD_OUT_FAMILIES:
        return "test_family"
    if workload in HELD_OUT_SHAPES:
        return "test_shape"
    digest = int(hashlib.sha256(workload.encode()).hexdigest(), 16)
    return "valid" if digest % 10 == 0 else "train"


def fixtures_folder(fixtures=None) -> Path:
    """FIXTURES, or the folder given; a ValueError that says what is missing when it has no traces."""
    folder = Path(fixtures) if fixtures is not None else FIXTURES
    if not (folder / "traces" / "sampled.jsonl").is_file():
        where = "" if fixtures is not None else " (an installed package has no tests/data: name it with --fixtures)"
        raise ValueError(f"{folder}: no traces/sampled.jsonl of the test fixtures{where}")
    return folder


def build(out_dir, target: str = "llvm", fixtures=None) -> dict:
    """Write `corpus.jsonl` and `manifest.json` into out_dir from the fixtures (a checkout's
    tests/data by default); returns the manifest."""
    from dragon_dsl import from_trace_json

    folder = fixtures_folder(fixtures)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_workload: dict[tuple, list] = {}
    for name in ("design_spaces", "sampled"):
        with open(folder / "traces" / f"{name}.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                kind = "llvm" if isinstance(rec["target"], dict) else "cuda"
                if target != "all" and kind != target:
                    continue
                by_workload.setdefault((rec["workload"], json.dumps(rec["target"], sort_keys=True)), []).append(rec)
    rows = []
    for (wl, target_json), recs in sorted(by_workload.items()):
        wl_text = (folder / "workloads" / f"{wl}.tvmscript").read_text(encoding="utf-8")
        wl_hash = hashlib.sha256(wl_text.encode()).hexdigest()[:16]
        scripts = []
        for rec in recs:
            text = from_trace_json(rec["trace"], workload=f"{wl}.tvmscript", target=rec["target"])
            scripts.append((rec, text))
        base = {
            "family": FAMILY_OF.get(wl, "other"),
            "workload": wl,
            "workload_hash": wl_hash,
            "params": json.dumps({"fixture": wl}),
            "target": target_json,
            "workload_text": wl_text,
            "split": split_of(wl),
            "latency_us": None,
            "unscheduled_us": None,
            "dlight_us": None,
        }
        for i, (rec, text) in enumerate(scripts):
            rows.append(
                dict(
                    base,
                    id=f"{wl}-{hashlib.sha256(target_json.encode()).hexdigest()[:6]}-c{i}",
                    task="construction",
                    prompt_script=None,
                    prompt_latency_us=None,
                    script=text,
                    trace=json.dumps(rec["trace"]),
                )
            )
        # improvement: each post-processed sample, given another schedule of the same workload
        sampled = [s for s in scripts if s[0]["source"] == "sampled"]
        for i, (rec, text) in enumerate(sampled):
            other = scripts[(scripts.index((rec, text)) + 1) % len(scripts)]
            if other[1] == text:
                continue
            rows.append(
                dict(
                    base,
                    id=f"{wl}-{hashlib.sha256(target_json.encode()).hexdigest()[:6]}-i{i}",
                    task="improvement",
                    prompt_script=other[1],
                    prompt_latency_us=None,
                    script=text,
                    trace=json.dumps(rec["trace"]),
                )
            )
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    counts: dict = {}
    for r in rows:
        key = f"{r['split']}/{r['task']}"
        counts[key] = counts.get(key, 0) + 1
    manifest = {
        "kind": "toy",
        "source": "tests/data/traces (design_spaces, sampled)",
        "target": target,
        "rows": len(rows),
        "counts": dict(sorted(counts.items())),
        "held_out_families": list(HELD_OUT_FAMILIES),
        "held_out_shapes": list(HELD_OUT_SHAPES),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragon_model.toy_corpus", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--target", choices=("llvm", "cuda", "all"), default="llvm")
    p.add_argument("--fixtures", help="a source checkout's tests/data (default: the checkout this runs from)")
    args = p.parse_args(argv)
    try:
        manifest = build(args.out_dir, args.target, args.fixtures)
    except ValueError as e:
        p.error(str(e))
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
