"""The HTTP stack shared by the entry points that serve (the web UI, the collector):
app, auth, limits."""
