"""The agent daemon: samples every process of a host continuously, pushes windows to a collector."""
