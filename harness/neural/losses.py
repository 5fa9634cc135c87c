"""The paper's Eq. 2: the supervised contrastive loss with in-batch negatives (bi-encoders), and
its cross-encoder form over one query's candidates (the reranker)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F


def supcon_loss(a: torch.Tensor, b: torch.Tensor, tau: float, *, cosine: bool) -> torch.Tensor:
    """Rows a[i], b[i] are two documents of author i; every other row is a negative.

    For each of the 2N documents d_q with positive d_q+ (its pair) and negatives D- (the
    2N - 2 documents of other authors): -log exp(s(d_q, d_q+)/tau) / sum_{c in {d_q+} u D-} exp(s(d_q, c)/tau),
    averaged over the 2N anchors. s is the dot product (of unit vectors when cosine).
    """
    z = torch.cat([a, b]).to(torch.float32)
    if cosine:
        z = F.normalize(z, dim=-1)
    n = a.shape[0]
    logits = z @ z.T / tau
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(logits, target)


def candidates_loss(scores: Sequence[torch.Tensor], tau: float) -> torch.Tensor:
    """Eq. 2 for a cross-encoder, summed over queries: each tensor holds one query's candidate
    scores, its positive first, and adds -log softmax(scores / tau)[0] (in fp32). The sum, not
    the mean, so that a trainer can divide by the global batch; the reranker's training step,
    the speed layer's `reranker_loss` and `aa-harness bench train reranker` all use it."""
    return sum(F.cross_entropy((s.float() / tau)[None], s.new_zeros(1, dtype=torch.long)) for s in scores)
