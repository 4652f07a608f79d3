#!/usr/bin/env bash
# Registration throughput of our mock server as a ratio to its own /__admin/health throughput, both measured with wrk
# (2 threads, CONNECTIONS connections, DURATION each; issue: performance). Usage:
#   Benchmarks/scripts/registration-wrk.sh [KDF_ITERATIONS] [PARTICIPANTS] [CONNECTIONS] [DURATION]
# Needs a release build (swift build -c release) and wrk (apt-get install wrk). Loopback only; the server's data is
# a temporary SQLite file (WAL, synchronous FULL), removed at the end, or with STORE=postgres a database in a
# PostgreSQL cluster started for the run (scripts/postgres) and stopped after. Each wrk thread registers its own half of
# the participants in turn (each registration verifies the password and stores a new one, as Beiwe's /register_user
# does).
set -euo pipefail
kdf=${1:-1}
participants=${2:-20000}
connections=${3:-64}
duration=${4:-10s}
bin=${BIN:-.build/release}
command -v wrk > /dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
work=$(mktemp -d)
root=$(cd "$(dirname "$0")/../.." && pwd)
cleanup() {
    kill $server_pid 2>/dev/null || true
    wait 2>/dev/null || true
    [ -n "${TRIO_POSTGRES_DIR:-}" ] && bash "$root/scripts/postgres" stop "$TRIO_POSTGRES_DIR"
    rm -rf "$work"
}
trap cleanup EXIT

source "$(dirname "$0")/lib.sh"
store=(--data-dir "$work")
if [ "${STORE:-sqlite}" = postgres ]; then
    eval "$(bash "$root/scripts/postgres" start)"
    psql -X -q "$TRIO_TEST_POSTGRES" -c "CREATE DATABASE wrk"
    store=(--database "${TRIO_TEST_POSTGRES%%/postgres\?*}/wrk?sslmode=disable")
fi
start_server mock-server "${store[@]}" --kdf-iterations "$kdf" --log-level warning
echo "server $url (${STORE:-sqlite}), --kdf-iterations $kdf, wrk -t2 -c$connections -d$duration"
"$bin/survey-cli" load setup --server "$url" --participants "$participants" --out "$work/p.json" >&2

# The form bodies, as a Lua table (what survey-cli load register sends).
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import pinned; pinned.write_bodies(sys.argv[2], sys.argv[3])' \
    "$(dirname "$0")" "$work/p.json" "$work/bodies.lua"
cat > "$work/register.lua" <<LUA
local threads = {}
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  bodies = dofile("$work/bodies.lua")
  i = id + 1
end
request = function()
  i = i + 2
  if i > #bodies then i = id + 1 end
  return wrk.format("POST", "/register_user", {["Content-Type"] = "application/x-www-form-urlencoded"}, bodies[i])
end
LUA
wrk -t2 -c"$connections" -d"$duration" --latency "$url/__admin/health" > "$work/health.txt"
wrk -t2 -c"$connections" -d"$duration" --latency -s "$work/register.lua" "$url/register_user" > "$work/register.txt"
echo "--- health"; cat "$work/health.txt"; echo "--- register"; cat "$work/register.txt"
python3 - "$work/health.txt" "$work/register.txt" <<'PY'
import re, sys
def read(path):
    text = open(path).read()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", text)
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = re.search(r"Socket errors: (.*)", text)
    return rate, p99, int(bad.group(1)) if bad else 0, errors.group(1) if errors else "none"
h, r = read(sys.argv[1]), read(sys.argv[2])
print(f"health {h[0]:.0f}/s  register {r[0]:.0f}/s (p99 {r[1]:.1f} ms, non-2xx {r[2]}, socket errors {r[3]})  ratio {r[0] / h[0]:.3f}")
if r[2] or h[2]:
    sys.exit("some requests failed: the figures do not count")
PY
