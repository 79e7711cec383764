//! # xtask
//!
//! locklab's build tasks, in Rust so that a fresh clone needs nothing but
//! cargo (the `xtask` pattern: `cargo xtask <task>` is an alias in
//! `.cargo/config.toml`).
//!
//! * `cargo xtask dist [--out DIR] [--no-opt]` — the browser app, built the
//!   way Trunk builds it from `frontend/index.html`, without Trunk: cargo for
//!   `wasm32-unknown-unknown` in the profile the page names
//!   (`data-cargo-profile-release`, else `release`), wasm-bindgen (the library, the same
//!   version as the `wasm-bindgen` crate in Cargo.lock) for `--target web`,
//!   wasm-opt at the page's `data-wasm-opt` level with its
//!   `data-wasm-opt-params` when it is on PATH, content-hashed file names, and an
//!   `index.html` with the same module preloads and init script Trunk
//!   injects. `dist/` is replaced whole, so nothing stale survives. Every
//!   file gets precompressed `.gz` and `.br` copies (see `compress`) and
//!   the sizes a browser downloads are printed, and the page's `.wasm` is
//!   held to its size budget (see `budget`).
//!   The lesson catalogue goes next to it as a JSON file the page links
//!   (see `add_lessons`).
//! * `cargo xtask lessons [DIR]` — that catalogue alone, into a page Trunk
//!   has built (`Trunk.toml`'s post_build hook runs it).
//! * `cargo xtask bloat [WASM]` — a size profile of the page's `.wasm` by
//!   crate and module, raw and gzipped (see `bloat`).
//! * `cargo xtask check-trunk [--build]` — keeps `Trunk.toml` honest for
//!   people who use `trunk serve`: its wasm-bindgen version must equal
//!   Cargo.lock's (or Trunk, run offline, fails; online, it downloads another
//!   one), and the paths it names must exist. With `--build` and `trunk` on
//!   PATH, also runs `trunk build --release --offline` into a temporary
//!   directory and checks that a `.wasm` came out. CI runs the check rather
//!   than spend a quarter of an hour installing Trunk.
//! * `cargo xtask layout [--max-lines N]` — the module import cycles of each
//!   crate, the functions over N lines without a `// long:` reason, files
//!   over 800 lines and type names two crates define (see `layout`); exits 1
//!   if there are any cycles or unexplained long functions, or the measures
//!   break their ceilings.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

mod bloat;
mod budget;
mod compress;
mod externref;
mod layout;
mod redis_suite;
mod trunk_check;
mod worker;

use externref::has_externref_table;
use trunk_check::check_trunk;

/// The crate and binary the browser app is built from.
const FRONTEND_PACKAGE: &str = "locklab-frontend";
const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The `id` of the page's link to the lesson catalogue (the frontend's
/// `catalog::LINK_ID`).
const LESSONS_LINK_ID: &str = "locklab-lessons";
/// The wasm-bindgen this xtask links (`wasm-bindgen-cli-support`).
const WASM_BINDGEN: &str = "0.2.130";
/// The oldest binaryen trusted with a module that has an externref table
/// (what wasm-bindgen makes when the code is built with reference types):
/// it must parse wasm-bindgen's `table.fill` and keep the table's type, and
/// 108, Debian 12's, does neither. `.cargo/config.toml` builds without
/// reference types, so there is no such table and any binaryen will do.
const MIN_WASM_OPT_EXTERNREF: u32 = 116;

