//! Compiles the clock-shift preload library (native/clockshift.c) with the
//! system C compiler — the one rustc already links with — so the `locklab`
//! binary carries it (`include_bytes!` in src/faults/clock.rs) and nothing
//! is ever downloaded. `$CC` overrides the compiler.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "native/clockshift.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("liblocklab_clockshift.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` for {src}: {e} (install gcc)"));
    assert!(status.success(), "`{cc}` failed to compile {src}: {status}");
}
