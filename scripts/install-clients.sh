#!/usr/bin/env bash
# The Pyroscope clients and the OpenTelemetry Collector the collector's integration
# tests push with, from their own registries, kept under .venv/clients/
# (tests/integration/test_pyroscope_clients.py, test_otel_collector.py): Python, Go,
# Rust, Node and Java SDKs, pyroscope-otel's span labels and an Alloy-style pusher.
# pyroscope-io 1.4.0 is a dev dependency of the virtualenv itself (pyproject.toml).
# The Pyroscope Java agent 2.9.2 (Maven Central, checked against its .sha1) and
# tests/clients/java/App.java compiled against it.
# Idempotent: each client is installed once; a failed install is said, not fatal.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
CLIENTS=$VENV/clients
mkdir -p "$CLIENTS"

# A Python client installed once into its own directory (put on PYTHONPATH by the
# tests): pip_client DIR WHAT REQUIREMENT...
pip_client() {
    local dir=$CLIENTS/$1 what=$2
    shift 2
    if [ ! -d "$dir" ]; then
        "$VENV/bin/pip" install -q --target "$dir.tmp" "$@" && mv "$dir.tmp" "$dir" \
            || echo "install-clients: $what did not install" >&2
        rm -rf "$dir.tmp"
    fi
}

# pyroscope-io 0.8.16 pushes /ingest?format=pprof (1.x pushes the Connect API).
pip_client pyroscope-io-0.8.16 "pyroscope-io 0.8.16" 'pyroscope-io==0.8.16'
# pyroscope-otel 1.1.0 (over pyroscope-io 1.4.0) tags samples with OpenTelemetry spans.
pip_client pyroscope-otel-1.1.0 "pyroscope-otel 1.1.0" 'pyroscope-otel==1.1.0' \
    'pyroscope-io==1.4.0' 'opentelemetry-sdk==1.45.2'

# A Go program built once per source change (stamped with the hash of its sources),
# module and build caches kept beside it: go_program OUTPUT SOURCE-DIR WHAT.
go_program() {
    local out=$CLIENTS/$1 src=$2 hash
    hash=$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -d' ' -f1)
    if [ ! -x "$out" ] || [ "$(cat "$out.stamp" 2>/dev/null)" != "$hash" ]; then
        (cd "$src" && GOPATH=$CLIENTS/go GOCACHE=$CLIENTS/go/cache GOFLAGS="-mod=readonly -modcacherw" \
            go build -o "$out" .) && echo "$hash" > "$out.stamp" \
            || echo "install-clients: $3 did not build" >&2
    fi
}

# pyroscope-go v1.5.0 in a small program (tests/clients/go/), a pusher on the Connect
# client Grafana Alloy's pyroscope.write pushes with (tests/clients/go/alloy/: Pyroscope's
# api module v1.5.0, about 1 minute cold), and a real OpenTelemetry Collector v0.165.0
# (otlp receiver, otlphttp and otlp exporters: tests/clients/otelcol/, about 2-4 minutes cold);
# skipped without Go (>= 1.26 for the pusher and the collector).
if command -v go >/dev/null 2>&1; then
    go_program go-app tests/clients/go "the pyroscope-go program"
    go_program alloy-push tests/clients/go/alloy "the Alloy-style pusher"
    go_program otelcol tests/clients/otelcol "the OpenTelemetry Collector"
else
    echo "install-clients: no Go: the pyroscope-go and otelcol tests will say so" >&2
fi

# The Pyroscope Rust SDK (crates.io pyroscope 2.1.5, its pprof-rs backend) in a small
# program (tests/clients/rust/), built once per source change (stamped with the hash of
# its sources), its target directory kept beside it. Cold: 4m50s at load 9, 6m14s at
# load 15 (1m51s of CPU time on 2 cores: reqwest, tokio, object, backtrace; the default
# rustls feature, not needed on 127.0.0.1, is left out); skipped without cargo.
RUST_APP=$CLIENTS/rust-app RUST_SRC=tests/clients/rust
if command -v cargo >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/cargo" ]; then
    hash=$(cat "$RUST_SRC"/Cargo.toml "$RUST_SRC"/Cargo.lock "$RUST_SRC"/src/*.rs | sha256sum | cut -d' ' -f1)
    if [ ! -x "$RUST_APP" ] || [ "$(cat "$RUST_APP.stamp" 2>/dev/null)" != "$hash" ]; then
        PATH=$HOME/.cargo/bin:$PATH cargo build -q --release --locked \
            --manifest-path "$RUST_SRC/Cargo.toml" --target-dir "$CLIENTS/rust-target" \
            && cp "$CLIENTS/rust-target/release/rust-app" "$RUST_APP" && echo "$hash" > "$RUST_APP.stamp" \
            || echo "install-clients: the Pyroscope Rust SDK program did not build" >&2
    fi
else
    echo "install-clients: no cargo: the Pyroscope Rust SDK test will say so" >&2
fi

# @pyroscope/nodejs 0.6.4 (npm), for tests/clients/node/app.js; skipped without npm.
NODE_DIR=$CLIENTS/node
if command -v npm >/dev/null 2>&1; then
    if ! grep -qs '"version": "0.6.4"' "$NODE_DIR/node_modules/@pyroscope/nodejs/package.json"; then
        npm install --silent --no-audit --no-fund --prefix "$NODE_DIR" '@pyroscope/nodejs@0.6.4' \
            || echo "install-clients: @pyroscope/nodejs did not install" >&2
    fi
else
    echo "install-clients: no npm: the @pyroscope/nodejs test will say so" >&2
fi

# io.pyroscope:agent 2.9.2 from Maven Central and the Java program it profiles
# (tests/clients/java/, compiled once per source change); skipped without a JDK.
JAVA_DIR=$CLIENTS/java
AGENT=$JAVA_DIR/agent-2.9.2.jar
MAVEN=${MAVEN_URL:-https://repo1.maven.org/maven2}/io/pyroscope/agent/2.9.2/agent-2.9.2.jar
# bounded: a stalled download would otherwise hold make setup until CI gives up
CURL=(curl -fsSL --retry 3 --connect-timeout 30 --max-time 600)
if command -v javac >/dev/null 2>&1; then
    mkdir -p "$JAVA_DIR"
    if [ ! -s "$AGENT" ]; then
        "${CURL[@]}" -o "$AGENT.tmp" "$MAVEN" \
            && [ "$("${CURL[@]}" "$MAVEN.sha1" | cut -c1-40)" = "$(sha1sum "$AGENT.tmp" | cut -c1-40)" ] \
            && mv "$AGENT.tmp" "$AGENT" \
            || echo "install-clients: the Pyroscope Java agent did not download (or its sha1 differs)" >&2
        rm -f "$AGENT.tmp"
    fi
    hash=$(cat tests/clients/java/*.java | sha256sum | cut -d' ' -f1)
    if [ -s "$AGENT" ] && [ "$(cat "$JAVA_DIR/classes.stamp" 2>/dev/null)" != "$hash" ]; then
        rm -rf "$JAVA_DIR/classes"
        javac -d "$JAVA_DIR/classes" -cp "$AGENT" tests/clients/java/*.java \
            && echo "$hash" > "$JAVA_DIR/classes.stamp" \
            || echo "install-clients: tests/clients/java did not compile" >&2
    fi
else
    echo "install-clients: no JDK (javac): the Pyroscope Java agent test will say so" >&2
fi
