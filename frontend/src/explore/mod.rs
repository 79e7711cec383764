//! The explore screen's model: "break my lock" and the interview drill.
//!
//! Sans-IO, like [`crate::driver::real`]: the search itself runs in a Web Worker
//! (a second wasm module, `explore-worker`, loaded only when the screen
//! opens; [`worker`] is the browser glue), and this module only keeps what
//! the screen shows — the catalogue of designs and drills the worker sent,
//! the design in the editor, the progress, the result — and turns the
//! worker's messages into that state. Everything it decodes is core's
//! serde types, so the page and the CLI agree by construction.
//!
//! * [`view`] — the component.
//! * [`worker`] — starting the worker, posting to it, its messages.

mod exports;
pub mod view;
pub mod worker;

use locklab_core::explore::catalog::{Catalog, DrillEntry};
use locklab_core::explore::drill::{self, DrillScore};
use locklab_core::explore::exercise::Graded;
use locklab_core::explore::job::{JobResult, Mode, Progress};
use locklab_core::explore::link::{self, DesignRef, LinkError};
use locklab_core::invariants::Invariant;
use locklab_core::lesson::worded::PageLesson;
use serde::Deserialize;
use std::rc::Rc;

use crate::i18n::Lang;
use crate::query::Query;

/// A search to share: `?explore=<design>&seed=N&step=K`. The search is
/// deterministic per design and seed, so the link re-runs it on the
/// opener's page and lands on the same counterexample the sender saw (the
/// one `locklab explore FILE --seed N` prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExploreLink {
    /// A built-in design's stem or an encoded design
    /// ([`locklab_core::explore::link`]).
    pub design: String,
    /// The seed box: `None` is the design's own seed.
    pub seed: Option<u64>,
    /// Where to stand in the counterexample once it plays.
    pub step: Option<String>,
}

impl ExploreLink {
    /// The query string of this link (language first, as every view's).
    pub fn search(&self, lang: Lang) -> String {
        Query {
            lang: Some(lang),
            explore: Some(self.design.clone()),
            step: self.step.clone(),
            seed: self.seed,
            ..Query::default()
        }
        .to_search()
    }
}

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
    bytes: Option<f64>,
    size: Option<f64>,
}

