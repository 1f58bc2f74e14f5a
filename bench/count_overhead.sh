#!/usr/bin/env bash
# Slowdown of count mode (valgrind/callgrind) against the program run natively:
# full collection, and --only FUNC (collection switched on only inside FUNC).
#
#   bash bench/count_overhead.sh [ITERATIONS] [REPEATS]
#
# Uses examples/bin/keys (make -C examples). Prints the median wall time of each
# way of running it and the slowdown against native. Numbers go in docs/counts.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ITERATIONS=${1:-20000000}
REPEATS=${2:-5}
PROGRAM=$ROOT/examples/bin/keys
PERFSLEUTH=$ROOT/.venv/bin/perfsleuth
STORE=$(mktemp -d)
trap 'rm -rf "$STORE"' EXIT

make -s -C "$ROOT/examples" bin/keys

median_seconds() {
	local times=()
	for _ in $(seq "$REPEATS"); do
		local start end
		start=$(date +%s.%N)
		"$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; return 1; }
		end=$(date +%s.%N)
		times+=("$(echo "$end - $start" | bc -l)")
	done
	printf '%s\n' "${times[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

native=$(median_seconds "$PROGRAM" "$ITERATIONS")
valgrind_full=$(median_seconds valgrind --tool=callgrind --callgrind-out-file=/dev/null \
	--dump-instr=yes --dump-line=yes "$PROGRAM" "$ITERATIONS")
full=$(median_seconds "$PERFSLEUTH" record --store "$STORE/full" --mode count -- "$PROGRAM" "$ITERATIONS")
only=$(median_seconds "$PERFSLEUTH" record --store "$STORE/only" --mode count --only keys_equal \
	-- "$PROGRAM" "$ITERATIONS")

printf '%-44s %9s %9s\n' "keys $ITERATIONS (median of $REPEATS)" "seconds" "slowdown"
row() { printf '%-44s %9.3f %8.1fx\n' "$1" "$2" "$(echo "$2 / $native" | bc -l)"; }
row "native" "$native"
row "valgrind callgrind alone" "$valgrind_full"
row "perfsleuth record --mode count" "$full"
row "perfsleuth record --mode count --only FUNC" "$only"
