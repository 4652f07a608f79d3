#!/usr/bin/env bash
# Registration throughput of our mock server as a ratio to its own /__admin/health throughput, measured with the
# same load tool in one run (issue: server overhead). Usage:
#   Benchmarks/scripts/registration-ratio.sh [KDF_ITERATIONS] [PARTICIPANTS] [CONCURRENCY] [DURATION]
# Needs a release build (swift build -c release). Everything runs on loopback; the server's data is a temporary
# SQLite file (WAL, synchronous FULL), removed at the end.
set -euo pipefail
kdf=${1:-1}
participants=${2:-20000}
concurrency=${3:-64}
duration=${4:-10s}
bin=${BIN:-.build/release}
work=$(mktemp -d)
trap 'kill $server_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

source "$(dirname "$0")/lib.sh"
start_server mock-server --data-dir "$work" --kdf-iterations "$kdf" --log-level warning
echo "server $url, --kdf-iterations $kdf"

"$bin/survey-cli" load setup --server "$url" --participants "$participants" --out "$work/p.json" >&2
common=(--server "$url" --participants-file "$work/p.json" --concurrency "$concurrency" --duration "$duration" --warmup 2s)
"$bin/survey-cli" load register "${common[@]}" --health-only --report "$work/health.json" > "$work/health.txt"
"$bin/survey-cli" load register "${common[@]}" --report "$work/register.json" > "$work/register.txt" || true
cat "$work/health.txt" "$work/register.txt"
python3 - "$work/health.json" "$work/register.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
def rate(x): return x["totals"]["throughput"]
def p99(x): return x["latency_ms"]["p99"]
print(f"health {rate(h):.0f}/s  register {rate(r):.0f}/s (p99 {p99(r):.1f} ms)  ratio {rate(r)/rate(h):.3f}")
PY
