//! The root: owns the reducer, provides it, routes callbacks to actions,
//! keeps the URL in step, listens for the keyboard shortcuts, and owns the
//! real driver's WebSocket (opened, flushed, reconnected with backoff, and
//! its health polled, all as effects of the state).

use gloo_events::EventListener;
use locklab_core::protocol::{FaultKind, TopologyKind};
use wasm_bindgen::JsCast;
use web_sys::KeyboardEvent;
use yew::prelude::*;

use crate::driver::real::{reconnect_delay_ms, Link};
use crate::i18n::{Lang, Text};
use crate::query::{DriverKind, Query};
use crate::socket::{self, Socket};
use crate::state::{Action, AppContext, RealInput, State, Transport, SPEEDS, STEP_MS};
use crate::view::{
    clock::Clock, console::Console, faults::Faults, header::Header, help::Help, lesson_list::LessonList,
    lesson_panel::LessonPanel, presenter::Caption, timeline::Timeline,
};

/// How often the real driver re-reads `/api/health`.
const HEALTH_POLL_MS: u32 = 5_000;

/// The state the page's URL asks for.
fn initial_state() -> State {
    let window = web_sys::window();
    let search = window
        .as_ref()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let browser_lang = window
        .and_then(|w| w.navigator().language())
        .and_then(|l| Lang::parse(&l));
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

#[function_component(App)]
// long: a Yew view: its hooks and callbacks, then one html! tree
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
                // Not passive: a shortcut's preventDefault must keep Space
                // and PageDown from scrolling the page.
                let options = gloo_events::EventListenerOptions::enable_prevent_default();
                EventListener::new_with_options(doc, "keydown", options, move |e| {
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
                gloo_timers::callback::Timeout::new(delay, move || {
                    dispatcher.dispatch(Action::Transport(Transport::Tick))
                })
            });
            move || drop(timer)
        });
    }

    // The simulator's module, fetched the first time the page plays on the
    // simulator (a page on the real driver never fetches it); asked again
    // for each lesson until it has loaded, so a load that failed is tried
    // again.
    {
        let dispatcher = state.dispatcher();
        let loaded = state.engine == Some(true);
        use_effect_with((state.driver, state.lesson_id()), move |(driver, _)| {
            if *driver == DriverKind::Sim && !loaded {
                crate::engine::load(Callback::from(move |r| dispatcher.dispatch(Action::EngineLoaded(r))));
            }
        });
    }
    // …and a mark of it on <html> once the page shows it (data-engine:
    // ready or failed), which the browser tests wait for.
    use_effect_with(state.engine, |engine| {
        let root = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element());
        if let (Some(root), Some(ok)) = (root, engine) {
            let _ = root.set_attribute("data-engine", if *ok { "ready" } else { "failed" });
        }
    });

    // The real driver's socket: one per (driver, connection number), so a
    // reconnect is a new number and switching back to the simulator drops it.
    let socket = use_mut_ref(|| None::<Socket>);
    {
        let socket = socket.clone();
        let dispatcher = state.dispatcher();
        use_effect_with((state.driver, state.connection), move |&(driver, _)| {
            socket.borrow_mut().take();
            let report = Callback::from(move |input: RealInput| dispatcher.dispatch(Action::Real(input)));
            let mut poll = None;
            if driver == DriverKind::Real {
                match socket::session_url().map(|url| Socket::open(&url, report.clone())) {
                    Some(Ok(s)) => *socket.borrow_mut() = Some(s),
                    Some(Err(e)) => report.emit(RealInput::Closed(e)),
                    None => report.emit(RealInput::Closed(
                        "this page has no address to reach the backend at".into(),
                    )),
                }
                // Redis can go away while the socket stays up (a crashed
                // server behind `--redis`): the health check notices.
                socket::fetch_health(report.clone());
                poll = Some(gloo_timers::callback::Interval::new(HEALTH_POLL_MS, move || {
                    socket::fetch_health(report.clone())
                }));
            }
            move || {
                drop(poll);
                socket.borrow_mut().take();
            }
        });
    }
    // Frames the real driver wants sent, after every change.
    {
        let socket = socket.clone();
        let real = state.real.clone();
        use_effect_with(state.rev, move |_| {
            if let (Some(real), Some(socket)) = (real, socket.borrow().as_ref()) {
                for frame in real.borrow_mut().take_outbox() {
                    socket.send(&frame);
                }
            }
        });
    }
    // A lost link: reconnect after the backoff.
    let lost = state.real.as_ref().and_then(|r| match &r.borrow().link {
        Link::Lost { attempt, .. } => Some(*attempt),
        _ => None,
    });
    {
        let dispatcher = state.dispatcher();
        use_effect_with(lost, move |lost| {
            let timer = lost.map(|attempt| {
                gloo_timers::callback::Timeout::new(reconnect_delay_ms(attempt), move || {
                    dispatcher.dispatch(Action::Reconnect)
                })
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
        Callback::from(move |f: locklab_core::fault::Fault| s.dispatch(Action::Inject(f)))
    };
    let onadvance = {
        let s = state.clone();
        Callback::from(move |ms: u64| s.dispatch(Action::Advance(ms)))
    };
    let onreset = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::ResetLab))
    };
    let ondriver = {
        let s = state.clone();
        Callback::from(move |d: DriverKind| s.dispatch(Action::SetDriver(d)))
    };
    let onreal = {
        let s = state.clone();
        Callback::from(move |(fault, node): (FaultKind, u32)| s.dispatch(Action::RealFault { fault, node }))
    };
    let ontopology = {
        let s = state.clone();
        Callback::from(move |kind: TopologyKind| s.dispatch(Action::RealTopology(kind)))
    };
    let onfactor = {
        let s = state.clone();
        Callback::from(move |f: u64| s.dispatch(Action::RealFactor(f)))
    };
    let ongate = {
        let s = state.clone();
        Callback::from(move |g: Option<usize>| s.dispatch(Action::QuizGate(g)))
    };
    let onnext = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::NextLesson))
    };
    let ontheme = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::ToggleTheme))
    };
    let onpresent = {
        let s = state.clone();
        Callback::from(move |()| s.dispatch(Action::TogglePresent))
    };
    let onreconnect = {
        let s = state.clone();
        Callback::from(move |_: MouseEvent| s.dispatch(Action::Reconnect))
    };
    let banner = state.real.as_ref().and_then(|r| {
        let r = r.borrow();
        let lang = state.lang;
        let problem = r.problem()?;
        Some(match &r.link {
            Link::Lost { attempt, .. } => {
                let secs = format!("{:.1}", f64::from(reconnect_delay_ms(*attempt)) / 1000.0);
                html! {
                    <div class="banner" role="alert" data-testid="real-banner" data-kind="backend">
                        <strong>{ Text::RealLost.get(lang) }</strong>
                        <span class="why">{ problem }</span>
                        <span class="when">{ Text::RealReconnecting.get(lang).replace("{}", &secs) }</span>
                        <button onclick={ onreconnect.clone() } data-testid="reconnect">{ Text::RealReconnectNow.get(lang) }</button>
                    </div>
                }
            }
            _ => html! {
                <div class="banner" role="alert" data-testid="real-banner" data-kind="redis">
                    <strong>{ Text::RealRedisDown.get(lang) }</strong>
                    <span class="why">{ problem }</span>
                </div>
            },
        })
    });
    let onexplore_open = {
        let d = state.dispatcher();
        Callback::from(move |_: MouseEvent| d.dispatch(Action::Explore(true)))
    };
    let onexplore_close = {
        let d = state.dispatcher();
        Callback::from(move |_: ()| d.dispatch(Action::Explore(false)))
    };
    let onexplore_play = {
        let d = state.dispatcher();
        Callback::from(move |(l, link)| d.dispatch(Action::PlayLesson(l, link)))
    };
    let context: AppContext = state.clone();

    html! {
        <ContextProvider<AppContext> {context}>
            <div class={ classes!("app", state.present.then_some("presenting"), state.dark.then_some("dark")) }
                data-testid="app" data-lang={ state.lang.code() } data-present={ state.present.to_string() }>
                <Header {onlang} {onhelp} {ondriver} />
                { banner.unwrap_or_default() }
                <div class="body">
                    <LessonList onselect={ onselect_lesson } onclose={ onclose_lesson } />
                    if state.explore {
                        <main>
                            <crate::explore::view::ExploreScreen lang={ state.lang } seed={ state.seed } link={ state.explore_link.clone() }
                                onplay={ onexplore_play } onclose={ onexplore_close } />
                        </main>
                    } else {
                    <main>
                        <button class="explore-open" data-testid="explore-open" onclick={ onexplore_open }>
                            { if state.lang == Lang::Zh { "攻破我的锁：探索器" } else { "Break my lock: the explorer" } }
                        </button>
                        <LessonPanel onmove={ onmove.clone() } {onspeed} {onquiz} {onfactor} {ongate} />
                        <div class="stage">
                            <Timeline />
                            if state.present {
                                <Caption onmove={ onmove } {onnext} {ontheme} onexit={ onpresent.clone() } />
                            }
                        </div>
                        <Faults {oninject} {onreal} {ontopology} />
                        <div class="bench">
                            <Console {onrun} onselect={ onselect_client } />
                            <Clock {onadvance} {onreset} />
                        </div>
                    </main>
                    }
                </div>
                if state.help_open {
                    <Help {onclose} />
                }
            </div>
        </ContextProvider<AppContext>>
    }
}
