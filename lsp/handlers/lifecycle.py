"""initialize, initialized, configuration changes, shutdown and `dragon/status`."""

from __future__ import annotations

from dragon_lsp import config, convert

#: A custom request answering the server's state (tests, debugging): documents, workers, settings.
STATUS = "dragon/status"


def register(host) -> None:
    session, caps = host.session, host.caps

    @host.feature("initialize")
    def initialize(params):
        session.encoding = host.position_encoding
        caps.update(convert.client_capabilities(params.capabilities))
        settings = config.initialization_settings(convert.plain(params.initialization_options))
        if settings is not None:
            session.configure(settings)

    async def pull_configuration():
        if not caps["configuration"]:
            return
        try:
            answer = await host.configuration()
        except Exception as exc:
            host.notify("warning", f"workspace/configuration failed: {exc}")
            return
        if answer is not None:
            session.configure(answer)

    @host.feature("initialized")
    async def initialized(params):
        await pull_configuration()

    @host.feature("workspace/didChangeConfiguration")
    async def did_change_configuration(params):
        settings = config.changed_settings(convert.plain(params.settings))
        if settings is not None:
            session.configure(settings)
        else:
            await pull_configuration()

    @host.feature("shutdown")
    def shutdown(params):
        host.background.shutdown()

    @host.feature(STATUS, default={})
    def status(params):
        return session.status()
