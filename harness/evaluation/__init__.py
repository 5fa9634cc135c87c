"""Evaluation layer: seeded query/candidate splits, the tie rule for rankings, and metrics.

Builds on `harness.data`; knows nothing of systems, runs or reports.
"""
