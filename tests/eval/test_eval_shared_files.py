"""Shards of one evaluation merge their JSON caches under a lock: nothing written is lost."""

import json
import multiprocessing

from dragon_dsl.eval.methods import WallTimes, update_json


def _writer(path, who, n):
    walls = WallTimes(path)
    for i in range(n):
        walls.resolve(f"{who}-{i}", float(i), fresh=True)


def test_concurrent_writers_keep_every_key(tmp_path):
    path = tmp_path / "cache" / "wall_times.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    data = json.loads(path.read_text())
    assert len(data) == 100 and data["3-24"] == 24.0


def test_update_json_merges_and_returns_the_whole_object(tmp_path):
    path = tmp_path / "v.json"
    assert update_json(path, {"a": 1}) == {"a": 1}
    assert update_json(path, {"b": 2}) == {"a": 1, "b": 2}
    walls = WallTimes(path)
    assert walls.resolve("a", 5.0, fresh=False) == 1  # a stored time stands for cached work
    assert walls.resolve("a", 5.0, fresh=True) == 5.0
