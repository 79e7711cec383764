//! The explore screen's model: "break my lock" and the interview drill.
//!
//! Sans-IO, like [`crate::real`]: the search itself runs in a Web Worker
//! (a second wasm module, `explore-worker`, loaded only when the screen
//! opens; [`worker`] is the browser glue), and this module only keeps what
//! the screen shows — the catalogue of designs and drills the worker sent,
//! the design in the editor, the progress, the result — and turns the
//! worker's messages into that state. Everything it decodes is core's
//! serde types, so the page and the CLI agree by construction.
//!
//! * [`view`] — the component.
//! * [`worker`] — starting the worker, posting to it, its messages.

pub mod view;
pub mod worker;

use locklab_core::explore::designs::Design;
use locklab_core::explore::drill::{self, DrillFile, Score};
use locklab_core::explore::job::{JobResult, Progress};
use locklab_core::invariants::Invariant;
use serde::Deserialize;
use std::rc::Rc;

/// Where the worker's files are (written by `cargo xtask dist`).
pub const WORKER_URL: &str = "/explore-worker-main.js";

/// What the worker sent: `{"type": …, "json": …, "ms": …, "message": …}`.
#[derive(Clone, Debug, Default, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    json: Option<String>,
    ms: Option<f64>,
    message: Option<String>,
}

/// The catalogue the worker carries.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Catalog {
    pub designs: Vec<Design>,
    pub drills: Vec<DrillFile>,
}

/// One message from the worker, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerEvent {
    Loading,
    Ready,
    Catalog(Box<Catalog>),
    Progress { progress: Progress, ms: f64 },
    Done { result: Box<JobResult>, ms: f64 },
    Cancelled,
    Error(String),
}

impl WorkerEvent {
    /// Decode a message; anything unreadable is an error event, not a panic.
    pub fn parse(text: &str) -> WorkerEvent {
        let env: Envelope = match serde_json::from_str(text) {
            Ok(e) => e,
            Err(e) => return WorkerEvent::Error(format!("unreadable worker message: {e}")),
        };
        let json = env.json.unwrap_or_default();
        let ms = env.ms.unwrap_or_default();
        let bad = |e: serde_json::Error| WorkerEvent::Error(format!("unreadable {} from the worker: {e}", env.kind));
        match env.kind.as_str() {
            "loading" => WorkerEvent::Loading,
            "ready" => WorkerEvent::Ready,
            "catalog" => serde_json::from_str(&json).map_or_else(bad, |c| WorkerEvent::Catalog(Box::new(c))),
            "progress" => {
                serde_json::from_str(&json).map_or_else(bad, |progress| WorkerEvent::Progress { progress, ms })
            }
            "done" => serde_json::from_str(&json).map_or_else(bad, |r| WorkerEvent::Done {
                result: Box::new(r),
                ms,
            }),
            "cancelled" => WorkerEvent::Cancelled,
            "error" => WorkerEvent::Error(env.message.unwrap_or_default()),
            other => WorkerEvent::Error(format!("unknown worker message {other:?}")),
        }
    }
}

/// What the search is doing.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Status {
    /// The worker is loading its module.
    #[default]
    Loading,
    Idle,
    Running {
        progress: Progress,
        ms: f64,
    },
    Done {
        result: Box<JobResult>,
        ms: f64,
    },
    Cancelled {
        progress: Option<Progress>,
    },
    /// The design could not be explored (as the CLI would say), or the
    /// worker failed.
    Error(String),
}

/// The interview drill under way.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrillState {
    pub index: usize,
    /// The user's named failure, locked in before the run.
    pub guess: Option<Invariant>,
    pub score: Option<Score>,
}

/// The screen's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explore {
    pub catalog: Rc<Catalog>,
    /// The design in the editor (TOML).
    pub text: String,
    /// The built-in design it came from, if any.
    pub selected: Option<usize>,
    pub status: Status,
    pub drill: Option<DrillState>,
    /// Drill rounds answered and points scored.
    pub asked: u32,
    pub points: u32,
    /// Next drill to draw.
    pub round: u64,
}

