#!/usr/bin/env bash
# Build SeaweedFS's `weed` (a real S3 server, Apache-2.0) into .venv/bin for the S3 tests.
# Idempotent: a stamp names the version built; nothing is done when it matches.
# The module comes from the Go module proxy; `go install` refuses it (its go.mod has
# replace directives), so its source is copied and built in place (~4 min on 2 cores).
# Go comes from scripts/go-toolchain.sh (the machine's, else the toolchain module
# from the proxy, kept under .venv/go).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
MODULE=github.com/seaweedfs/seaweedfs
VERSION=v0.0.0-20261109003541-7506e5f91cd6
GO_NEEDED=1.26.6
STAMP=$VENV/.weed.stamp

if [ -x "$VENV/bin/weed" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION" ]; then
    exit 0
fi

# shellcheck source=scripts/go-toolchain.sh
source scripts/go-toolchain.sh

GO=$(go_bin "$GO_NEEDED")
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
