//! A "write the fix" step in the page (issue 38, item 3): the question, a
//! code box for the candidate's part of the lock (a command line, the
//! two-command forms, or a Lua script), and "Check my fix".
//!
//! The grading is core's (`explore::exercise::grade`: a run without
//! faults, the lesson's story, then the bounded search) and runs in the
//! explore screen's Web Worker, the same module and the same message seam
//! ([`ExploreWorker`]), never on the page's thread: a search of 150 000
//! states or a script the simulator has to stop takes the worker's time,
//! not the page's. The worker is started on the first check and kept for
//! the next; "Cancel" terminates it (the grading is one bounded call, so
//! terminating is the only way to stop it early).
//!
//! The verdict is core's own wording ([`Grade::lines`]): the bounds that
//! were checked when the answer holds, else the counterexample's
//! transcript, which plays on the timeline as the explorer's
//! counterexamples do (the app's `PlayLesson`, with the answer's design in
//! the link). A refusal (empty, over 16 KiB, a script that does not compile
//! or never stops) is core's sentence for it. What the candidate typed is
//! kept in `sessionStorage` per lesson and step, so playing the
//! counterexample and coming back does not lose it.

use std::rc::Rc;

use locklab_core::explore::exercise::{Graded, SearchKind};
use locklab_core::explore::link;
use locklab_core::lesson::exercise::{Exercise, Part};
use locklab_core::lesson::worded::PageLesson;
use web_sys::HtmlTextAreaElement;
use yew::prelude::*;

use crate::explore::worker::ExploreWorker;
use crate::explore::{ExploreLink, WorkerEvent};
use crate::i18n::Lang;

#[derive(Properties, PartialEq)]
pub struct ExerciseProps {
    pub lesson: String,
    pub step: usize,
    pub exercise: Exercise,
    pub lang: Lang,
    /// Play a counterexample on the timeline (the link to show while it
    /// plays), as the explore screen's "play".
    pub onplay: Callback<(Rc<PageLesson>, ExploreLink)>,
}

/// Where the check is.
#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    None,
    Grading,
    Graded(Rc<Graded>),
    Refused(String),
    Cancelled,
}

fn t(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

/// What the code box holds before anything is typed: the forms the lab
/// reads and the placeholders, never the answer.
fn placeholder(part: Part, lang: Lang) -> &'static str {
    match part {
        Part::Fence => t(
            lang,
            "command lines: MULTI / the acquire / INCR counter / EXEC, or the acquire then INCR counter ($key, $token, $ttl, $ttl_s)",
            "命令行：MULTI / 加锁 / INCR 计数器 / EXEC，或先加锁再 INCR 计数器（$key、$token、$ttl、$ttl_s）",
        ),
        Part::Validity => t(
            lang,
            "a condition over oks, n, ttl, elapsed, drift (ms), with + - * / < <= > >= == != and or not",
            "一个条件：可用 oks、n、ttl、elapsed、drift（毫秒），运算 + - * / < <= > >= == != and or not",
        ),
        _ => t(
            lang,
            "one command line ($key, $token, $ttl in ms, $ttl_s in s), or a Lua script (KEYS[1], ARGV[1], ARGV[2])",
            "一行命令（$key、$token、$ttl 毫秒、$ttl_s 秒），或一个 Lua 脚本（KEYS[1]、ARGV[1]、ARGV[2]）",
        ),
    }
}

/// The code box's height in lines: a decision is one condition, so three
/// lines hold it and its placeholder on a phone (while presenting, the
/// style sheet makes it one line, so a race's lanes keep their room:
/// lesson 18's ten lanes at 15.5 px at 1440×900, and all of them on a
/// 720 px screen); a release or renewal is a Lua script of a few lines.
/// By the part, never by the model answer's length, which would hint at
/// the answer.
fn rows(part: Part) -> &'static str {
    match part {
        Part::Validity => "3",
        _ => "6",
    }
}

fn draft_key(lesson: &str, step: usize) -> String {
    format!("locklab-exercise-{lesson}-{step}")
}

fn session() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok()?
}