fn usage() -> &'static str {
    "usage: cargo xtask <task>\n\
     \n\
     tasks:\n  \
       dist [--out DIR] [--no-opt]   build the browser app into DIR (default: dist/)\n  \
       lessons [DIR]                 write the lesson catalogue and the engine module into a built page's DIR (default: $TRUNK_STAGING_DIR)\n  \
       check-trunk [--build]         check Trunk.toml against Cargo.lock; --build also runs trunk if installed\n  \
       bloat [WASM]                  what is in the app's .wasm, by crate and module (default: build it with names)\n  \
       redis-suite --tree DIR [--logs DIR] [--only sim|real]\n                                \
     run Redis 7.0.15's own tests on sim-server and redis-server; print both [ok] counts\n  \
       fuzz [--inputs N] [--seed S] [--target T] [--no-diff] [--built]\n                                \
     fuzz the parsers, the engine (vs redis-server) and Lua scripts (default: 10 M inputs);\n                                \
     --built runs the locklab-fuzz that `cargo test --workspace --release` built, without cargo\n  \
       layout [--max-lines N] [--root DIR]\n                                module import cycles of each crate, functions over N lines (80) without a reason,\n                                files over 800 lines and type names defined in two crates\n"
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    match args.first().map(String::as_str) {
        Some("dist") => {
            let mut out = root.join("dist");
            let mut optimize = true;
            let mut rest = args[1..].iter();
            while let Some(arg) = rest.next() {
                match arg.as_str() {
                    "--out" => out = PathBuf::from(rest.next().context("--out needs a directory")?),
                    "--no-opt" => optimize = false,
                    other => bail!("unknown option {other}\n\n{}", usage()),
                }
            }
            dist(&root, &out, optimize)
        }
        // Trunk's post_build hook (Trunk.toml): the lessons into its staging directory.
        Some("lessons") => {
            let dir = match args.get(1) {
                Some(dir) => PathBuf::from(dir),
                None => PathBuf::from(
                    std::env::var_os("TRUNK_STAGING_DIR")
                        .context("lessons needs a directory (or TRUNK_STAGING_DIR)")?,
                ),
            };
            let name = add_lessons(&dir)?;
            println!("lessons: {}", dir.join(name).display());
            // Trunk builds the page only: the engine module (the simulator
            // and the explorer) is built here, as `dist` builds it.
            let page = page_link(&read_index(&root)?.1)?;
            worker::build(&root, &dir, &page.profile, &page.rust, true)
        }
        Some("check-trunk") => {
            let build = match args.get(1).map(String::as_str) {
                None => false,
                Some("--build") => true,
                Some(other) => bail!("unknown option {other}\n\n{}", usage()),
            };
            check_trunk(&root, build)
        }
        Some("fuzz") => fuzz(&root, &args[1..]),
        Some("bloat") => bloat(&root, args.get(1).map(Path::new)),
        Some("redis-suite") => redis_suite::run(&root, &args[1..]),
        Some("layout") => layout::run(&root, &args[1..]),
        Some("help" | "-h" | "--help") => {
            print!("{}", usage());
            Ok(())
        }
        _ => {
            eprint!("{}", usage());
            std::process::exit(2);
        }
    }
}

