"""Built-in plugins, one folder each: a system's hookimpl, config dataclass and model code; `paper/`,
the paper's reported figures as a leaderboard page."""
