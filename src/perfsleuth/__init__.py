"""perfsleuth: a performance detective for native programs."""

__version__ = "0.1.0"
