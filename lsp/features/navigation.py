"""Go to definition, find references and rename, for variables, labels and explanation entries."""

from __future__ import annotations

import re

from dragon_dsl.language.diagnostics import Span
from dragon_lsp.analysis import Analysis, Occurrence, is_reserved
from dragon_lsp.features.data import Edit

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")


def symbol_at(an: Analysis, line: int, col: int) -> Occurrence | None:
    """The occurrence of a name under the cursor, if that name is defined in the script."""
    o = an.occurrence_at(line, col)
    if o is None or an.definition(o.name) is None:
        return None
    return o


def definition(an: Analysis, line: int, col: int) -> Span | None:
    o = symbol_at(an, line, col)
    if o is None:
        return None
    return an.definition(o.name)[1]


def references(an: Analysis, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    o = symbol_at(an, line, col)
    if o is None:
        return []
    decl = an.definition(o.name)[1]
    return [x.span for x in an.occurrences.get(o.name, ()) if include_declaration or x.span != decl]


def prepare_rename(an: Analysis, line: int, col: int) -> tuple[Span, str] | None:
    o = symbol_at(an, line, col)
    if o is None:
        return None
    return o.span, o.name


class RenameError(ValueError):
    pass


def rename(an: Analysis, line: int, col: int, new_name: str) -> list[Edit]:
    o = symbol_at(an, line, col)
    if o is None:
        raise RenameError("nothing to rename here: put the cursor on a variable, a label or an explanation entry")
    if not _NAME.match(new_name or ""):
        raise RenameError(f"'{new_name}' is not a name: use letters, digits and _, not starting with a digit")
    if new_name == o.name:
        return []
    if is_reserved(new_name):
        raise RenameError(f"'{new_name}' is a reserved name")
    if an.definition(new_name) is not None or new_name in an.occurrences:
        raise RenameError(f"'{new_name}' is already used in this script")
    return [Edit(x.span, new_name) for x in an.occurrences.get(o.name, ())]
