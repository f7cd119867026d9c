"""Why a build source is refused: it does not replay (`ReplayError`) or the compile check
rejects the scheduled module (`BuildError`)."""

from __future__ import annotations


class ReplayError(Exception):
    pass


class BuildError(Exception):
    pass
