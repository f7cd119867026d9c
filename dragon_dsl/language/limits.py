"""The limits of the language core: past each one, a diagnostic (DRG005), never a crash.

They are documented in docs/LANGUAGE.md ("Limits"). Real scripts stay far
below them: TVM's schedules nest expressions a few levels deep, and the
largest script of the shipped corpora is a few kilobytes.
"""

from __future__ import annotations

#: How deep expressions may nest: brackets, calls, operators and lambdas each add a
#: level (`annotate(b0, "k", [[1]])` is 4 deep: the call, two lists, the integer).
#: It keeps every tree walk of the core (checker, printer, codec, editor) far from
#: Python's recursion limit.
MAX_NESTING = 100

#: The largest script the core reads, in characters (16 MiB).
MAX_SCRIPT_CHARS = 16 * 1024 * 1024

#: The most digits of an integer literal (Python's default for converting text
#: to int; TVM's integers have at most 19).
MAX_INT_DIGITS = 4300

#: How many characters of a source line a rendered diagnostic shows: a longer
#: line is cut to a window around the caret, with "..." at the cuts.
MAX_SNIPPET_CHARS = 200
