"""The fleet's wire formats, what a push carries, one format per module.

window_pprof (the perfsleuth agent's), pyroscope (Pyroscope's /ingest), pyroscope_push
(Pyroscope's Connect push, from push.proto by push_pb2) and otlp_profiles (OTLP), with
ingest: the checks every push passes before its window is stored. The agent encodes and
the collector decodes them, so they live below both (formats/), not in either.
"""
