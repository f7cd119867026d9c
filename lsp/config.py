"""Settings: section `dragon` of the client's configuration.

They arrive three ways: `initializationOptions` (`{"settings": {...}}`), the client's
answer to `workspace/configuration` (section "dragon"), and `workspace/didChangeConfiguration`
(`{"dragon": {...}}`, or nothing, and the server asks again). The VS Code extension sends
exactly these keys (vscode-extension/src/settings.ts):

    {
      "target": "",                      # a tag ("nvidia/nvidia-h100"), a kind ("llvm", "cuda") or a JSON object
                                         #   (also as a string); empty: the script's header, else llvm
      "device": "",                      # "local", "cpu" (target llvm on this machine), "rpc" (through the
                                         #   tracker) or "rpc://HOST:PORT/KEY"; empty: the tracker when
                                         #   trackerAddress is set, else this machine
      "trackerAddress": "",              # "HOST:PORT" or "HOST:PORT/KEY" of a TVM RPC tracker (key: "dragon")
      "modelPath": "",                   # the schedule model (dragon_model); without it, a short search
      "timeouts": {"replay": 30, "build": 120, "measure": 300, "suggest": 120}   # seconds
    }

and the server also reads (other clients, or `dragon.*` entries a VS Code user writes by hand):

    {
      "workload": "",                    # a workload file that overrides every script's header
      "checkOnSave": "verify",           # off, replay, build, verify or time
      "debounceMs": 30,                  # syntax and type diagnostics after a change
      "replayDebounceMs": 300,           # replay on the workload after a change
      "suggest": {"trials": 16, "candidates": 3, "builder": "auto"}
    }

An empty string means "unset": the default, with no warning. A bad value is ignored and
reported (`Settings.problems`); so is an unknown key, except the extension's own
(`pythonPath`, `serverPath`, `serverArgs`, `trace`), which only say how to start the server.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

CHECK_LEVELS = ("off", "replay", "build", "verify", "time")

#: The device key a tracker address without one uses (`rpc_server --key dragon`).
DEFAULT_RPC_KEY = "dragon"

_TRACKER = re.compile(r"([^:/\s]+):(\d{1,5})(?:/([^/\s]+))?")
_RPC_DEVICE = re.compile(r"rpc://[^:/\s]+:\d{1,5}/[^/\s]+")


class SettingsError(ValueError):
    """Settings that cannot work together (the message is for the user)."""


@dataclass(frozen=True)
class Settings:
    target: Any = None  # a tag or kind string, a target dict, or None (the script's header, else llvm)
    device: str | None = None  # None: automatic
    tracker_address: str | None = None
    workload: str | None = None
    model_path: str | None = None
    check_on_save: str = "verify"
    debounce_ms: float = 30.0
    replay_debounce_ms: float = 300.0
    replay_timeout: float = 30.0
    build_timeout: float = 120.0
    measure_timeout: float = 300.0
    suggest_timeout: float = 120.0
    suggest_trials: int = 16
    suggest_candidates: int = 3
    suggest_builder: str = "auto"
    problems: tuple = field(default_factory=tuple)  # settings that were ignored, and why

    def engine_device(self) -> str:
        """The measurement engine's device string: "local" or "rpc://HOST:PORT/KEY".

        Raises SettingsError when the device is "rpc" and no tracker address is set."""
        if self.device is not None and self.device.startswith("rpc://"):
            return self.device
        if self.device in ("local", "cpu"):
            return "local"
        if self.tracker_address is not None:
            return tracker_device(self.tracker_address)
        if self.device == "rpc":
            raise SettingsError(
                'dragon.device is "rpc" but dragon.trackerAddress is empty: set it to HOST:PORT '
                "(or HOST:PORT/KEY) of a TVM RPC tracker"
            )
        return "local"

    def target_for(self, header_target) -> Any:
        """The target to build for: the setting, else the script's header, else llvm ("cpu": always llvm)."""
        if self.device == "cpu":
            llvm = self.target == "llvm" or (isinstance(self.target, dict) and self.target.get("kind") == "llvm")
            return self.target if llvm else "llvm"
        if self.target is not None:
            return self.target
        return header_target if header_target is not None else "llvm"

    def summary(self) -> dict:
        """The settings in force, in the client's words (plain JSON)."""
        try:
            device = self.engine_device()
        except SettingsError as exc:
            device = f"invalid: {exc}"
        return {
            "target": self.target,
            "device": self.device or "",
            "engineDevice": device,
            "trackerAddress": self.tracker_address or "",
            "modelPath": self.model_path or "",
            "workload": self.workload or "",
            "checkOnSave": self.check_on_save,
            "debounceMs": self.debounce_ms,
            "replayDebounceMs": self.replay_debounce_ms,
            "timeouts": {k: getattr(self, a) for k, a in _TIMEOUTS.items()},
            "suggest": {k: getattr(self, a) for k, a in _SUGGEST.items()},
        }


def tracker_device(address: str) -> str:
    """ "HOST:PORT" or "HOST:PORT/KEY" -> "rpc://HOST:PORT/KEY" (key "dragon" when none is given)."""
    m = _TRACKER.fullmatch(address)
    if m is None:
        raise SettingsError(f"dragon.trackerAddress {address!r}: expected HOST:PORT or HOST:PORT/KEY")
    return f"rpc://{m.group(1)}:{m.group(2)}/{m.group(3) or DEFAULT_RPC_KEY}"


