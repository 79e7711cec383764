//! A lesson's timed answer (issue 38, item 4; lesson 35): the question, a
//! countdown, a box for the candidate's own answer, then the rubric to tick
//! against it. Interview mode shows it before the first step and lets the
//! lesson go on (to the model answer and the demonstrations) only once the
//! rubric is scored; the points ticked go into the lesson's stored score
//! ([`LessonScore::record_points`](crate::score::LessonScore::record_points)),
//! first scoring only, as with predictions.
//!
//! The clock is the page's (a one-second interval): what it bounds is a
//! person's answer, not anything the simulator runs.

use gloo_timers::callback::Interval;
use web_sys::HtmlTextAreaElement;
use yew::prelude::*;

use crate::catalog;
use crate::hooks::score as stored;
use crate::i18n::{Lang, Text};
use locklab_core::lesson::Timed;

#[derive(Properties, PartialEq)]
pub struct TimedProps {
    pub lesson: String,
    pub timed: Timed,
    pub lang: Lang,
    /// The rubric was scored: the lesson may go on.
    pub onscored: Callback<()>,
}

/// Where the answer is: not started, the clock running (seconds left), or
/// written and waiting for the rubric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Ready,
    Running(u32),
    Rubric,
}

impl Reducible for PhaseCell {
    type Action = PhaseAction;

    fn reduce(self: std::rc::Rc<Self>, action: PhaseAction) -> std::rc::Rc<Self> {
        let next = match (self.0, action) {
            (Phase::Ready, PhaseAction::Start(s)) => Phase::Running(s),
            (Phase::Running(left), PhaseAction::Tick) if left > 1 => Phase::Running(left - 1),
            (Phase::Running(_), PhaseAction::Tick | PhaseAction::Stop) => Phase::Rubric,
            (p, _) => p,
        };
        std::rc::Rc::new(PhaseCell(next))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PhaseCell(Phase);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PhaseAction {
    Start(u32),
    Tick,
    Stop,
}

#[function_component(TimedAnswer)]
pub fn timed_answer(props: &TimedProps) -> Html {
    let lang = props.lang;
    let t = &props.timed;
    let phase = use_reducer(|| PhaseCell(Phase::Ready));
    let answer = use_state(String::new);
    let ticked = use_state(|| vec![false; t.rubric.len()]);
    let running = matches!(phase.0, Phase::Running(_));
    {
        let phase = phase.clone();
        use_effect_with(running, move |&running| {
            let interval = running.then(|| Interval::new(1000, move || phase.dispatch(PhaseAction::Tick)));
            move || drop(interval)
        });
    }
    let seconds = t.seconds;
    let start = {
        let phase = phase.clone();
        Callback::from(move |_: MouseEvent| phase.dispatch(PhaseAction::Start(seconds)))
    };
    let stop = {
        let phase = phase.clone();
        Callback::from(move |_: MouseEvent| phase.dispatch(PhaseAction::Stop))
    };
    let oninput = {
        let answer = answer.clone();
        Callback::from(move |e: InputEvent| answer.set(e.target_unchecked_into::<HtmlTextAreaElement>().value()))
    };
    let onscore = {
        let (id, ticked, onscored) = (props.lesson.clone(), ticked.clone(), props.onscored.clone());
        Callback::from(move |_: MouseEvent| {
            let mut score = stored::load(&id);
            if score.record_points(&ticked) {
                stored::save(&id, &score);
            }
            onscored.emit(());
        })
    };
    let left = match phase.0 {
        Phase::Ready => seconds,
        Phase::Running(s) => s,
        Phase::Rubric => 0,
    };
    html! {
        <form class="quiz timed" data-testid="timed" onsubmit={ |e: SubmitEvent| e.prevent_default() }>
            <div class="question" data-testid="timed-question">{ catalog::text(&t.question, lang) }</div>
            <span class={ classes!("timer", (left <= 10).then_some("low")) } data-testid="timed-timer"
                data-left={ left.to_string() }>{ format!("{left} s") }</span>
            if phase.0 == Phase::Ready {
                <button type="button" data-testid="timed-start" onclick={ start }>{ Text::TimedStart.get(lang) }</button>
            }
            <textarea class="timed-answer" data-testid="timed-answer" rows="5" value={ (*answer).clone() } {oninput}
                readonly={ !running } placeholder={ Text::TimedPlaceholder.get(lang) } spellcheck="false" />
            if running {
                <button type="button" data-testid="timed-done" onclick={ stop }>{ Text::TimedDone.get(lang) }</button>
            }
            if phase.0 == Phase::Rubric {
                <div class="rubric" data-testid="rubric">
                    <div class="quiz-note">{ Text::RubricNote.get(lang) }</div>
                    <ul>{ for t.rubric.iter().enumerate().map(|(i, p)| {
                        let ticked = ticked.clone();
                        let onchange = Callback::from(move |_: Event| {
                            let mut v = (*ticked).clone();
                            v[i] = !v[i];
                            ticked.set(v);
                        });
                        html! { <li><label><input type="checkbox" data-testid="rubric-point" {onchange} />
                            { catalog::text(p, lang) }</label></li> }
                    }) }</ul>
                    <button type="button" data-testid="rubric-score" onclick={ onscore }>
                        { format!("{} ({}/{})", Text::RubricScore.get(lang), ticked.iter().filter(|t| **t).count(), ticked.len()) }
                    </button>
                </div>
            }
        </form>
    }
}
