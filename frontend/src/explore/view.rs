//! The explore screen: pick or write a design, "break it", watch the
//! search, play the counterexample on the timeline; or take the drill.

use std::rc::Rc;

use locklab_core::explore::checks::StepCheck;
use locklab_core::explore::drill::CHOICES;
use locklab_core::explore::job::{Broken, JobResult, Mode, Progress, Search};
use locklab_core::invariants::Invariant;
use locklab_core::lesson::worded::PageLesson;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::worker::ExploreWorker;
use super::{Explore, ExploreLink, Status, WorkerEvent};
use crate::i18n::{Lang, Text};

/// What the screen's reducer does.
pub enum Msg {
    Worker(WorkerEvent),
    Select(usize),
    Edit(String),
    Started,
    Drill(u64),
    Guess(Invariant),
    Seed(String),
    OpenLink(ExploreLink),
    Played,
    Mode(Mode),
}

impl Reducible for Explore {
    type Action = Msg;

    fn reduce(self: Rc<Self>, action: Msg) -> Rc<Self> {
        let mut next = (*self).clone();
        match action {
            Msg::Worker(e) => next.on_event(e),
            Msg::Select(i) => next.select(i),
            Msg::Edit(t) => next.edit(t),
            Msg::Started => next.started(),
            Msg::Drill(seed) => next.next_drill(seed),
            Msg::Guess(i) => next.guess(i),
            Msg::Seed(t) => next.set_seed(t),
            Msg::OpenLink(l) => next.open_link(l),
            Msg::Played => next.played(),
            Msg::Mode(m) => next.set_mode(m),
        }
        Rc::new(next)
    }
}

/// The Chinese text when the page is in 中文 and the worker sent one (an
/// older result has none), the English otherwise.
fn zh_or(lang: Lang, en: &str, zh: &str) -> String {
    if lang == Lang::Zh && !zh.is_empty() { zh } else { en }.to_owned()
}

/// A design's name in the list: its `name_zh` in 中文, its name, or its file.
fn design_name(lang: Lang, d: &locklab_core::explore::catalog::DesignEntry) -> String {
    let zh = if lang == Lang::Zh { d.name_zh.clone() } else { None };
    zh.or_else(|| d.name.clone()).unwrap_or_else(|| d.file.clone())
}

