"""`workspace/executeCommand`: the VS Code extension's commands (what they do: `dragon_lsp.commands`).

The long-running ones report work-done progress and are cancellable; a cancelled or failed
worker is an answer, never an exception (a CancelledError escaping a command leaves it unanswered).
"""

from __future__ import annotations

import asyncio

from dragon_lsp import commands, convert
from dragon_lsp.handlers import InvalidParams
from dragon_lsp.workers import WorkerError

_FAILED = {"error": "internal error in the language server (see its log)"}


def register(host) -> None:
    session, bg = host.session, host.background

    def request(args) -> commands.Request:
        try:
            return convert.command_request(args, session.lines, session.encoding)
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None

    async def long_running(name: str, work) -> dict:
        """Run `work(report)` with work-done progress that can cancel it, as can `$/cancelRequest`."""
        progress = await host.progress(commands.TITLES[name], asyncio.current_task())
        outcome = "done"
        try:
            answer = await work(progress.report)
        except asyncio.CancelledError:
            outcome, answer = "cancelled", {"message": f"{commands.TITLES[name]}: cancelled", "cancelled": True}
        except WorkerError as exc:
            outcome, answer = "failed", {"error": str(exc)}
        finally:
            progress.end(outcome)
        return answer

    @host.command(commands.SUGGEST, _FAILED)
    async def suggest_schedule(*args):
        req = request(args)
        return await long_running(commands.SUGGEST, lambda report: commands.suggest(bg, req, "suggest", report))

    @host.command(commands.REWRITE, _FAILED)
    async def rewrite_schedule(*args):
        req = request(args)
        return await long_running(commands.REWRITE, lambda report: commands.suggest(bg, req, "rewrite", report))

    @host.command(commands.TENSORIR, _FAILED)
    async def show_tensorir(*args):
        req = request(args)
        return await long_running(commands.TENSORIR, lambda report: commands.show_tensorir(bg, req))

    @host.command(commands.CUDA, _FAILED)
    async def show_cuda_source(*args):
        req = request(args)
        return await long_running(commands.CUDA, lambda report: commands.show_cuda_source(bg, req))

    @host.command(commands.MEASURE, _FAILED)
    async def measure_latency(*args):
        req = request(args)
        return await long_running(commands.MEASURE, lambda report: commands.measure_latency(bg, req))

    @host.command(commands.LIST_TARGETS, {})
    async def list_targets(*args):
        return await commands.list_targets(bg)
