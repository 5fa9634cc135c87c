"""Out of GPU memory: halve the token budget and try again, instead of crashing a long run.

A long document or a small card can make one batch too big. Encoding and reranking run
their work through `retry_on_oom`, which catches torch.cuda.OutOfMemoryError, frees the
cache, halves the budget and retries; it says so once per kind of work, and gives up with a
HarnessError when even the smallest budget does not fit.
"""

from __future__ import annotations

import sys
from typing import Callable, TypeVar

import torch

from harness.errors import HarnessError

T = TypeVar("T")
_warned: set[str] = set()


def retry_on_oom(
    fn: Callable[[int], T],
    max_tokens: int,
    *,
    what: str = "encoding",
    min_tokens: int = 256,
    warn: Callable[[str], None] | None = None,
) -> T:
    """fn(budget) with budget = max_tokens, then max_tokens/2, … down to min_tokens on GPU out-of-memory."""
    warn = warn or (lambda msg: print(f"aa-harness: {msg}", file=sys.stderr))
    budget = int(max_tokens)
    while True:
        try:
            return fn(budget)
        except torch.cuda.OutOfMemoryError as e:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if budget <= min_tokens:
                raise HarnessError(
                    f"{what}: out of GPU memory even at a budget of {budget} tokens a batch ({e}); "
                    "use a larger card or a shorter max_length"
                ) from None
            smaller = max(min_tokens, budget // 2)
            if what not in _warned:
                _warned.add(what)
                warn(
                    f"{what}: out of GPU memory at {budget} tokens a batch; retrying with {smaller} "
                    "(and halving again if needed)"
                )
            budget = smaller
