//! `cargo xtask check-trunk`: `Trunk.toml` kept honest for people who use
//! `trunk serve` (its wasm-bindgen version equals Cargo.lock's, the paths it
//! names exist, its lessons hook is there; with `--build`, a real trunk build).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use crate::{on_path, trunk_links, WASM_BINDGEN};

/// The versions of a package in Cargo.lock.
fn locked_versions(root: &Path, package: &str) -> Result<Vec<String>> {
    let lock = fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let lock: toml::Table = lock.parse().context("parsing Cargo.lock")?;
    let packages = lock
        .get("package")
        .and_then(|p| p.as_array())
        .context("Cargo.lock has no [[package]]")?;
    Ok(packages
        .iter()
        .filter(|p| p.get("name").and_then(|n| n.as_str()) == Some(package))
        .filter_map(|p| p.get("version").and_then(|v| v.as_str()).map(str::to_owned))
        .collect())
}

pub(crate) fn check_trunk(root: &Path, build: bool) -> Result<()> {
    let trunk_toml = root.join("Trunk.toml");
    let config: toml::Table = fs::read_to_string(&trunk_toml)
        .context("reading Trunk.toml")?
        .parse()
        .context("parsing Trunk.toml")?;
    let mut problems = Vec::new();
    check_wasm_bindgen_versions(root, &config, &mut problems)?;
    // Offline, so it never fetches anything.
    let build_cfg = config.get("build");
    if build_cfg.and_then(|b| b.get("offline")).and_then(|v| v.as_bool()) != Some(true) {
        problems.push("Trunk.toml: [build] offline = true is missing".to_owned());
    }
    check_lessons_hook(&config, &mut problems);
    check_trunk_paths(root, &config, &mut problems);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("error: {p}");
        }
        bail!("Trunk.toml check failed ({} problem(s))", problems.len());
    }
    if build {
        trunk_build(root)?;
    }
    Ok(())
}

/// The wasm-bindgen versions must agree three ways: Trunk.toml's
/// `[tools] wasm_bindgen`, Cargo.lock's `wasm-bindgen` (and
/// `wasm-bindgen-cli-support`, which `dist` links), and [`WASM_BINDGEN`].
fn check_wasm_bindgen_versions(root: &Path, config: &toml::Table, problems: &mut Vec<String>) -> Result<()> {
    let wanted = config
        .get("tools")
        .and_then(|t| t.get("wasm_bindgen"))
        .and_then(|v| v.as_str());
    let locked = locked_versions(root, "wasm-bindgen")?;
    let support = locked_versions(root, "wasm-bindgen-cli-support")?;
    match (wanted, locked.as_slice()) {
        (None, _) => problems.push("Trunk.toml has no [tools] wasm_bindgen: trunk would download one".to_owned()),
        (Some(w), [l]) if w == l => println!("ok: Trunk.toml [tools] wasm_bindgen = {w} = Cargo.lock's wasm-bindgen"),
        (Some(w), [l]) => problems.push(format!(
            "Trunk.toml [tools] wasm_bindgen = {w}, but Cargo.lock has wasm-bindgen {l}"
        )),
        (Some(_), []) => problems.push("Cargo.lock has no wasm-bindgen".to_owned()),
        (Some(_), many) => problems.push(format!(
            "Cargo.lock has several wasm-bindgen versions: {}",
            many.join(", ")
        )),
    }
    if locked != [WASM_BINDGEN] {
        problems.push(format!(
            "xtask's WASM_BINDGEN is {WASM_BINDGEN} but Cargo.lock has wasm-bindgen {}: update the constant",
            locked.join(", ")
        ));
    }
    if support != locked {
        problems.push(format!(
            "Cargo.lock: wasm-bindgen-cli-support {} differs from wasm-bindgen {} (cargo xtask dist needs them equal)",
            support.join(", "),
            locked.join(", ")
        ));
    }
    Ok(())
}