_FIELDS = {
    "target": "target",
    "device": "device",
    "trackerAddress": "tracker_address",
    "workload": "workload",
    "modelPath": "model_path",
    "checkOnSave": "check_on_save",
    "debounceMs": "debounce_ms",
    "replayDebounceMs": "replay_debounce_ms",
}
_TIMEOUTS = {
    "replay": "replay_timeout",
    "build": "build_timeout",
    "measure": "measure_timeout",
    "suggest": "suggest_timeout",
}
_SUGGEST = {"trials": "suggest_trials", "candidates": "suggest_candidates", "builder": "suggest_builder"}
#: Keys of the VS Code extension's section that only say how to start the server.
CLIENT_ONLY = frozenset({"pythonPath", "serverPath", "serverArgs", "trace"})
_DEFAULTS = {f.name: f.default for f in fields(Settings) if f.name != "problems"}


def initialization_settings(options: Any) -> Any:
    """The settings inside `initializationOptions` (`{"settings": {...}}`)."""
    if isinstance(options, dict) and isinstance(options.get("settings"), dict):
        return options["settings"]
    return None


def changed_settings(settings: Any) -> Any:
    """The `dragon` section inside `didChangeConfiguration`'s settings, or None (ask the client)."""
    if isinstance(settings, dict) and isinstance(settings.get("dragon"), dict):
        return settings["dragon"]
    return None


def _number(v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("expects a number")
    if not lo <= v <= hi:
        raise ValueError(f"expects a number between {lo} and {hi}")
    return v


def merge(base: Settings, data: Any) -> Settings:
    """Settings updated from a JSON object (the `dragon` section); bad values and unknown keys are
    reported in `problems`, never fatal."""
    if not isinstance(data, dict):
        return replace(base, problems=())
    changes: dict[str, Any] = {}
    problems = []

    def put(key, attr, value):
        try:
            changes[attr] = _validate(attr, value)
        except ValueError as exc:
            problems.append(f"dragon.{key}: {exc}")

    def group(key, value, table):
        if value is None or value == "":
            for attr in table.values():
                changes[attr] = _DEFAULTS[attr]
            return
        if not isinstance(value, dict):
            problems.append(f"dragon.{key}: expects an object")
            return
        for k, v in value.items():
            if k in table:
                put(f"{key}.{k}", table[k], v)
            else:
                problems.append(f"dragon.{key}.{k}: unknown setting")

    for key, value in data.items():
        if key in _FIELDS:
            put(key, _FIELDS[key], value)
        elif key == "timeouts":
            group(key, value, _TIMEOUTS)
        elif key == "suggest":
            group(key, value, _SUGGEST)
        elif key not in CLIENT_ONLY:
            problems.append(f"dragon.{key}: unknown setting")
    return replace(base, **changes, problems=tuple(problems))


def _validate(attr: str, v):
    if v is None or (isinstance(v, str) and not v.strip()):
        return _DEFAULTS[attr]  # unset: the default
    if isinstance(v, str):
        v = v.strip()
    if attr == "target":
        return _target(v)
    if attr == "device":
        if v not in ("local", "cpu", "rpc") and not (isinstance(v, str) and _RPC_DEVICE.fullmatch(v)):
            raise ValueError('expects "local", "cpu", "rpc" or "rpc://HOST:PORT/KEY"')
        return v
    if attr == "tracker_address":
        if not isinstance(v, str):
            raise ValueError("expects a string")
        try:
            tracker_device(v)
        except SettingsError:
            raise ValueError(f"{v!r}: expects HOST:PORT or HOST:PORT/KEY") from None
        return v
    if attr in ("workload", "model_path"):
        if not isinstance(v, str):
            raise ValueError("expects a string")
        return v
    if attr == "check_on_save":
        if v not in CHECK_LEVELS:
            raise ValueError(f"expects one of {', '.join(CHECK_LEVELS)}")
        return v
    if attr in ("debounce_ms", "replay_debounce_ms"):
        return float(_number(v, 0, 60_000))
    if attr.endswith("_timeout"):
        return float(_number(v, 1, 24 * 3600))
    if attr == "suggest_trials":
        return int(_number(v, 1, 10_000))
    if attr == "suggest_candidates":
        return int(_number(v, 1, 64))
    if attr == "suggest_builder":
        if v not in ("auto", "local", "in-process"):
            raise ValueError('expects "auto", "local" or "in-process"')
        return v
    raise ValueError("unknown setting")


def _target(v):
    """A tag or kind string, or a JSON object (given as an object or as its text)."""
    if isinstance(v, dict):
        return v
    if not isinstance(v, str):
        raise ValueError("expects a target tag, a kind or a JSON object")
    if v.startswith("{"):
        try:
            obj = json.loads(v)
        except ValueError as exc:
            raise ValueError(f"is not a valid JSON object ({exc})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise ValueError('a JSON target needs a "kind"')
        return obj
    if any(c.isspace() for c in v):
        raise ValueError(
            f"{v!r}: TVM 0.27 takes a tag, a kind or a JSON object "
            '({"kind": "llvm", "num-cores": 4}), not a command-line string'
        )
    return v
