//! The root: owns the reducer, provides it, runs the page's effects (the
//! [`hooks`](crate::hooks): shortcuts, play timer, the simulator's module,
//! the real driver's socket and health poll, the URL) and routes the
//! components' callbacks to actions.

use yew::prelude::*;

use crate::driver::real::{reconnect_delay_ms, SocketState};
use crate::hooks::{
    use_autoplay, use_class, use_engine, use_health_poll, use_ready_mark, use_real_socket, use_shortcuts, use_url_sync,
};
use crate::i18n::{Lang, Text};
use crate::query::Query;
use crate::state::{Action, AppContext, ClassAction, State};
use crate::view::{
    class::{summary_box, DrillBoardView, FollowerBar, JoinClass, PresenterPanel},
    clock::Clock,
    console::Console,
    faults::Faults,
    header::Header,
    help::Help,
    lesson_list::LessonList,
    lesson_panel::LessonPanel,
    presenter::Caption,
    timeline::Timeline,
};

/// The state the page's URL asks for; and the class this tab was in
/// before a reload (the presenter resumes; a follower of the URL's class
/// rejoins as the same member).
fn initial_state() -> State {
    let mut state = url_state();
    let saved = crate::hooks::class::saved_class().and_then(|s| crate::class::Class::restore(&s));
    if let Some(saved) = saved {
        let url_code = state.class.as_ref().map(|c| c.borrow().code().cloned());
        let resume = match &url_code {
            None => saved.is_presenter(),
            Some(code) => !saved.is_presenter() && saved.code() == code.as_ref(),
        };
        if resume {
            state.class = Some(std::rc::Rc::new(std::cell::RefCell::new(saved)));
        }
    }
    state
}

/// The state the page's URL asks for.
fn url_state() -> State {
    let (query, browser_lang) = Query::from_page();
    State::from_query(&query, browser_lang.unwrap_or_default())
}

/// A callback that dispatches the action `action` makes of what it hears.
fn to<T: 'static>(state: &AppContext, action: impl Fn(T) -> Action + 'static) -> Callback<T> {
    let dispatcher = state.dispatcher();
    Callback::from(move |value| dispatcher.dispatch(action(value)))
}

