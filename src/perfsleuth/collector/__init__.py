"""The collector daemon: accepts pushes from agents, Pyroscope, OTLP and pprof clients into the fleet store."""
