"""Data layer: documents, JSONL reading, collections (built-in, HIATUS, demo, path) and curation.

Imports nothing above it: no splits, no runs, no torch.
"""
