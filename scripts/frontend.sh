# The browser side of ./scripts/test and ./scripts/lab. Sourced (after
# scripts/setup.sh, whose ensure_debian and ensure_wasm_target it uses), not
# executed. Every step checks first, so a second run is quick.

declare -F ensure_debian >/dev/null || . "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# Headless Chromium and its WebDriver, for tests/tests/e2e/browser.rs, and a
# small Chinese font (1.6 MB) so the zh screenshots show text, not boxes.
ensure_browser_packages() {
    ensure_debian chromium:chromium chromedriver:chromium-driver
    if ! fc-list :lang=zh family 2>/dev/null | grep -q .; then
        echo "installing Debian packages: fonts-wqy-microhei" >&2
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null
    fi
}

# dist/: the browser app, built without Trunk by `cargo xtask dist` (with
# wasm-opt -Oz from Debian's binaryen, as index.html asks; the xtask says so
# and goes on without it if it is missing), after checking that Trunk.toml
# still agrees with Cargo.lock.
build_dist() {
    ensure_wasm_target
    ensure_debian wasm-opt:binaryen
    cargo xtask check-trunk
    cargo xtask dist
}
