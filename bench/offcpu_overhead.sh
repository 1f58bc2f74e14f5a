#!/usr/bin/env bash
# Slowdown of a lock-heavy workload (examples/bin/prodcons: 3 consumers on one
# mutex-protected queue) under:
#   none          no profiling
#   offcpu        perfsleuth record --mode offcpu (eBPF sched_switch, needs root)
#   wall@R        perfsleuth record --mode wall --freq R (eu-stack snapshots)
#   gdb@R         pt-pmp's method: `gdb -batch -p PID -ex "thread apply all bt"`
#                 in a loop at R snapshots per second
# Each configuration runs RUNS times, interleaved; the median wall time is
# compared with the median of `none`. Output: one table, plus bench/offcpu_overhead.json.
# As root it also reports the kernel's own count of the eBPF program's run time
# (bench/offcpu_bpf_cost.py): a few percent drown in a shared machine's noise.
#
# usage: bench/offcpu_overhead.sh   (env: RUNS=5 MESSAGES=150000 RATES="1 5",
#                                     ONLY="offcpu wall@5" to time only these against none)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-5}
MESSAGES=${MESSAGES:-150000}
RATES=${RATES:-"1 5"}
PERFSLEUTH=$ROOT/.venv/bin/perfsleuth
PROGRAM=$ROOT/examples/bin/prodcons
make -s -C examples bin/prodcons
WORK=$(mktemp -d /tmp/perfsleuth-bench.XXXXXX)
trap 'tail -3 "$WORK/log" 2>/dev/null; rm -rf "$WORK"' EXIT

now() { date +%s.%N; }

# pt-pmp's loop: attach gdb, dump every thread's stack, detach; R times a second.
gdb_loop() {
    local pid=$1 rate=$2 interval started elapsed
    interval=$(awk -v r="$rate" 'BEGIN { print 1 / r }')
    while kill -0 "$pid" 2>/dev/null; do
        started=$(now)
        gdb -batch -p "$pid" -ex "thread apply all bt" >/dev/null 2>&1 || true
        elapsed=$(awk -v a="$started" -v b="$(now)" 'BEGIN { print b - a }')
        sleep "$(awk -v i="$interval" -v e="$elapsed" 'BEGIN { s = i - e; print (s > 0 ? s : 0) }')"
    done
}

run_once() {
    local config=$1 started pid
    started=$(now)
    case $config in
        none) "$PROGRAM" "$MESSAGES" >/dev/null ;;
        offcpu) "$PERFSLEUTH" record --store "$WORK/store" --mode offcpu -- "$PROGRAM" "$MESSAGES" \
            >/dev/null 2>>"$WORK/log" ;;
        wall@*) "$PERFSLEUTH" record --store "$WORK/store" --mode wall --freq "${config#wall@}" \
            -- "$PROGRAM" "$MESSAGES" >/dev/null 2>>"$WORK/log" ;;
        gdb@*)
            "$PROGRAM" "$MESSAGES" >/dev/null &
            pid=$!
            gdb_loop "$pid" "${config#gdb@}" &
            wait "$pid"
            wait
            ;;
    esac
    awk -v a="$started" -v b="$(now)" 'BEGIN { printf "%.3f\n", b - a }'
}

# perfsleuth's own start-up (bpftrace compiling its script, Python) is not the
# target's slowdown: measure the target's runtime, reported by the run itself.
target_seconds() {
    local config=$1
    case $config in
        none | gdb@*) run_once "$config" ;;
        *)
            run_once "$config" >/dev/null
            "$PERFSLEUTH" runs --store "$WORK/store" --format json |
                python3 -c 'import json, sys; print("%.3f" % json.load(sys.stdin)[0]["duration_s"])'
            ;;
    esac
}

CONFIGS=(none)
[ "$(id -u)" = 0 ] && CONFIGS+=(offcpu)
for rate in $RATES; do CONFIGS+=("wall@$rate" "gdb@$rate"); done
if [ -n "${ONLY:-}" ]; then read -r -a CONFIGS <<<"none $ONLY"; fi

declare -A TIMES
for _ in $(seq "$RUNS"); do
    for config in "${CONFIGS[@]}"; do
        TIMES[$config]+="$(target_seconds "$config") "
    done
done

python3 - "$RUNS" "$MESSAGES" "${CONFIGS[@]}" <<EOF
import json, statistics, sys
runs, messages, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
times = {$(for c in "${CONFIGS[@]}"; do printf '"%s": [%s], ' "$c" "$(echo ${TIMES[$c]} | tr ' ' ',')"; done)}
base = statistics.median(times["none"])
rows = []
print(f"prodcons {messages} messages, {runs} runs each, median seconds")
print(f"{'config':<10} {'median s':>9} {'slowdown':>9}   runs")
for c in configs:
    med = statistics.median(times[c])
    slow = med / base - 1
    rows.append({"config": c, "median_s": med, "slowdown": slow, "runs": times[c]})
    print(f"{c:<10} {med:9.3f} {100 * slow:8.1f}%   {' '.join(f'{t:.2f}' for t in times[c])}")
json.dump({"messages": int(messages), "rows": rows}, open("bench/offcpu_overhead.json", "w"), indent=1)
EOF
if [ "$(id -u)" = 0 ]; then
    "$ROOT/.venv/bin/python" bench/offcpu_bpf_cost.py "$PROGRAM" "$MESSAGES" 2>/dev/null | tail -1
fi
