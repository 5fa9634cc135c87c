"""Plugin code is third-party code: what it does stays inside its own system's run.

- Each call gets its own copies of the documents, so a system that rewrites the Document
  objects it is handed cannot change what the next system (or the harness) sees.
- Anything a plugin raises, SystemExit, GeneratorExit and KeyboardInterrupt included, becomes
  that system's one-line error. Only a real Ctrl-C (SIGINT received while the plugin ran)
  still interrupts the command.
- Encoders are held to their contract: every encode() call returns one finite row per text,
  all rows of one width; and the vectors must not depend on how the harness chunks the
  documents (a small sample is encoded in one call and in other chunkings and compared,
  with a tolerance for float noise).
"""

from __future__ import annotations

import copy
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from harness.data.documents import Document
from harness.errors import HarnessError

# The chunking check: a sample encoded in one call, then in these call sizes (a larger sample, when
# the system declares a larger batch, is also split in halves and after 3 texts; at most MAX_SAMPLE).
SAMPLE = 8
CHUNKINGS = ((1,) * 8, (4, 4), (3, 5))
MAX_SAMPLE = 512
MIN_COSINE = 0.999
NORM_TOLERANCE = 0.01


def own_copies(documents: Sequence[Document]) -> list[Document]:
    """Fresh Document objects (and fresh `extra` dicts) for one plugin call."""
    return [
        Document(d.documentID, tuple(d.authorIDs), d.fullText, d.genre, copy.deepcopy(dict(d.extra))) for d in documents
    ]


@contextmanager
def _sigint_watch() -> Iterator[list[bool]]:
    """Notes whether a real SIGINT arrived (main thread only; elsewhere assume it did not)."""
    seen = [False]
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        seen[0] = True
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, handler)
    except (ValueError, OSError):
        yield seen
        return
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def contained_call(system_name: str, what: str, fn: Callable, *args, **kwargs) -> Any:
    """Call plugin code; whatever it raises (but a real Ctrl-C) becomes a HarnessError naming the system."""
    with _sigint_watch() as sigint:
        try:
            return fn(*args, **kwargs)
        except HarnessError as e:
            if str(e).startswith(f"system {system_name!r}: "):
                raise
            raise HarnessError(f"system {system_name!r}: {e}") from e
        except KeyboardInterrupt as e:
            if sigint[0]:
                raise
            raise HarnessError(
                f"system {system_name!r}: {what} raised KeyboardInterrupt (no Ctrl-C was pressed)"
            ) from e
        except SystemExit as e:
            raise HarnessError(
                f"system {system_name!r}: {what} called sys.exit({e.code!r}); a plugin must raise "
                "an exception, not end the command"
            ) from e
        except BaseException as e:  # reported in one line; the cause stays chained (__cause__)
            raise HarnessError(f"system {system_name!r}: {what} failed: {type(e).__name__}: {e}") from e


class CheckedEncoder:
    """Wraps a plugin's encoder: own document copies per call, one finite row per text, one width."""

    def __init__(self, system_name: str, encoder: Any):
        self.system_name = system_name
        self.encoder = encoder
        self.width: int | None = None

    def __getattr__(self, name: str) -> Any:  # device_name and the like pass through
        return getattr(self.encoder, name)

    def encode(self, documents: Sequence[Document]) -> np.ndarray:
        out = contained_call(self.system_name, "encode()", self.encoder.encode, own_copies(documents))
        return self.check(out, documents)

    def check(self, out: Any, documents: Sequence[Document]) -> np.ndarray:
        n = len(documents)
        who = f"system {self.system_name!r}: encode()"
        try:
            vecs = np.asarray(out, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise HarnessError(f"{who} must return a float array, got {type(out).__name__} ({e})") from None
        if vecs.ndim != 2 or vecs.shape[0] != n:
            got = vecs.shape[0] if vecs.ndim else 0
            raise HarnessError(
                f"{who} on a chunk of {n} texts returned {got} vectors for {n} documents (shape "
                f"{vecs.shape}); one row per text is needed"
            )
        if n and not np.isfinite(vecs).all():
            row, col = (int(i) for i in np.argwhere(~np.isfinite(vecs))[0])
            raise HarnessError(
                f"{who} gave document {documents[row].documentID!r} a non-finite value "
                f"{float(vecs[row, col])} (dimension {col})"
            )
        if n:
            if self.width is None:
                self.width = vecs.shape[1]
            elif vecs.shape[1] != self.width:
                raise HarnessError(
                    f"{who} returned {vecs.shape[1]}-dimensional vectors after {self.width}-dimensional ones"
                )
        return vecs


def _chunkings(n: int) -> tuple[tuple[int, ...], ...]:
    if n <= SAMPLE:
        return CHUNKINGS
    return ((1,) * SAMPLE, (n // 2, n - n // 2), (3, n - 3))


def check_chunking(encoder: CheckedEncoder, documents: Sequence[Document], largest_batch: int | None = None) -> None:
    """HarnessError when a sample's vectors depend on how it is split into encode() calls.

    The sample holds SAMPLE texts, or one more than the largest batch the system declares (its
    config's `batch_size`), so behaviour that starts above a batch's size is sampled too.

    Each row encoded in another chunking must have cosine >= MIN_COSINE with the one-call row
    and a length within NORM_TOLERANCE of it: float noise (batch padding, kernels picked by batch
    size) passes, a per-call standardisation or a vector depending on its place in the call does not.
    """
    size = SAMPLE if not largest_batch or largest_batch < SAMPLE else min(largest_batch + 1, MAX_SAMPLE)
    step = max(1, len(documents) // size)
    sample = list(documents[::step][:size])
    if len(sample) < 2:
        return
    whole = encoder.encode(sample)
    for sizes in _chunkings(len(sample)):
        parts, i = [], 0
        for size in sizes:
            if i >= len(sample):
                break
            parts.append(encoder.encode(sample[i : i + size]))
            i += size
        if i < len(sample):
            parts.append(encoder.encode(sample[i:]))
        other = np.concatenate(parts, axis=0)
        for j, (a, b) in enumerate(zip(whole.astype(np.float64), other.astype(np.float64))):
            na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
            if na == 0.0 and nb == 0.0:
                continue
            cosine = float(a @ b) / (na * nb) if na and nb else 0.0
            if cosine < MIN_COSINE or abs(na - nb) > NORM_TOLERANCE * max(na, nb):
                raise HarnessError(
                    f"system {encoder.system_name!r}: encode() gives document {sample[j].documentID!r} another vector "
                    f"when the texts are passed in calls of {'+'.join(str(s) for s in sizes)} instead of one call "
                    f"(cosine {cosine:.4f}, length {nb:.4g} vs {na:.4g}); a vector must depend on its own text only "
                    "(standardise with statistics fixed in advance, not per call)"
                )
