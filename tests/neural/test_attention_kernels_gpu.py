"""On a GPU (marked gpu): inside `training_attention`, the masked attention whose cuDNN backward
returns NaN (pytorch/pytorch#196678: length 64 modulo 128, every row's log-sum-exp below -88.7)
has finite gradients, and no cuDNN attention node is in the graph."""

import math

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _nodes(fn, seen=None):
    seen = set() if seen is None else seen
    if fn is None or fn in seen:
        return seen
    seen.add(fn)
    for nxt, _ in fn.next_functions:
        _nodes(nxt, seen)
    return seen


def test_masked_attention_backward_is_finite_inside_training_attention():
    import torch.nn.functional as F

    from harness.neural.attention_kernels import training_attention

    torch.manual_seed(0)
    length, dim = 704, 64
    q = torch.randn(1, 1, length, dim, device="cuda", dtype=torch.bfloat16) * 0.1
    k = torch.randn(1, 1, length, dim, device="cuda", dtype=torch.bfloat16) * 0.1
    v = torch.randn(1, 1, length, dim, device="cuda", dtype=torch.bfloat16)
    q[..., 0], k[..., 0] = 1.0, -120 * math.sqrt(dim)  # every logit near -120
    q.requires_grad_()
    k.requires_grad_()
    v.requires_grad_()
    mask = torch.ones(length, length, dtype=torch.bool, device="cuda").tril()[None, None]
    with training_attention():
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert not any("Cudnn" in type(n).__name__ or "Cudnn" in n.name() for n in _nodes(out.grad_fn))
    out.backward(torch.randn_like(out))
    for g in (q.grad, k.grad, v.grad):
        assert torch.isfinite(g).all()
