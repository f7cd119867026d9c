"""Reading LSP's base protocol (`Content-Length: N` headers, a blank line, N bytes of JSON) so
that one malformed header costs one message, not the connection.

pygls' reader takes only an exact `Content-Length: N\\r\\n` line; after a misspelled or
unreadable header it never finds the start of a message again (it reads each body, which has
no line end, together with the next header as one line), so the client gets no answer to
anything, not even to `shutdown`. `FramedReader` sits between the stream and pygls' loop: it
finds each message's header itself (the name in any case, spaces around the number, a header
that follows the rest of a skipped body on the same line), skips what it cannot frame, and
hands pygls every message with a canonical header.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from typing import Any

log = logging.getLogger("dragon_lsp")

#: A Content-Length header at the end of a line (what precedes it is the rest of a skipped message).
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r?\n$", re.IGNORECASE)
#: Any other header line (`Content-Type: ...`): kept out of the way.
_HEADER = re.compile(rb"^[A-Za-z][A-Za-z0-9-]*[ \t]*:[^\r\n]*\r?\n$")


class FramedReader:
    """An async reader with pygls' interface (`readline`, `readexactly`) over a raw one."""

    def __init__(self, raw: Any):
        self.raw = raw
        self._lines: deque = deque()
        self.skipped = 0  # messages or fragments that could not be framed (for the log and tests)

    async def readline(self) -> bytes:
        if not self._lines:
            await self._next_header()
        return self._lines.popleft()

    async def readexactly(self, n: int) -> bytes:
        return await self.raw.readexactly(n)

    async def _next_header(self) -> None:
        length = None
        junk = False
        while True:
            line = await self.raw.readline()
            if not line:  # end of the stream
                self._lines.append(b"")
                return
            m = _LENGTH.search(line)
            if m is not None:
                if m.start() > 0 or junk:
                    self._skip(line[: m.start()] or b"an unreadable header")
                    junk = False
                length = int(m.group(1))
                continue
            if not line.strip():
                if length is not None:
                    self._lines.extend((b"Content-Length: %d\r\n" % length, b"\r\n"))
                    return
                junk = True  # headers without a length: the body that follows cannot be read
                continue
            if _HEADER.match(line) is None:
                junk = True  # the rest of a body whose header could not be read

    def _skip(self, what: bytes) -> None:
        self.skipped += 1
        log.warning("skipped input that is not a framed LSP message: %r", what[:200])
