"""Recorders: each starts a real tool on the user's command and yields raw data."""
