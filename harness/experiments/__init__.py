"""Experiments as code: an experiment file (TOML) declares data, backbones and steps, and
`aa-harness reproduce` runs what is not done yet (harness.experiments.reproduce)."""
