"""The family of paired tests one collection's table runs, and Holm's adjustment over it.

A collection's table (the Markdown page and the HTML site's section alike) tests every row against
the best row and against BM25, on Success@8. The family is the distinct pairs of runs so tested
(the best row against BM25 appears on both rows but is one test), and each test carries, beside its
raw p, its Holm-adjusted p over that family (harness.evaluation.multiplicity).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.evaluation.multiplicity import holm
from harness.evaluation.significance import ALPHA, PairedResult

HOLM_MARK = "ᴴ"


@dataclass(frozen=True)
class PageTests:
    adjusted: dict[frozenset, float]  # {run a, run b} -> Holm-adjusted p
    raw: dict[frozenset, float]

    def holm_p(self, a: str, b: str) -> float:
        return self.adjusted[frozenset((a, b))]

    @property
    def n(self) -> int:
        return len(self.raw)

    @property
    def raw_below(self) -> int:
        return sum(p < ALPHA for p in self.raw.values())

    @property
    def holm_below(self) -> int:
        return sum(p < ALPHA for p in self.adjusted.values())

    def summary(self) -> str:
        return (
            f"Distinct Success@8 tests in this table: {self.n}; with p < {ALPHA}: {self.raw_below}; still below "
            f"{ALPHA} after Holm's adjustment over the {self.n} (family-wise error rate {ALPHA}): {self.holm_below}."
        )


def pairs_shown(names: Sequence[str], best: str, base: str | None) -> list[tuple[str, str]]:
    """(row, other) for every test the table shows, once per distinct pair, in row order."""
    seen: set[frozenset] = set()
    pairs = []
    for n in names:
        for other in (best, base):
            if other is None or n == other or frozenset((n, other)) in seen:
                continue
            seen.add(frozenset((n, other)))
            pairs.append((n, other))
    return pairs


def page_tests(
    names: Sequence[str], best: str, base: str | None, compare: Callable[[str, str], PairedResult]
) -> PageTests:
    """compare(a, b) -> the Success@8 PairedResult of a - b."""
    pairs = pairs_shown(names, best, base)
    raw = {frozenset(pair): compare(*pair).p_value for pair in pairs}
    keys = list(raw)
    return PageTests(dict(zip(keys, holm([raw[k] for k in keys]))), raw)


def marks(row: str, best: str, base: str | None, tests: PageTests) -> str:
    """`*` (differs from the best row) and `†` (from BM25) where p < ALPHA, each followed by the
    Holm mark where the adjusted p is below ALPHA too."""
    out = ""
    for other, sign in ((best, "*"), (base, "†")):
        if other is None or row == other:
            continue
        key = frozenset((row, other))
        if tests.raw[key] < ALPHA:
            out += sign + (HOLM_MARK if tests.adjusted[key] < ALPHA else "")
    return out
