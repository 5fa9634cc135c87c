"""Switch an inference-only encoder onto the fastest exact path its backbone allows."""

from __future__ import annotations

import functools


def enable_fast_path(encoder, prefer: str = "packed", *, fp8: bool = False) -> str | None:
    """Returns the path taken: "packed" or "padded" (a FusedDecoder), "aa_causal", or None.

    Llama-family decoders get a FusedDecoder (fused, compiled layers) over "padded" rows
    (length-sorted, mask-free causal attention) or "packed" ones (varlen attention); other
    causal decoders read with right padding get "aa_causal" (the Hugging Face model with
    mask-free causal attention); anything else (bidirectional encoders, models without a
    `backbone`) is left alone. `prefer` picks among those that apply. A LoRA adapter is
    merged into the weights first, so the encoder must not be trained afterwards.

    fp8: the merged weights are then quantized (`fp8_linear.quantize_frozen_base`: e4m3 weights,
    the bf16 ones dropped) and the FusedDecoder runs FP8 products; only the FusedDecoder runs them,
    so a backbone or `prefer` that would take another path is a one-line HarnessError. Whether the
    device runs FP8 products is the caller's check (`fp8_linear.require_fp8`); elsewhere the
    products compute their fp32 reference (the CPU tests).
    """
    from harness.neural.fast import causal_attention
    from harness.neural.fast.fused_decoder import FusedDecoder
    from harness.neural.fast.fused_paths import embed_fused

    backbone = getattr(encoder, "backbone", None)
    if backbone is None:
        if fp8:
            from harness.errors import HarnessError

            raise HarnessError(f"fp8=true: {type(encoder).__name__} has no decoder backbone for FP8 products")
        return None
    if hasattr(backbone, "merge_and_unload"):
        encoder.backbone = backbone = backbone.merge_and_unload()
    if getattr(backbone, "config", None) is not None and hasattr(backbone.config, "use_cache"):
        backbone.config.use_cache = False  # encoding never decodes: no key/value cache
    fused = prefer in ("padded", "packed") and FusedDecoder.supports(backbone)
    if fp8:
        from harness.errors import HarnessError
        from harness.neural.fast.fp8_linear import quantize_frozen_base

        if not fused:
            raise HarnessError(
                f"fp8=true: FP8 products run in the fused decoder only (Llama, Mistral, Qwen2, Qwen3 backbones, "
                f"path packed or padded); {type(backbone).__name__} with path {prefer!r} cannot take it"
            )
        backbone.requires_grad_(False)  # inference only: the whole base is frozen
        quantize_frozen_base(backbone)
    if fused:
        encoder.fused_decoder = FusedDecoder(backbone, layout=prefer)
        encoder.fast_embed = functools.partial(
            embed_fused, encoder.fused_decoder, pooling=encoder.pooling, finish=encoder.finish
        )
        return prefer
    if getattr(encoder, "padding_side", None) == "right" and causal_attention.enable(backbone):
        return "aa_causal"
    return None
