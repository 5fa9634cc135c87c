"""The speed layer: fused compiled decoders, mask-free and packed attention, prefix reuse,
sharded encoding, compressed search, fast LoRA training steps (`lora_train`: the retriever's
packed fused step; `prefix_train`: the reranker's shared-prefix step). The `bench` verb that
measures them lives apart, in the optional aa-harness-bench distribution (benchmarks/).

Nothing in the research path needs this package to be correct: every path here is checked
against the plain Hugging Face forward, and each system can switch it off (`fast_path=false`,
`prefix_reuse=false`, `search_index=exact`).
"""