fn t(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

#[derive(Properties, PartialEq)]
pub struct ExploreProps {
    pub lang: Lang,
    pub seed: u64,
    /// The page was opened with this link: search it, then play it.
    #[prop_or_default]
    pub link: Option<ExploreLink>,
    /// Play this counterexample on the timeline (the link to show while
    /// it plays).
    pub onplay: Callback<(Rc<PageLesson>, ExploreLink)>,
    pub onclose: Callback<()>,
    /// Class mode's presenter: push the design in the editor to the room
    /// as a drill (as `?explore=` names it).
    #[prop_or_default]
    pub onpush: Option<Callback<String>>,
    /// A search finished: its design (as `?explore=` names it), whether it
    /// found a counterexample, and the schedules searched (a class
    /// follower reports a drill's result with it).
    #[prop_or_default]
    pub ondone: Option<Callback<(String, bool, u64)>>,
}

#[function_component(ExploreScreen)]
// long: a Yew view: its hooks and callbacks, then one html! tree
pub fn explore_screen(props: &ExploreProps) -> Html {
    let lang = props.lang;
    let model = use_reducer(Explore::default);
    let worker = use_mut_ref(|| None::<ExploreWorker>);
    {
        let worker = worker.clone();
        let dispatcher = model.dispatcher();
        use_effect_with((), move |_| {
            let on = Callback::from(move |e| dispatcher.dispatch(Msg::Worker(e)));
            match ExploreWorker::spawn(on.clone()) {
                Ok(w) => *worker.borrow_mut() = Some(w),
                Err(e) => on.emit(WorkerEvent::Error(e)),
            }
            move || drop(worker.borrow_mut().take())
        });
    }
    {
        let dispatcher = model.dispatcher();
        use_effect_with(props.link.clone(), move |l| {
            if let Some(l) = l {
                dispatcher.dispatch(Msg::OpenLink(l.clone()));
            }
        });
    }
    // A link's search starts by itself once its design is in the editor.
    {
        let worker = worker.clone();
        let model = model.clone();
        use_effect_with(model.autorun, move |go| {
            if *go {
                if let Some(w) = worker.borrow().as_ref() {
                    model.dispatch(Msg::Started);
                    w.start(&model.text, &model.seed_text, model.mode);
                }
            }
        });
    }
    // …and its counterexample plays as soon as it is found.
    {
        let next = model.autoplay_lesson();
        let onplay = props.onplay.clone();
        let dispatcher = model.dispatcher();
        use_effect_with(next, move |next| {
            if let Some((lesson, l)) = next {
                dispatcher.dispatch(Msg::Played);
                onplay.emit((Rc::new(lesson.clone()), l.clone()));
            }
        });
    }
    // A finished search, said once per result.
    {
        let done = match &model.status {
            Status::Done { result, .. } => model
                .ran
                .as_ref()
                .map(|l| (l.design.clone(), result.broken.is_some(), result.explored)),
            _ => None,
        };
        let ondone = props.ondone.clone();
        use_effect_with(done, move |done| {
            if let (Some(done), Some(on)) = (done, ondone) {
                on.emit(done.clone());
            }
        });
    }
    let running = model.is_running();
    let loading = model.status == Status::Loading;
    let onrun = {
        let worker = worker.clone();
        let model = model.clone();
        Callback::from(move |_| {
            if let Some(w) = worker.borrow().as_ref() {
                model.dispatch(Msg::Started);
                w.start(&model.text, &model.seed_text, model.mode);
            }
        })
    };
    let onseed = {
        let model = model.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(t) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) {
                model.dispatch(Msg::Seed(t.value()));
            }
        })
    };
    let oncancel = {
        let worker = worker.clone();
        Callback::from(move |_| {
            if let Some(w) = worker.borrow().as_ref() {
                w.cancel();
            }
        })
    };
    let onstop = {
        let worker = worker.clone();
        Callback::from(move |_| {
            if let Some(w) = worker.borrow().as_ref() {
                w.stop();
            }
        })
    };
    let mode_choice = |mode: Mode, label: Text, testid: &'static str| {
        let model = model.clone();
        html! {
            <label class="explore-mode-choice">
                <input type="radio" name="explore-mode" data-testid={ testid } checked={ model.mode == mode } disabled={ running }
                    onchange={ Callback::from(move |_| model.dispatch(Msg::Mode(mode))) } />
                { label.get(lang) }
            </label>
        }
    };
    let mode_view = html! {
        <fieldset class="explore-mode" data-testid="explore-mode" data-mode={ mode_name(model.mode) }>
            <legend>{ Text::ExploreMode.get(lang) }</legend>
            { mode_choice(Mode::Sample, Text::ExploreModeSample, "explore-mode-sample") }
            { mode_choice(Mode::Exhaustive, Text::ExploreModeExhaustive, "explore-mode-exhaustive") }
        </fieldset>
    };
    let onselect = {
        let model = model.clone();
        Callback::from(move |e: Event| {
            let v = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok())
                .map(|s| s.value())
                .unwrap_or_default();
            if let Ok(i) = v.parse::<usize>() {
                model.dispatch(Msg::Select(i));
            }
        })
    };
    let onedit = {
        let model = model.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(t) = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
            {
                model.dispatch(Msg::Edit(t.value()));
            }
        })
    };
    let ondrill = {
        let model = model.clone();
        let seed = props.seed;
        Callback::from(move |_| model.dispatch(Msg::Drill(seed)))
    };

    let progress = match &model.status {
        Status::Running { progress, .. } => Some(progress.clone()),
        Status::Cancelled { progress } => progress.clone(),
        _ => None,
    };
    let rate = model.rate().map(|r| format!("{r:.0}")).unwrap_or_else(|| "–".into());
    let progress_view = progress.map(|p| match p.mode {
        Mode::Exhaustive => bfs_progress(lang, &p, &rate),
        Mode::Sample => sample_progress(lang, &p, &rate),
    });

    let result_view = match &model.status {
        Status::Done { result, ms } => {
            let (kind, inv, headline) = headline(lang, result);
            // A breadth-first verdict states its bounds under the headline.
            let bounds = (result.search == Search::Exhaustive && result.broken.is_some()).then(|| html! {
                <p class="explore-bounds" data-testid="explore-bounds">{ zh_or(lang, &result.bound, &result.bound_zh) }</p>
            });
            let ran = model.ran.clone().unwrap_or_default();
            let play = result.lesson.clone().map(|l| {
                let l = Rc::new(l);
                let onplay = props.onplay.clone();
                let ran = ran.clone();
                html! {
                    <button class="explore-play" data-testid="explore-play" onclick={ Callback::from(move |_| onplay.emit((l.clone(), ran.clone()))) }>
                        { t(lang, "▶ Play it on the timeline", "▶ 在时间线上回放") }
                    </button>
                }
            });
            let share = share_url(&ran.search(lang));
            let oncopy = {
                let share = share.clone();
                Callback::from(move |_| copy(&share))
            };
            let too_long = ran.design.len() > locklab_core::explore::link::MAX_LINK;
            let share_view = if too_long {
                html! {
                    <p class="explore-note" data-testid="explore-link-too-long">
                        { format!("{} ({} > {})", t(lang, "This design is too long to share by link; share its text as a file", "此设计太长，无法用链接分享；请以文件分享其文本"),
                            ran.design.len(), locklab_core::explore::link::MAX_LINK) }
                    </p>
                }
            } else {
                html! {
                <div class="explore-share">
                    <button data-testid="explore-copy" onclick={ oncopy }>{ t(lang, "Copy link", "复制链接") }</button>
                    <input class="explore-link" data-testid="explore-link" readonly=true value={ share }
                        aria-label={ t(lang, "link to this search", "本次搜索的链接") }
                        onfocus={ Callback::from(|e: FocusEvent| {
                            if let Some(i) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) {
                                i.select();
                            }
                        }) } />
                </div>
                }
            };
            html! {
                <div class="explore-result" data-testid="explore-result" data-result={ kind } data-invariant={ inv }
                    data-explored={ result.explored.to_string() } data-search={ search_name(result.search) }
                    data-ms={ format!("{ms:.0}") }>
                    <p class="explore-verdict" data-testid="explore-verdict">{ headline }</p>
                    { bounds.unwrap_or_default() }
                    <p class="explore-resultline" data-testid="explore-resultline">{ zh_or(lang, &result.result_line, &result.result_line_zh) }</p>
                    { play.unwrap_or_default() }
                    { share_view }
                    if let Some(e) = &result.lesson_error { <p class="explore-note">{ e.clone() }</p> }
                    { step_checks(lang, &result.checks) }
                    if let Some(ex) = &result.exports { { super::exports::exports_view(lang, ex) } }
                    <pre class="explore-transcript" data-testid="explore-transcript">{ zh_or(lang, &result.transcript, &result.transcript_zh) }</pre>
                </div>
            }
        }
        Status::Error(m) => {
            html! { <p class="explore-error" role="alert" data-testid="explore-error">{ m.clone() }</p> }
        }
        Status::Cancelled { .. } => html! {
            <p class="explore-note" data-testid="explore-cancelled">{ t(lang, "Cancelled.", "已取消。") }</p>
        },
        Status::Loading => {
            html! { <p class="explore-note">{ t(lang, "Loading the explorer…", "正在加载探索器…") }</p> }
        }
        _ => Html::default(),
    };

    let drill_view = model.drill.as_ref().map(|d| {
        let file = model.drill_file().cloned();
        let choices = CHOICES.iter().map(|c| {
            let c = *c;
            let chosen = d.guess == Some(c);
            let model = model.clone();
            html! {
                <button class={ classes!("explore-choice", chosen.then_some("chosen")) } data-testid={ format!("drill-{}", c.name()) }
                    disabled={ d.score.is_some() || running } onclick={ Callback::from(move |_| model.dispatch(Msg::Guess(c))) }>
                    { if lang == Lang::Zh { c.title_zh() } else { c.name() } }
                </button>
            }
        });
        let verdict = d.score.zip(file.as_ref()).map(|(s, f)| html! {
            <div class="explore-score" data-testid="drill-score" data-right={ s.right.to_string() }>
                <strong>{ if s.right { t(lang, "Right!", "答对了！") } else { t(lang, "Not this time.", "这次没答对。") } }</strong>
                { format!(" {} {} · {} {} · {} {}/{}", t(lang, "answer:", "答案："), inv_label(lang, f.answer),
                    t(lang, "lesson", "课程"), f.lesson, t(lang, "score", "得分"), model.points, model.asked * 2) }
                <p>{ f.pitfall.get(lang).to_owned() }</p>
            </div>
        });
        html! {
            <div class="explore-drill" data-testid="drill">
                <p>{ t(lang, "Interview drill: which failure will the explorer find in this design? Name it, then break it.",
                           "面试练习：探索器会在这个设计里找到哪种失败？先说出来，再运行。") }</p>
                <div class="explore-choices">{ for choices }</div>
                { verdict.unwrap_or_default() }
            </div>
        }
    });
    let needs_guess = model.drill.as_ref().is_some_and(|d| d.guess.is_none());

    html! {
        <section class="explore" data-testid="explore" data-status={ status_name(&model.status) }>
            <div class="explore-head">
                <h2>{ t(lang, "Break my lock", "攻破我的锁") }</h2>
                <button class="explore-close" data-testid="explore-close" onclick={ props.onclose.reform(|_| ()) }>{ t(lang, "Back to the lessons", "返回课程") }</button>
            </div>
            if let Some(e) = &model.link_error {
                <p class="explore-error" role="alert" data-testid="explore-link-error">
                    { format!("{} {e}", t(lang, "This link cannot be opened:", "无法打开此链接：")) }
                </p>
            }
            <div class="explore-grid">
                <div class="explore-design">
                    <label class="explore-label">{ t(lang, "Design", "设计") }
                        <select data-testid="explore-design" onchange={ onselect } disabled={ running }>
                            <option value="" selected={ model.selected.is_none() }>{ t(lang, "(your own)", "（自己写的）") }</option>
                            { for model.catalog.designs.iter().enumerate().map(|(i, d)| html! {
                                <option value={ i.to_string() } selected={ model.selected == Some(i) }>
                                    { design_name(lang, d) }
                                </option>
                            }) }
                        </select>
                    </label>
                    <label class="explore-label explore-seed">{ t(lang, "Seed", "种子") }
                        <input data-testid="explore-seed" inputmode="numeric" value={ model.seed_text.clone() }
                            placeholder={ t(lang, "the design's own", "设计自带的") } oninput={ onseed } disabled={ running } />
                    </label>
                    { mode_view }
                    <textarea class="explore-editor" data-testid="explore-editor" spellcheck="false" value={ model.text.clone() }
                        oninput={ onedit } disabled={ running } aria-label="design" />
                    <div class="explore-actions">
                        <button class="explore-run" data-testid="explore-run" onclick={ onrun } disabled={ running || loading || needs_guess }>
                            { t(lang, "Break it", "攻破它") }
                        </button>
                        <button class="explore-stop" data-testid="explore-stop" onclick={ onstop } disabled={ !running }>{ Text::ExploreStop.get(lang) }</button>
                        <button data-testid="explore-cancel" onclick={ oncancel } disabled={ !running }>{ t(lang, "Cancel", "取消") }</button>
                        <button data-testid="explore-drill-next" onclick={ ondrill } disabled={ running || loading }>{ t(lang, "Interview drill", "面试练习") }</button>
                        if let Some(onpush) = props.onpush.clone() {
                            <button class="explore-push" data-testid="explore-push" disabled={ loading || model.text.is_empty() }
                                onclick={ let model = model.clone(); Callback::from(move |_| onpush.emit(model.link().design)) }>
                                { t(lang, "Push to the class", "推送给全班") }
                            </button>
                        }
                    </div>
                    { drill_view.unwrap_or_default() }
                </div>
                <div class="explore-out">
                    { progress_view.unwrap_or_default() }
                    { result_view }
                </div>
            </div>
        </section>
    }
}

