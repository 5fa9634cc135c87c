"""The one renderer of the Markdown tables on the report pages, the plugins' pages included (through
`harness.api`): every cell escaped once, here.

Genre, run, system and collection names come from data files and plugins. In a GitHub table an
unescaped `|` ends its cell (the row's numbers shift a column) and a line break ends the row; the
docs site renders the pages as HTML, where a name like `<img src=x onerror=...>` would be markup.
So every text cell and header is escaped: `\\` and `|` with a backslash, `&`, `<` and `>` as
entities, line breaks as spaces. Text the harness formats as Markdown itself (a p-value written
`p<0.001`) is wrapped in `Markdown` and placed as it is; numbers are left to tabulate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class Markdown(str):
    """Text the harness wrote as Markdown, with nothing from data in it: placed in a table as it is."""


def escape_cell(value: Any) -> Any:
    """A table cell safe to place between pipes: text escaped (see the module docstring), numbers as they are."""
    if isinstance(value, Markdown) or not isinstance(value, str):
        return value
    text = value.replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.splitlines()) if "\n" in text or "\r" in text else text


def markdown_table(rows: Iterable[Sequence[Any]], headers: Sequence[Any], **options: Any) -> str:
    """A GitHub Markdown table of `rows` under `headers`, each cell escaped; options go to tabulate."""
    from tabulate import tabulate

    options.setdefault("tablefmt", "github")
    return tabulate(
        [[escape_cell(v) for v in row] for row in rows], headers=[escape_cell(h) for h in headers], **options
    )
