#!/usr/bin/env bash
# Build SeaweedFS's `weed` (a real S3 server, Apache-2.0) into .venv/bin for the S3 tests.
# Idempotent: a stamp names the version built; nothing is done when it matches.
# The module comes from the Go module proxy; `go install` refuses it (its go.mod has
# replace directives), so its source is copied and built in place (~4 min on 2 cores).
# Go older than the module needs (Debian's golang is) is replaced by the Go toolchain
# module golang.org/toolchain, also from the proxy, kept under .venv/go.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
MODULE=github.com/seaweedfs/seaweedfs
VERSION=v0.0.0-20261109003541-7506e5f91cd6
GO_NEEDED=1.26.6
STAMP=$VENV/.weed.stamp
PROXY=${GOPROXY_URL:-https://proxy.golang.org}

if [ -x "$VENV/bin/weed" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION" ]; then
    exit 0
fi

version_at_least() {  # version_at_least HAVE NEED
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]
}

go_bin() {
    local go
    for go in "$(command -v go || true)" /usr/local/go/bin/go "$VENV/go/bin/go"; do
        [ -n "$go" ] && [ -x "$go" ] || continue
        local have
        have=$("$go" env GOVERSION 2>/dev/null | sed 's/^go//')
        if [ -n "$have" ] && version_at_least "$have" "$GO_NEEDED"; then
            echo "$go"
            return
        fi
    done
    local zip=$VENV/go-toolchain.zip
    local mod="golang.org/toolchain/@v/v0.0.1-go$GO_NEEDED.linux-$(dpkg --print-architecture).zip"
    echo "build-seaweedfs: fetching Go $GO_NEEDED ($PROXY/$mod)" >&2
    curl -fsSL -o "$zip" "$PROXY/$mod"
    rm -rf "$VENV/go" "$VENV/go-unpacked"
    "$VENV/bin/python" -m zipfile -e "$zip" "$VENV/go-unpacked"
    mv "$VENV/go-unpacked/golang.org/toolchain@v0.0.1-go$GO_NEEDED.linux-"* "$VENV/go"
    rm -rf "$VENV/go-unpacked" "$zip"
    chmod +x "$VENV"/go/bin/* "$VENV"/go/pkg/tool/*/*
    echo "$VENV/go/bin/go"
}

GO=$(go_bin)
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
DIR=$("$GO" mod download -json "$MODULE@$VERSION" | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
BUILD=$VENV/weed-build
rm -rf "$BUILD"
cp -r "$DIR" "$BUILD"
chmod -R u+w "$BUILD"
echo "build-seaweedfs: building weed $VERSION (a few minutes)" >&2
(cd "$BUILD" && "$GO" build -o "$VENV/bin/weed" ./weed)
rm -rf "$BUILD"
echo "$VERSION" > "$STAMP"
echo "build-seaweedfs: $VENV/bin/weed built"
