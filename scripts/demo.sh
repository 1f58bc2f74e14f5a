#!/usr/bin/env bash
# The demo (`make demo`): build the examples, run perfsleuth on the one whose
# planted problem is an allocation-heavy std::map, and print its ranked
# findings and top functions. Uses a scratch store so it never touches yours.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -C examples
store="$(mktemp -d)/store"
trap 'rm -rf "$(dirname "$store")"' EXIT
echo "\$ perfsleuth run -- examples/bin/map_alloc" >&2
.venv/bin/perfsleuth run --store "$store" -- examples/bin/map_alloc
