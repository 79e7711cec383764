//! # locklab-explore-worker
//!
//! The explorer for the browser's explore screen, as its own wasm module.
//! It runs in a Web Worker (`explore-worker-main.js`, written by
//! `cargo xtask dist` through `xtask/src/worker.rs`), so a search of ten
//! thousand schedules never blocks the page, and it is fetched only when
//! the screen opens, so neither the page nor the engine (the simulator the
//! page plays lessons on) carries the explorer, the TOML parser and the
//! design files.
//!
//! It also opens a user's history or MONITOR capture (issue 40): the page
//! hands it the `File`, [`open_file`] reads it here in chunks and core's
//! `history::open` checks or replays it, so the checker never enters the
//! page's module and never blocks the page; the page gets the trace and the
//! verdict card as JSON. [`Bench`] times core's checker on the generated
//! history `locklab check --bench` checks natively.
//!
//! Everything here is a thin binding over `locklab_core::explore`: the
//! worker's loop asks a [`Job`] for a slice of schedules, posts the
//! progress, and yields, so a `cancel` message (or `Worker.terminate`) is
//! seen between slices. Results cross to the page as JSON of core's serde
//! types, which the page decodes with the same core.

use locklab_core::explore::catalog::Catalog;
use locklab_core::explore::{designs, job, ExploreError, Spec};
use wasm_bindgen::prelude::*;

/// The catalogue as the screen shows it (core's `explore::catalog`), as
/// JSON (`{"designs": [...], "drills": [...]}`).
pub fn catalog_json() -> Result<String, ExploreError> {
    serde_json::to_string(&Catalog::builtin()?).map_err(|e| ExploreError::Invalid(e.to_string()))
}

/// Read a design: TOML (what the editor holds), or JSON of a [`Spec`].
pub fn read_design(text: &str) -> Result<Spec, ExploreError> {
    if text.trim_start().starts_with('{') {
        let spec: Spec = serde_json::from_str(text).map_err(|e| ExploreError::Invalid(e.to_string()))?;
        spec.validate()?;
        Ok(spec)
    } else {
        designs::parse(text)
    }
}

/// The job `locklab explore FILE --seed N` runs (`mode` sample), or
/// `locklab explore FILE --seed N --exhaustive` (`mode` exhaustive): the
/// design, then the seed on top exactly as the CLI's flag sets it.
pub fn start(design: &str, seed: &str, mode: job::Mode) -> Result<job::Job, ExploreError> {
    let mut spec = read_design(design)?;
    if let Some(s) = locklab_core::explore::spec::parse_seed(seed)? {
        spec.set_seed(s);
    }
    job::Job::with_mode(&spec, mode)
}

/// Grade a written fix (issue 38): `exercise` is core's JSON of the
/// lesson step's [`Exercise`](locklab_core::lesson::exercise::Exercise),
/// `answer` what the candidate typed; the answer is core's JSON of a
/// [`Graded`](locklab_core::explore::exercise::Graded). A refusal (empty,
/// too long, a script that does not compile or never stops) is the error
/// core words for it. Grading is bounded in states and walks
/// (`explore::exercise`), so it runs in one go: the worker's thread, never
/// the page's, and the page's cancel terminates the worker.
pub fn grade_json(exercise: &str, answer: &str) -> Result<String, ExploreError> {
    let ex: locklab_core::lesson::exercise::Exercise =
        serde_json::from_str(exercise).map_err(|e| ExploreError::Invalid(format!("unreadable exercise: {e}")))?;
    ex.check().map_err(ExploreError::Invalid)?;
    let g = locklab_core::explore::exercise::graded(&ex, answer)?;
    serde_json::to_string(&g).map_err(|e| ExploreError::Invalid(e.to_string()))
}

#[wasm_bindgen(js_name = grade)]
pub fn js_grade(exercise: &str, answer: &str) -> Result<String, JsValue> {
    grade_json(exercise, answer).map_err(|e| JsValue::from_str(&e.to_string()))
}

#[wasm_bindgen(js_name = catalog)]
pub fn js_catalog() -> Result<String, JsValue> {
    catalog_json().map_err(|e| JsValue::from_str(&e.to_string()))
}

/// A search under way.
#[wasm_bindgen]
pub struct Job {
    inner: job::Job,
}

