//! The free-play lab as the page holds it: core's [`FreeLab`](locklab_core::lab::FreeLab)
//! (three redis-cli sessions on one simulated node) lives in the engine
//! module, and this is the page's handle on it plus the last [`LabView`]
//! it sent. Lines typed before the engine has loaded wait in a queue and
//! run, in order, once it has ([`EngineHandle::connect`]).

use locklab_core::engine::{LabMove, LabView};
// What the console shows before the engine has answered: the simulated
// node's prompt, as a lesson console shows it.
use locklab_core::lesson::session::PROMPT;
use locklab_core::trace::Trace;

use crate::engine::{EngineHandle, LabLink};

pub use locklab_core::lab::{Client, Exchange};

#[derive(Default)]
pub struct SimLab {
    link: Option<LabLink>,
    queued: Vec<LabMove>,
    view: LabView,
    trace: Trace,
    /// Why the engine could not be reached, if it could not.
    pub error: Option<String>,
}

impl SimLab {
    /// A fresh node and empty consoles; opened at once if the engine is
    /// loaded, else when it is.
    pub fn new() -> SimLab {
        SimLab::default().connected_if_loaded()
    }

    fn take(&mut self, mut view: LabView) {
        std::mem::take(&mut view.trace).apply(&mut self.trace);
        self.view = view;
    }

    fn act(&mut self, m: LabMove) {
        let Some(link) = self.link.as_mut() else {
            self.queued.push(m);
            return;
        };
        match link.act(&m) {
            Ok(view) => self.take(view),
            Err(e) => self.error = Some(e),
        }
    }

    /// Milliseconds since the lab started.
    pub fn now_ms(&self) -> u64 {
        self.view.now_ms
    }

    /// The prompt redis-cli would show this client now (`(TX)` inside MULTI).
    pub fn prompt(&self, client: Client) -> String {
        self.view
            .prompts
            .get(client.index())
            .cloned()
            .unwrap_or_else(|| PROMPT.to_owned())
    }

    pub fn transcript(&self, client: Client) -> &[Exchange] {
        self.view.transcripts.get(client.index()).map_or(&[], Vec::as_slice)
    }

    /// Lines the client typed, oldest first, for ↑/↓.
    pub fn history(&self, client: Client) -> &[String] {
        self.view.history.get(client.index()).map_or(&[], Vec::as_slice)
    }

    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Run a typed line as `client`.
    pub fn run(&mut self, client: Client, line: &str) {
        self.act(LabMove::Line {
            client,
            line: line.to_owned(),
        });
    }

    /// Move the node's clock forward.
    pub fn advance(&mut self, ms: u64) {
        self.act(LabMove::Advance { ms });
    }
}

impl EngineHandle for SimLab {
    /// Open the lab in the (now loaded) engine and run what was typed while
    /// it loaded.
    fn connect(&mut self) {
        if self.link.is_some() {
            return;
        }
        match LabLink::open() {
            Ok((link, view)) => {
                // A load that failed before and worked now: no error left.
                self.error = None;
                self.link = Some(link);
                self.take(view);
                for m in std::mem::take(&mut self.queued) {
                    self.act(m);
                }
            }
            Err(e) => self.error = Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's lab crosses the seam as JSON and shows what core's lab
    /// did (core's own tests check the lab itself).
    #[test]
    fn the_page_lab_shows_what_the_engine_ran() {
        let mut lab = SimLab::new();
        lab.run(Client::A, "SET lock:order:1 token-A-111 NX PX 30000");
        lab.run(Client::B, "MULTI");
        assert_eq!(lab.prompt(Client::B), "127.0.0.1:6379(TX)> ");
        lab.advance(31_000);
        lab.run(Client::C, "GET lock:order:1");
        assert_eq!(lab.transcript(Client::C)[0].output, "(nil)");
        assert_eq!(lab.now_ms(), 31_000);
        assert_eq!(lab.history(Client::A), ["SET lock:order:1 token-A-111 NX PX 30000"]);
        assert!(lab.trace().events.len() >= 3, "{:?}", lab.trace());
        let steps: Vec<u64> = lab.trace().events.iter().map(|e| e.step).collect();
        assert_eq!(steps, (0..steps.len() as u64).collect::<Vec<_>>());
    }

    /// Lines typed before the engine loaded run once it has; a load that
    /// failed and then worked leaves no error behind.
    #[test]
    fn a_lab_that_connects_late_runs_what_was_typed_and_forgets_the_failure() {
        let mut lab = SimLab::default();
        lab.run(Client::A, "SET k v");
        assert!(lab.transcript(Client::A).is_empty(), "not connected yet");
        lab.error = Some("the simulator did not load: network".into());
        lab.connect();
        assert_eq!(lab.error, None);
        assert_eq!(lab.transcript(Client::A)[0].output, "OK");
    }
}