/// The real driver's banner: the backend lost (and when the next try is),
/// or the backend up but its redis-server not.
fn real_banner(state: &State, onreconnect: Callback<MouseEvent>) -> Option<Html> {
    let r = state.real.as_ref()?.borrow();
    let lang = state.lang;
    let problem = r.problem()?;
    Some(match &r.link {
        SocketState::Lost { attempt, .. } => {
            let secs = format!("{:.1}", f64::from(reconnect_delay_ms(*attempt)) / 1000.0);
            html! {
                <div class="banner" role="alert" data-testid="real-banner" data-kind="backend">
                    <strong>{ Text::RealLost.get(lang) }</strong>
                    <span class="why">{ problem }</span>
                    <span class="when">{ Text::RealReconnecting.get(lang).replace("{}", &secs) }</span>
                    <button onclick={ onreconnect } data-testid="reconnect">{ Text::RealReconnectNow.get(lang) }</button>
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
}

#[function_component(App)]
// long: a Yew view: its state, its hooks, a callback per action, then one html! tree
pub fn app() -> Html {
    let state = use_reducer(initial_state);
    use_shortcuts(&state);
    use_ready_mark();
    use_autoplay(&state);
    use_engine(&state);
    use_real_socket(&state);
    use_health_poll(&state);
    use_url_sync(&state);
    use_class(&state);

    let onlang = to(&state, Action::SetLang);
    let onhelp = to(&state, |()| Action::ToggleHelp);
    let onclose = to(&state, |()| Action::CloseHelp);
    let onselect_lesson = to(&state, Action::SelectLesson);
    let onmove = to(&state, Action::Transport);
    let onrun = to(&state, |(tab, line)| Action::Run { tab, line });
    let onselect_client = to(&state, Action::SelectClient);
    let onclose_lesson = to(&state, |()| Action::CloseLesson);
    let onspeed = to(&state, Action::SetSpeed);
    let onquiz = to(&state, |()| Action::ToggleQuiz);
    let oninject = to(&state, Action::Inject);
    let onadvance = to(&state, Action::Advance);
    let onreset = to(&state, |()| Action::ResetLab);
    let ondriver = to(&state, Action::SetDriver);
    let onreal = to(&state, |(fault, node)| Action::RealFault { fault, node });
    let ontopology = to(&state, Action::RealTopology);
    let onfactor = to(&state, Action::RealFactor);
    let ongate = to(&state, Action::QuizGate);
    let onnext = to(&state, |()| Action::NextLesson);
    let ontheme = to(&state, |()| Action::ToggleTheme);
    let onpresent = to(&state, |()| Action::TogglePresent);
    let onexplore_open = to(&state, |_: MouseEvent| Action::Explore(true));
    let onexplore_close = to(&state, |()| Action::Explore(false));
    let onmock_open = to(&state, |_: MouseEvent| Action::Mock(true));
    let onmock_close = to(&state, |()| Action::Mock(false));
    let onexplore_play = to(&state, |(l, link)| Action::PlayLesson(l, link));
    let onclass = to(&state, Action::Class);
    let onopened = to(&state, Action::Opened);
    let onclose_file = to(&state, |()| Action::Opened(None));
    let (presenting_class, following, summary) = match state.class.as_ref().map(|c| c.borrow()) {
        Some(c) => (c.is_presenter(), !c.is_presenter(), c.summary.clone()),
        None => (false, false, None),
    };
    let onpush = presenting_class.then(|| to(&state, |design: String| Action::Class(ClassAction::PushDrill(design))));
    let ondone = following.then(|| {
        to(&state, |(design, found, schedules): (String, bool, u64)| {
            Action::Class(ClassAction::DrillDone {
                design,
                found,
                schedules,
            })
        })
    });
    let banner = real_banner(&state, to(&state, |_: MouseEvent| Action::Reconnect));
    let context: AppContext = state.clone();

    html! {
        <ContextProvider<AppContext> {context}>
            <div class={ classes!("app", state.present.then_some("presenting"), state.dark.then_some("dark"),
                following.then_some("following")) }
                data-testid="app" data-lang={ state.lang.code() } data-present={ state.present.to_string() }>
                <Header {onlang} {onhelp} {ondriver} />
                { banner.unwrap_or_default() }
                <div class="body">
                    <LessonList onselect={ onselect_lesson } onclose={ onclose_lesson } />
                    if state.explore {
                        <main>
                            if following {
                                <FollowerBar onclass={ onclass.clone() } />
                            } else if presenting_class {
                                <DrillBoardView />
                            }
                            <crate::explore::view::ExploreScreen lang={ state.lang } seed={ state.seed } link={ state.explore_link.clone() }
                                onplay={ onexplore_play.clone() } onclose={ onexplore_close } {onpush} {ondone} />
                        </main>
                    } else if state.mock {
                        <main>
                            <crate::view::mock_interview::MockInterview lang={ state.lang } onclose={ onmock_close } />
                        </main>
                    } else {
                    <main>
                        if following {
                            <FollowerBar onclass={ onclass.clone() } />
                        } else {
                        <button class="explore-open" data-testid="explore-open" onclick={ onexplore_open }>
                            { if state.lang == Lang::Zh { "攻破我的锁：探索器" } else { "Break my lock: the explorer" } }
                        </button>
                        <button class="explore-open mock-open" data-testid="mock-open" onclick={ onmock_open }>
                            { crate::i18n::Text::MockOpen.get(state.lang) }
                        </button>
                        }
                        if let (Some(o), None) = (&state.opened, &state.lesson) {
                            <crate::view::open_file::VerdictCard lang={ state.lang } card={ o.card.clone() } onclose={ onclose_file } />
                        }
                        if state.class.is_none() && state.lesson.is_none() {
                            <div class="start-boxes">
                                <JoinClass onclass={ onclass.clone() } />
                                <crate::view::open_file::OpenFile lang={ state.lang } {onopened} />
                            </div>
                        }
                        <LessonPanel onmove={ onmove.clone() } {onspeed} {onquiz} {onfactor} {ongate} onplay={ onexplore_play.clone() } />
                        <div class="stage">
                            <Timeline />
                            if state.present {
                                <Caption onmove={ onmove } {onnext} {ontheme} onexit={ onpresent.clone() } onclass={ onclass.clone() } />
                            }
                            if presenting_class && state.class_panel {
                                <PresenterPanel onclass={ onclass.clone() } />
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
                if let Some(s) = summary {
                    { summary_box(&s, state.lang, &onclass) }
                }
            </div>
        </ContextProvider<AppContext>>
    }
}
