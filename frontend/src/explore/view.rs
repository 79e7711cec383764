//! The explore screen: pick or write a design, "break it", watch the
//! search, play the counterexample on the timeline; or take the drill.

use std::rc::Rc;

use locklab_core::explore::drill::CHOICES;
use locklab_core::explore::Outcome;
use locklab_core::invariants::Invariant;
use locklab_core::lesson::Lesson;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::worker::ExploreWorker;
use super::{Explore, Status, WorkerEvent};
use crate::i18n::Lang;

/// What the screen's reducer does.
pub enum Msg {
    Worker(WorkerEvent),
    Select(usize),
    Edit(String),
    Started,
    Drill(u64),
    Guess(Invariant),
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
        }
        Rc::new(next)
    }
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
    /// Play this counterexample on the timeline.
    pub onplay: Callback<Rc<Lesson>>,
    pub onclose: Callback<()>,
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
    let running = model.is_running();
    let loading = model.status == Status::Loading;
    let onrun = {
        let worker = worker.clone();
        let model = model.clone();
        Callback::from(move |_| {
            if let Some(w) = worker.borrow().as_ref() {
                model.dispatch(Msg::Started);
                w.start(&model.text);
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
    let progress_view = progress.map(|p| {
        let best = match p.best {
            Some((steps, inv)) => format!("{} {steps} {} ({})", t(lang, "best so far:", "目前最短："), t(lang, "steps", "步"), inv.name()),
            None => t(lang, "no violation yet", "尚未发现违反").to_owned(),
        };
        html! {
            <div class="explore-progress" data-testid="explore-progress" data-explored={ p.explored.to_string() }>
                <progress max={ p.total.max(1).to_string() } value={ p.explored.to_string() } />
                <span>{ format!("{} / {} {} · {rate}/s · {best}", p.explored, p.total, t(lang, "schedules", "个调度")) }</span>
            </div>
        }
    });

    let result_view = match &model.status {
        Status::Done { result, .. } => {
            let (kind, inv, headline) = match &result.report.outcome {
                Outcome::Violated { invariant, steps, .. } => (
                    "violated",
                    invariant.name(),
                    format!(
                        "{} {} — {steps} {}",
                        t(lang, "Broken:", "被攻破："),
                        invariant.name(),
                        t(lang, "steps", "步")
                    ),
                ),
                Outcome::Held => ("held", "none", result.bound.clone()),
            };
            let play = result.lesson.clone().map(|l| {
                let l = Rc::new(l);
                let onplay = props.onplay.clone();
                html! {
                    <button class="explore-play" data-testid="explore-play" onclick={ Callback::from(move |_| onplay.emit(l.clone())) }>
                        { t(lang, "▶ Play it on the timeline", "▶ 在时间线上回放") }
                    </button>
                }
            });
            html! {
                <div class="explore-result" data-testid="explore-result" data-result={ kind } data-invariant={ inv }
                    data-explored={ result.report.explored.to_string() }>
                    <p class="explore-verdict" data-testid="explore-verdict">{ headline }</p>
                    <p class="explore-resultline" data-testid="explore-resultline">{ result.result_line.clone() }</p>
                    { play.unwrap_or_default() }
                    if let Some(e) = &result.lesson_error { <p class="explore-note">{ e.clone() }</p> }
                    <pre class="explore-transcript">{ result.transcript.clone() }</pre>
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
                    { c.name() }
                </button>
            }
        });
        let verdict = d.score.zip(file.as_ref()).map(|(s, f)| html! {
            <div class="explore-score" data-testid="drill-score" data-right={ s.right.to_string() }>
                <strong>{ if s.right { t(lang, "Right!", "答对了！") } else { t(lang, "Not this time.", "这次没答对。") } }</strong>
                { format!(" {} {} · {} {} · {} {}/{}", t(lang, "answer:", "答案："), f.drill.answer.name(),
                    t(lang, "lesson", "课程"), f.drill.lesson, t(lang, "score", "得分"), model.points, model.asked * 2) }
                <p>{ f.drill.pitfall.get(match lang { Lang::En => locklab_core::lesson::Lang::En, Lang::Zh => locklab_core::lesson::Lang::Zh }).to_owned() }</p>
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
            <div class="explore-grid">
                <div class="explore-design">
                    <label class="explore-label">{ t(lang, "Design", "设计") }
                        <select data-testid="explore-design" onchange={ onselect } disabled={ running }>
                            <option value="" selected={ model.selected.is_none() }>{ t(lang, "(your own)", "（自己写的）") }</option>
                            { for model.catalog.designs.iter().enumerate().map(|(i, d)| html! {
                                <option value={ i.to_string() } selected={ model.selected == Some(i) }>
                                    { d.spec.name.clone().unwrap_or_else(|| d.file.clone()) }
                                </option>
                            }) }
                        </select>
                    </label>
                    <textarea class="explore-editor" data-testid="explore-editor" spellcheck="false" value={ model.text.clone() }
                        oninput={ onedit } disabled={ running } aria-label="design" />
                    <div class="explore-actions">
                        <button class="explore-run" data-testid="explore-run" onclick={ onrun } disabled={ running || loading || needs_guess }>
                            { t(lang, "Break it", "攻破它") }
                        </button>
                        <button data-testid="explore-cancel" onclick={ oncancel } disabled={ !running }>{ t(lang, "Cancel", "取消") }</button>
                        <button data-testid="explore-drill-next" onclick={ ondrill } disabled={ running || loading }>{ t(lang, "Interview drill", "面试练习") }</button>
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