impl Explore {
    pub fn on_event(&mut self, e: WorkerEvent) {
        match e {
            WorkerEvent::Loading => self.status = Status::Loading,
            // The wasm is up, but the screen is not usable until the
            // catalogue has come (the design list is the worker's): only
            // `Catalog` ends `Loading`. Going idle on `Ready` let a quick
            // user (or a test) see an empty design list.
            WorkerEvent::Ready => {}
            WorkerEvent::Catalog(c) => {
                self.catalog = Rc::new(*c);
                if self.text.is_empty() && !self.catalog.designs.is_empty() {
                    self.select(0);
                }
                if self.status == Status::Loading {
                    self.status = Status::Idle;
                }
            }
            WorkerEvent::Progress { progress, ms } => {
                if matches!(self.status, Status::Running { .. }) {
                    self.status = Status::Running { progress, ms };
                }
            }
            WorkerEvent::Done { result, ms } => {
                if let Some(d) = &mut self.drill {
                    if let (Some(guess), None) = (d.guess, d.score) {
                        let found = match &result.report.outcome {
                            locklab_core::explore::Outcome::Violated { invariant, .. } => Some(*invariant),
                            locklab_core::explore::Outcome::Held => None,
                        };
                        let s = drill::score(guess, found);
                        d.score = Some(s);
                        self.asked += 1;
                        self.points += s.points;
                    }
                }
                self.status = Status::Done { result, ms };
            }
            WorkerEvent::Cancelled => {
                let progress = match &self.status {
                    Status::Running { progress, .. } => Some(progress.clone()),
                    _ => None,
                };
                self.status = Status::Cancelled { progress };
            }
            WorkerEvent::Error(m) => self.status = Status::Error(m),
        }
    }

    /// Load built-in design `i` into the editor.
    pub fn select(&mut self, i: usize) {
        if let Some(d) = self.catalog.designs.get(i) {
            self.text = d.text.clone();
            self.selected = Some(i);
            self.drill = None;
        }
    }

    pub fn edit(&mut self, text: String) {
        self.text = text;
        self.selected = None;
    }

    /// The search was asked to start (the view posts the design).
    pub fn started(&mut self) {
        self.status = Status::Running {
            progress: Progress {
                explored: 0,
                total: 0,
                best: None,
            },
            ms: 0.0,
        };
    }

    pub fn is_running(&self) -> bool {
        matches!(self.status, Status::Running { .. })
    }

    /// Schedules per second so far.
    pub fn rate(&self) -> Option<f64> {
        match &self.status {
            Status::Running { progress, ms } if *ms > 0.0 => Some(progress.explored as f64 * 1000.0 / ms),
            Status::Done { result, ms } if *ms > 0.0 => Some(result.report.explored as f64 * 1000.0 / ms),
            _ => None,
        }
    }

    /// Draw the next drill: its design goes into the editor, hidden
    /// behind the question until the user has named the failure.
    pub fn next_drill(&mut self, seed: u64) {
        let n = self.catalog.drills.len();
        if n == 0 {
            return;
        }
        let index = drill::pick(seed, self.round, n);
        self.round += 1;
        let d = &self.catalog.drills[index].drill;
        self.text = design_text(&d.design);
        self.selected = None;
        self.drill = Some(DrillState {
            index,
            guess: None,
            score: None,
        });
        self.status = Status::Idle;
    }

    /// The user names the failure (only before the run).
    pub fn guess(&mut self, i: Invariant) {
        let running = self.is_running();
        if let Some(d) = &mut self.drill {
            if d.score.is_none() && !running {
                d.guess = Some(i);
            }
        }
    }

    /// The current drill's file.
    pub fn drill_file(&self) -> Option<&DrillFile> {
        self.drill.as_ref().and_then(|d| self.catalog.drills.get(d.index))
    }
}

