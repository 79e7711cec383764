//! Embed the Lua sandbox prelude without its comments and indentation
//! (a quarter of its bytes, some 4 KB of the page's gzipped wasm): every
//! line stays where it is, so a line number in a message is the source's.

use std::path::{Path, PathBuf};

/// The crate's directory, read when the script *runs*: `env!` would bake
/// in the directory the script was compiled in, and Cargo reuses a build
/// script compiled in another checkout of the workspace that shares the
/// target directory (a git worktree), which then read that checkout's
/// prelude.
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("Cargo sets CARGO_MANIFEST_DIR for build scripts"))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    prelude();
}

/// `src/server/script/prelude.lua` as the VM loads it: each line's leading
/// blanks gone, and a line that is only a `--` comment left empty. Sound
/// because the prelude has no long strings or long comments (`[[`, `[=`)
/// and no string continued over a line end (`\` last), which the build
/// checks rather than assumes.
fn prelude() {
    let src = manifest_dir().join("src/server/script/prelude.lua");
    println!("cargo:rerun-if-changed={}", src.display());
    let text = std::fs::read_to_string(&src).expect("read prelude.lua");
    assert!(
        !text.contains("[[") && !text.contains("[=") && !text.lines().any(|l| l.trim_end().ends_with('\\')),
        "prelude.lua has a long string, long comment or continued string: its lines cannot be trimmed"
    );
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("--") {
                ""
            } else {
                t
            }
        })
        .collect();
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("prelude.lua");
    std::fs::write(dest, lines.join("\n")).expect("write prelude.lua");
}
