"""aa-harness: the reference benchmark harness for cross-genre authorship attribution.

The core (this package) never imports torch at module level: listing systems, building
splits and computing metrics run on a bare CPU install.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "__version__":  # from build-time metadata (harness.foundation.provenance), read on first use
        from harness.foundation.provenance import harness_version

        return harness_version()
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
