"""aa-harness: the reference benchmark harness for cross-genre authorship attribution.

The core (this package) never imports torch at module level: listing systems, building
splits and computing metrics run on a bare CPU install.
"""
from __future__ import annotations

__version__ = "0.1.0"