#[wasm_bindgen]
impl Job {
    /// Start on a design with the seed box's text (blank: the design's own
    /// seed) in `mode` (`sample` or `exhaustive`); an error (a TOML
    /// mistake, a script that does not compile, as redis-server words it)
    /// comes back as a string.
    #[wasm_bindgen(constructor)]
    pub fn new(design: &str, seed: &str, mode: &str) -> Result<Job, JsValue> {
        let inner = start(design, seed, job::Mode::parse(mode)).map_err(|e| JsValue::from_str(&e.to_string()))?;
        Ok(Job { inner })
    }

    /// Search up to `n` more schedules (or states); `true` when the search
    /// has ended.
    pub fn step(&mut self, n: u32) -> bool {
        self.inner.step(u64::from(n))
    }

    /// End the search now with what it has: "not exhausted" with its
    /// figures for a breadth-first one (the Stop button, the time limit).
    pub fn stop(&mut self) {
        self.inner.stop();
    }

    /// The CLI's `--time-limit` default, in milliseconds: the worker stops
    /// an exhaustive search that runs longer.
    #[wasm_bindgen(js_name = timeLimitMs)]
    pub fn time_limit_ms() -> f64 {
        job::TIME_LIMIT_S * 1000.0
    }

    /// `{"explored": …, "total": …, "best": [steps, "invariant"] | null}`.
    pub fn progress(&self) -> String {
        serde_json::to_string(&self.inner.progress()).unwrap_or_default()
    }

    /// The finished result (core's `JobResult`) as JSON.
    pub fn result(&self) -> String {
        serde_json::to_string(&self.inner.result()).unwrap_or_default()
    }
}

/// How much of the file one read takes (the buffered reader's size): the
/// worker holds this and what the checker keeps, never the whole file.
const CHUNK: usize = 1 << 20;

/// A `Blob` read as a stream, a chunk at a time, with `FileReaderSync`
/// (workers only); `progress(bytesRead, size)` is called every few chunks.
struct BlobReader {
    blob: web_sys::Blob,
    reader: web_sys::FileReaderSync,
    pos: f64,
    size: f64,
    progress: js_sys::Function,
    reported: f64,
}

impl std::io::Read for BlobReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let err = |e: JsValue| std::io::Error::other(format!("{e:?}"));
        if self.pos >= self.size || out.is_empty() {
            return Ok(0);
        }
        let end = (self.pos + out.len() as f64).min(self.size);
        let slice = self.blob.slice_with_f64_and_f64(self.pos, end).map_err(err)?;
        let buffer: JsValue = self.reader.read_as_array_buffer(&slice).map_err(err)?.into();
        let bytes = js_sys::Uint8Array::new(&buffer);
        let n = (bytes.length() as usize).min(out.len());
        bytes.subarray(0, n as u32).copy_to(&mut out[..n]);
        self.pos += n as f64;
        if self.pos - self.reported >= (4 * CHUNK) as f64 || self.pos >= self.size {
            self.reported = self.pos;
            let _ = self.progress.call2(
                &JsValue::NULL,
                &JsValue::from_f64(self.pos),
                &JsValue::from_f64(self.size),
            );
        }
        Ok(n)
    }
}

/// Open a history or a MONITOR capture (core's `history::open`), streamed
/// from `file`: core's JSON of the `Opened` (trace and verdict card), or
/// the error that names the line.
#[wasm_bindgen(js_name = openFile)]
pub fn open_file(file: web_sys::Blob, progress: js_sys::Function) -> Result<String, JsValue> {
    let reader = web_sys::FileReaderSync::new()?;
    let size = file.size();
    let r = BlobReader {
        blob: file,
        reader,
        pos: 0.0,
        size,
        progress,
        reported: 0.0,
    };
    open_json(std::io::BufReader::with_capacity(CHUNK, r)).map_err(|e| JsValue::from_str(&e))
}

/// [`open_file`] over any reader: the JSON the page decodes, or the error.
pub fn open_json<R: std::io::BufRead>(r: R) -> Result<String, String> {
    let opened = locklab_core::history::open::open(r, &locklab_core::history::linear::Search::default())
        .map_err(|e| e.to_string())?;
    serde_json::to_string(&opened).map_err(|e| e.to_string())
}

