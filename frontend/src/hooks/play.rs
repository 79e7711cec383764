//! Playing a lesson: the play timer and the simulator's module.

use yew::prelude::*;

use crate::query::DriverKind;
use crate::state::{Action, AppContext, Transport, SPEEDS, STEP_MS};

/// Play: one step per [`STEP_MS`] / speed, while playing. Each step is a
/// new revision, which re-arms the timer; pausing drops it.
#[hook]
pub fn use_autoplay(state: &AppContext) {
    let dispatcher = state.dispatcher();
    let delay = (STEP_MS / SPEEDS[state.speed]) as u32;
    use_effect_with((state.playing, state.rev, delay), move |&(playing, _, delay)| {
        let timer = playing.then(|| {
            gloo_timers::callback::Timeout::new(delay, move || dispatcher.dispatch(Action::Transport(Transport::Tick)))
        });
        move || drop(timer)
    });
}

/// The simulator's module, fetched the first time the page plays on the
/// simulator (a page on the real driver never fetches it); asked again for
/// each lesson until it has loaded, so a load that failed is tried again.
/// And a mark of it on `<html>` once the page shows it (`data-engine`:
/// `ready` or `failed`), which the browser tests wait for.
#[hook]
pub fn use_engine(state: &AppContext) {
    let dispatcher = state.dispatcher();
    let loaded = state.engine == Some(true);
    use_effect_with((state.driver, state.lesson_id()), move |(driver, _)| {
        if *driver == DriverKind::Sim && !loaded {
            crate::engine::load(Callback::from(move |r| dispatcher.dispatch(Action::EngineLoaded(r))));
        }
    });
    use_effect_with(state.engine, |engine| {
        let root = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element());
        if let (Some(root), Some(ok)) = (root, engine) {
            let _ = root.set_attribute("data-engine", if *ok { "ready" } else { "failed" });
        }
    });
}
