#!/usr/bin/env bash
# Build the perfsleuth_native extension (native/) and install it into .venv.
# Idempotent and quick when nothing changed: a stamp records a hash of the
# sources; the wheel is rebuilt and reinstalled only when they change.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
PY=$VENV/bin/python
STAMP=$VENV/.native.stamp

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH=$HOME/.cargo/bin:$PATH
    else
        echo "build-native: cargo not found; install Rust (https://rustup.rs) to build the fast perf.data reader" >&2
        echo "build-native: perfsleuth will fall back to 'perf script' (slower)" >&2
        exit 0
    fi
fi
if [ ! -x "$VENV/bin/maturin" ]; then
    "$VENV/bin/pip" install -q 'maturin>=1.5,<2'
fi

HASH=$(cat native/Cargo.toml native/Cargo.lock native/pyproject.toml native/src/*.rs 2>/dev/null | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ] && "$PY" -c 'import perfsleuth_native' 2>/dev/null; then
    exit 0
fi

rm -rf native/target/wheels
(cd native && "$VENV/bin/maturin" build --release --quiet --interpreter "$PY" --out target/wheels)
"$VENV/bin/pip" install -q --force-reinstall --no-deps native/target/wheels/perfsleuth_native-*.whl
"$PY" -c 'import perfsleuth_native' 
echo "$HASH" > "$STAMP"
echo "build-native: perfsleuth_native installed"
