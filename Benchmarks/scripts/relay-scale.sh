#!/usr/bin/env bash
# The relay at scale (issue: 18,000 connected devices, memory per connection, deliveries/s, reconnect storm).
# Usage: [STORM=0] [MAX_IN_FLIGHT=256] Benchmarks/scripts/relay-scale.sh [DEVICES] [RATE] [DURATION_S] [DRIVERS]
#   DEVICES   devices connected at once, split over DRIVERS `survey-cli load push` processes (default 18000)
#   RATE      pushes per second in total through the FCM-style API (default 10000)
#   DURATION  seconds of sending after a 5 s warm-up (default 20)
#   DRIVERS   load-driver processes; each holds DEVICES/DRIVERS streams (a process may open 20,000 files here)
#   MAX_IN_FLIGHT  sends a driver keeps in flight before it counts further starts as dropped (default 256, its
#             connection pool: more only queue inside libcurl, and past saturation that queue made throughput collapse
#             to a third instead of levelling off)
# Streams are spread over 127.0.0.2-127.0.0.9 so no source address runs out of ephemeral ports. Halfway through
# the sending phase (a quarter in) every stream is closed at once (`close_all`); the drivers reconnect with up to 2 s of jitter.
# Prints: relay RSS before and with all devices connected (and per connection), each driver's report, the storm's
# recovery time and the slowest /__control/health answer meanwhile. Needs a release build.
set -euo pipefail
devices=${1:-18000}
rate=${2:-10000}
duration=${3:-20}
drivers=${4:-2}
bin=${BIN:-.build/release}
work=$(mktemp -d)
pids=()
relay_pid=""
trap 'kill ${pids[@]:-} $relay_pid 2>/dev/null || true; wait 2>/dev/null || true; mkdir -p /tmp/relay-scale-last; cp "$work"/*.log "$work"/*.txt /tmp/relay-scale-last/ 2>/dev/null; rm -rf "$work"' EXIT

source "$(dirname "$0")/lib.sh"
start_server push-relay --log-level warning
relay_pid=$server_pid
rss() { awk '/^VmRSS/ {print $2}' "/proc/$relay_pid/status"; }
connected() { curl -s --max-time 5 "$url/__control/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connected"])' 2>/dev/null; }
rss0=$(rss)
echo "relay $url, RSS at start $((rss0 / 1024)) MB"

per=$((devices / drivers))
per_rate=$(python3 -c "print($rate / $drivers)")
for i in $(seq 1 "$drivers"); do
    "$bin/survey-cli" load push --relay "$url" --devices "$per" --rate "$per_rate" --warmup 5s --duration "${duration}s" \
        --grace 5s --source-addresses 8 --reconnect-jitter 2s --max-in-flight ${MAX_IN_FLIGHT:-256} --report "$work/report-$i.json" \
        > "$work/driver-$i.txt" 2> "$work/driver-$i.log" &
    pids+=($!)
done

# All connected: memory per connection.
start=$(date +%s.%N)
while [ "$(connected)" -lt "$devices" ]; do
    sleep 0.5
    if python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $start > 120 else 1)"; then echo "only $(connected) connected after 120 s"; break; fi
done
sleep 1
rss1=$(rss)
n=$(connected)
echo "connected $n devices in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s; relay RSS $((rss1 / 1024)) MB;" \
     "$(python3 -c "print(round(($rss1 - $rss0) / $n, 2))") kB per connection"

# Waits for the drivers, prints their reports and the totals.
report() {
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    for i in $(seq 1 "$drivers"); do echo "--- driver $i"; cat "$work/driver-$i.txt"; done
    python3 - "$work" "$drivers" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
reports = [json.load(open(f"{work}/report-{i}.json")) for i in range(1, n + 1)]
delivered = sum(r["totals"]["succeeded"] for r in reports)
seconds = max(r["totals"]["seconds"] for r in reports)
print(f"total: {delivered / seconds:.0f} deliveries/s; worst driver p99 {max(r['latency_ms']['p99'] for r in reports):.1f} ms;"
      f" lost/failed {sum(r['totals']['failed'] for r in reports)}; dropped starts {sum(r['totals']['dropped'] for r in reports)}")
PY
}