/// A spec as the worker reads it: JSON is a design too (the editor shows
/// TOML for the built-in files; a drill's design is sent as JSON).
pub fn design_text(spec: &locklab_core::explore::Spec) -> String {
    serde_json::to_string_pretty(spec).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::explore::job::Job;

    fn envelope(kind: &str, json: &str, ms: f64) -> String {
        serde_json::json!({ "type": kind, "json": json, "ms": ms }).to_string()
    }

    fn catalog() -> Catalog {
        Catalog {
            designs: locklab_core::explore::designs::builtin().expect("designs"),
            drills: locklab_core::explore::drill::builtin().expect("drills"),
        }
    }

    #[test]
    fn a_whole_search_as_the_worker_reports_it() {
        let mut m = Explore::default();
        m.on_event(WorkerEvent::parse(r#"{"type":"loading"}"#));
        assert_eq!(m.status, Status::Loading);
        // The wasm is ready but the design list has not come: still loading.
        m.on_event(WorkerEvent::parse(r#"{"type":"ready"}"#));
        assert_eq!(m.status, Status::Loading, "idle with an empty design list");
        let cat = serde_json::to_string(&serde_json::json!({
            "designs": catalog().designs, "drills": catalog().drills
        }))
        .expect("json");
        m.on_event(WorkerEvent::parse(&envelope("catalog", &cat, 0.0)));
        assert_eq!(m.status, Status::Idle);
        assert_eq!(m.selected, Some(0));
        assert!(m.text.contains("release = \"del\""), "{}", m.text);
        // The worker's job on the same design.
        let spec = locklab_core::explore::designs::parse(&m.text).expect("spec");
        let mut job = Job::new(&spec).expect("job");
        m.started();
        job.step(100);
        let p = serde_json::to_string(&job.progress()).expect("p");
        m.on_event(WorkerEvent::parse(&envelope("progress", &p, 500.0)));
        assert_eq!(m.rate(), Some(200.0));
        while !job.step(1000) {}
        let r = serde_json::to_string(&job.result()).expect("r");
        m.on_event(WorkerEvent::parse(&envelope("done", &r, 1000.0)));
        let Status::Done { result, .. } = &m.status else {
            panic!("{:?}", m.status)
        };
        assert!(result.result_line.starts_with("result: violated wrong-release"));
        assert!(result.lesson.is_some());
    }

    #[test]
    fn cancel_and_errors() {
        let mut m = Explore::default();
        m.started();
        m.on_event(WorkerEvent::parse(r#"{"type":"cancelled"}"#));
        assert!(matches!(m.status, Status::Cancelled { .. }));
        m.on_event(WorkerEvent::parse(
            r#"{"type":"error","message":"the release script does not compile: (error) ERR x"}"#,
        ));
        assert_eq!(
            m.status,
            Status::Error("the release script does not compile: (error) ERR x".into())
        );
        assert!(matches!(WorkerEvent::parse("not json"), WorkerEvent::Error(_)));
        assert!(matches!(
            WorkerEvent::parse(&envelope("progress", "{", 1.0)),
            WorkerEvent::Error(_)
        ));
    }

    #[test]
    fn a_drill_is_scored_against_the_explorer() {
        let mut m = Explore {
            catalog: Rc::new(catalog()),
            ..Explore::default()
        };
        m.next_drill(7);
        let d = m.drill_file().expect("drill").clone();
        m.guess(d.drill.answer);
        let spec: locklab_core::explore::Spec = serde_json::from_str(&m.text).expect("the editor holds the design");
        assert_eq!(spec, d.drill.design);
        m.started();
        let mut job = Job::new(&spec).expect("job");
        while !job.step(5000) {}
        let r = serde_json::to_string(&job.result()).expect("r");
        m.on_event(WorkerEvent::parse(&envelope("done", &r, 10.0)));
        assert_eq!(m.drill.as_ref().and_then(|d| d.score).map(|s| s.right), Some(true));
        assert_eq!((m.asked, m.points), (1, 2));
    }
}
