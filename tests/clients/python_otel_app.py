"""A Python program traced by OpenTelemetry and profiled by pyroscope-io, its spans linked
to the profile by pyroscope-otel's PyroscopeSpanProcessor: each round is two root spans,
`handle_a` running python_app's hot_a (about twice the work) and `handle_b` its hot_b; the
SDK tags their samples with span_name, span_id and trace_id. Usage: python_otel_app.py SERVER APP
SECONDS. Prints the CPU seconds its loop spent and the root spans it ran."""

import sys
import time

import pyroscope
from opentelemetry.sdk.trace import TracerProvider
from pyroscope.otel import PyroscopeSpanProcessor
from python_app import hot_a, hot_b


def main() -> None:
    server, app, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    pyroscope.configure(app_name=app, server_address=server, tags={"team": "sre"})
    provider = TracerProvider()
    provider.add_span_processor(PyroscopeSpanProcessor())
    tracer = provider.get_tracer("python_otel_app")
    cpu0, start, spans = time.process_time(), time.monotonic(), 0
    while time.monotonic() - start < seconds:
        with tracer.start_as_current_span("handle_a"):
            hot_a()
        with tracer.start_as_current_span("handle_b"):
            hot_b()
        spans += 2
    cpu = time.process_time() - cpu0
    pyroscope.shutdown()
    print(cpu, spans)


if __name__ == "__main__":
    main()
