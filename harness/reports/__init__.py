"""Reports layer: leaderboards, training pages, exports; the pages plugins add come through the `register_pages` hook.

Reads result files; never ranks or trains.
"""
