"""Reports layer: leaderboards, training and performance pages, the paper's reported figures.

Reads result files; never ranks or trains.
"""
