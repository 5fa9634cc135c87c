"""Progress for long work: one bar per phase with an ETA, and a warning when encoding will be slow.

A seed goes through named phases -- "encode candidates", "encode queries", "search", "score"
(or one "rank" phase for a system that ranks by itself). Each is one tqdm bar on stderr, never
nested; the libraries' own bars (sentence-transformers, the encoding loop) are switched off
while the harness shows its own. Before encoding, a small batch is timed and the whole
encoding extrapolated from it; above `warn_seconds()` the user is told, with what to change.

Long work outside a run uses the same bars: training ("epoch N", with the loss), the epoch's
hard-negative mining ("hard negatives: encode", "hard negatives: cluster"), encoding outside a
run (curation's embedder) and curation's name recognition. tqdm gives each bar its rate and
time left; where a bar cannot be shown (stderr is not a terminal), the caller logs a line with
`time_left`.

`enabled(False)` (the CLI's --no-progress) silences the bars; warnings still print.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import time
from typing import Callable, Iterator, Sequence

import numpy as np

WARN_ENV = "AA_HARNESS_WARN_SECONDS"
PROBE_DOCS = 4  # timed first chunk: small, so the warning comes within seconds even for a large model on a CPU

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aa_harness_progress", default=True)
_estimated: contextvars.ContextVar[dict | None] = contextvars.ContextVar("aa_harness_estimate", default=None)
_timings: contextvars.ContextVar[dict | None] = contextvars.ContextVar("aa_harness_timings", default=None)


def warn_seconds() -> float:
    """Encoding estimates above this many seconds print a warning (default 180; $AA_HARNESS_WARN_SECONDS)."""
    return float(os.environ.get(WARN_ENV, "180"))


@contextlib.contextmanager
def enabled(on: bool = True) -> Iterator[None]:
    token = _enabled.set(on)
    try:
        yield
    finally:
        _enabled.reset(token)


def is_enabled() -> bool:
    return _enabled.get()


@contextlib.contextmanager
def seed_scope(total_documents: int, what: str = "") -> Iterator[dict]:
    """Around one seed: the number of documents it will encode (for the estimate) and phase timings."""
    state = {"total": total_documents, "what": what, "warned": False, "done": 0}
    timings: dict[str, float] = {}
    t1, t2 = _estimated.set(state), _timings.set(timings)
    try:
        yield timings
    finally:
        _estimated.reset(t1)
        _timings.reset(t2)


def _bar(desc: str, total: int, unit: str, initial: int = 0):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        initial=initial,
        disable=not is_enabled(),
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )


class Advance:
    """What a phase yields: advance(n) moves its bar by n units (tqdm shows the rate and the time left);
    set_total(n) corrects the total once it is known; note("loss 0.41") shows a short status beside it."""

    def __init__(self, bar):
        self._bar = bar

    def __call__(self, n: int = 1) -> None:
        self._bar.update(n)

    def set_total(self, total: int) -> None:
        self._bar.total = total
        self._bar.refresh()

    def note(self, text: str) -> None:
        self._bar.set_postfix_str(text, refresh=False)


@contextlib.contextmanager
def phase(desc: str, total: int = 1, unit: str = "step", *, initial: int = 0) -> Iterator[Advance]:
    """A phase of `total` units (`initial` of them already done, e.g. on resuming); yields advance(n).
    Its wall time is recorded for the seed's summary."""
    start = time.perf_counter()
    with _bar(desc, total, unit, initial) as bar:
        yield Advance(bar)
    timings = _timings.get()
    if timings is not None:
        timings[desc] = timings.get(desc, 0.0) + time.perf_counter() - start


def time_left(done: int, total: int, seconds: float) -> str:
    """ "about 3 min left" from `done` of `total` units in `seconds`; "" before the first unit."""
    if done <= 0 or total <= done:
        return ""
    return f"about {_fmt_seconds(seconds / done * (total - done))} left"


def _fmt_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def encode_with_progress(
    encode: Callable[[Sequence], np.ndarray],
    documents: Sequence,
    desc: str,
    *,
    device: str = "",
    chunk: int | None = None,
) -> np.ndarray:
    """encode(documents) in chunks under one bar, warning once per seed when encoding will be slow.

    Chunks start small (4, 8, 16, ... documents) and grow to `chunk`, so the first estimate comes
    within seconds. Each chunk's rate is extrapolated to every document the seed has left to
    encode (see seed_scope); the latest rate is used, so documents already in an embedding
    cache do not hide a slow model.
    """
    n = len(documents)
    if n == 0:
        return np.asarray(encode(documents), dtype=np.float32)
    chunk = chunk or max(256, n // 20)
    state = _estimated.get()
    parts = []
    with phase(desc, n, "doc") as advance:
        i, size = 0, min(PROBE_DOCS, chunk)
        while i < n:
            start = time.perf_counter()
            parts.append(np.asarray(encode(documents[i : i + size]), dtype=np.float32))
            took = time.perf_counter() - start
            done = min(size, n - i)
            if state is not None:
                state["done"] += done
                # the first chunk also pays one-time costs (CUDA start, compilation, weight
                # dequantization), so the estimate starts at the second: a GPU run that took
                # 18 s was once predicted at 5 hours from its first chunk
                if not state["warned"] and i > 0:
                    _maybe_warn(state, took / done, device)
            i += done
            advance(done)
            size = min(size * 2, chunk)
    return np.concatenate(parts, axis=0)


def _maybe_warn(state: dict, per_doc: float, device: str) -> None:
    left = max(state["total"] - state["done"], 0)
    estimate = per_doc * left
    if estimate <= warn_seconds():
        return
    state["warned"] = True  # once per seed
    on = f" on {device}" if device else ""
    cpu = not device or device.lower().startswith("cpu")
    # the advice keeps the model: a run's --model (a trained folder) is `model` too, so --set model=… would replace it
    advice = (
        (
            "run it on a GPU (--set device=cuda), or try the system on a smaller split first (--author-fraction 0.05 "
            "--seeds 0)"
        )
        if cpu
        else "raise the encoding batch's token budget if memory allows (--set encode_max_tokens=…)"
    )
    print(
        f"aa-harness: warning: encoding {state['total']:,} documents{' with ' + state['what'] if state['what'] else ''}"
        f"{on} will take about {_fmt_seconds(estimate)} more for this seed (at {per_doc:.2f} s a document); {advice}. "
        "Finished seeds are kept; Ctrl-C and a rerun continue.",
        file=sys.stderr,
        flush=True,
    )
