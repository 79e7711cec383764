//! The page around the app: keyboard shortcuts, the "ready" mark the
//! browser tests read, and the URL, `<html lang>` and title.

use gloo_events::EventListener;
use wasm_bindgen::JsCast;
use web_sys::KeyboardEvent;
use yew::prelude::*;

use crate::i18n::Lang;
use crate::state::{Action, AppContext, Transport};

/// What a key pressed outside the console means.
fn shortcut(e: &KeyboardEvent) -> Option<Action> {
    if e.ctrl_key() || e.meta_key() || e.alt_key() {
        return None;
    }
    let typing = e
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    match e.key().as_str() {
        "Escape" => Some(Action::CloseHelp),
        _ if typing => None,
        // Shift+←/→ pans the timeline (when it has focus), never steps.
        "ArrowLeft" | "ArrowRight" if e.shift_key() => None,
        "?" => Some(Action::ToggleHelp),
        "p" | "P" => Some(Action::TogglePresent),
        "PageDown" => Some(Action::Transport(Transport::Forward)),
        "PageUp" => Some(Action::Transport(Transport::Back)),
        " " => Some(Action::Transport(Transport::TogglePlay)),
        "ArrowLeft" => Some(Action::Transport(Transport::Back)),
        "ArrowRight" => Some(Action::Transport(Transport::Forward)),
        "Home" => Some(Action::Transport(Transport::Home)),
        "End" => Some(Action::Transport(Transport::End)),
        _ => None,
    }
}

/// The keyboard shortcuts (the help overlay lists them), for as long as
/// the app is mounted.
#[hook]
pub fn use_shortcuts(state: &AppContext) {
    let dispatcher = state.dispatcher();
    use_effect_with((), move |_| {
        let document = web_sys::window().and_then(|w| w.document());
        let listener = document.map(|doc| {
            // Not passive: a shortcut's preventDefault must keep Space
            // and PageDown from scrolling the page.
            let options = gloo_events::EventListenerOptions::enable_prevent_default();
            EventListener::new_with_options(&doc, "keydown", options, move |e| {
                if let Some(action) = e.dyn_ref::<KeyboardEvent>().and_then(shortcut) {
                    e.prevent_default();
                    dispatcher.dispatch(action);
                }
            })
        });
        move || drop(listener)
    });
}

/// Once, after the first render: the "ready" mark the browser test reads
/// (milliseconds since navigation start). The app mounts once the lessons
/// are fetched (view::loading), so the mark is the time to an interactive
/// lesson list.
#[hook]
pub fn use_ready_mark() {
    use_effect_with((), move |_| {
        let root = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element());
        let ready = web_sys::window().and_then(|w| w.performance()).map(|p| p.now());
        if let (Some(root), Some(ms)) = (root, ready) {
            let _ = root.set_attribute("data-ready-ms", &format!("{ms:.1}"));
        }
    });
}

/// The URL, `<html lang>` and the title follow the view.
#[hook]
pub fn use_url_sync(state: &AppContext) {
    let search = state.query().to_search();
    let lang = state.lang;
    use_effect_with((search, lang), move |(search, lang)| {
        if let Some(window) = web_sys::window() {
            if let Ok(history) = window.history() {
                let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(search));
            }
            if let Some(doc) = window.document() {
                if let Some(root) = doc.document_element() {
                    let _ = root.set_attribute("lang", if *lang == Lang::Zh { "zh-CN" } else { "en" });
                }
                doc.set_title(&format!("locklab — {}", crate::i18n::Text::Tagline.get(*lang)));
            }
        }
    });
}
