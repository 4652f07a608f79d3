#!/usr/bin/env bash
# CPU per push delivery of the relay and of the load driver (issue: performance). Usage:
#   Benchmarks/scripts/relay-delivery.sh [DEVICES] [RATE] [SECONDS]
# Starts a release push-relay and one `survey-cli load push` (DEVICES Android devices, RATE pushes/s, open model, 2 s
# warm-up, SECONDS measured), reads both processes' utime+stime from /proc over the measured phase, and divides by
# the deliveries the driver counted in it. Each delivery is a provider request, a stream event and an ack.
# Needs a release build (swift build -c release). Loopback only.
# PROFILE=1 (needs Linux perf) also samples the relay over the same window and prints the kernel's share of its CPU
# (the socket calls and the loopback delivery of what it writes: the part no change to the relay's own code removes
# while each delivery arrives alone) and its system calls per delivery. The split comes from samples, not from
# /proc's utime/stime, which this kernel assigns per tick and which swung from 14 to 123 us between runs.
# STORE=1 runs the relay with --store (a SQLite file in the run's temporary directory): every accepted push, ack and
# connect is committed by the store's asynchronous writer before it is answered.
set -euo pipefail
devices=${1:-500}
rate=${2:-2000}
seconds=${3:-10}
bin=${BIN:-.build/release}
work=$(mktemp -d)
trap 'kill $server_pid $driver_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
driver_pid=""

source "$(dirname "$0")/lib.sh"
store_args=()
[ -n "${STORE:-}" ] && store_args=(--store "$work/relay.sqlite")
start_server push-relay --log-level warning "${store_args[@]}"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

"$bin/survey-cli" load push --relay "$url" --devices "$devices" --rate "$rate" --warmup 2s --duration "${seconds}s" \
    --report "$work/push.json" > "$work/push.txt" &
driver_pid=$!
# The window: from the end of the warm-up (2 s, plus up to ~1 s to connect the devices) to one second before the end.
sleep 3.5
r0=$(cpu "$server_pid"); d0=$(cpu "$driver_pid"); t0=$(date +%s.%N)
if [ -n "${PROFILE:-}" ]; then
    perf record -F 999 -o "$work/relay.data" -p "$server_pid" -- sleep $((seconds - 2)) 2> /dev/null & sampler=$!
    events=$(printf 'syscalls:sys_enter_%s,' read write writev epoll_wait epoll_ctl accept4 close futex getrandom)
    perf stat -e "${events%,}" -x, -o "$work/syscalls.csv" -p "$server_pid" -- sleep $((seconds - 2))
    wait "$sampler" || true
else
    sleep $((seconds - 2))
fi
r1=$(cpu "$server_pid"); d1=$(cpu "$driver_pid"); t1=$(date +%s.%N)
wait "$driver_pid" || true
cat "$work/push.txt"
kernel=""
if [ -n "${PROFILE:-}" ]; then
    kernel=$(perf report -i "$work/relay.data" --no-children --sort dso -g none 2> /dev/null | awk '/\[kernel.kallsyms\]/ {print $1+0}')
fi
python3 - "$work/push.json" "$r0" "$r1" "$d0" "$d1" "$t0" "$t1" "$(getconf CLK_TCK)" "$kernel" "$work/syscalls.csv" "$((seconds - 2))" <<'PY'
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
if sys.argv[9]:  # PROFILE=1: the kernel's share of the relay's samples, and perf stat's system call counts
    share = float(sys.argv[9]) / 100
    calls = {}
    for line in open(sys.argv[10]):
        fields = line.strip().split(",")
        if len(fields) > 2 and fields[0].isdigit() and int(fields[0]) > 0:
            calls[fields[2].removeprefix("syscalls:sys_enter_")] = int(fields[0])
    # perf stat counted over its own window (the sleep it ran); the relay's rate is the driver's.
    counted = rate * int(sys.argv[11])
    per = ", ".join(f"{name} {count / counted:.1f}" for name, count in sorted(calls.items(), key=lambda kv: -kv[1])[:8])
    print(f"relay kernel share {share * 100:.1f} % of samples = {share * relay / deliveries * 1e6:.0f} us per delivery; "
          f"system calls per delivery: {per}")
PY
echo "command: Benchmarks/scripts/relay-delivery.sh $devices $rate $seconds"
