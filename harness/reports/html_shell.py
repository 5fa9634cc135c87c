"""The HTML leaderboard's page shell: inline style and script, and a Content-Security-Policy that
allows no fetch at all (no network, no other file): only these inline blocks, by hash, and
images given as data URIs. The site works opened from disk, with no server."""

from __future__ import annotations

import base64
import hashlib
from html import escape

STYLE = """
:root { color-scheme: light; --line: #d0d4da; --muted: #5b6470; --head: #f3f5f8; --accent: #1f5fbf; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.2rem 1.6rem; color: #1b1f24; }
h1 { font-size: 1.5rem; margin: 0 0 .3rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .4rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1.3rem 0 .3rem; }
p.note, figcaption, .muted { color: var(--muted); font-size: .85rem; }
nav a { margin-right: .8rem; }
a { color: var(--accent); }
.wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }
td.diff { font-size: .85rem; }
td.diff span { display: block; color: var(--muted); }
thead th { background: var(--head); position: sticky; top: 0; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; color: inherit; text-align: inherit; }
th button::after { content: " \\2195"; color: #9aa3ad; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; color: var(--accent); }
th[aria-sort="descending"] button::after { content: " \\25BC"; color: var(--accent); }
td.run { min-width: 14rem; max-width: 26rem; overflow-wrap: anywhere; }
td.differs { min-width: 24rem; max-width: 34rem; font-size: .8rem; }
caption { text-align: left; }
tbody tr:nth-child(even) { background: #fafbfc; }
tbody tr:hover { background: #eef4ff; }
.mark { color: #b3261e; font-weight: 600; }
figure { margin: .6rem 0 1.2rem; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
dl.card { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; }
dl.card dt { font-weight: 600; }
dl.card dd { margin: 0; overflow-wrap: anywhere; }
"""

# Sorting: a header button sorts its table by that column; numbers (data-sort) first descending, text
# first ascending; a second click reverses; empty cells stay last either way; ties keep their order.
SCRIPT = """
(function () {
  "use strict";
  function value(row, col, numeric) {
    var cell = row.cells[col];
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    if (!numeric) { return raw.toLowerCase(); }
    return raw === "" ? NaN : Number(raw);
  }
  function sortBy(table, th, col) {
    var numeric = th.getAttribute("data-type") === "num";
    var now = th.getAttribute("aria-sort");
    var dir = now === "descending" ? "ascending" : now === "ascending" ? "descending"
      : (numeric ? "descending" : "ascending");
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) {
      return { row: r, key: value(r, col, numeric), index: i };
    });
    var sign = dir === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var an = numeric && isNaN(a.key), bn = numeric && isNaN(b.key);
      if (an || bn) { return an === bn ? a.index - b.index : (an ? 1 : -1); }
      if (a.key < b.key) { return -sign; }
      if (a.key > b.key) { return sign; }
      return a.index - b.index;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      var button = th.querySelector("button");
      if (button) { button.addEventListener("click", function () { sortBy(table, th, col); }); }
    });
  });
})();
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (
    "default-src 'none'; img-src data:; "
    f"style-src {_sha256(STYLE)}; script-src {_sha256(SCRIPT)}; base-uri 'none'; form-action 'none'"
)


def page(title: str, body: str) -> str:
    """A complete document: `title` is plain text (escaped here); `body` is HTML built by the caller,
    who escapes every value in it."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
