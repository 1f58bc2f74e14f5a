#!/usr/bin/env bash
# The demo (`make demo`): build the examples, run perfsleuth on the one whose
# planted problem is an allocation-heavy std::map, and print its ranked
# findings and top functions. The run goes to .perfsleuth-demo/ (not your
# .perfsleuth/), where the other commands can explore it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -C examples
store=.perfsleuth-demo
echo "\$ perfsleuth run -- examples/bin/map_alloc" >&2
.venv/bin/perfsleuth run --store "$store" -- examples/bin/map_alloc
echo >&2
echo "explore it: .venv/bin/perfsleuth top --store $store; .venv/bin/perfsleuth serve --store $store" >&2