#[function_component(ExerciseBox)]
// long: a Yew view: its state, the worker's callback, then one html! tree
pub fn exercise_box(props: &ExerciseProps) -> Html {
    let lang = props.lang;
    let key = draft_key(&props.lesson, props.step);
    let draft = {
        let key = key.clone();
        use_state(move || {
            session()
                .and_then(|s| s.get_item(&key).ok().flatten())
                .unwrap_or_default()
        })
    };
    let verdict = use_state(|| Verdict::None);
    let worker = use_mut_ref(|| None::<ExploreWorker>);
    {
        let worker = worker.clone();
        use_effect_with((), move |_| move || drop(worker.borrow_mut().take()));
    }
    let oninput = {
        let draft = draft.clone();
        Callback::from(move |e: InputEvent| {
            let v = e.target_unchecked_into::<HtmlTextAreaElement>().value();
            if let Some(s) = session() {
                let _ = s.set_item(&key, &v);
            }
            draft.set(v);
        })
    };
    let oncheck = {
        let (worker, verdict, draft) = (worker.clone(), verdict.clone(), draft.clone());
        let exercise = serde_json::to_string(&props.exercise).unwrap_or_default();
        Callback::from(move |_: MouseEvent| {
            let on = {
                let verdict = verdict.clone();
                Callback::from(move |e: WorkerEvent| match e {
                    WorkerEvent::Graded(g) => verdict.set(Verdict::Graded(Rc::new(*g))),
                    WorkerEvent::Refused(m) | WorkerEvent::Error(m) => verdict.set(Verdict::Refused(m)),
                    _ => {}
                })
            };
            let mut w = worker.borrow_mut();
            if w.is_none() {
                match ExploreWorker::for_grading(on) {
                    Ok(started) => *w = Some(started),
                    Err(m) => return verdict.set(Verdict::Refused(m)),
                }
            }
            if let Some(w) = w.as_ref() {
                verdict.set(Verdict::Grading);
                w.grade(&exercise, &draft);
            }
        })
    };
    let oncancel = {
        let (worker, verdict) = (worker.clone(), verdict.clone());
        Callback::from(move |_: MouseEvent| {
            drop(worker.borrow_mut().take());
            verdict.set(Verdict::Cancelled);
        })
    };
    let grading = *verdict == Verdict::Grading;
    let ask = props.exercise.ask.get(lang).to_owned();
    let shown = match &*verdict {
        Verdict::None => Html::default(),
        Verdict::Grading => html! {
            <p class="exercise-note" data-testid="exercise-grading" aria-live="polite">
                { t(lang, "The lab is attacking your fix in the explorer's worker…", "实验室正在探索器的 worker 里攻击你的写法…") }
            </p>
        },
        Verdict::Cancelled => html! {
            <p class="exercise-note" data-testid="exercise-cancelled">{ t(lang, "Cancelled.", "已取消。") }</p>
        },
        Verdict::Refused(m) => html! {
            <div class="exercise-verdict refused" data-testid="exercise-verdict" data-passed="false" data-refused="true" role="alert">
                <p class="headline">{ format!("✗ {} {m}", t(lang, "The lab did not grade it:", "实验室没有评判：")) }</p>
            </div>
        },
        Verdict::Graded(g) => verdict_view(g, lang, &props.onplay),
    };
    html! {
        <div class="exercise" data-testid="exercise" data-part={ props.exercise.part.name() }>
            <div class="question">{ crate::markdown::render(&ask) }</div>
            <textarea class="exercise-code" data-testid="exercise-code" spellcheck="false" rows={ rows(props.exercise.part) }
                value={ (*draft).clone() } {oninput} placeholder={ placeholder(props.exercise.part, lang) }
                aria-label={ t(lang, "your fix", "你的写法") } />
            <div class="exercise-actions">
                <button data-testid="exercise-check" onclick={ oncheck } disabled={ grading }>
                    { t(lang, "Check my fix", "检查我的写法") }
                </button>
                <button data-testid="exercise-cancel" onclick={ oncancel } disabled={ !grading }>
                    { t(lang, "Cancel", "取消") }
                </button>
            </div>
            { shown }
        </div>
    }
}

/// The grade as core words it: the headline; the bounds when it held;
/// else the counterexample to play and the transcript.
fn verdict_view(g: &Rc<Graded>, lang: Lang, onplay: &Callback<(Rc<PageLesson>, ExploreLink)>) -> Html {
    let grade = &g.grade;
    let lines = grade.lines(lang);
    let (headline, rest) = lines
        .split_first()
        .map_or((String::new(), &[][..]), |(h, r)| (h.clone(), r));
    let search = match grade.search {
        SearchKind::Exhaustive => "exhaustive",
        SearchKind::Sampled => "sampled",
    };
    let broken = grade.result.broken.as_ref().map(|b| b.invariant).or(grade.story.broken);
    let play = grade.result.lesson.clone().map(|l| {
        let l = Rc::new(l);
        let link = ExploreLink {
            design: link::encode_text(&g.design),
            seed: None,
            step: None,
        };
        let onplay = onplay.clone();
        html! {
            <button class="explore-play" data-testid="exercise-play"
                onclick={ Callback::from(move |_| onplay.emit((l.clone(), link.clone()))) }>
                { t(lang, "▶ Play the counterexample on the timeline", "▶ 在时间线上回放反例") }
            </button>
        }
    });
    html! {
        <div class={ classes!("exercise-verdict", if grade.passed { "held" } else { "failed" }) } data-testid="exercise-verdict"
            data-passed={ grade.passed.to_string() } data-search={ search }
            data-invariant={ broken.map_or("none", |i| i.name()) }>
            <p class="headline"><strong>{ headline }</strong></p>
            if grade.passed {
                <p class="exercise-bounds" data-testid="exercise-bounds">{ rest.join("\n") }</p>
            } else {
                { play.unwrap_or_default() }
                <pre class="explore-transcript" data-testid="exercise-transcript">{ rest.join("\n") }</pre>
            }
        </div>
    }
}
