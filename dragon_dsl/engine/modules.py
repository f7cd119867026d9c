"""The Engine's calls on scheduled IRModules, MetaSchedule's candidates (metaschedule.py): building
them in parallel, building, verifying and timing them in one call, and timing built libraries.

A mixin of `Engine` (engine.py), which owns the pools, the lock, the references and the results
cache these methods use.
"""

from __future__ import annotations

import shutil

from dragon_dsl.engine.batch import Item, build_failure, run_result
from dragon_dsl.engine.pool import Dispatcher
from dragon_dsl.engine.result import EngineError, Task


class ModulesMixin:
    def build_modules(self, mods) -> list:
        """Build scheduled IRModules in parallel: [(artifact path, None) or (None, error message)]."""
        import tvm

        out: list = [None] * len(mods)
        with self._lock:
            dispatcher = Dispatcher([self._builders])
            for index, mod in enumerate(mods):
                folder = self._next_dir("ms")

                def done(reply, index=index, folder=folder):
                    if reply.get("status") == "ok":
                        out[index] = (reply["artifact"], None)
                    else:
                        shutil.rmtree(folder, ignore_errors=True)
                        result = build_failure(reply)
                        out[index] = (None, f"{result.status.value}: {result.message}")

                dispatcher.submit(
                    self._builders,
                    {"op": "build", "source": {"module": tvm.ir.save_json(mod)}, "out": str(folder)},
                    self.timeout_s,
                    done,
                )
            dispatcher.run()
        return out

    def measure_modules(
        self,
        workload,
        mods,
        seeds: int = 3,
        repeat: int = 5,
        number: int | None = None,
        min_repeat_ms: float = 5.0,
        use_cache: bool = True,
    ) -> list:
        """Build, verify and time scheduled IRModules of `workload` (MetaSchedule's candidates) in one
        call: one Result each. As in `run`, the reference is computed beside the builds, and on GPUs a
        candidate is verified and timed as soon as it is built. Keyed in the cache by the module's text."""
        import hashlib

        import tvm

        pairs = []
        for mod in mods:
            text = tvm.ir.save_json(mod)
            task = Task(
                workload,
                ["module", hashlib.sha256(text.encode()).hexdigest()],
                level="time",
                seeds=seeds,
                repeat=repeat,
                number=number,
                min_repeat_ms=min_repeat_ms,
                use_cache=use_cache,
            )
            pairs.append((task, {"module": text}))
        return self._run(pairs)

    def run_artifacts(
        self,
        artifacts,
        args_info,
        workload=None,
        seeds: int = 3,
        repeat: int = 5,
        number: int | None = None,
        min_repeat_ms: float = 5.0,
    ) -> list:
        """Time built libraries (verifying them first when `workload` is given):
        [(latencies in seconds, None) or (None, error message)]. The libraries stay: MetaSchedule's
        RemoveBuildArtifact callback deletes their folders."""
        out: list = [None] * len(artifacts)
        wl = self._workload(workload) if workload is not None else None
        with self._lock:
            devices = self._device_pool()
            dispatcher = Dispatcher([self._builders, devices])
            ref = self._known_reference(wl, seeds) if wl is not None else None
            if wl is not None and ref is None:
                failed = []
                self._submit_reference(dispatcher, wl, seeds, lambda message: message is None or failed.append(message))
                dispatcher.run()
                if failed:
                    raise EngineError(f"the unscheduled workload failed as a reference on llvm: {failed[0]}")
                ref = self._known_reference(wl, seeds)
            timing = {
                "repeat": repeat,
                "number": number,
                "min_repeat_ms": min_repeat_ms,
                "flush_bytes": 0,
                "timer": self.gpu_timer,
            }
            for index, (artifact, info) in enumerate(zip(artifacts, args_info, strict=True)):
                item = Item(Task(None, None, level="time"), {}, None, "")

                def done(reply, index=index, item=item):
                    result = run_result(reply, item)
                    if result.ok:
                        out[index] = ([t * 1e-6 for t in result.latencies_us], None)
                    else:
                        out[index] = (None, f"{result.status.value}: {result.message}")

                dispatcher.submit(
                    devices,
                    {
                        "op": "run",
                        "artifact": artifact,
                        "reference": ref,
                        "args_info": info,
                        "level": "time",
                        "timing": timing,
                    },
                    self.run_timeout_s,
                    done,
                )
            dispatcher.run()
        return out