/// The checker's benchmark: core's generated history (as `locklab check
/// --bench` makes it), made first, so the worker's loop times [`Bench::run`]
/// alone, as the CLI times `check` alone.
#[wasm_bindgen]
pub struct Bench {
    history: locklab_core::history::History,
}

#[wasm_bindgen]
impl Bench {
    #[wasm_bindgen(constructor)]
    pub fn new(ops: u32, clients: u32, seed: u32) -> Bench {
        Bench {
            history: locklab_core::history::generate(u64::from(seed), clients, ops as usize),
        }
    }

    /// Check it: `{"ops": …, "clients": …, "findings": …, "linearizable": …}`.
    pub fn run(&self) -> String {
        let r = locklab_core::history::check(&self.history, &locklab_core::history::linear::Search::default());
        let linearizable = r
            .keys
            .iter()
            .all(|k| k.linearity == locklab_core::history::Linearity::Linearizable);
        serde_json::json!({
            "ops": r.ops,
            "clients": r.clients.len(),
            "findings": r.findings.len(),
            "linearizable": linearizable,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_has_the_designs_and_drills() {
        let json = catalog_json().expect("catalog");
        let v: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert!(v["designs"].as_array().is_some_and(|a| a.len() >= 9));
        assert!(v["drills"].as_array().is_some_and(|a| a.len() >= 10));
    }

    #[test]
    fn designs_in_toml_and_json_and_errors_as_redis_says() {
        let toml = read_design("release = \"del\"").expect("toml");
        let json = read_design(r#"{ "release": "del" }"#).expect("json");
        assert_eq!(toml, json);
        let e = read_design("[scripts]\nrelease = 'return redis.call(\"DEL\", KEYS[1]'").expect_err("compile");
        assert!(
            e.to_string().contains(
                "(error) ERR Error compiling script (new function): user_script:1: ')' expected near '<eof>'"
            ),
            "{e}"
        );
    }

    /// The page posts the lesson step's exercise as JSON: a wrong release
    /// comes back broken with its counterexample and the design for the
    /// link, and hostile answers come back as core's refusals.
    #[test]
    fn a_written_fix_is_graded_from_the_pages_json() {
        let lesson = locklab_core::lesson::builtin()
            .expect("lessons")
            .into_iter()
            .find(|l| l.id == "46")
            .expect("lesson 46");
        let ex = lesson.steps[1].exercise.clone().expect("an exercise");
        let json = serde_json::to_string(&ex).expect("json");
        let g: locklab_core::explore::exercise::Graded =
            serde_json::from_str(&grade_json(&json, "DEL $key").expect("graded")).expect("decodes");
        assert!(!g.grade.passed);
        assert!(g.grade.result.lesson.is_some() || g.grade.story.broken.is_some());
        assert!(read_design(&g.design).is_ok(), "{}", g.design);
        let e = grade_json(&json, "while true do end").expect_err("stopped");
        assert!(e.to_string().contains("BUSY"), "{e}");
        let e = grade_json(&json, "").expect_err("empty");
        assert!(e.to_string().contains("empty"), "{e}");
        let e = grade_json("{", "DEL $key").expect_err("unreadable");
        assert!(e.to_string().contains("unreadable exercise"), "{e}");
    }

    #[test]
    fn the_seed_box_is_the_clis_seed_flag() {
        let design = "release = \"del\"\nrandom_walks = 50\nexhaustive_seeds = 1\n";
        let run = |seed: &str| {
            let mut j = start(design, seed, job::Mode::Sample).expect("starts");
            while !j.step(1000) {}
            j.result().result_line
        };
        assert_eq!(run(""), run("1"), "blank is the design's own seed (1 by default)");
        assert!(run(" 9 ").contains("(seed 9,"), "{}", run("9"));
        let e = start(design, "nine", job::Mode::Sample)
            .expect_err("not a number")
            .to_string();
        assert!(e.starts_with("the seed must be a whole number"), "{e}");
        let e = start("[scripts]\nrelease = 'while true do end'\n", "", job::Mode::Sample).expect_err("runaway");
        assert!(e.to_string().contains("Redis would reply BUSY"), "{e}");
    }
}
