#!/usr/bin/env bash
# Scale-out figures (issue 17), each comparison with the same tool in one run, on loopback:
#   1. registrations/s at Beiwe's default (1000 PBKDF2 iterations): SQLite, PostgreSQL with one instance, PostgreSQL
#      with two instances on one database (the load tool's repeated --server spreads the devices);
#   2. the 7-day clock advance with PARTICIPANTS due, on PostgreSQL with two instances ticking (advance-benchmark);
#   3. load push through one relay, then through two (survey-cli up --relays 2).
# Usage: [ROUNDS=N] Benchmarks/scripts/scaleout.sh [PARTICIPANTS] [DURATION] [CONCURRENCY]   (defaults 20000 10s 64)
# Needs a release build (swift build -c release). Starts its own PostgreSQL cluster (scripts/postgres) and stops it.
set -euo pipefail
participants=${1:-20000}
duration=${2:-10s}
concurrency=${3:-64}
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin=${BIN:-$root/.build/release}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${TRIO_POSTGRES_DIR:-}" ] && bash "$root/scripts/postgres" stop "$TRIO_POSTGRES_DIR"
    rm -rf "$work"
}
trap cleanup EXIT
eval "$(bash "$root/scripts/postgres" start)"
source "$(dirname "$0")/lib.sh"
newdb() { psql -X -q "$TRIO_TEST_POSTGRES" -c "CREATE DATABASE $1"; echo "${TRIO_TEST_POSTGRES%%/postgres\?*}/$1?sslmode=disable"; }

ticks() { # PID...: their CPU time so far (user + system, in clock ticks)
    local sum=0 pid
    for pid in "$@"; do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0))); done
    echo "$sum"
}
postgres_pids() { # the cluster's postmaster and its backends
    local postmaster
    postmaster=$(head -1 "$TRIO_POSTGRES_DIR/data/postmaster.pid")
    echo "$postmaster" $(pgrep -P "$postmaster")
}

# register_run LABEL SERVER-URL...: sets up participants through the first server, then runs load register. With
# $server_pids set, also samples the servers' and PostgreSQL's CPU over the measured window (after the warm-up).
register_run() {
    local label=$1
    shift
    local servers=("$@")
    "$bin/survey-cli" load setup --server "${servers[0]}" --participants "$participants" --out "$work/$label.json" >&2
    local flags=()
    for s in "${servers[@]}"; do flags+=(--server "$s"); done
    (
        sleep 2
        s0=$(ticks $server_pids); p0=$(ticks $(postgres_pids))
        sleep "${duration%s}"
        echo "$(( $(ticks $server_pids) - s0 )) $(( $(ticks $(postgres_pids)) - p0 ))" > "$work/$label.cpu"
    ) &
    local sampler=$!
    "$bin/survey-cli" load register "${flags[@]}" --participants-file "$work/$label.json" --concurrency "$concurrency" \
        --duration "$duration" --warmup 2s --verify on --report "$work/$label.report.json" > "$work/$label.txt" || true
    wait "$sampler" || true
    python3 - "$label" "$work/$label.report.json" "$work/$label.cpu" "$(getconf CLK_TCK)" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
t = r["totals"]
server, postgres = (int(x) for x in open(sys.argv[3]).read().split())
ms = 1000 / int(sys.argv[4]) / max(1, t["succeeded"])
cpu = f"  CPU/registration: server {server * ms:.2f} ms" + (f", PostgreSQL {postgres * ms:.2f} ms" if "postgres" in sys.argv[1] else "")
print(f"{sys.argv[1]:<22} {t['throughput']:8.0f} registrations/s  p99 {r['latency_ms']['p99']:6.1f} ms  "
      f"errors {t['failed']}  correct {r.get('correct')}{cpu}")
PY
}

echo "== registrations/s, --kdf-iterations 1000, $concurrency devices, $duration after 2 s warm-up"
start_server mock-server --data-dir "$work/sqlite" --log-level warning; pids+=("$server_pid"); server_pids=$server_pid
register_run sqlite "$url"
kill "$server_pid"

# One instance against two, ROUNDS times (default 1) in alternation: on 2 shared cores runs vary by ±10%.
for round in $(seq 1 "${ROUNDS:-1}"); do
    db=$(newdb "reg1_$round")
    start_server mock-server --database "$db" --log-level warning; pids+=("$server_pid"); server_pids=$server_pid
    register_run postgres-1-instance "$url"
    kill "$server_pid"

    db=$(newdb "reg2_$round")
    start_server mock-server --database "$db" --log-level warning; pids+=("$server_pid"); first=$url
    mv "$work/mock-server.ready" "$work/first.ready"
    start_server mock-server --database "$db" --log-level warning; pids+=("$server_pid"); second=$url
    server_pids="${pids[-2]} ${pids[-1]}"
    register_run postgres-2-instances "$first" "$second"
    kill ${pids[-2]} ${pids[-1]} 2>/dev/null || true
done

echo "== 7-day advance, 10,000 participants due, PostgreSQL, 2 instances ticking"
"$bin/advance-benchmark" --participants 10000 --database "$(newdb advance)" --instances 2 | grep -E "RESULT|registered|advance"

echo "== load push, 500 Android devices, 2,000 pushes/s for 10 s: one relay, then two"
for relays in 1 2; do
    "$bin/survey-cli" up --data-dir "$work/up$relays" --database ":memory:" --relays "$relays" > "$work/up$relays.ready" &
    pids+=("$!")
    for _ in $(seq 1 100); do grep -q READY "$work/up$relays.ready" 2>/dev/null && break; sleep 0.1; done
    flags=$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().split(" ",1)[1]); print(" ".join("--relay "+u for u in (r.get("push_relays") or [r["push_relay"]])))' "$work/up$relays.ready")
    # shellcheck disable=SC2086
    "$bin/survey-cli" load push $flags --devices 500 --rate 2000 --duration 10s --warmup 2s --report "$work/push$relays.json" > /dev/null || true
    python3 - "$relays" "$work/push$relays.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2])); t = r["totals"]
print(f"{sys.argv[1]} relay(s): {t['throughput']:.0f} deliveries/s, p50 {r['latency_ms']['p50']:.2f} ms, p99 {r['latency_ms']['p99']:.2f} ms, "
      f"lost {t['failed']}, correct {r.get('correct')}")
PY
    kill "${pids[-1]}"
    wait "${pids[-1]}" 2>/dev/null || true
done
