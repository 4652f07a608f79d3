#!/usr/bin/env bash
# CPU per push delivery of the relay and of the load driver (issue: performance). Usage:
#   Benchmarks/scripts/relay-delivery.sh [DEVICES] [RATE] [SECONDS]
# Starts a release push-relay and one `survey-cli load push` (DEVICES Android devices, RATE pushes/s, open model, 2 s
# warm-up, SECONDS measured), reads both processes' utime+stime from /proc over the measured phase, and divides by
# the deliveries the driver counted in it. Each delivery is a provider request, a stream event and an ack.
# Needs a release build (swift build -c release). Loopback only.
set -euo pipefail
devices=${1:-500}
rate=${2:-2000}
seconds=${3:-10}
bin=${BIN:-.build/release}
work=$(mktemp -d)
trap 'kill $server_pid $driver_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
driver_pid=""

source "$(dirname "$0")/lib.sh"
start_server push-relay --log-level warning
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

"$bin/survey-cli" load push --relay "$url" --devices "$devices" --rate "$rate" --warmup 2s --duration "${seconds}s" \
    --report "$work/push.json" > "$work/push.txt" &
driver_pid=$!
# The window: from the end of the warm-up (2 s, plus up to ~1 s to connect the devices) to one second before the end.
sleep 3.5
r0=$(cpu "$server_pid"); d0=$(cpu "$driver_pid"); t0=$(date +%s.%N)
sleep $((seconds - 2))
r1=$(cpu "$server_pid"); d1=$(cpu "$driver_pid"); t1=$(date +%s.%N)
wait "$driver_pid" || true
cat "$work/push.txt"
python3 - "$work/push.json" "$r0" "$r1" "$d0" "$d1" "$t0" "$t1" "$(getconf CLK_TCK)" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
r0, r1, d0, d1 = (int(x) for x in sys.argv[2:6])
t0, t1, hz = float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
rate = report["totals"]["throughput"]
deliveries = rate * (t1 - t0)
relay, driver = (r1 - r0) / hz, (d1 - d0) / hz
print(f"delivered {rate:.0f}/s; over {t1 - t0:.1f} s: relay {relay / deliveries * 1e6:.0f} us of CPU per delivery "
      f"({relay / (t1 - t0) * 100:.0f} % of a core), driver {driver / deliveries * 1e6:.0f} us "
      f"({driver / (t1 - t0) * 100:.0f} % of a core)")
PY
echo "command: Benchmarks/scripts/relay-delivery.sh $devices $rate $seconds"
