"""The collector daemon: pushes from agents, Pyroscope, OTLP and pprof clients go into
the fleet store."""
