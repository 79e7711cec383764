//! The page's two other wasm modules: the engine and the explore worker.
//!
//! `dist` calls [`build`] once. It compiles, for wasm32 in the page's
//! release profile, `locklab-engine` (the simulator: lesson sessions and the
//! free lab, which the page imports the first time it plays on the
//! simulator, through `index.html`'s loader) and `locklab-explore-worker`
//! (the explorer, the TOML parser and the design and drill files, run in a
//! Web Worker the explore screen starts when it opens), runs wasm-bindgen
//! for `--target web` and wasm-opt on each as the page's module gets them,
//! and writes the worker's entry script. The names are fixed (`engine.js`,
//! `engine_bg.wasm`, `explore-worker*.{js,wasm}`): the page's first load
//! fetches none of the explorer, and a page on the real driver never
//! fetches the engine.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use super::{cargo, report_size, target_dir, wasm_opt, TrunkLink, WASM_TARGET};

/// (package, file stem) of each module.
const ENGINE: (&str, &str) = ("locklab-engine", "engine");
const EXPLORE_WORKER: (&str, &str) = ("locklab-explore-worker", "explore-worker");
/// The explore screen's worker script (the page's `explore::WORKER_URL`).
const WORKER_MAIN: &str = "explore-worker-main.js";

/// The worker's entry script: a module worker that loads the wasm, then
/// answers `catalog`, runs `start` jobs (sampling, or `mode: exhaustive`:
/// the breadth-first search, stopped at the CLI's time limit) in slices,
/// posting progress and yielding every ~50 ms so a `stop` (end now, with
/// the result so far) or `cancel` is seen (the page may also simply
/// terminate the worker), and answers `grade` (a written fix, issue 38)
/// with `graded` or core's refusal, `open` (a history or MONITOR capture,
/// issue 40: the `File` itself, read in the worker) with `opening`
/// progress then `opened` or `open-error`, and `bench` (the checker's
/// benchmark) with its time. Every payload is core's serde JSON.
pub(crate) const MAIN_JS: &str = r#"// locklab explore worker (written by cargo xtask dist; see xtask/src/worker.rs)
import init, { Job, Bench, catalog, grade, openFile } from './explore-worker.js';
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
    const mode = m.mode === 'exhaustive' ? 'exhaustive' : 'sample';
    try { job = new Job(String(m.design), m.seed == null ? '' : String(m.seed), mode); }
    catch (err) { post({ type: 'error', message: String(err) }); return; }
    const mine = ++run;
    const t0 = performance.now();
    // The CLI's --time-limit default: past it the search ends "not exhausted".
    const limit = Job.timeLimitMs();
    const loop = () => {
      if (mine !== run || !job) return;
      // Slices until ~50 ms have passed, then progress and a yield (a
      // `stop` or `cancel` is read between): a yield per slice would cost
      // the browser's 4 ms timer clamp every 64 states.
      const until = performance.now() + 50;
      let done = false;
      do {
        if (mode === 'exhaustive' && performance.now() - t0 > limit) job.stop();
        done = job.step(SLICE);
      } while (!done && performance.now() < until);
      post({ type: 'progress', json: job.progress(), ms: performance.now() - t0 });
      if (done) {
        post({ type: 'done', json: job.result(), ms: performance.now() - t0 });
        job.free(); job = null;
      } else {
        setTimeout(loop, 0);
      }
    };
    setTimeout(loop, 0);
  } else if (m.type === 'stop') {
    // End the search with what it has (a breadth-first one "not
    // exhausted", with its figures): the loop's next slice posts `done`.
    if (job) job.stop();
  } else if (m.type === 'grade') {
    // One bounded grading (core's explore::exercise), in one go: the page
    // cancels it by terminating the worker.
    try { post({ type: 'graded', json: grade(String(m.exercise), String(m.answer)) }); }
    catch (err) { post({ type: 'refused', message: String(err) }); }
  } else if (m.type === 'open') {
    // A history or a MONITOR capture (issue 40): read here in chunks and
    // checked by core; the page gets the trace and the verdict card.
    const t0 = performance.now();
    try {
      const json = openFile(m.file, (bytes, size) => post({ type: 'opening', bytes, size }));
      post({ type: 'opened', json, ms: performance.now() - t0 });
    } catch (err) { post({ type: 'open-error', message: String(err) }); }
  } else if (m.type === 'bench') {
    // The checker on core's generated history, timed alone (as the CLI's
    // `locklab check --bench` times it).
    const b = new Bench(m.ops >>> 0, m.clients >>> 0, m.seed >>> 0);
    const t0 = performance.now();
    const json = b.run();
    post({ type: 'bench', json, ms: performance.now() - t0 });
    b.free();
  } else if (m.type === 'cancel') {
    run++;
    if (job) { job.free(); job = null; }
    post({ type: 'cancelled' });
  }
};
post({ type: 'loading' });
ready.then(() => post({ type: 'ready' }), (err) => post({ type: 'error', message: String(err) }));
"#;

/// Build both modules and the worker's entry script into `out` (the
/// staging dist directory), with the page's profile and wasm-opt settings
/// (`rust`, its `<link data-trunk rel="rust">`).
pub(crate) fn build(root: &Path, out: &Path, profile: &str, rust: &TrunkLink, optimize: bool) -> Result<()> {
    for module in [ENGINE, EXPLORE_WORKER] {
        build_module(root, out, profile, rust, optimize, module)?;
    }
    fs::write(out.join(WORKER_MAIN), MAIN_JS)?;
    Ok(())
}

/// One module: cargo, wasm-bindgen (`--target web`), wasm-opt.
fn build_module(
    root: &Path,
    out: &Path,
    profile: &str,
    rust: &TrunkLink,
    optimize: bool,
    (package, stem): (&str, &str),
) -> Result<()> {
    println!("building {package} for {WASM_TARGET} (profile {profile})…");
    let status = Command::new(cargo())
        .args([
            "build",
            "--profile",
            profile,
            "--target",
            WASM_TARGET,
            "-p",
            package,
            "--lib",
        ])
        .current_dir(root)
        .status()
        .with_context(|| format!("running cargo build for {package}"))?;
    ensure!(status.success(), "cargo build of {package} for {WASM_TARGET} failed");
    let wasm_in = target_dir(root)?
        .join(WASM_TARGET)
        .join(profile)
        .join(format!("{}.wasm", package.replace('-', "_")));
    let input = fs::read(&wasm_in).with_context(|| format!("reading {}", wasm_in.display()))?;
    wasm_bindgen_cli_support::Bindgen::new()
        .input_bytes(stem, input)
        .out_name(stem)
        .web(true)?
        .typescript(false)
        .remove_name_section(true)
        .remove_producers_section(true)
        .generate(out)
        .with_context(|| format!("wasm-bindgen for {package}"))?;
    let wasm_path = out.join(format!("{stem}_bg.wasm"));
    report_size(stem, &wasm_path)?;
    if optimize {
        wasm_opt(rust, &wasm_path, false)?;
    }
    Ok(())
}
