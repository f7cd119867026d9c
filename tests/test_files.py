"""dragon_dsl.language.files: the one atomic write (modes, newline, concurrent writers, crash leftovers)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from dragon_dsl.language.files import create_text, stray_temporaries, write_bytes, write_json, write_text, writer_pid


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_file_gets_the_mode_of_a_normal_file_and_a_trailing_newline(tmp_path):
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "a.txt", "abc")
        with open(tmp_path / "normal.txt", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644 == _mode(tmp_path / "normal.txt")
    assert (tmp_path / "a.txt").read_bytes() == b"abc\n"


def test_the_umask_is_honoured(tmp_path):
    old = os.umask(0o077)
    try:
        write_text(tmp_path / "private.txt", "x\n")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "private.txt") == 0o600


def test_an_existing_file_keeps_its_mode_and_text_is_not_doubled(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("old\n")
    os.chmod(path, 0o751)
    write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert _mode(path) == 0o751
    write_text(path, "")
    assert path.read_bytes() == b""  # an empty text stays empty


def test_json_and_bytes(tmp_path):
    write_json(tmp_path / "d.json", {"b": 1, "a": [1, 2]}, sort_keys=True)
    text = (tmp_path / "d.json").read_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert json.loads(text) == {"a": [1, 2], "b": 1} and text.index('"a"') < text.index('"b"')
    write_bytes(tmp_path / "raw", b"\x00\x01")
    assert (tmp_path / "raw").read_bytes() == b"\x00\x01"  # bytes are written as given


def test_no_temporary_file_is_left_behind_and_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.txt"
    write_text(path, "old")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_text(path, "new")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_concurrent_writers_of_one_path_each_leave_a_whole_file(tmp_path):
    """Eight processes write the same path 200 times each with distinct, long contents; every
    read in between sees one writer's whole content and no write fails on another's temp file."""
    target = tmp_path / "shared.json"
    script = textwrap.dedent(f"""
        import json, sys
        from dragon_dsl.language.files import write_json
        me = int(sys.argv[1])
        for i in range(200):
            write_json({str(target)!r}, {{"writer": me, "i": i, "pad": "x" * 20000}})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(k)]) for k in range(8)]
    seen = 0
    while any(p.poll() is None for p in procs):
        if target.exists():
            data = json.loads(target.read_text())
            assert len(data["pad"]) == 20000
            seen += 1
    assert [p.wait() for p in procs] == [0] * 8
    assert seen > 0
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]


def test_create_text_creates_once(tmp_path):
    path = tmp_path / "run.json"
    assert create_text(path, "first") is True
    assert create_text(path, "second") is False
    assert path.read_text() == "first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_stray_temporaries_are_those_of_dead_writers(tmp_path):
    dead = 2**22 + 12345  # above the default pid_max: no such process
    stray = tmp_path / f".w.json.1a2b3c4d.{dead}.tmp"
    legacy = tmp_path / f".v.json.{dead}.tmp"
    mine = tmp_path / f".x.json.1a2b3c4d.{os.getpid()}.tmp"
    for p in (stray, legacy, mine):
        p.write_text("{")
    assert writer_pid(stray) == dead and writer_pid(mine) == os.getpid() and writer_pid(tmp_path / "a.tmp") == -1
    assert sorted(stray_temporaries(tmp_path)) == sorted([stray, legacy])