/// An invariant as the screen names it: the CLI's name in English; in
/// Chinese the timeline's words with the CLI's name after them (the name is
/// what the transcript and `locklab explore` print).
fn inv_label(lang: Lang, i: Invariant) -> String {
    match lang {
        Lang::En => i.name().to_owned(),
        Lang::Zh => format!("{}（{}）", i.title_zh(), i.name()),
    }
}

/// This page's address with `search` as its query.
fn share_url(search: &str) -> String {
    let loc = web_sys::window().map(|w| w.location());
    let origin = loc.as_ref().and_then(|l| l.origin().ok()).unwrap_or_default();
    let path = loc
        .as_ref()
        .and_then(|l| l.pathname().ok())
        .unwrap_or_else(|| "/".into());
    format!("{origin}{path}{search}")
}

/// Put `text` on the clipboard where the page may (a secure context, which
/// 127.0.0.1 is); elsewhere the link box beside the button is selectable.
fn copy(text: &str) {
    use web_sys::js_sys::Reflect;
    let Some(nav) = web_sys::window().map(|w| w.navigator()) else {
        return;
    };
    let has = Reflect::get(&nav, &"clipboard".into()).is_ok_and(|c| !c.is_undefined() && !c.is_null());
    if has {
        let _ = nav.clipboard().write_text(text);
    }
}

