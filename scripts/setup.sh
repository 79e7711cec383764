# Shared by ./scripts/lab and ./scripts/test: install what is missing, skip
# what is there. Sourced, not executed. Every step checks first, so a second
# run costs a few milliseconds.

set -euo pipefail

# Run as root directly, otherwise through sudo (a developer's machine).
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian packages, by the command each provides: "command:package".
ensure_debian() {
    local missing=()
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing Debian packages: ${missing[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# rustfmt and clippy, which scripts/test runs first (a minimal rustup
# profile has neither).
ensure_rust_tools() {
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
}

ensure_wasm_target() {
    rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
        || rustup target add wasm32-unknown-unknown
}
