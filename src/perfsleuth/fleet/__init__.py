"""Fleet queries over the fleet store: TopN, flame graphs, diffs, series, advice."""