fn status_name(s: &Status) -> &'static str {
    match s {
        Status::Loading => "loading",
        Status::Idle => "idle",
        Status::Running { .. } => "running",
        Status::Done { .. } => "done",
        Status::Cancelled { .. } => "cancelled",
        Status::Error(_) => "error",
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Sample => "sample",
        Mode::Exhaustive => "exhaustive",
    }
}

fn search_name(s: Search) -> &'static str {
    match s {
        Search::Sampled => "sampled",
        Search::Exhaustive => "exhaustive",
        Search::NotExhausted => "not-exhausted",
    }
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    locklab_core::explore::job::thousands(n, ',')
}

/// The result's headline: (data-result, data-invariant, the words). Only
/// a breadth-first counterexample is called shortest (最短反例); a search
/// that hit its limit says "not exhausted" with its figures, never "held".
fn headline(lang: Lang, result: &JobResult) -> (&'static str, &'static str, String) {
    match (&result.broken, result.search) {
        (Some(Broken { invariant, steps, .. }), search) => {
            let lead = if search == Search::Exhaustive {
                Text::ExploreShortest.get(lang)
            } else {
                t(lang, "Broken:", "被攻破：")
            };
            let words = format!(
                "{lead} {} — {steps} {}",
                inv_label(lang, *invariant),
                t(lang, "steps", "步")
            );
            ("violated", invariant.name(), words)
        }
        (None, Search::NotExhausted) => ("not-exhausted", "none", zh_or(lang, &result.bound, &result.bound_zh)),
        (None, _) => ("held", "none", zh_or(lang, &result.bound, &result.bound_zh)),
    }
}

