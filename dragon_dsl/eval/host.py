"""Where a run happened: the host facts the evaluation records beside the figures it measured."""

from __future__ import annotations

import os
import sys


def host() -> dict:
    """Where a generation ran (its time is part of the model's time to a verified kernel)."""
    import platform

    gpu = None
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name()
    return {
        "node": platform.node(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "gpu": gpu,
    }
