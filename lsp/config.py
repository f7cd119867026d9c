"""Settings: from the client's initialization options and `workspace/configuration` (section "dragon").

    {
      "target": "llvm",                  # a tag or a JSON object; default: the script's header, else llvm
      "device": "local",                 # "local", "cpu" (target llvm on this machine), "rpc", or "rpc://HOST:PORT/KEY"
      "tracker": "127.0.0.1:9190",       # with device "rpc": the TVM RPC tracker ...
      "rpcKey": "h100",                  # ... and the device key
      "workload": null,                  # a workload file that overrides every script's header
      "modelPath": null,                 # the schedule model (dragon_model); without it, a short search
      "checkOnSave": "verify",           # off, replay, build, verify or time
      "debounceMs": 30,                  # syntax and type diagnostics after a change
      "replayDebounceMs": 300,           # replay on the workload after a change
      "timeouts": {"replay": 60, "build": 300, "suggest": 900},   # seconds
      "suggest": {"trials": 16, "candidates": 3, "builder": "auto"}
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

CHECK_LEVELS = ("off", "replay", "build", "verify", "time")


@dataclass(frozen=True)
class Settings:
    target: Any = None
    device: str = "local"
    tracker: Optional[str] = None
    rpc_key: Optional[str] = None
    workload: Optional[str] = None
    model_path: Optional[str] = None
    check_on_save: str = "verify"
    debounce_ms: float = 30.0
    replay_debounce_ms: float = 300.0
    replay_timeout: float = 60.0
    build_timeout: float = 300.0
    suggest_timeout: float = 900.0
    suggest_trials: int = 16
    suggest_candidates: int = 3
    suggest_builder: str = "auto"
    problems: tuple = field(default_factory=tuple)  # settings that were ignored, and why

    def engine_device(self) -> str:
        """The engine's device string: "local" or "rpc://HOST:PORT/KEY"."""
        if self.device in ("local", "cpu"):
            return "local"
        if self.device == "rpc":
            return f"rpc://{self.tracker or '127.0.0.1:9190'}/{self.rpc_key or ''}"
        return self.device

    def target_for(self, header_target) -> Any:
        if self.device == "cpu":
            return self.target if self.target is not None else "llvm"
        if self.target is not None:
            return self.target
        return header_target if header_target is not None else "llvm"


_FIELDS = {
    "target": "target", "device": "device", "tracker": "tracker", "rpcKey": "rpc_key", "workload": "workload",
    "modelPath": "model_path", "checkOnSave": "check_on_save", "debounceMs": "debounce_ms",
    "replayDebounceMs": "replay_debounce_ms",
}
_TIMEOUTS = {"replay": "replay_timeout", "build": "build_timeout", "suggest": "suggest_timeout"}
_SUGGEST = {"trials": "suggest_trials", "candidates": "suggest_candidates", "builder": "suggest_builder"}


def _number(v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("expects a number")
    if not lo <= v <= hi:
        raise ValueError(f"expects a number between {lo} and {hi}")
    return v


def merge(base: Settings, data: Any) -> Settings:
    """Settings updated from a JSON object (unknown keys and bad values are reported, not fatal)."""
    if not isinstance(data, dict):
        return base
    if isinstance(data.get("dragon"), dict):  # the whole configuration rather than its section
        data = data["dragon"]
    changes: dict[str, Any] = {}
    problems = []

    def put(key, attr, value):
        try:
            changes[attr] = _validate(attr, value)
        except ValueError as exc:
            problems.append(f"dragon.{key}: {exc}")

    for key, value in data.items():
        if key in _FIELDS:
            put(key, _FIELDS[key], value)
        elif key == "timeouts" and isinstance(value, dict):
            for k, v in value.items():
                if k in _TIMEOUTS:
                    put(f"timeouts.{k}", _TIMEOUTS[k], v)
        elif key == "suggest" and isinstance(value, dict):
            for k, v in value.items():
                if k in _SUGGEST:
                    put(f"suggest.{k}", _SUGGEST[k], v)
    return replace(base, **changes, problems=tuple(problems))


def _validate(attr: str, v):
    if v is None and attr in ("target", "tracker", "rpc_key", "workload", "model_path"):
        return None
    if attr == "target":
        if not isinstance(v, (str, dict)):
            raise ValueError("expects a tag string or a JSON object")
        return v
    if attr == "device":
        if v not in ("local", "cpu", "rpc") and not (isinstance(v, str) and v.startswith("rpc://")):
            raise ValueError('expects "local", "cpu", "rpc" or "rpc://HOST:PORT/KEY"')
        return v
    if attr in ("tracker", "rpc_key", "workload", "model_path"):
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
