"""The web UI's HTTP API, its static files, and the single-file HTML report."""