/// The sampling search's bar: schedules tried of the total, the best so far.
fn sample_progress(lang: Lang, p: &Progress, rate: &str) -> Html {
    let best = match p.best {
        Some((steps, inv)) => format!(
            "{} {steps} {} ({})",
            t(lang, "fewest steps found so far:", "目前找到的最少步数："),
            t(lang, "steps", "步"),
            inv_label(lang, inv)
        ),
        None => t(lang, "no violation yet", "尚未发现违反").to_owned(),
    };
    html! {
        <div class="explore-progress" data-testid="explore-progress" data-explored={ p.explored.to_string() } data-mode="sample">
            <progress max={ p.total.max(1).to_string() } value={ p.explored.to_string() } />
            <span>{ format!("{} / {} {} · {rate}/s · {best}", p.explored, p.total, t(lang, "schedules", "个调度")) }</span>
        </div>
    }
}

/// The breadth-first search's bar: distinct states against the state
/// limit, states/s, the frontier against its limit, the depth.
fn bfs_progress(lang: Lang, p: &Progress, rate: &str) -> Html {
    let tx = |x: Text| x.get(lang);
    html! {
        <div class="explore-progress" data-testid="explore-progress" data-explored={ p.explored.to_string() } data-mode="exhaustive"
            data-frontier={ p.frontier.to_string() } data-limit={ p.total.to_string() }>
            <progress max={ p.total.max(1).to_string() } value={ p.explored.to_string() } />
            <span class="explore-figures">
                <span data-testid="explore-states">{ format!("{} {}", thousands(p.explored), tx(Text::ExploreStates)) }</span>
                <span>{ format!("{rate} {}", tx(Text::ExploreStatesPerSecond)) }</span>
                <span data-testid="explore-frontier">{ format!("{} {} / {}", tx(Text::ExploreFrontier), thousands(p.frontier), thousands(p.max_frontier)) }</span>
                <span>{ format!("{} {}", tx(Text::ExploreDepth), p.depth) }</span>
                <span>{ format!("{} {}", tx(Text::ExploreStateLimit), thousands(p.total)) }</span>
            </span>
        </div>
    }
}

