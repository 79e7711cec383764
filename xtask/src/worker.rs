//! The explore screen's Web Worker: a second wasm module next to the page.
//!
//! `dist` calls [`build`] once. It compiles `locklab-explore-worker` (the
//! explorer, the TOML parser and the design and drill files) for wasm32 in
//! the page's release profile, runs wasm-bindgen for `--target web` and
//! wasm-opt as the page's module gets it, and writes the worker's entry
//! script. The names are fixed (`explore-worker*.{js,wasm}`): only the
//! page's explore screen asks for them, when it opens, so the first load of
//! the page fetches none of this.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use super::{cargo, report_size, target_dir, wasm_opt, TrunkLink, WASM_TARGET};

const PACKAGE: &str = "locklab-explore-worker";
const STEM: &str = "explore-worker";

/// The worker's entry script: a module worker that loads the wasm, then
/// answers `catalog` and runs `start` jobs in slices, posting progress and
/// yielding between slices so a `cancel` is seen (the page may also simply
/// terminate the worker). Every payload is core's serde JSON.
pub(crate) const MAIN_JS: &str = r#"// locklab explore worker (written by cargo xtask dist; see xtask/src/worker.rs)
import init, { Job, catalog } from './explore-worker.js';
const ready = init({ module_or_path: new URL('./explore-worker_bg.wasm', import.meta.url) });
let job = null;
let run = 0;
const post = (o) => postMessage(JSON.stringify(o));
const SLICE = 64;
self.onmessage = async (e) => {
  await ready;
  const m = typeof e.data === 'string' ? JSON.parse(e.data) : (e.data || {});
  if (m.type === 'catalog') {
    try { post({ type: 'catalog', json: catalog() }); }
    catch (err) { post({ type: 'error', message: String(err) }); }
  } else if (m.type === 'start') {
    if (job) { job.free(); job = null; }
    try { job = new Job(String(m.design), m.seed == null ? '' : String(m.seed)); }
    catch (err) { post({ type: 'error', message: String(err) }); return; }
    const mine = ++run;
    const t0 = performance.now();
    const loop = () => {
      if (mine !== run || !job) return;
      const done = job.step(SLICE);
      post({ type: 'progress', json: job.progress(), ms: performance.now() - t0 });
      if (done) {
        post({ type: 'done', json: job.result(), ms: performance.now() - t0 });
        job.free(); job = null;
      } else {
        setTimeout(loop, 0);
      }
    };
    setTimeout(loop, 0);
  } else if (m.type === 'cancel') {
    run++;
    if (job) { job.free(); job = null; }
    post({ type: 'cancelled' });
  }
};
post({ type: 'loading' });
ready.then(() => post({ type: 'ready' }), (err) => post({ type: 'error', message: String(err) }));
"#;

/// Build the worker into `out` (the staging dist directory), with the
/// page's profile and wasm-opt settings (`rust`, its `<link data-trunk
/// rel="rust">`).
pub(crate) fn build(root: &Path, out: &Path, profile: &str, rust: &TrunkLink, optimize: bool) -> Result<()> {
    println!("building {PACKAGE} for {WASM_TARGET} (profile {profile})…");
    let status = Command::new(cargo())
        .args([
            "build",
            "--profile",
            profile,
            "--target",
            WASM_TARGET,
            "-p",
            PACKAGE,
            "--lib",
        ])
        .current_dir(root)
        .status()
        .context("running cargo build for the worker")?;
    ensure!(status.success(), "cargo build of {PACKAGE} for {WASM_TARGET} failed");
    let wasm_in = target_dir(root)?
        .join(WASM_TARGET)
        .join(profile)
        .join(format!("{}.wasm", PACKAGE.replace('-', "_")));
    let input = fs::read(&wasm_in).with_context(|| format!("reading {}", wasm_in.display()))?;
    wasm_bindgen_cli_support::Bindgen::new()
        .input_bytes(STEM, input)
        .out_name(STEM)
        .web(true)?
        .typescript(false)
        .remove_name_section(true)
        .remove_producers_section(true)
        .generate(out)
        .context("wasm-bindgen for the worker")?;
    let wasm_path = out.join(format!("{STEM}_bg.wasm"));
    report_size("worker", &wasm_path)?;
    if optimize {
        wasm_opt(rust, &wasm_path, false)?;
    }
    fs::write(out.join(format!("{STEM}-main.js")), MAIN_JS)?;
    Ok(())
}
