"""An example aa-harness plugin package (see docs/plugins.md in the harness)."""
