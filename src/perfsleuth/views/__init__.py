"""Views over one stored profile: top, callers/callees, flame, annotate, diff."""
