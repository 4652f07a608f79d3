#!/usr/bin/env bash
# Shared by scripts/demo and scripts/test: install what the build needs, then build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_PACKAGES=(libcurl4-openssl-dev libssl-dev libsqlite3-dev zlib1g-dev pkg-config python3-venv)
VENV="$ROOT/.build/venv"

log() { printf '==> %s\n' "$*" >&2; }

ensure_toolchain() {
    if ! command -v swift >/dev/null 2>&1; then
        log "swift is not on PATH: install the Swift 6 toolchain (swift.org) first"
        exit 1
    fi
}

ensure_packages() {
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        # Installed, not only known: a removed package keeps its configuration and `dpkg -s` still succeeds.
        [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
            log "need root to run: apt-get install -y ${missing[*]}"
            exit 1
        fi
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The Python tools of scripts/python-tools.txt (schemathesis, pytest) in a venv under .build.
ensure_python_tools() {
    ensure_packages
    local want="$ROOT/scripts/python-tools.txt"
    if [ -x "$VENV/bin/st" ] && [ -x "$VENV/bin/pytest" ] && cmp -s "$want" "$VENV/tools.txt"; then return 0; fi
    log "installing Python tools into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$want"
    cp "$want" "$VENV/tools.txt"
}

# Debian packages only some scripts need (Chromium for the load report, nghttp2's h2load and prlimit for the front-door
# suite), installed when missing.
ensure_extra_packages() {
    local saved=("${APT_PACKAGES[@]}")
    APT_PACKAGES=("$@")
    ensure_packages
    APT_PACKAGES=("${saved[@]}")
}

# Headless Chromium (Debian's package), to render the HTML load report the way a browser shows it.
ensure_chromium() {
    command -v chromium >/dev/null 2>&1 && return 0
    ensure_extra_packages chromium
}

build() {
    cd "$ROOT"
    local started=$SECONDS
    log "building ($*)"
    swift build "$@"
    log "build finished in $((SECONDS - started)) s"
}

# Starts "$BIN/NAME" ARGS... in the background with --parent-pid (so it ends with the calling script), behind the words
# of $LAUNCH when set (e.g. "taskset -c 0"); its output goes to $WORK/NAME.out and .err, its pid is added to PIDS, and
# the URL of its READY line is put into the variable named VAR. Call it directly, not inside $(...): PIDS must be the
# caller's, so that its cleanup stops the process.
start_server() {
    local var=$1 name=$2
    shift 2
    ${LAUNCH:-} "$BIN/$name" "$@" --parent-pid $$ >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    for _ in $(seq 200); do
        if grep -q '^READY' "$WORK/$name.out" 2>/dev/null; then
            printf -v "$var" '%s' "$(sed -n 's/^READY .*"url":"\([^"]*\)".*/\1/p' "$WORK/$name.out")"
            return 0
        fi
        sleep 0.1
    done
    log "$name did not start:"; cat "$WORK/$name.err" >&2; exit 1
}
