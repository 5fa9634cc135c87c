"""FP8 products for a frozen decoder base: e4m3 weights with a scale per output channel,
activations quantized per row (per token) on the fly, the product through `torch._scaled_mm`.

The definition every path computes (the tests check each part):

  weight   W [N, K], frozen  ->  Wq = e4m3(W / sw),  sw[n] = max_k |W[n, k]| / 448    (once)
  input    x [M, K]          ->  xq = e4m3(x / sx),  sx[m] = max_k |x[m, k]| / 448    (each call)
  forward  y = (sx xq) (sw Wq)^T + b, accumulated in fp32; bf16 out on CUDA
  backward dx = dy (sw Wq)                         (no gradient to W, sw or b: they are frozen)

448 is e4m3's largest finite value, so the row's largest element maps to it and nothing
overflows; e4m3(.) rounds to nearest (3 mantissa bits: a relative step of 2^-3, so a relative
error of at most 2^-4 above e4m3's smallest normal 2^-6, and an absolute 2^-10 below it).
Every quantity is computed in fp32 from the input (the bf16 weights are widened exactly).

The backward is straight-through for the input's rounding (its derivative is taken as the
identity, as every quantized-training recipe does) and is computed as (dy * sw) @ Wq with Wq
cast to dy's dtype. That cast is exact (every e4m3 value is a bf16 value), so the only
roundings are those of dy * sw to bf16 and of the product's fp32 accumulation: the arithmetic
of the bf16 path's input gradient, at its speed. The alternative, a second `_scaled_mm` with
dy quantized to e5m2 (2 mantissa bits), would run at FP8 rate, but it needs the weight laid
out transposed (a second FP8 copy, since `_scaled_mm` scales rows of its first and columns of
its second operand, and sw runs along the reduction here) and rounds every gradient entry to a
relative step of 2^-2, error that flows into every LoRA gradient below it. A LoRA step has no
weight-gradient product for the frozen base, so FP8 speeds up its forward (and the forward a
checkpointed layer recomputes), not this one product.

Memory: the FP8 weight (1 byte a parameter) and its scales are what stays; the bf16 weights
are dropped when `quantize_frozen_base` swaps the modules, and no bf16 copy is kept for the
backward: it casts Wq for the one product and frees the copy (2 bytes a parameter, one
projection at a time). The forward saves no activation for the backward.

`torch._scaled_mm` runs on CUDA at compute capability 8.9 or newer (Ada, Hopper), with rowwise
scales and bf16 output; both dimensions of every weight must be multiples of 16 (refused at
quantization, in one line). Elsewhere `fp8_linear` computes the reference, the operands
dequantized to fp32 and multiplied in fp32, which the CPU tests use; the systems refuse fp8 on
such devices (`require_fp8`) rather than run the reference there.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F

from harness.errors import HarnessError

E4M3_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
AMAX_FLOOR = 1e-12  # an all-zero row gets this amax, so its scale is not zero (its values stay 0)
MULTIPLE = 16  # torch._scaled_mm: both dimensions of the weight (K, and N) a multiple of 16
MIN_CAPABILITY = (8, 9)
# Each group is one product of the fused decoder: its weights are quantized as one matrix (the
# same numbers as one by one, the scales being per output row) and its modules become row views.
GROUPS = (
    ("self_attn", ("q_proj", "k_proj", "v_proj")),
    ("self_attn", ("o_proj",)),
    ("mlp", ("gate_proj", "up_proj")),
    ("mlp", ("down_proj",)),
)


class Fp8Weight(NamedTuple):
    """W ~ data * scale[:, None]: data [N, K] float8_e4m3fn, row-major (data.t() is the
    column-major operand `_scaled_mm` wants); scale [N] float32. A tuple, so torch.compile reads
    it as plain inputs."""

    data: torch.Tensor
    scale: torch.Tensor

    def dequantize(self) -> torch.Tensor:
        """The weight the products compute with, in fp32 [N, K]."""
        return self.data.float() * self.scale[:, None]


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(e4m3 values, fp32 scale [rows, 1]) of a [rows, K] matrix, one scale a row: x ~ q * scale."""
    x = x.float()
    scale = x.abs().amax(dim=-1, keepdim=True).clamp(min=AMAX_FLOOR) / E4M3_MAX
    q = (x / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale


def dequantize_rows(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.float() * scale


def quantize_weight(weight: torch.Tensor, what: str = "weight") -> Fp8Weight:
    """A frozen weight [N, K] as e4m3 with a scale per output channel; dimensions not multiples of
    16 are refused in one line (`_scaled_mm` cannot take them, and padding K would copy every input)."""
    n, k = weight.shape
    if n % MULTIPLE or k % MULTIPLE:
        raise HarnessError(
            f"fp8: {what} is {n} x {k}; FP8 products (torch._scaled_mm) need both dimensions a multiple "
            f"of {MULTIPLE}: drop --set fp8=true for this backbone"
        )
    q, scale = quantize_rows(weight.detach())
    return Fp8Weight(q.contiguous(), scale[:, 0].contiguous())


Quantizer = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def reference_linear(
    x: torch.Tensor, weight: Fp8Weight, bias: torch.Tensor | None = None, *, quantize: Quantizer | None = None
) -> torch.Tensor:
    """The definition in fp32: x quantized per row and both operands dequantized, then multiplied
    (x [M, K] -> [M, N] float32). quantize: the input's quantizer (default `quantize_rows`)."""
    xq, sx = (quantize or quantize_rows)(x)
    y = dequantize_rows(xq, sx) @ weight.dequantize().t()
    return y if bias is None else y + bias.float()


def scaled_mm_linear(
    x: torch.Tensor, weight: Fp8Weight, bias=None, *, quantize: Quantizer | None = None, out_dtype=None
) -> torch.Tensor:
    """The product through torch._scaled_mm (x [M, K] -> [M, N], bf16 unless out_dtype): rowwise
    scales, the input's [M, 1] and the weight's [1, N], fp32 accumulation (no fast accumulation),
    the bias added before the one rounding to the output's dtype."""
    xq, sx = (quantize or quantize_rows)(x)
    return torch._scaled_mm(
        xq,
        weight.data.t(),
        scale_a=sx,
        scale_b=weight.scale[None, :],
        bias=None if bias is None else bias.to(out_dtype or torch.bfloat16),
        out_dtype=out_dtype or torch.bfloat16,
        use_fast_accum=False,
    )


def _forward(x: torch.Tensor, weight: Fp8Weight, bias, quantize) -> torch.Tensor:
    if x.is_cuda:
        return scaled_mm_linear(x, weight, bias, quantize=quantize)
    return reference_linear(x, weight, bias, quantize=quantize).to(x.dtype)


class _Fp8Product(torch.autograd.Function):
    """The product with the gradient to its input (see the module docstring); saves only the
    FP8 weight and its scales."""

    @staticmethod
    def forward(ctx, x, data, scale, bias, quantize):
        ctx.save_for_backward(data, scale)
        ctx.input_dtype = x.dtype
        return _forward(x, Fp8Weight(data, scale), bias, quantize)

    @staticmethod
    def backward(ctx, dy):
        data, scale = ctx.saved_tensors
        dt = dy.dtype
        dx = (dy.float() * scale).to(dt) @ data.to(dt)  # data.to(dt): exact, then freed
        return dx.to(ctx.input_dtype), None, None, None, None


def fp8_linear(
    x: torch.Tensor,
    weight: Fp8Weight,
    bias: torch.Tensor | None = None,
    *,
    quantize: Quantizer | None = None,
) -> torch.Tensor:
    """x [..., K] -> [..., N] by the definition: `_scaled_mm` on CUDA (bf16 out), the fp32 reference
    elsewhere (in x's dtype). Differentiable in x when x requires grad. quantize: the input's
    quantizer (default `quantize_rows`; a compiled one fuses its passes)."""
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if torch.is_grad_enabled() and x2.requires_grad:
        y = _Fp8Product.apply(x2, weight.data, weight.scale, bias, quantize)
    else:
        y = _forward(x2, weight, bias, quantize)
    return y.reshape(*lead, y.shape[-1])


def linear(x: torch.Tensor, weight, bias: torch.Tensor | None = None, *, quantize: Quantizer | None = None):
    """F.linear for a tensor weight, the FP8 product for an Fp8Weight: the fused decoders' one
    product call, so their code is the same with or without fp8."""
    if isinstance(weight, Fp8Weight):
        return fp8_linear(x, weight, bias, quantize=quantize)
    return F.linear(x, weight, bias)


class Fp8Group(NamedTuple):
    """The fused product a module's rows belong to: the group's FP8 weight and bias, and its rows."""

    weight: Fp8Weight
    bias: torch.Tensor | None
    start: int
    stop: int


class Fp8Linear(torch.nn.Module):
    """A frozen projection as an FP8 product; its weight, scales and bias are row views into its
    group's fused tensors. They are plain attributes, not parameters or buffers: nothing trains
    them, a state dict (a PEFT adapter's, a checkpoint's) should not carry what derives from the
    bf16 weights, and Module.to(dtype) would cast a float8 buffer (torch counts float8 as floating
    point). So the module is made on its device, after the model's last dtype change."""

    def __init__(self, group: Fp8Group):
        super().__init__()
        self.group = group
        self.weight_fp8 = Fp8Weight(
            group.weight.data[group.start : group.stop], group.weight.scale[group.start : group.stop]
        )
        self.bias_bf16 = None if group.bias is None else group.bias[group.start : group.stop]
        self.out_features, self.in_features = self.weight_fp8.data.shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fp8_linear(x, self.weight_fp8, self.bias_bf16)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, e4m3, per-channel scales"


def _base(module):
    return getattr(module, "base_layer", module)


def fused_group(modules) -> tuple[Fp8Weight, torch.Tensor | None] | None:
    """The FP8 weight and bias of one fused product when `modules` (or their PEFT base layers) are
    exactly its Fp8Linear rows, in order; None when they are not FP8 modules."""
    bases = [_base(m) for m in modules]
    if not any(isinstance(b, Fp8Linear) for b in bases):
        return None
    if not all(isinstance(b, Fp8Linear) for b in bases):
        raise ValueError("fp8: a fused product's modules are FP8 and bf16 mixed")
    group = bases[0].group
    start = 0
    for b in bases:
        if b.group.weight is not group.weight or b.group.start != start:
            raise ValueError("fp8: a fused product's modules are not the rows of one FP8 group")
        start = b.group.stop
    if start != group.weight.data.shape[0]:
        raise ValueError("fp8: a fused product's modules do not cover their FP8 group")
    return group.weight, group.bias


def _quantize_group(linears, what: str, names) -> Fp8Weight:
    """The group's weights quantized one projection at a time (the scales are per row, so this is
    the fused matrix's quantization) into one FP8 matrix: the fp32 working copies are one
    projection's, never the group's."""
    first = linears[0].weight
    rows = sum(lin.weight.shape[0] for lin in linears)
    data = torch.empty((rows, first.shape[1]), dtype=torch.float8_e4m3fn, device=first.device)
    scale = torch.empty(rows, dtype=torch.float32, device=first.device)
    start = 0
    for lin, name in zip(linears, names):
        part = quantize_weight(lin.weight, f"{what} ({name})")
        stop = start + part.data.shape[0]
        data[start:stop].copy_(part.data)
        scale[start:stop].copy_(part.scale)
        start = stop
    return Fp8Weight(data, scale)


def _set_base(holder: torch.nn.Module, parent: torch.nn.Module, name: str, module: torch.nn.Module) -> None:
    if hasattr(holder, "base_layer"):  # a PEFT LoRA layer: the LoRA stays, its frozen base becomes FP8
        holder.base_layer = module
    else:
        setattr(parent, name, module)


@torch.no_grad()
def quantize_frozen_base(model: torch.nn.Module) -> int:
    """Swap every decoder layer's frozen projections (q/k/v, o, gate/up, down; the PEFT base layers
    under LoRA) for Fp8Linear modules, quantized once from their weights on the device they are on;
    returns the modules swapped. The bf16 weights are dropped with the old modules (unless
    something else holds them); LoRA parameters, norms and embeddings are left as they were.

    Refused in one line: a projection whose weight trains, or one not a plain nn.Linear."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    swapped = 0
    for i, layer in enumerate(base.layers):
        for parent_name, names in GROUPS:
            parent = getattr(layer, parent_name)
            holders = [getattr(parent, n) for n in names]
            linears = [_base(h) for h in holders]
            if all(isinstance(lin, Fp8Linear) for lin in linears):
                continue  # quantized already
            what = f"layer {i} {'/'.join(n.removesuffix('_proj') for n in names)}"
            for lin in linears:
                if type(lin) is not torch.nn.Linear:
                    raise HarnessError(
                        f"fp8: {what} is a {type(lin).__name__}, not a torch Linear; FP8 swaps Linears only"
                    )
                if lin.weight.requires_grad:
                    raise HarnessError(f"fp8: {what}'s weight trains; only a frozen base is quantized")
            weight = _quantize_group(linears, what, names)
            has_bias = [lin.bias is not None for lin in linears]
            if any(has_bias) and not all(has_bias):
                raise HarnessError(f"fp8: {what} has a bias on some of its projections only")
            bias = torch.cat([lin.bias for lin in linears]).to(torch.bfloat16) if all(has_bias) else None
            start = 0
            for holder, name, lin in zip(holders, names, linears):
                rows = lin.weight.shape[0]
                _set_base(holder, parent, name, Fp8Linear(Fp8Group(weight, bias, start, start + rows)))
                start += rows
                swapped += 1
    return swapped


def fp8_unsupported(device: torch.device | str) -> str | None:
    """Why FP8 products cannot run on `device` (one clause), or None when they can."""
    device = torch.device(device)
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return f"this torch ({torch.__version__}) has no float8 products"
    if device.type != "cuda":
        return f"FP8 products (torch._scaled_mm) need a CUDA GPU of compute capability 8.9 or newer; the device is {device}"
    capability = torch.cuda.get_device_capability(device)
    if capability < MIN_CAPABILITY:
        return (
            f"FP8 products need compute capability 8.9 or newer (Ada, Hopper); "
            f"{torch.cuda.get_device_name(device)} is {capability[0]}.{capability[1]}"
        )
    return None


def require_fp8(device: torch.device | str) -> None:
    """A one-line HarnessError where `fp8=true` cannot run: never a silent bf16 run in its place."""
    why = fp8_unsupported(device)
    if why is not None:
        raise HarnessError(f"fp8=true: {why}; drop --set fp8=true to run in bf16")
