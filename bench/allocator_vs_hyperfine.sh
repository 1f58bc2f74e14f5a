#!/usr/bin/env bash
# The allocator experiment's speed-up next to hyperfine's on the same commands.
#
#   bash bench/allocator_vs_hyperfine.sh [ROUNDS] [RUNS] [time|cpu]
#
# Runs `perfsleuth try allocator` on examples/bin/alloc_heavy ROUNDS (default 40),
# then hyperfine on the program as it is and under LD_PRELOAD of each allocator that
# perfsleuth measured, RUNS runs each (default 10) after one warm-up. Prints, per
# allocator, perfsleuth's ratio (baseline time / allocator time, 95% CI, verdict)
# and hyperfine's ratio of means and of medians. With `cpu`, both compare user+sys
# time instead of wall time (hyperfine: ratio of mean user+system; no medians).
# Numbers go in docs/experiments.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-40}
RUNS=${2:-10}
METRIC=${3:-time}
PROGRAM=$ROOT/examples/bin/alloc_heavy
PERFSLEUTH=$ROOT/.venv/bin/perfsleuth
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

command -v hyperfine >/dev/null || { echo "bench: needs hyperfine (apt-get install -y hyperfine)" >&2; exit 2; }
make -s -C "$ROOT/examples" bin/alloc_heavy

"$PERFSLEUTH" try allocator --store "$WORK/store" --format json -o "$WORK/perfsleuth.json" \
	--runs "$RUNS" --warmup 1 --metric "$METRIC" -- "$PROGRAM" "$ROUNDS"

commands=("$PROGRAM $ROUNDS")
names=(baseline)
while read -r name library; do
	names+=("$name")
	commands+=("env LD_PRELOAD=$library $PROGRAM $ROUNDS")
done < <(python3 - "$WORK/perfsleuth.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for name, proof in doc["preload_checks"].items():
    print(name, proof.rsplit(" bound to ", 1)[1])
EOF
)

hyperfine -N --warmup 1 --runs "$RUNS" --style none --export-json "$WORK/hyperfine.json" \
	"${commands[@]}" >/dev/null

python3 - "$WORK/perfsleuth.json" "$WORK/hyperfine.json" "$METRIC" "${names[@]}" <<'EOF'
import json, statistics, sys
ours = json.load(open(sys.argv[1]))
theirs = json.load(open(sys.argv[2]))["results"]
metric = sys.argv[3]
names = sys.argv[4:]
for r in theirs:
    r["mean_wall"] = r["mean"]
if metric == "cpu":
    for r in theirs:
        r["mean"] = r["user"] + r["system"]
        r["times"] = [r["mean"]]
hf = {name: r for name, r in zip(names, theirs)}
base = hf["baseline"]
print(f"{'allocator':<10} {'perfsleuth ratio [95% CI] verdict':<40} {'hyperfine mean':>15} {'hyperfine median':>17}")
for v in ours["variants"]:
    if v.get("ratio") is None:
        print(f"{v['name']:<10} not measured: {v['error']}")
        continue
    lo, hi = v["ci95"]
    r = hf[v["name"]]
    mean_ratio = base["mean"] / r["mean"]
    # hyperfine's own error propagation of the ratio of means
    spread = ((base["stddev"] / base["mean"]) ** 2 + (r["stddev"] / r["mean"]) ** 2) ** 0.5
    err = f"± {mean_ratio * spread:.2f}" if metric == "time" else ""
    median_ratio = statistics.median(base["times"]) / statistics.median(r["times"])
    ps = f"{v['ratio']:.3f} [{lo:.3f}-{hi:.3f}] {v['verdict']}"
    print(f"{v['name']:<10} {ps:<40} {mean_ratio:>8.3f} {err:<6} {median_ratio:>17.3f}")
ob = ours["baseline"]
print(f"baseline: perfsleuth median wall {ob['wall_s']['median']:.3f} s, "
      f"user+sys {ob['user_s']['median'] + ob['sys_s']['median']:.3f} s; "
      f"hyperfine mean wall {base['mean_wall']:.3f} s, user+sys {base['user'] + base['system']:.3f} s")
EOF
