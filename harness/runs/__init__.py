"""Runs layer: jobs that rank (run), rescore (rerank) and train, and the result files they write.

Systems reach it only through the plugin registry, never by import.
"""
