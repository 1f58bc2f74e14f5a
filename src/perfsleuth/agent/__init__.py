"""The agent daemon: samples every process of a host continuously and pushes windows to a collector."""