/// A short column head for an invariant (its full title on hover).
pub(crate) fn inv_short(lang: Lang, i: Invariant) -> &'static str {
    match (lang, i) {
        (Lang::En, _) => i.name(),
        (Lang::Zh, Invariant::StaleWrite) => "过期写入",
        (Lang::Zh, Invariant::WrongRelease) => "误删锁",
        (Lang::Zh, Invariant::Deadlock) => "永不过期",
        (Lang::Zh, Invariant::ForeignExtend) => "误续期",
        (Lang::Zh, Invariant::Overlap) => "两个持有者",
    }
}

/// The counterexample step by step, a ✓/✗ per invariant after each step
/// (core's `explore::checks`: the monitor's verdict as the world recorded it).
fn step_checks(lang: Lang, checks: &[StepCheck]) -> Html {
    if checks.is_empty() {
        return Html::default();
    }
    let tx = |x: Text| x.get(lang);
    let heads = Invariant::ALL.iter().map(|i| {
        let title = if lang == Lang::Zh { i.title_zh() } else { i.title() };
        html! { <th class="explore-inv" title={ title }>{ inv_short(lang, *i) }</th> }
    });
    let rows = checks.iter().map(|c| {
        let broken: Vec<&str> = c.broken.iter().map(|i| i.name()).collect();
        let cells = Invariant::ALL.iter().map(|i| {
            let ok = c.holds(*i);
            let (mark, word) = if ok {
                ("✓", tx(Text::ExploreHolds))
            } else {
                ("✗", tx(Text::ExploreBroken))
            };
            html! {
                <td class={ classes!("explore-inv", if ok { "ok" } else { "bad" }) } data-invariant={ i.name() }
                    title={ format!("{}: {word}", inv_short(lang, *i)) }>{ mark }</td>
            }
        });
        html! {
            <tr data-testid="explore-step" data-step={ c.step.to_string() } data-broken={ broken.join(",") }
                class={ classes!((!c.broken.is_empty()).then_some("broken")) }>
                <td class="explore-num">{ c.step }</td>
                <td class="explore-num">{ c.at_ms }</td>
                <td class="explore-what">{ if lang == Lang::Zh { c.what_zh.clone() } else { c.what.clone() } }</td>
                { for cells }
                <td class="explore-holders">{ c.holders.join(", ") }</td>
            </tr>
        }
    });
    html! {
        <div class="explore-steps" data-testid="explore-steps">
            <p class="explore-steps-head">{ tx(Text::ExploreStepsHead) }</p>
            <div class="explore-steps-scroll">
                <table>
                    <thead><tr>
                        <th>{ tx(Text::ExploreStepCol) }</th><th>{ "ms" }</th><th>{ tx(Text::ExploreEventCol) }</th>
                        { for heads }
                        <th>{ tx(Text::ExploreHoldersCol) }</th>
                    </tr></thead>
                    <tbody>{ for rows }</tbody>
                </table>
            </div>
        </div>
    }
}