# A quarter into the measured phase: the storm (STORM=0 skips it, to measure steady delivery alone).
if [ "${STORM:-1}" = 0 ]; then
    # CPU time of the relay and of the drivers over most of the measured phase (from the end of the drivers' 5 s
    # warm-up until 3 s before their sending ends: they exit soon after), per offered delivery.
    cpu() { local sum=0 p; for p in "$@"; do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$sum"; }
    window=$((duration - 3))
    if [ "$window" -ge 5 ]; then
        sleep 4
        cpu0=$(cpu "$relay_pid"); dcpu0=$(cpu "${pids[@]}")
        sleep "$window"
        cpu1=$(cpu "$relay_pid"); dcpu1=$(cpu "${pids[@]}")
    fi
    report
    if [ "$window" -ge 5 ]; then
        python3 -c "
t, d, n, w = ($cpu1 - $cpu0) / $(getconf CLK_TCK), ($dcpu1 - $dcpu0) / $(getconf CLK_TCK), $rate * $window, $window
print(f'relay CPU: {t / w * 100:.0f} % of one core; {t / n * 1e6:.0f} us per offered delivery (its ack included)')
print(f'drivers CPU: {d / w * 100:.0f} % of one core; {d / n * 1e6:.0f} us per offered delivery;'
      f' {(t + d) / n * 1e6:.0f} us in all, so {$(nproc)} cores carry at most {$(nproc) * n / (t + d):.0f} deliveries/s')"
    fi
    exit 0
fi
sleep $((5 + duration / 4))
probe() {  # slowest health answer while the storm lasts
    local worst=0
    while [ ! -f "$work/storm-done" ]; do
        t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 5 "$url/__control/health" || echo 5)
        worst=$(python3 -c "print(max($worst, $t))")
        sleep 0.1
    done
    echo "$worst" > "$work/worst"
}
probe &
probe_pid=$!
# The same over one kept-alive connection: request handling alone, without waiting behind the storm's connections
# in the accept queue.
python3 - "$url" "$work" <<'PY' &
import http.client, sys, time, os, urllib.parse
url, work = sys.argv[1], sys.argv[2]
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
worst = 0.0
while not os.path.exists(f"{work}/storm-done"):
    t = time.monotonic()
    try:
        conn.request("GET", "/__control/health")
        conn.getresponse().read()
    except Exception:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    worst = max(worst, time.monotonic() - t)
    time.sleep(0.1)
open(f"{work}/worst-kept", "w").write(f"{worst:.3f}")
PY
kept_pid=$!
storm_start=$(date +%s.%N)
curl -s -X PUT -H 'Content-Type: application/json' -d '{"close_all": true}' "$url/__control/faults"
sleep 0.2
last_report=0
while true; do
    c=$(connected || echo 0)
    [ "${c:-0}" -ge "$n" ] && break
    elapsed=$(python3 -c "print(int($(date +%s.%N) - $storm_start))")
    if [ "$elapsed" -ge $((last_report + 5)) ]; then echo "  storm +${elapsed}s: $c connected"; last_report=$elapsed; fi
    [ "$elapsed" -ge 60 ] && break
    sleep 0.2
done
storm=$(python3 -c "print(round($(date +%s.%N) - $storm_start, 2))")
touch "$work/storm-done"; wait "$probe_pid" "$kept_pid" 2>/dev/null || true
echo "reconnect storm: $(connected) of $n streams back after $storm s; slowest /__control/health meanwhile $(cat "$work/worst" 2>/dev/null || echo '?') s" \
     "on a new connection each time, $(cat "$work/worst-kept" 2>/dev/null || echo '?') s on one kept-alive connection"

report
