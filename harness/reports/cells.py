"""The one way a page shows a metric over seeds: mean ± sample sd in percent, and how many seeds.

A cell says `(n=K)` when its run has fewer seeds than the collection's fullest run, and always
when it has one seed: a single figure has no spread, and a bare "12.5" would read as a mean.
"""

from __future__ import annotations

import math
from typing import Sequence

from harness.evaluation.metrics import mean_sd


def mean_sd_cell(values: Sequence[float], n_all: int = 0) -> str:
    """ "12.5 ± 1.3", "12.5 ± 1.3 (n=2)" when fewer than n_all seeds, "12.5 (n=1)" for one seed."""
    mean, sd = mean_sd(list(values))
    text = f"{100 * mean:.1f}" + ("" if math.isnan(sd) else f" ± {100 * sd:.1f}")
    n = len(values)
    return text + (f" (n={n})" if n == 1 or n < n_all else "")
