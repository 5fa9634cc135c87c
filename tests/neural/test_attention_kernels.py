"""The plain training forward leaves out the cuDNN attention kernel (its backward returns NaN for
masked lengths of 64 modulo 128 on H100/H200, PyTorch 2.11), and only inside the forward."""

import pytest

torch = pytest.importorskip("torch")


def _flags() -> dict:
    b = torch.backends.cuda
    return {
        "cudnn": b.cudnn_sdp_enabled(),
        "flash": b.flash_sdp_enabled(),
        "efficient": b.mem_efficient_sdp_enabled(),
        "math": b.math_sdp_enabled(),
    }


class _Collating:
    def collate(self, features):
        return {"input_ids": torch.tensor(features)}


def test_the_plain_training_forward_runs_without_cudnn_attention():
    from harness.neural.training import default_embed_batch

    seen = {}

    def model(input_ids):
        seen.update(_flags())
        return input_ids.float()

    before = _flags()
    out = default_embed_batch(model, _Collating(), [[1, 2], [3, 4]], torch.device("cpu"))
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert seen == {"cudnn": False, "flash": True, "efficient": True, "math": True}
    assert _flags() == before  # scoring and encoding outside training keep every kernel


def test_the_kernels_come_back_when_the_forward_fails():
    from harness.neural.training import default_embed_batch

    def model(input_ids):
        raise RuntimeError("out of memory")

    before = _flags()
    with pytest.raises(RuntimeError, match="out of memory"):
        default_embed_batch(model, _Collating(), [[1]], torch.device("cpu"))
    assert _flags() == before
