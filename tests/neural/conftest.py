"""Fixtures of the neural tests."""

import dataclasses

import pytest


@pytest.fixture(scope="session")
def saved_reranker(tiny_qwen3_dir, tmp_path_factory):
    """An untrained tiny reranker saved as a trained one (its head and adapter are random)."""
    import torch

    from plugins.sadiri_v2.reranker import new_for_training, save
    from tests.neural.test_reranker import _config

    torch.manual_seed(0)
    config = _config(tiny_qwen3_dir)
    folder = tmp_path_factory.mktemp("reranker") / "model"
    model = new_for_training(config)
    torch.nn.init.normal_(model.head.weight, std=1.0)  # scores far apart, so an order means something
    save(model, folder, config)
    return dataclasses.replace(config, model=str(folder))
