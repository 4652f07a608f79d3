#!/usr/bin/env bash
# The SDK's local costs (issue: performance): recording one telemetry event, and starting a client that holds 500
# pending pings. Builds sdk-benchmark in release mode and runs it RUNS times (default 3) to show the spread. Usage:
#   Benchmarks/scripts/sdk.sh [RUNS] [EVENTS] [PINGS]
set -euo pipefail
runs=${1:-3}
events=${2:-20000}
pings=${3:-500}
cd "$(dirname "$0")/../.."
swift build -c release --product sdk-benchmark >&2
for _ in $(seq 1 "$runs"); do .build/release/sdk-benchmark --events "$events" --pings "$pings" | head -2; done
echo "command: Benchmarks/scripts/sdk.sh $runs $events $pings"
