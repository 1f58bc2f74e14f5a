#!/usr/bin/env bash
# The Pyroscope clients the collector's integration tests push with, from their own
# registries, kept under .venv/clients/ (tests/integration/test_pyroscope_clients.py).
# pyroscope-io 1.4.0 is a dev dependency of the virtualenv itself (pyproject.toml).
# Idempotent: each client is installed once; a failed install is said, not fatal.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
CLIENTS=$VENV/clients
mkdir -p "$CLIENTS"

# pyroscope-io 0.8.16 pushes /ingest?format=pprof (1.x pushes the Connect API).
PY08=$CLIENTS/pyroscope-io-0.8.16
if [ ! -d "$PY08/pyroscope" ]; then
    "$VENV/bin/pip" install -q --target "$PY08.tmp" 'pyroscope-io==0.8.16' \
        && mv "$PY08.tmp" "$PY08" \
        || echo "install-clients: pyroscope-io 0.8.16 did not install" >&2
    rm -rf "$PY08.tmp"
fi
