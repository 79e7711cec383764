//! Interview scores in `localStorage`: a hook that records the verdicts of
//! a lesson's predictions, and one that re-renders a component when a
//! score changes.
//!
//! The lesson panel records verdicts and the lesson list shows every
//! lesson's score; they share no state but the storage. A save announces
//! itself with a [`CHANGED`] event on `window`, and [`use_score_changes`]
//! listens for it (and for the browser's own `storage` event, which another
//! tab's save fires), so the list is never a prediction behind. Storage
//! can be missing or refuse writes (private windows, quota): then the score
//! lives as long as the page, and nothing breaks.

use std::collections::BTreeMap;

use gloo_events::EventListener;
use yew::prelude::*;

use crate::score::{self, LessonScore};
use crate::state::AppContext;
use locklab_core::lesson::judge::prediction_right;

/// The event a save fires on `window`.
pub const CHANGED: &str = "locklab-score";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// A lesson's score as stored (empty if none).
pub fn load(lesson: &str) -> LessonScore {
    storage()
        .and_then(|s| s.get_item(&score::key(lesson)).ok().flatten())
        .map_or_else(LessonScore::default, |v| LessonScore::parse(&v))
}

/// Store a lesson's score and tell the page.
pub fn save(lesson: &str, score: &LessonScore) {
    if let Some(s) = storage() {
        let _ = s.set_item(&score::key(lesson), &score.encode());
    }
    announce();
}

/// The `localStorage` key of the mock interview's record.
pub const MOCK_KEY: &str = "locklab.mock";

/// The mock interview's record as stored (empty if none or damaged).
pub fn load_mock() -> locklab_core::lesson::mock::Record {
    let stored = storage().and_then(|s| s.get_item(MOCK_KEY).ok().flatten());
    stored.map_or_else(Default::default, |v| locklab_core::lesson::mock::Record::parse(&v))
}

/// Store the mock interview's record.
pub fn save_mock(record: &locklab_core::lesson::mock::Record) {
    if let Some(s) = storage() {
        let _ = s.set_item(MOCK_KEY, &record.encode());
    }
}

/// Forget a lesson's score.
pub fn reset(lesson: &str) {
    if let Some(s) = storage() {
        let _ = s.remove_item(&score::key(lesson));
    }
    announce();
}

fn announce() {
    if let (Some(w), Ok(e)) = (web_sys::window(), web_sys::Event::new(CHANGED)) {
        let _ = w.dispatch_event(&e);
    }
}

/// A number that changes whenever a score is saved or reset, here or in
/// another tab: read it (or just call this) to re-render then.
#[hook]
pub fn use_score_changes() -> u32 {
    let changes = use_state(|| 0u32);
    {
        let changes = changes.clone();
        use_effect_with((), move |_| {
            let listeners = web_sys::window().map(|w| {
                let bump =
                    |changes: UseStateHandle<u32>| move |_: &web_sys::Event| changes.set(changes.wrapping_add(1));
                [
                    EventListener::new(&w, CHANGED, bump(changes.clone())),
                    EventListener::new(&w, "storage", bump(changes)),
                ]
            });
            move || drop(listeners)
        });
    }
    *changes
}

/// Counts each judged step's first verdict in the stored score.
#[hook]
pub fn use_record_verdicts(state: AppContext, lesson_id: Option<String>, judged: BTreeMap<usize, String>) {
    use_effect_with((lesson_id, judged), move |(id, judged)| {
        let (Some(id), Some(session)) = (id, &state.lesson) else {
            return;
        };
        let s = session.borrow();
        let mut score = load(id);
        let mut changed = false;
        for (i, g) in judged {
            let reply = s.results().get(*i).and_then(|r| r.reply.as_deref()).unwrap_or_default();
            changed |= score.record(*i, prediction_right(&s.lesson().steps[*i], g, reply));
        }
        if changed {
            save(id, &score);
        }
    });
}
