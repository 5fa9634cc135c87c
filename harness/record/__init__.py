"""The benchmark's committed record, read-only package data: `splits/<collection>/seed-<S>.json`
manifests and topic labels of the built-in collections (read through harness.locations)."""
