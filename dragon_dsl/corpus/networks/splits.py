"""Train / validation / test by network: the manifest (`data/tasks/splits.json`) that holds whole networks
out, and the rule that gives every task its split.

The manifest: within each kind of network (language model, encoder, conv net), networks are ordered by
the SHA-256 of their name; test takes the first ~15% of them (at least one), choosing a network of a
family not yet in test while one is left, then validation the same way, and train the rest. So the
choice is deterministic, every kind is in every split, and families spread over the splits.

The rule (`assign`): a task is test if any network it occurs in is a test network, else validation if
any is a validation network, else train. A task of a held-out network therefore never counts as
seen, even when a training network has it too: test and validation are unseen by construction.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from dragon_dsl.corpus.networks.registry import KINDS, NetworkError

SPLITS = ("train", "validation", "test")
HELD_OUT = (("test", 0.15), ("validation", 0.15))  # taken in this order, each a fraction of a kind's networks
RULE = "a task is test if any of its networks is in test, else validation if any is in validation, else train"


def make_manifest(networks) -> dict:
    """The manifest of NETWORKS (zoo records, toys excluded by the caller), as `data/tasks/splits.json`."""
    chosen: dict = {split: [] for split in SPLITS}
    for kind in KINDS:
        group = sorted((n for n in networks if n.kind == kind), key=lambda n: _digest(n.name))
        for split, fraction in HELD_OUT:
            count = max(1, round(fraction * len(group))) if len(group) > 2 else 0
            for _ in range(count):
                taken = {n.family for n in chosen[split] if n.kind == kind}
                pick = next((n for n in group if n.family not in taken), group[0])
                chosen[split].append(pick)
                group.remove(pick)
        chosen["train"] += group
    return {
        "how": "per kind, networks ordered by sha256(name); test then validation take ~15% each (at least one), "
        "a family not yet in that split first; train the rest",
        "rule": RULE,
        "networks": {split: sorted(n.name for n in chosen[split]) for split in SPLITS},
    }


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def read_manifest(path) -> dict:
    """{network: split} of a manifest file; a network in two splits or a split of another name is an error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        groups = data["networks"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NetworkError(f"{path}: not a split manifest ({exc})") from None
    return split_of_networks(groups, where=str(path))


def split_of_networks(groups: dict, where: str = "manifest") -> dict:
    unknown = sorted(set(groups) - set(SPLITS))
    if unknown:
        raise NetworkError(f"{where}: unknown split(s) {', '.join(unknown)}; the splits are {', '.join(SPLITS)}")
    split_of: dict = {}
    for split in SPLITS:
        for name in groups.get(split, []):
            if name in split_of:
                raise NetworkError(f"{where}: network {name!r} is in both {split_of[name]} and {split}")
            split_of[name] = split
    return split_of


def assign(tasks, split_of: dict) -> dict:
    """{task id: split} for TASKS (merged records with "id" and "networks") under the rule above. A task
    whose networks include one the manifest does not name is an error: its split would be a guess."""
    order = {split: i for i, split in enumerate(SPLITS)}
    out: dict = {}
    for task in tasks:
        missing = [n for n in task["networks"] if n not in split_of]
        if missing:
            raise NetworkError(
                f"task {task['id']} occurs in network(s) the manifest does not name: {', '.join(sorted(missing))}"
            )
        if not task["networks"]:
            raise NetworkError(f"task {task['id']} names no network")
        out[task["id"]] = max((split_of[n] for n in task["networks"]), key=order.__getitem__)
    return out
