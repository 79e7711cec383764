//! The browser side of the explore worker: start it, post to it, hear it.
//!
//! Messages both ways are JSON text (see `xtask/src/worker.rs` for the
//! other end), decoded by [`WorkerEvent::parse`]. Dropping an
//! [`ExploreWorker`] terminates the worker, which is also the hard cancel:
//! a search in the middle of a slice stops at once.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use yew::Callback;

use locklab_core::explore::job::Mode;

use super::{WorkerEvent, WORKER_URL};

pub struct ExploreWorker {
    worker: web_sys::Worker,
    _onmessage: Closure<dyn FnMut(web_sys::MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
}

impl ExploreWorker {
    /// Start the worker and ask it for the catalogue (the explore screen).
    pub fn spawn(on: Callback<WorkerEvent>) -> Result<ExploreWorker, String> {
        let w = ExploreWorker::bare(on)?;
        w.post(&serde_json::json!({ "type": "catalog" }));
        Ok(w)
    }

    /// Start the worker for grading written fixes (an exercise step): no
    /// catalogue, just [`ExploreWorker::grade`].
    pub fn for_grading(on: Callback<WorkerEvent>) -> Result<ExploreWorker, String> {
        ExploreWorker::bare(on)
    }

    /// Start the worker for opening a history or a MONITOR capture: no
    /// catalogue, just [`ExploreWorker::open`].
    pub fn for_opening(on: Callback<WorkerEvent>) -> Result<ExploreWorker, String> {
        ExploreWorker::bare(on)
    }

    /// Start the worker (a module worker: the wasm-bindgen output is an ES
    /// module).
    fn bare(on: Callback<WorkerEvent>) -> Result<ExploreWorker, String> {
        let opts = web_sys::WorkerOptions::new();
        opts.set_type(web_sys::WorkerType::Module);
        let worker = web_sys::Worker::new_with_options(WORKER_URL, &opts)
            .map_err(|e| format!("cannot start the worker: {e:?}"))?;
        let on_msg = on.clone();
        let onmessage = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let text = e.data().as_string().unwrap_or_default();
            on_msg.emit(WorkerEvent::parse(&text));
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |_e: web_sys::Event| {
            on.emit(WorkerEvent::Error(format!(
                "the explore worker ({WORKER_URL}) failed to load or crashed"
            )));
        });
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        Ok(ExploreWorker {
            worker,
            _onmessage: onmessage,
            _onerror: onerror,
        })
    }

    fn post(&self, msg: &serde_json::Value) {
        let _ = self.worker.post_message(&JsValue::from_str(&msg.to_string()));
    }

    /// Explore a design (TOML or JSON text) with the seed box's text
    /// (blank: the design's own seed; the worker reads it as `--seed`), by
    /// sampling or breadth-first (`--exhaustive`).
    pub fn start(&self, design: &str, seed: &str, mode: Mode) {
        let mode = match mode {
            Mode::Sample => "sample",
            Mode::Exhaustive => "exhaustive",
        };
        self.post(&serde_json::json!({ "type": "start", "design": design, "seed": seed, "mode": mode }));
    }

    /// End the search now with what it has: a breadth-first one answers
    /// `done`, "not exhausted" with its figures.
    pub fn stop(&self) {
        self.post(&serde_json::json!({ "type": "stop" }));
    }

    /// Grade `answer` to `exercise` (core's JSON of the step's exercise):
    /// the worker answers `graded` or `refused`. It is one bounded call in
    /// the worker; dropping the worker is its cancel.
    pub fn grade(&self, exercise: &str, answer: &str) {
        self.post(&serde_json::json!({ "type": "grade", "exercise": exercise, "answer": answer }));
    }

    /// Open `file` in the worker: it reads the file in chunks and answers
    /// `opening` (progress), then `opened` or `open-error`. The `File`
    /// itself is posted (structured clone), never its text.
    pub fn open(&self, file: &web_sys::File) {
        let msg = web_sys::js_sys::Object::new();
        let set = |k: &str, v: &JsValue| web_sys::js_sys::Reflect::set(&msg, &JsValue::from_str(k), v);
        let _ = set("type", &JsValue::from_str("open"));
        let _ = set("file", file);
        let _ = self.worker.post_message(&msg);
    }

    /// Stop between slices.
    pub fn cancel(&self) {
        self.post(&serde_json::json!({ "type": "cancel" }));
    }
}

impl Drop for ExploreWorker {
    fn drop(&mut self) {
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
    }
}
