"""`aa-harness bench`: the harness's encoding, reranking and search paths against naive
baselines, on real architectures with random weights (nothing downloaded), in one process; and
the leaderboard's performance page, which shows the results (`performance`)."""