/// One message from the worker, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerEvent {
    Loading,
    Ready,
    Catalog(Box<Catalog>),
    Progress {
        progress: Progress,
        ms: f64,
    },
    Done {
        result: Box<JobResult>,
        ms: f64,
    },
    Cancelled,
    /// A written fix's grade (an exercise step).
    Graded(Box<Graded>),
    /// A written fix the lab would not grade, in core's words (empty, too
    /// long, a script that does not compile or never stops).
    Refused(String),
    /// Reading an opened file: bytes read of its size.
    Opening {
        bytes: f64,
        size: f64,
    },
    /// A history or capture, checked: its trace and verdict card.
    Opened(Box<locklab_core::history::open::Opened>),
    /// The file could not be opened: core's error, naming the line.
    OpenError(String),
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
            "graded" => serde_json::from_str(&json).map_or_else(bad, |g| WorkerEvent::Graded(Box::new(g))),
            "refused" => WorkerEvent::Refused(env.message.unwrap_or_default()),
            "opening" => WorkerEvent::Opening {
                bytes: env.bytes.unwrap_or_default(),
                size: env.size.unwrap_or_default(),
            },
            "opened" => serde_json::from_str(&json).map_or_else(bad, |o| WorkerEvent::Opened(Box::new(o))),
            "open-error" => WorkerEvent::OpenError(env.message.unwrap_or_default()),
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
    pub score: Option<DrillScore>,
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
    /// The seed box, as typed (blank: the design's own seed).
    pub seed_text: String,
    /// A link the page was opened with, until the catalogue is here to
    /// resolve it.
    pub pending: Option<ExploreLink>,
    /// Why the link could not be opened.
    pub link_error: Option<String>,
    /// Start the search now (a link was opened).
    pub autorun: bool,
    /// Play the counterexample as soon as the search finds it, at this
    /// step (a link was opened).
    pub autoplay: Option<Option<String>>,
    /// The design and seed of the search started last: its link.
    pub ran: Option<ExploreLink>,
    /// Sampling (random walks) or the breadth-first search, exhaustive
    /// within bounds (`locklab explore --exhaustive`).
    pub mode: Mode,
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
                self.apply_link();
            }
            WorkerEvent::Progress { progress, ms } => {
                if matches!(self.status, Status::Running { .. }) {
                    self.status = Status::Running { progress, ms };
                }
            }
            WorkerEvent::Done { result, ms } => {
                if let Some(d) = &mut self.drill {
                    if let (Some(guess), None) = (d.guess, d.score) {
                        let found = result.broken.map(|b| b.invariant);
                        let s = drill::score(guess, found);
                        d.score = Some(s);
                        self.asked += 1;
                        self.points += s.points;
                    }
                }
                if self.autoplay.is_some() && result.lesson.is_none() {
                    // Nothing to play (the design held, or the run could not
                    // become a lesson): the screen shows why instead.
                    self.autoplay = None;
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
            // The explore screen never asks for a grade or opens a file.
            WorkerEvent::Graded(_)
            | WorkerEvent::Refused(_)
            | WorkerEvent::Opening { .. }
            | WorkerEvent::Opened(_)
            | WorkerEvent::OpenError(_) => {}
            WorkerEvent::Error(m) => {
                self.autoplay = None;
                self.status = Status::Error(m);
            }
        }
    }

    /// The page was opened with `?explore=…`: search that design with
    /// that seed as soon as the worker's catalogue is here, then play.
    pub fn open_link(&mut self, l: ExploreLink) {
        self.pending = Some(l);
        self.apply_link();
    }

    fn apply_link(&mut self) {
        if self.catalog.designs.is_empty() {
            return;
        }
        let Some(l) = self.pending.take() else { return };
        let found = link::decode(&l.design).and_then(|d| match d {
            DesignRef::Builtin(stem) => self
                .catalog
                .designs
                .iter()
                .position(|d| link::builtin_ref(&d.file) == stem)
                .map(|i| self.select(i))
                .ok_or(LinkError::Unknown(stem)),
            DesignRef::Text(t) => {
                self.edit(t);
                Ok(())
            }
        });
        match found {
            Ok(()) => {
                self.seed_text = l.seed.map(|s| s.to_string()).unwrap_or_default();
                self.link_error = None;
                self.autorun = true;
                self.autoplay = Some(l.step);
            }
            Err(e) => self.link_error = Some(e.to_string()),
        }
    }

    /// The link for what is in the editor and the seed box now: a built-in
    /// design unchanged goes by name, anything else by its text.
    pub fn link(&self) -> ExploreLink {
        let design = match self.selected.and_then(|i| self.catalog.designs.get(i)) {
            Some(d) if d.text == self.text => link::builtin_ref(&d.file),
            _ => link::encode_text(&self.text),
        };
        ExploreLink {
            design,
            seed: locklab_core::explore::spec::parse_seed(&self.seed_text).ok().flatten(),
            step: None,
        }
    }

    /// The counterexample to play now that a linked search is done, with
    /// the link to show in the URL while it plays (`autoplay` is cleared
    /// by [`Explore::played`]).
    pub fn autoplay_lesson(&self) -> Option<(PageLesson, ExploreLink)> {
        let step = self.autoplay.clone()?;
        let Status::Done { result, .. } = &self.status else {
            return None;
        };
        let lesson = result.lesson.clone()?;
        let l = ExploreLink {
            step,
            ..self.ran.clone().unwrap_or_default()
        };
        Some((lesson, l))
    }

    pub fn played(&mut self) {
        self.autoplay = None;
    }

    pub fn set_seed(&mut self, text: String) {
        self.seed_text = text;
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

    /// The search was asked to start (the view posts the design and the
    /// seed box).
    pub fn started(&mut self) {
        self.ran = Some(self.link());
        self.autorun = false;
        self.status = Status::Running {
            progress: Progress {
                mode: self.mode,
                ..Progress::default()
            },
            ms: 0.0,
        };
    }

    /// Choose the search (only while none runs).
    pub fn set_mode(&mut self, mode: Mode) {
        if !self.is_running() {
            self.mode = mode;
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(self.status, Status::Running { .. })
    }

    /// Schedules (sampling) or distinct states (exhaustive) per second so far.
    pub fn rate(&self) -> Option<f64> {
        match &self.status {
            Status::Running { progress, ms } if *ms > 0.0 => Some(progress.explored as f64 * 1000.0 / ms),
            Status::Done { result, ms } if *ms > 0.0 => Some(result.explored as f64 * 1000.0 / ms),
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
        self.text = self.catalog.drills[index].design.clone();
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
    pub fn drill_file(&self) -> Option<&DrillEntry> {
        self.drill.as_ref().and_then(|d| self.catalog.drills.get(d.index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::explore::job::Job;

    fn envelope(kind: &str, json: &str, ms: f64) -> String {
        serde_json::json!({ "type": kind, "json": json, "ms": ms }).to_string()
    }

    fn catalog() -> Catalog {
        Catalog::builtin().expect("the built-in designs and drills")
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

    /// A link opens the design it names with its seed, runs by itself,
    /// and hands over the counterexample with the link to show; a hostile
    /// link is a sentence on the screen and nothing runs.
    #[test]
    fn a_link_opens_runs_and_plays() {
        let mut m = Explore::default();
        m.open_link(ExploreLink {
            design: "04-no-fencing".into(),
            seed: Some(5),
            step: Some("end".into()),
        });
        assert!(!m.autorun, "waits for the catalogue");
        m.on_event(WorkerEvent::Catalog(Box::new(catalog())));
        assert!(m.autorun);
        assert_eq!(m.selected, Some(3));
        assert_eq!(m.seed_text, "5");
        m.started();
        assert!(!m.autorun);
        let ran = m.ran.clone().expect("ran");
        assert_eq!((ran.design.as_str(), ran.seed), ("04-no-fencing", Some(5)));
        assert_eq!(
            ran.search(crate::i18n::Lang::Zh),
            "?lang=zh&explore=04-no-fencing&seed=5"
        );
        // The worker's job with the same design and seed box.
        let mut spec = locklab_core::explore::designs::parse(&m.text).expect("spec");
        spec.set_seed(5);
        let mut job = Job::new(&spec).expect("job");
        while !job.step(5000) {}
        let r = serde_json::to_string(&job.result()).expect("r");
        m.on_event(WorkerEvent::parse(&envelope("done", &r, 10.0)));
        let (lesson, l) = m.autoplay_lesson().expect("plays");
        assert_eq!(l.step.as_deref(), Some("end"));
        assert!(lesson.title.en.starts_with("Counterexample"));
        m.played();
        assert!(m.autoplay_lesson().is_none());
        // An edited design travels as its text.
        m.edit(format!("{}\n# mine\n", m.text));
        m.set_seed(String::new());
        let mine = m.link();
        assert!(mine.design.starts_with("1.") && mine.seed.is_none(), "{mine:?}");

        for (bad, want) in [
            ("9.Zm9v", "this link was written in format \"9\""),
            ("1.@@@", "this link's design is damaged"),
            ("no-such-design", "\"no-such-design\", which is not a built-in design"),
        ] {
            let mut m = Explore::default();
            m.on_event(WorkerEvent::Catalog(Box::new(catalog())));
            m.open_link(ExploreLink {
                design: bad.into(),
                ..ExploreLink::default()
            });
            assert!(
                m.link_error.as_deref().is_some_and(|e| e.contains(want)),
                "{bad}: {:?}",
                m.link_error
            );
            assert!(!m.autorun && m.autoplay.is_none(), "{bad}");
        }
        let mut m = Explore::default();
        m.on_event(WorkerEvent::Catalog(Box::new(catalog())));
        m.open_link(ExploreLink {
            design: format!("1.{}", "A".repeat(locklab_core::explore::link::MAX_LINK)),
            ..ExploreLink::default()
        });
        assert!(m
            .link_error
            .as_deref()
            .is_some_and(|e| e.contains("a link holds at most")));
    }

    /// The mode is chosen before a run, and an exhaustive job's result
    /// (its kind, its per-step invariants) crosses from the worker intact.
    #[test]
    fn an_exhaustive_search_as_the_worker_reports_it() {
        let mut m = Explore {
            catalog: Rc::new(catalog()),
            ..Explore::default()
        };
        m.select(0);
        assert_eq!(m.mode, Mode::Sample);
        m.set_mode(Mode::Exhaustive);
        m.started();
        assert!(matches!(&m.status, Status::Running { progress, .. } if progress.mode == Mode::Exhaustive));
        m.set_mode(Mode::Sample);
        assert_eq!(m.mode, Mode::Exhaustive, "not while a search runs");
        let spec = locklab_core::explore::designs::parse(&m.text).expect("spec");
        let mut job = Job::with_mode(&spec, Mode::Exhaustive).expect("job");
        while !job.step(100) {}
        let p = serde_json::to_string(&job.progress()).expect("p");
        m.on_event(WorkerEvent::parse(&envelope("progress", &p, 10.0)));
        let r = serde_json::to_string(&job.result()).expect("r");
        m.on_event(WorkerEvent::parse(&envelope("done", &r, 20.0)));
        let Status::Done { result, .. } = &m.status else {
            panic!("{:?}", m.status)
        };
        assert_eq!(result.search, locklab_core::explore::job::Search::Exhaustive);
        assert_eq!(Some(result.checks.len() as u64), result.broken.map(|b| b.steps));
        assert_eq!(**result, job.result());
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
        m.guess(d.answer);
        let spec: locklab_core::explore::Spec = serde_json::from_str(&m.text).expect("the editor holds the design");
        let file = locklab_core::explore::drill::builtin().expect("drills");
        assert_eq!(
            Some(&spec),
            file.iter().find(|f| f.file == d.file).map(|f| &f.drill.design)
        );
        m.started();
        let mut job = Job::new(&spec).expect("job");
        while !job.step(5000) {}
        let r = serde_json::to_string(&job.result()).expect("r");
        m.on_event(WorkerEvent::parse(&envelope("done", &r, 10.0)));
        assert_eq!(m.drill.as_ref().and_then(|d| d.score).map(|s| s.right), Some(true));
        assert_eq!((m.asked, m.points), (1, 2));
    }
}
