"""The benchmark's committed split manifests, read-only package data installed as `harness.splits`:
`<collection>/seed-<S>.json` for each built-in collection and sampling seed (document ids, needles
and the data's sha256), and blogs-xtopic's `topic-labels.json`. Read through harness.foundation.locations."""
