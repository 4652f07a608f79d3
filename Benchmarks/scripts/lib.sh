# Shared by the benchmark scripts. Expects $bin (the build's executables) and $work (a scratch directory).

server_pid=""

# start_server NAME ARGS...: runs $bin/NAME ARGS in the background (stdout → $work/NAME.ready, stderr →
# $work/NAME.log), waits up to 10 s for its READY line, and sets server_pid and url; exits 2 without one.
start_server() {
    local name=$1
    shift
    "$bin/$name" "$@" > "$work/$name.ready" 2>> "$work/$name.log" &
    server_pid=$!
    for _ in $(seq 1 100); do grep -q READY "$work/$name.ready" 2>/dev/null && break; sleep 0.1; done
    url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$work/$name.ready" | head -1)
    [ -n "$url" ] || { echo "$name did not print READY" >&2; exit 2; }
}
