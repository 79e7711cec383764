//! The root: owns the reducer, provides it, routes callbacks to actions,
//! keeps the URL in step, and listens for the keyboard shortcuts.

use gloo_events::EventListener;
use wasm_bindgen::JsCast;
use web_sys::KeyboardEvent;
use yew::prelude::*;

use crate::i18n::Lang;
use crate::query::Query;
use crate::state::{Action, AppContext, State, Transport, SPEEDS, STEP_MS};
use crate::view::{
    clock::Clock, console::Console, faults::Faults, header::Header, help::Help, lesson_list::LessonList,
    lesson_panel::LessonPanel, timeline::Timeline,
};

/// The state the page's URL asks for.
fn initial_state() -> State {
    let window = web_sys::window();
    let search = window.as_ref().and_then(|w| w.location().search().ok()).unwrap_or_default();
    let browser_lang = window.and_then(|w| w.navigator().language()).and_then(|l| Lang::parse(&l));
    State::from_query(&Query::parse(&search), browser_lang.unwrap_or_default())
}

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
        "?" => Some(Action::ToggleHelp),
        " " => Some(Action::Transport(Transport::TogglePlay)),
        "ArrowLeft" => Some(Action::Transport(Transport::Back)),
        "ArrowRight" => Some(Action::Transport(Transport::Forward)),
        "Home" => Some(Action::Transport(Transport::Home)),
        "End" => Some(Action::Transport(Transport::End)),
        _ => None,
    }
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(initial_state);

    // Once, after the first render: shortcuts, and the "ready" mark the
    // browser test reads (milliseconds since navigation start). The lab
    // mounts once the lessons are fetched (view::loading), so the mark is
    // the time to an interactive lesson list.
    {
        let dispatcher = state.dispatcher();
        use_effect_with((), move |_| {
            let document = web_sys::window().and_then(|w| w.document());
            let listener = document.as_ref().map(|doc| {
                EventListener::new(doc, "keydown", move |e| {
                    if let Some(action) = e.dyn_ref::<KeyboardEvent>().and_then(shortcut) {
                        e.prevent_default();
                        dispatcher.dispatch(action);
                    }
                })
            });
            let ready = web_sys::window().and_then(|w| w.performance()).map(|p| p.now());
            if let (Some(root), Some(ms)) = (document.and_then(|d| d.document_element()), ready) {
                let _ = root.set_attribute("data-ready-ms", &format!("{ms:.1}"));
            }
            move || drop(listener)
        });
    }

    // Play: one step per STEP_MS / speed, while playing. Each step is a new
    // revision, which re-arms the timer; pausing drops it.
    {
        let dispatcher = state.dispatcher();
        let delay = (STEP_MS / SPEEDS[state.speed]) as u32;
        use_effect_with((state.playing, state.rev, delay), move |&(playing, _, delay)| {
            let timer = playing.then(|| {
                gloo_timers::callback::Timeout::new(delay, move || dispatcher.dispatch(Action::Transport(Transport::Tick)))
            });
            move || drop(timer)
        });
    }

    // The URL, <html lang> and the title follow the view.
    {
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

    let onlang = {
        let s = state.clone();
        Callback::from(move |lang: Lang| s.dispatch(Action::SetLang(lang)))
    };
    let onhelp = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::ToggleHelp))
    };
    let onclose = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::CloseHelp))
    };
    let onselect_lesson = {
        let s = state.clone();
        Callback::from(move |id: String| s.dispatch(Action::SelectLesson(id)))
    };
    let onmove = {
        let s = state.clone();
        Callback::from(move |t: Transport| s.dispatch(Action::Transport(t)))
    };
    let onrun = {
        let s = state.clone();
        Callback::from(move |(tab, line): (usize, String)| s.dispatch(Action::Run { tab, line }))
    };
    let onselect_client = {
        let s = state.clone();
        Callback::from(move |c: usize| s.dispatch(Action::SelectClient(c)))
    };
    let onclose_lesson = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::CloseLesson))
    };
    let onspeed = {
        let s = state.clone();
        Callback::from(move |i: usize| s.dispatch(Action::SetSpeed(i)))
    };
    let onquiz = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::ToggleQuiz))
    };
    let oninject = {
        let s = state.clone();
        Callback::from(move |f: locklab_core::world::Fault| s.dispatch(Action::Inject(f)))
    };
    let onadvance = {
        let s = state.clone();
        Callback::from(move |ms: u64| s.dispatch(Action::Advance(ms)))
    };
    let onreset = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::ResetLab))
    };
    let context: AppContext = state.clone();

    html! {
        <ContextProvider<AppContext> {context}>
            <div class="app" data-testid="app" data-lang={ state.lang.code() }>
                <Header {onlang} {onhelp} />
                <div class="body">
                    <LessonList onselect={ onselect_lesson } onclose={ onclose_lesson } />
                    <main>
                        <LessonPanel {onmove} {onspeed} {onquiz} />
                        <div class="stage">
                            <Timeline />
                            <Faults {oninject} />
                        </div>
                        <div class="bench">
                            <Console {onrun} onselect={ onselect_client } />
                            <Clock {onadvance} {onreset} />
                        </div>
                    </main>
                </div>
                if state.help_open {
                    <Help {onclose} />
                }
            </div>
        </ContextProvider<AppContext>>
    }
}
