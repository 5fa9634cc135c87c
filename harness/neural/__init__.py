"""Machinery shared by the neural plugins: batching, encoding, embedding cache, exact search,
contrastive loss, hard-negative batching and the training loop.

These modules import torch. The light core (listing, splits, metrics, leaderboards) never
imports this package; only a neural plugin does, when it is instantiated.
"""
