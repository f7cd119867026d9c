"""The zoo's records, the split manifest and the split rule: no torch, no TVM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dragon_dsl.corpus.networks.__main__ import main
from dragon_dsl.corpus.networks.registry import NetworkError, Variant, lookup
from dragon_dsl.corpus.networks.splits import SPLITS, assign, make_manifest, read_manifest, split_of_networks
from dragon_dsl.corpus.networks.zoo import NETWORKS, full_run

MANIFEST = Path(__file__).resolve().parents[2] / "data" / "tasks" / "splits.json"


def test_the_zoo_has_forty_networks_of_every_kind_without_toys():
    networks = full_run()
    assert len(networks) >= 40 and not any(n.toy for n in networks)
    assert {n.kind for n in networks} == {"lm", "encoder", "conv"}
    assert len({n.name for n in networks}) == len(networks)
    dtypes = {v.dtype for n in networks for v in n.variants}
    quants = {v.quant for n in networks for v in n.variants}
    assert dtypes == {"fp32", "fp16", "bf16"} and quants == {"", "int8", "int4"}
    assert {"prefill", "decode"} <= {v.mode for n in networks for v in n.variants}


@pytest.mark.parametrize("name", ["lama2-7b", "resnet", ""])
def test_an_unknown_network_is_an_error_naming_the_known_ones(name):
    with pytest.raises(NetworkError, match="unknown network") as info:
        lookup(NETWORKS, [name])
    assert "llama2-7b" in str(info.value)


def test_the_command_refuses_an_unknown_network_clearly(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "out"), "--networks", "lama2-7b", "--in-process"]) == 2
    err = capsys.readouterr().err
    assert "unknown network 'lama2-7b' (did you mean 'llama2-7b'?)" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists(), "nothing is written for a bad request"


def test_list_names_every_network(capsys):
    assert main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(NETWORKS)


@pytest.mark.parametrize(
    "variant, name",
    [
        (Variant("decode", 8, 511, "fp16"), "decode-b8-c511-fp16"),
        (Variant("prefill", 1, 256, "fp16", "int8"), "prefill-b1-s256-fp16-int8"),
        (Variant("seq2seq", 4, 512, "fp16", decoder=1), "seq2seq-b4-s512-d1-fp16"),
        (Variant("image", 1, image=224), "image-b1-i224-fp32"),
    ],
)
def test_variant_names(variant, name):
    assert variant.name == name


@pytest.mark.parametrize(
    "bad", [dict(mode="train", batch=1), dict(mode="image", batch=0), dict(mode="image", batch=1, dtype="fp8")]
)
def test_a_bad_variant_is_refused(bad):
    with pytest.raises(NetworkError):
        Variant(**bad)


def test_the_committed_manifest_is_the_zoo_s_and_holds_every_kind_out():
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert data == make_manifest(full_run()), "regenerate with --make-splits data/tasks/splits.json"
    split_of = read_manifest(MANIFEST)
    assert sorted(split_of) == sorted(n.name for n in full_run())
    for split in ("validation", "test"):
        held = [NETWORKS[name] for name, s in split_of.items() if s == split]
        assert {n.kind for n in held} == {"lm", "encoder", "conv"}, split
        assert 0.10 <= len(held) / len(split_of) <= 0.20
        for kind in ("lm", "encoder", "conv"):  # families spread: no family twice in a held-out split's kind
            families = [n.family for n in held if n.kind == kind]
            assert len(families) == len(set(families)), (split, kind, families)


SPLIT_OF = {"a": "train", "b": "train", "v": "validation", "t": "test"}


@pytest.mark.parametrize(
    "networks, split",
    [
        (["a"], "train"),
        (["a", "b"], "train"),
        (["a", "v"], "validation"),
        (["v"], "validation"),
        (["a", "t"], "test"),
        (["v", "t"], "test"),
        (["t", "a", "v"], "test"),
    ],
)
def test_a_task_is_train_only_when_no_network_of_it_is_held_out(networks, split):
    assert assign([{"id": "x", "networks": networks}], SPLIT_OF) == {"x": split}


def test_a_task_of_a_network_the_manifest_does_not_name_is_an_error():
    with pytest.raises(NetworkError, match="does not name: zz"):
        assign([{"id": "x", "networks": ["a", "zz"]}], SPLIT_OF)


@pytest.mark.parametrize(
    "groups, message",
    [({"train": ["a"], "test": ["a"]}, "in both train and test"), ({"holdout": ["a"]}, "unknown split")],
)
def test_a_bad_manifest_is_an_error(groups, message):
    with pytest.raises(NetworkError, match=message):
        split_of_networks(groups)


def test_an_unreadable_manifest_is_an_error(tmp_path):
    path = tmp_path / "splits.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(NetworkError, match="not a split manifest"):
        read_manifest(path)
    assert SPLITS == ("train", "validation", "test")
