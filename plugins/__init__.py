"""Built-in systems, one folder each: its hookimpl, config dataclass and model code."""