/// `cargo xtask fuzz`: the `locklab-fuzz` binary as a child, so that an
/// abort (a stack overflow kills the whole process) is reported with the
/// seed and the last input index the fuzzer logged, instead of ending
/// the run silently. Defaults: 10 M inputs, seed 1, the engine compared
/// with a real redis-server (`--no-diff` to skip it).
fn fuzz(root: &Path, args: &[String]) -> Result<()> {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut fwd: Vec<String> = Vec::new();
    let (mut inputs, mut diff, mut seed) = ("10000000".to_owned(), true, "1".to_owned());
    let mut built = false;
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--inputs" => inputs = rest.next().context("--inputs needs a number")?.clone(),
            "--seed" => seed = rest.next().context("--seed needs a number")?.clone(),
            "--target" => fwd.extend([
                "--target".to_owned(),
                rest.next().context("--target needs a name")?.clone(),
            ]),
            "--no-diff" => diff = false,
            "--built" => built = true,
            other => bail!("unknown option {other}\n\n{}", usage()),
        }
    }
    fwd.extend(["--inputs".to_owned(), inputs, "--seed".to_owned(), seed.clone()]);
    if diff {
        fwd.push("--diff".to_owned());
    }
    let started = Instant::now();
    // `--built`: the binary the workspace's release build made, run as it
    // is. `./scripts/test` runs it beside the tests, whose `cargo test` holds
    // the release directory's lock (and `cargo run -p locklab-fuzz` alone
    // would resolve the crate's features on their own and build again).
    let mut command = if built {
        let bin = target_dir(root)?.join("release").join("locklab-fuzz");
        ensure!(
            bin.is_file(),
            "{} is not built: run `cargo test --workspace --release --no-run`",
            bin.display()
        );
        Command::new(bin)
    } else {
        let mut c = Command::new(cargo());
        c.args(["run", "--release", "-q", "-p", "locklab-fuzz", "--"]);
        c
    };
    let mut child = command
        .args(&fwd)
        .current_dir(root)
        .stderr(Stdio::piped())
        .spawn()
        .context("starting locklab-fuzz")?;
    let mut last = String::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines() {
            let line = line?;
            if line.split(' ').nth(1).is_some_and(|n| n.parse::<u64>().is_ok()) {
                last = line;
            } else {
                eprintln!("{line}");
            }
        }
    }
    let status = child.wait()?;
    println!("fuzz: {:.0?} elapsed", started.elapsed());
    match status.code() {
        Some(0) => Ok(()),
        Some(1) => bail!("the fuzzer found crashes or mismatches (see above; inputs kept in fuzz/regressions/)"),
        _ => bail!(
            "the fuzzer died ({status}) — an abort, such as a stack overflow — at or after input `{last}` of seed {seed}; \
             reproduce with `cargo run --release -p locklab-fuzz -- --seed {seed} --target <target> --inputs <index+10000>`"
        ),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// The cargo that runs us (so `+toolchain` and rustup overrides carry over).
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Cargo's target directory, as cargo itself resolves it (CARGO_TARGET_DIR,
/// config files, default).
fn target_dir(root: &Path) -> Result<PathBuf> {
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    ensure!(
        out.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("parsing cargo metadata")?;
    let dir = meta["target_directory"]
        .as_str()
        .context("cargo metadata has no target_directory")?;
    Ok(PathBuf::from(dir))
}

/// Is `name` an executable somewhere on PATH?
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `wasm-opt version 108 (version_108)` → 108.
fn wasm_opt_version(wasm_opt: &Path) -> Option<u32> {
    let out = Command::new(wasm_opt).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().find_map(|w| w.parse().ok())
}

fn gzip_len(bytes: &[u8]) -> Result<usize> {
    Ok(compress::gzip(bytes)?.len())
}

/// `1234567` → `1,234,567`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn report_size(what: &str, path: &Path) -> Result<(usize, usize)> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let gz = gzip_len(&bytes)?;
    println!(
        "  {what:<14} {:>11} bytes raw, {:>9} bytes gzipped  ({})",
        thousands(bytes.len()),
        thousands(gz),
        path.file_name().unwrap_or_default().to_string_lossy()
    );
    Ok((bytes.len(), gz))
}

/// 64-bit FNV-1a, hex: a content hash for cache-busting file names (what
/// Trunk's `filehash` does). Not for security.
fn content_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

// ---------------------------------------------------------------------------
// dist

/// `frontend/index.html`: its path and text.
fn read_index(root: &Path) -> Result<(PathBuf, String)> {
    let index_src = root.join("frontend/index.html");
    let html = fs::read_to_string(&index_src).with_context(|| format!("reading {}", index_src.display()))?;
    Ok((index_src, html))
}

/// The page's `<link data-trunk rel="rust">` in `frontend/index.html`, the
/// cargo profile Trunk would build it with for `trunk build --release`, and
/// the binary it names.
struct PageLink {
    rust: TrunkLink,
    profile: String,
    bin: String,
}

fn page_link(html: &str) -> Result<PageLink> {
    let rust = trunk_links(html)
        .into_iter()
        .find(|l| l.rel() == "rust")
        .context("frontend/index.html has no <link data-trunk rel=\"rust\"> tag")?;
    let profile = rust
        .attrs
        .get("data-cargo-profile-release")
        .or_else(|| rust.attrs.get("data-cargo-profile"))
        .cloned()
        .unwrap_or_else(|| "release".to_owned());
    let bin = rust
        .attrs
        .get("data-bin")
        .cloned()
        .unwrap_or_else(|| FRONTEND_PACKAGE.to_owned());
    Ok(PageLink { rust, profile, bin })
}

fn dist(root: &Path, out: &Path, optimize: bool) -> Result<()> {
    let started = Instant::now();
    let (index_src, html) = read_index(root)?;
    let links = trunk_links(&html);
    let PageLink { rust, profile, bin } = page_link(&html)?;
    let rust = &rust;

    // 1. cargo, for wasm32, in the release profile.
    let input = build_wasm(root, &profile, &bin, &[])?;

    // 2. wasm-bindgen into a staging directory next to the output.
    let stem = format!("{bin}-{}", content_hash(&input));
    let staging = out.with_extension("staging");
    if staging.exists() {
        fs::remove_dir_all(&staging).with_context(|| format!("removing {}", staging.display()))?;
    }
    fs::create_dir_all(&staging)?;
    bindgen(input, &stem, &staging, false)?;
    let js = format!("{stem}.js");
    let wasm = format!("{stem}_bg.wasm");
    let wasm_path = staging.join(&wasm);

    println!("sizes:");
    report_size("wasm-bindgen", &wasm_path)?;

    // 3. wasm-opt, as index.html asks Trunk to run it (`data-wasm-opt`,
    //    `data-wasm-opt-params`), so both tools ship the same module.
    if optimize {
        wasm_opt(rust, &wasm_path, false)?;
    }

    // 4. The other assets, and index.html as Trunk would write it.
    write_index(root, &index_src, &html, &links, &staging, &js, &wasm)?;
    let lessons = add_lessons(&staging)?;
    report_size("lessons", &staging.join(lessons))?;
    worker::build(root, &staging, &profile, rust, optimize)?;

    // 5. Every file the page serves is in `staging` by now: each gets its
    //    precompressed `.gz` and `.br` (see `compress`), and the sizes a
    //    browser downloads are the last thing said.
    let sizes = precompress_and_report(&staging)?;
    let page = sizes
        .iter()
        .find(|s| s.name == wasm)
        .context("the page's .wasm is missing from the staging directory")?;
    budget::check(&wasm, page.gzip, budget::CEILING)?;

    // 6. Swap the staging directory in.
    if out.exists() {
        fs::remove_dir_all(out).with_context(|| format!("removing {}", out.display()))?;
    }
    fs::rename(&staging, out).with_context(|| format!("moving {} to {}", staging.display(), out.display()))?;
    println!(
        "dist ready in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

/// Step 4 of `dist`: the page's other assets (CSS under a content-hashed
/// name, copied files) and `index.html` as Trunk writes it — each
/// `data-trunk` link replaced by what it stands for, the wasm module
/// preloaded in `<head>` and started by a module script before `</body>`.
fn write_index(
    root: &Path,
    index_src: &Path,
    html: &str,
    links: &[TrunkLink],
    staging: &Path,
    js: &str,
    wasm: &str,
) -> Result<()> {
    let base = "/";
    let mut page = String::with_capacity(html.len() + 1024);
    let mut at = 0;
    let mut head_extra = String::new();
    for link in links {
        page.push_str(&html[at..link.start]);
        at = link.end;
        match link.rel() {
            "rust" => {
                head_extra.push_str(&format!(
                    "<link rel=\"modulepreload\" href=\"{base}{js}\" crossorigin=\"anonymous\">\n\
                     <link rel=\"preload\" href=\"{base}{wasm}\" crossorigin=\"anonymous\" as=\"fetch\" type=\"application/wasm\">\n"
                ));
            }
            "css" | "copy-file" => {
                let href = link.attrs.get("href").context("a data-trunk link without href")?;
                let src = index_src.parent().unwrap_or(root).join(href);
                let bytes = fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
                let file = Path::new(href)
                    .file_name()
                    .context("href names no file")?
                    .to_string_lossy()
                    .into_owned();
                let name = if link.rel() == "css" {
                    let (name, ext) = file.rsplit_once('.').unwrap_or((&file, "css"));
                    let name = format!("{name}-{}.{ext}", &content_hash(&bytes)[..16]);
                    page.push_str(&format!("<link rel=\"stylesheet\" href=\"{base}{name}\">"));
                    name
                } else {
                    file
                };
                fs::write(staging.join(&name), bytes)?;
            }
            other => {
                bail!("frontend/index.html: <link data-trunk rel=\"{other}\"> is not supported by cargo xtask dist")
            }
        }
    }
    page.push_str(&html[at..]);
    let script = format!(
        "<script type=\"module\">\n\
         import init, * as bindings from '{base}{js}';\n\
         const wasm = await init({{ module_or_path: '{base}{wasm}' }});\n\
         window.wasmBindings = bindings;\n\
         dispatchEvent(new CustomEvent(\"TrunkApplicationStarted\", {{detail: {{wasm}}}}));\n\
         </script>"
    );
    let page = insert_before(&page, "</head>", &head_extra).context("frontend/index.html has no </head>")?;
    let page = insert_before(&page, "</body>", &format!("{script}\n")).context("frontend/index.html has no </body>")?;
    fs::write(staging.join("index.html"), page)?;
    Ok(())
}

/// Step 5 of `dist`: a `.gz` and a `.br` next to every file of `staging`,
/// and the table of what a browser downloads; each file's sizes.
fn precompress_and_report(staging: &Path) -> Result<Vec<compress::Sizes>> {
    println!("final sizes (what is served; .gz and .br written next to each file):");
    println!("  {:<44} {:>11} {:>11} {:>11}", "file", "raw", "gzip", "brotli");
    let (mut raw, mut gz, mut br) = (0, 0, 0);
    let sizes = compress::precompress(staging)?;
    for file in &sizes {
        println!(
            "  {:<44} {:>11} {:>11} {:>11}",
            file.name,
            thousands(file.raw),
            thousands(file.gzip),
            thousands(file.brotli)
        );
        raw += file.raw;
        gz += file.gzip;
        br += file.brotli;
    }
    println!(
        "  {:<44} {:>11} {:>11} {:>11}",
        "total",
        thousands(raw),
        thousands(gz),
        thousands(br)
    );
    Ok(sizes)
}

/// `cargo xtask bloat [WASM]`: the size profile of a module (see
/// [`bloat`](mod@bloat)). Without a file, the browser app is built as `dist`
/// builds it but with its symbol names kept (profile `wasm-size`: the page's
/// profile with `strip = "debuginfo"`, given to cargo with `--config`), run
/// through wasm-bindgen and wasm-opt with names kept, and that is profiled:
/// the same code as the page's, plus a name section.
fn bloat(root: &Path, wasm: Option<&Path>) -> Result<()> {
    let bytes = match wasm {
        Some(path) => fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        None => {
            let PageLink { rust, profile, bin } = page_link(&read_index(root)?.1)?;
            let (rust, bin) = (&rust, bin.as_str());
            let inherits = format!("profile.wasm-size.inherits=\"{profile}\"");
            let input = build_wasm(
                root,
                "wasm-size",
                bin,
                &[
                    "--config",
                    &inherits,
                    "--config",
                    "profile.wasm-size.strip=\"debuginfo\"",
                ],
            )?;
            let dir = target_dir(root)?.join("bloat");
            fs::create_dir_all(&dir)?;
            bindgen(
                bloat::without_custom_section(&input, "target_features")?,
                bin,
                &dir,
                true,
            )?;
            let path = dir.join(format!("{bin}_bg.wasm"));
            println!("sizes (with a name section):");
            report_size("wasm-bindgen", &path)?;
            wasm_opt(rust, &path, true)?;
            fs::read(&path)?
        }
    };
    let report = bloat::breakdown(&bytes, 30)?;
    println!(
        "module: {} bytes raw, {} bytes gzipped",
        thousands(bytes.len()),
        thousands(gzip_len(&bytes)?)
    );
    report.print();
    Ok(())
}

/// `cargo build` of the browser app's binary for wasm32 in `profile`
/// (`extra`: more cargo arguments, such as `--config`); the module's bytes.
fn build_wasm(root: &Path, profile: &str, bin: &str, extra: &[&str]) -> Result<Vec<u8>> {
    println!("building {FRONTEND_PACKAGE} for {WASM_TARGET} (profile {profile})…");
    let status = Command::new(cargo())
        .args([
            "build",
            "--profile",
            profile,
            "--target",
            WASM_TARGET,
            "-p",
            FRONTEND_PACKAGE,
            "--bin",
            bin,
        ])
        .args(extra)
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    ensure!(status.success(), "cargo build for {WASM_TARGET} failed");
    let wasm_in = target_dir(root)?
        .join(WASM_TARGET)
        .join(profile)
        .join(format!("{bin}.wasm"));
    fs::read(&wasm_in).with_context(|| format!("reading {}", wasm_in.display()))
}

/// wasm-bindgen (the library) for `--target web`: `{stem}.js` and
/// `{stem}_bg.wasm` in `dir`; `keep_names` keeps the `name` section (for
/// `cargo xtask bloat`).
fn bindgen(input: Vec<u8>, stem: &str, dir: &Path, keep_names: bool) -> Result<()> {
    wasm_bindgen_cli_support::Bindgen::new()
        .input_bytes(stem, input)
        .out_name(stem)
        .web(true)?
        .typescript(false)
        .remove_name_section(!keep_names)
        .remove_producers_section(true)
        .generate(dir)
        .context("wasm-bindgen")
}

/// Run wasm-opt on wasm-bindgen's output in place, at the level and with the
/// feature flags of the page's `<link data-trunk rel="rust">` (Trunk passes
/// the same two to it). Skipped, with the reason, when wasm-opt is missing,
/// when the page turns it off, or when the module has an externref table and
/// binaryen is too old for one (see [`MIN_WASM_OPT_EXTERNREF`]).
fn wasm_opt(rust: &TrunkLink, wasm_path: &Path, keep_names: bool) -> Result<()> {
    let level = rust.attrs.get("data-wasm-opt").map(String::as_str).unwrap_or("0");
    if level == "0" {
        println!("  wasm-opt: skipped (index.html: data-wasm-opt=\"0\")");
        return Ok(());
    }
    let Some(wasm_opt) = on_path("wasm-opt") else {
        println!("  wasm-opt is not on PATH: skipped -O{level} (Debian: apt-get install binaryen)");
        return Ok(());
    };
    let version = wasm_opt_version(&wasm_opt);
    let bytes = fs::read(wasm_path)?;
    if has_externref_table(&bytes)? && version.is_none_or(|v| v < MIN_WASM_OPT_EXTERNREF) {
        println!(
            "  wasm-opt {}: skipped; the module has an externref table (built with reference types: \
             is RUSTFLAGS replacing .cargo/config.toml's?), which binaryen older than \
             {MIN_WASM_OPT_EXTERNREF} cannot parse and would break",
            version.map_or("of unknown version".to_owned(), |v| v.to_string())
        );
        return Ok(());
    }
    let params: Vec<&str> = rust
        .attrs
        .get("data-wasm-opt-params")
        .map_or(Vec::new(), |p| p.split_whitespace().collect());
    let tmp = wasm_path.with_extension("opt.wasm");
    let status = Command::new(&wasm_opt)
        .arg(format!("-O{level}"))
        .args(&params)
        .args(keep_names.then_some("--debuginfo"))
        .arg(wasm_path)
        .arg("-o")
        .arg(&tmp)
        .status()
        .context("running wasm-opt")?;
    ensure!(status.success(), "wasm-opt -O{level} {} failed", params.join(" "));
    fs::rename(&tmp, wasm_path)?;
    report_size(&format!("wasm-opt -O{level}"), wasm_path)?;
    Ok(())
}

/// Write the lesson catalogue into a built page's directory as
/// `lessons-<hash>.json` (core's `lesson::to_json` of the checked
/// `lessons/*.toml`) and link it from the directory's `index.html` as
/// `<link id="locklab-lessons" rel="preload">`: the browser starts the fetch
/// while the wasm is still coming, and the app reads the file's name from
/// the link. `cargo xtask dist` calls this on its staging directory, and
/// Trunk through its post_build hook (`cargo xtask lessons`) on its own.
fn add_lessons(dir: &Path) -> Result<String> {
    let lessons = locklab_core::lesson::builtin().context("lessons/")?;
    let json = locklab_core::lesson::to_json(&lessons);
    let name = format!("lessons-{}.json", content_hash(json.as_bytes()));
    fs::write(dir.join(&name), &json)?;
    let index = dir.join("index.html");
    let page = fs::read_to_string(&index).with_context(|| format!("reading {}", index.display()))?;
    let link = format!(
        "<link id=\"{LESSONS_LINK_ID}\" rel=\"preload\" href=\"/{name}\" as=\"fetch\" type=\"application/json\" crossorigin=\"anonymous\">\n"
    );
    let page = insert_before(&page, "</head>", &link).with_context(|| format!("{} has no </head>", index.display()))?;
    fs::write(&index, page)?;
    Ok(name)
}

fn insert_before(page: &str, marker: &str, text: &str) -> Option<String> {
    let at = page.rfind(marker)?;
    Some(format!("{}{text}{}", &page[..at], &page[at..]))
}

/// One `<link data-trunk …>` tag: where it is in the page and its attributes.
#[derive(Debug)]
struct TrunkLink {
    start: usize,
    end: usize,
    attrs: BTreeMap<String, String>,
}

impl TrunkLink {
    fn rel(&self) -> &str {
        self.attrs.get("rel").map(String::as_str).unwrap_or_default()
    }
}

/// The `<link data-trunk …>` tags of a page, in order. A small scanner, not
/// an HTML parser: enough for our own index.html (attributes quoted with `"`
/// or `'`, or bare), and it skips `<!-- comments -->`.
fn trunk_links(html: &str) -> Vec<TrunkLink> {
    let mut links = Vec::new();
    let mut i = 0;
    while let Some(off) = html[i..].find('<') {
        let start = i + off;
        if html[start..].starts_with("<!--") {
            i = html[start..].find("-->").map_or(html.len(), |e| start + e + 3);
            continue;
        }
        let Some(len) = html[start..].find('>') else { break };
        let end = start + len + 1;
        let tag = &html[start + 1..end - 1];
        i = end;
        let Some(body) = tag.strip_prefix("link").filter(|b| b.starts_with(char::is_whitespace)) else {
            continue;
        };
        let attrs = parse_attrs(body.trim_end_matches('/'));
        if attrs.contains_key("data-trunk") {
            links.push(TrunkLink { start, end, attrs });
        }
    }
    links
}

fn parse_attrs(s: &str) -> BTreeMap<String, String> {
    let mut attrs = BTreeMap::new();
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return attrs;
        }
        let name_start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            i += 1;
        }
        let name = s[name_start..i].to_ascii_lowercase();
        let mut value = String::new();
        if i < b.len() && b[i] == b'=' {
            i += 1;
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let v_start = i + 1;
                i = v_start;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                value = s[v_start..i.min(b.len())].to_owned();
                i += 1;
            } else {
                let v_start = i;
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = s[v_start..i].to_owned();
            }
        }
        if !name.is_empty() {
            attrs.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_trunk_links_and_their_attributes() {
        let html = r#"<head><!-- <link data-trunk rel="css" href="old.css"/> -->
            <link data-trunk rel="rust" href="." data-bin="app" data-wasm-opt='z' />
            <link rel="icon" href="x.png">
            <link data-trunk rel=css href=style.css>
            </head>"#;
        let links = trunk_links(html);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].rel(), "rust");
        assert_eq!(links[0].attrs["data-bin"], "app");
        assert_eq!(links[0].attrs["data-wasm-opt"], "z");
        assert_eq!(links[1].attrs["href"], "style.css");
        assert!(html[links[1].start..links[1].end].starts_with("<link data-trunk rel=css"));
    }

    #[test]
    fn helpers() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(content_hash(b"").len(), 16);
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
        assert_eq!(
            insert_before("<a></body>", "</body>", "x").as_deref(),
            Some("<a>x</body>")
        );
    }

    #[test]
    fn finds_an_externref_table() {
        let module = |sections: &[u8]| [b"\0asm\x01\0\0\0".as_slice(), sections].concat();
        // A table section with one table of (funcref | externref), min 1.
        assert!(!has_externref_table(&module(&[4, 4, 1, 0x70, 0, 1])).unwrap());
        assert!(has_externref_table(&module(&[4, 4, 1, 0x6f, 0, 1])).unwrap());
        // An imported externref table: module "m", name "t", kind 1.
        assert!(has_externref_table(&module(&[2, 9, 1, 1, b'm', 1, b't', 1, 0x6f, 0, 1])).unwrap());
        assert!(has_externref_table(b"not wasm").is_err());
    }

    #[test]
    fn the_repository_passes_its_own_trunk_check() {
        check_trunk(&workspace_root(), false).unwrap();
    }
}
