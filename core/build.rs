//! Embed every lesson file of `lessons/` in the crate (feature `toml`), so
//! the CLI carries the catalogue with it. Adding a lesson is adding a file:
//! this script lists the directory again whenever it changes.

use std::path::{Path, PathBuf};

/// The crate's directory, read when the script *runs*: `env!` would bake
/// in the directory the script was compiled in, and Cargo reuses a build
/// script compiled in another checkout of the workspace that shares the
/// target directory (a git worktree), which then read that checkout's
/// lessons.
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("Cargo sets CARGO_MANIFEST_DIR for build scripts"))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
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
