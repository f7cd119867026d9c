"""The command line of supervised training (`add_arguments`: `dragon train sft` and
`python -m dragon_model.train`)."""

from __future__ import annotations

import argparse


def _task_list(text: str) -> tuple:
    """`--renamed-tasks`: comma-separated task names."""
    from dragon_model.data import TASKS

    tasks = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks:
        raise argparse.ArgumentTypeError(f"{bad[0] if bad else text!r}: not a task ({', '.join(TASKS)})")
    return tasks


def add_arguments(p: argparse.ArgumentParser) -> None:
    from dragon_model.train import SIZES

    p.add_argument(
        "corpus", help="corpus folder (JSON Lines, also xz-compressed / Parquet / saved dataset, with manifest.json)"
    )
    p.add_argument("-o", "--output", required=True, help="folder for the trained model")
    p.add_argument("--target", default="llvm", help="target kind of the rows to train on (llvm, cuda)")
    p.add_argument("--size", choices=sorted(SIZES), default="small", help="random-init model size")
    p.add_argument("--base", help="a local HF causal LM to fine-tune instead")
    p.add_argument("--lora", action="store_true", help="with --base: train LoRA adapters (peft)")
    p.add_argument("--epochs", type=float, default=3.0, help="passes over the training rows (default 3)")
    p.add_argument(
        "--max-steps", type=int, default=-1, help="stop after this many optimizer steps (default: --epochs decides)"
    )
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate (default 1e-3)")
    p.add_argument("--batch-size", type=int, default=4, help="rows per device batch (default 4)")
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step (default 1)")
    p.add_argument(
        "--max-length", type=int, default=4096, help="tokens per row at most; longer rows are left out (default 4096)"
    )
    p.add_argument("--limit", type=int, default=0, help="use only the first N training rows (toy runs)")
    p.add_argument(
        "--save-dtype",
        choices=("float32", "float16", "bfloat16"),
        default="float32",
        help="the saved weights' data type (default float32)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of initialisation and data order (default 0)")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=0.0,
        help="stop training after this many seconds (counted from the start, data loading included)",
    )
    p.add_argument(
        "--tokenizer",
        choices=("compact", "spelled"),
        default="compact",
        help="compact: names and frequent integers are one token each (1.56x fewer tokens on CUDA scripts); "
        "spelled: digit by digit, as the first-generation weights",
    )
    p.add_argument(
        "--keep-best",
        action="store_true",
        help="evaluate on the valid split after every epoch and keep the best epoch's weights",
    )
    p.add_argument(
        "--renamed-copies",
        action="store_true",
        help="train on each row of --renamed-tasks twice, the second time with its blocks and allocated "
        "buffers renamed at random, so that names stop being a cue for a schedule",
    )
    p.add_argument(
        "--renamed-seed",
        type=int,
        default=2026,
        help="with --renamed-copies: the seed the new names are drawn from (default 2026); train one epoch "
        "at a time with another seed each for new names every epoch",
    )
    p.add_argument(
        "--renamed-tasks",
        type=_task_list,
        default=("construction",),
        help="with --renamed-copies: the tasks whose rows get a copy, comma-separated "
        "(construction, improvement; default construction)",
    )
    p.add_argument(
        "--canonical-names",
        nargs="?",
        const=True,
        default=False,
        choices=["all"],
        help="train on every row under canonical block and buffer names (q0, q1, ... in the order the "
        "prompt lists them); with 'all', every name the workload's author chose (buffers, blocks, "
        "variables, numbered by role); the model then reads every workload under them (dragon_model.json)",
    )