/// The lessons are not a Trunk asset: Trunk.toml's post_build hook must
/// add them (`cargo xtask lessons`).
fn check_lessons_hook(config: &toml::Table, problems: &mut Vec<String>) {
    let hooked = config.get("hooks").and_then(|h| h.as_array()).is_some_and(|hooks| {
        hooks.iter().any(|h| {
            let args: Vec<&str> = h
                .get("command_arguments")
                .and_then(|a| a.as_array())
                .map_or(Vec::new(), |a| a.iter().filter_map(|v| v.as_str()).collect());
            h.get("stage").and_then(|s| s.as_str()) == Some("post_build")
                && h.get("command").and_then(|c| c.as_str()) == Some("cargo")
                && args == ["xtask", "lessons"]
        })
    });
    if hooked {
        println!("ok: Trunk.toml's post_build hook runs `cargo xtask lessons`");
    } else {
        problems.push(
            "Trunk.toml has no post_build hook running `cargo xtask lessons`: the page would have no lessons"
                .to_owned(),
        );
    }
}

/// Every path Trunk.toml and its `[build] target` page name exists.
fn check_trunk_paths(root: &Path, config: &toml::Table, problems: &mut Vec<String>) {
    let build_cfg = config.get("build");
    let target = build_cfg
        .and_then(|b| b.get("target"))
        .and_then(|v| v.as_str())
        .unwrap_or("index.html");
    let index = root.join(target);
    match fs::read_to_string(&index) {
        Err(e) => problems.push(format!("Trunk.toml [build] target = {target}: {e}")),
        Ok(html) => {
            println!("ok: [build] target = {target} exists");
            let dir = index.parent().unwrap_or(root);
            let links = trunk_links(&html);
            if !links.iter().any(|l| l.rel() == "rust") {
                problems.push(format!("{target} has no <link data-trunk rel=\"rust\">"));
            }
            for link in &links {
                let href = link.attrs.get("href").map(String::as_str).unwrap_or(".");
                let path = dir.join(href);
                let path = if link.rel() == "rust" && path.is_dir() {
                    path.join("Cargo.toml")
                } else {
                    path
                };
                if path.exists() {
                    println!(
                        "ok: {target}: rel=\"{}\" → {}",
                        link.rel(),
                        path.strip_prefix(root).unwrap_or(&path).display()
                    );
                } else {
                    problems.push(format!(
                        "{target}: rel=\"{}\" href=\"{href}\": {} does not exist",
                        link.rel(),
                        path.display()
                    ));
                }
            }
        }
    }
}

/// `trunk build --release --offline` into a temporary directory, when trunk
/// is installed: it must produce a `.wasm` and the lessons.
fn trunk_build(root: &Path) -> Result<()> {
    match on_path("trunk") {
        None => {
            println!("trunk is not on PATH: skipped `trunk build` (cargo install trunk --version 0.21.14 --locked)")
        }
        Some(trunk) => {
            let tmp = std::env::temp_dir().join(format!("locklab-trunk-{}", std::process::id()));
            let started = Instant::now();
            let status = Command::new(trunk)
                .args(["build", "--release", "--offline", "--dist"])
                .arg(&tmp)
                .current_dir(root)
                .status()
                .context("running trunk")?;
            let names: Vec<String> = fs::read_dir(&tmp)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            let wasm = names.iter().any(|n| n.ends_with(".wasm"));
            let lessons = names.iter().any(|n| n.starts_with("lessons-") && n.ends_with(".json"));
            let _ = fs::remove_dir_all(&tmp);
            ensure!(status.success(), "trunk build --release --offline failed");
            ensure!(wasm, "trunk build produced no .wasm");
            ensure!(
                lessons,
                "trunk build produced no lessons-*.json (its post_build hook did not run)"
            );
            println!(
                "ok: trunk build --release --offline produced a .wasm ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}
