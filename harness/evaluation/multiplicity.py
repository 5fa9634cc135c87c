"""Holm's step-down adjustment: the family-wise error rate of a page's tests held at alpha.

Sort the m p-values ascending; the i-th smallest (1-based) is adjusted to (m - i + 1) * p_(i), made
non-decreasing along the order and capped at 1. A test is rejected at family-wise level alpha when
its adjusted p is below alpha. Valid under any dependence between the tests (Holm 1979).
"""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
