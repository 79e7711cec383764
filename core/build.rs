//! Embed every lesson file of `lessons/` in the crate (feature `toml`), so
//! the CLI carries the catalogue with it. Adding a lesson is adding a file:
//! this script lists the directory again whenever it changes.
//!
//! And embed the Lua sandbox prelude without its comments and indentation
//! (a quarter of its bytes, some 4 KB of the page's gzipped wasm): every
//! line stays where it is, so a line number in a message is the source's.

use std::path::{Path, PathBuf};

/// The crate's directory, read when the script *runs*: `env!` would bake
/// in the directory the script was compiled in, and Cargo reuses a build
/// script compiled in another checkout of the workspace that shares the
/// target directory (a git worktree), which then read that checkout's
/// lessons and prelude.
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("Cargo sets CARGO_MANIFEST_DIR for build scripts"))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    prelude();
    if std::env::var_os("CARGO_FEATURE_TOML").is_none() {
        return;
    }
    let dir = manifest_dir().join("../lessons");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out =
        String::from("/// The lesson files of `lessons/`, by file name.\npub static FILES: &[(&str, &str)] = &[\n");
    for p in &files {
        println!("cargo:rerun-if-changed={}", p.display());
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            p.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("lessons.rs");
    std::fs::write(dest, out).expect("write lessons.rs");
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
