#!/usr/bin/env bash
# Resident memory of our mock server after a long registration run (issue: < 150 MB after one million registrations).
# Usage: Benchmarks/scripts/registration-memory.sh [PARTICIPANTS] [DURATION] [KDF_ITERATIONS]
# Creates PARTICIPANTS participants, registers them in a closed loop (64 devices; each participant registers again
# once the list wraps) for DURATION, then prints the server's VmRSS and peak VmHWM from /proc with the count of
# registrations the server committed. Needs a release build (swift build -c release).
set -euo pipefail
participants=${1:-200000}
duration=${2:-200s}
kdf=${3:-1}
bin=${BIN:-.build/release}
work=$(mktemp -d)
trap 'kill $server_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

source "$(dirname "$0")/lib.sh"
start_server mock-server --data-dir "$work" --kdf-iterations "$kdf" --log-level warning
rss() { awk '/^VmRSS|^VmHWM/ {printf "%s %.1f MB  ", $1, $2/1024}' "/proc/$server_pid/status"; echo; }
echo "server $url (--kdf-iterations $kdf); after start: $(rss)"
"$bin/survey-cli" load setup --server "$url" --participants "$participants" --out "$work/p.json" >&2
echo "after setup: $(rss)"
"$bin/survey-cli" load register --server "$url" --participants-file "$work/p.json" --concurrency 64 --duration "$duration" \
    --report "$work/r.json" 2>/dev/null | head -4
writes=$(curl -s "$url/metrics" | awk '/^sqlite_writes_total/ {print $2}')
echo "after the run: $(rss)"
echo "server-side writes committed: $writes; database $(du -sh "$work" | cut -f1)"
