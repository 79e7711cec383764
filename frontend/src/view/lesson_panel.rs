//! The selected lesson: title, source, narration, the transport (step,
//! play at 0.25×–8×, scrub, restart), the step list with expected and
//! actual replies, interview-mode predictions with the lesson's score, and
//! the outcome.
//!
//! Interview mode asks before it tells (issue 38): the narration, which
//! sums the lesson up, waits for the first answer; a `say` step's text
//! waits until the step is reached, an explanation until its step ran
//! (which, in interview mode, is after its question was answered), the
//! outcome until the last step; and the choices come in the attempt's
//! shuffled order (`Quiz::choice_order`, seeded by the URL's `quiz=`).
//! Presenter and normal mode show everything as before.
//!
//! A "write the fix" step, when it is the next one, shows its code box and
//! the lab's verdict ([`crate::view::exercise`]) where a question would be.

use std::collections::BTreeMap;

use locklab_core::trace::Trace;
use web_sys::HtmlInputElement;
use yew::prelude::*;

use crate::catalog;
use crate::driver::LessonDriver;
use crate::hooks::score::{self as stored, use_score_changes};
use crate::hooks::use_record_verdicts;
use crate::i18n::{Lang, Text};
use crate::score::LessonScore;
use crate::state::{AppContext, Transport, SPEEDS};
use crate::view::exercise::ExerciseBox;
use crate::view::timed::TimedAnswer;
use locklab_core::lesson::judge::prediction_right;

#[derive(Properties, PartialEq)]
pub struct LessonPanelProps {
    pub onmove: Callback<Transport>,
    pub onspeed: Callback<usize>,
    pub onquiz: Callback<()>,
    /// The real driver's time compression was chosen.
    pub onfactor: Callback<u64>,
    /// Interview mode: the step `Some(i)` waits for an answer (stepping
    /// on is blocked until then), or none does.
    pub ongate: Callback<Option<usize>>,
    /// A written fix's counterexample is to play on the timeline.
    pub onplay: Callback<(
        std::rc::Rc<locklab_core::lesson::worded::PageLesson>,
        crate::explore::ExploreLink,
    )>,
}

/// What a run shows, from the invariant monitor's violations: each broken
/// invariant once, with the clients it names; or that the run held.
fn run_shows(trace: &Trace, lang: Lang) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in &trace.events {
        if let locklab_core::trace::EventKind::Violation { violation: v } = &e.kind {
            let t = if lang == Lang::Zh {
                v.invariant.title_zh()
            } else {
                v.invariant.title()
            };
            let who: Vec<String> = v
                .actors
                .iter()
                .filter(|a| matches!(a, locklab_core::actor::Actor::Client(_)))
                .map(|&a| trace.names.actor(a))
                .collect();
            let line = if who.is_empty() {
                t.to_owned()
            } else {
                format!("{t} ({})", who.join(", "))
            };
            if !seen.contains(&line) {
                seen.push(line);
            }
        }
    }
    if seen.is_empty() {
        Text::RunHeld.get(lang).to_owned()
    } else {
        format!("{}{}", Text::RunShowed.get(lang), seen.join("; "))
    }
}

/// Interview mode's misses, for the review at the end: step, question,
/// the guess and the answer.
fn missed(s: &dyn LessonDriver, judged: &BTreeMap<usize, String>, lang: Lang) -> Vec<(usize, String, String, String)> {
    let l = s.lesson();
    let results = s.results();
    judged
        .iter()
        .filter_map(|(&i, g)| {
            let st = l.steps.get(i)?;
            let r = results.get(i);
            let reply = r.and_then(|r| r.reply.clone()).unwrap_or_default();
            if prediction_right(st, g, &reply) {
                return None;
            }
            let q = st
                .quiz
                .as_ref()
                .map(|q| if lang == Lang::Zh { q.zh.clone() } else { q.en.clone() });
            let answer = (st.quiz.as_ref().and_then(|q| q.answer.clone()))
                .or_else(|| catalog::reply_text(l, r?, lang))
                .unwrap_or_default();
            Some((i, q.unwrap_or_else(|| s.step_text(i, lang)), g.clone(), answer))
        })
        .collect()
}

/// Interview mode's predictions per step, with the lesson they were made
/// in.
type Guesses = (Option<String>, BTreeMap<usize, String>);

#[function_component(LessonPanel)]
// long: a Yew view: its state and hooks, which box asks (timed, quiz, exercise), then one html! tree
pub fn lesson_panel(props: &LessonPanelProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    // Interview mode's latest prediction per step, tagged with the lesson
    // they were made in (so a lesson change drops them in the same render).
    // Only those for steps already done count: a step back asks again. The
    // judging is `prediction_right` and the score `crate::score`, both
    // tested natively; the score is what `localStorage` holds.
    let guesses = use_state(|| -> Guesses { (None, BTreeMap::new()) });
    let draft = use_state(String::new);
    let timed_scored = use_state(|| None::<(String, u64)>); // the attempt (lesson, seed) whose timed answer was scored
    let expanded = use_state(|| false);
    let steps_ref = use_node_ref();
    let lesson_id = state.lesson_id();
    use_score_changes();
    let pos_now = state.lesson.as_ref().map_or(0, |s| s.borrow().position());
    let judged: BTreeMap<usize, String> = if guesses.0 == lesson_id {
        guesses.1.range(..pos_now).map(|(i, g)| (*i, g.clone())).collect()
    } else {
        BTreeMap::new()
    };
    use_record_verdicts(state.clone(), lesson_id.clone(), judged.clone());
    use_current_step_in_view(steps_ref.clone(), pos_now, lesson_id.clone());
    let Some(session) = state.lesson.as_ref() else {
        return html! {
            <section class="lesson-panel" data-testid="lesson-panel">
                <div class="lesson-heading">
                    <h1 class="muted">{ Text::PickLesson.get(lang) }</h1>
                </div>
            </section>
        };
    };
    let s = session.borrow();
    let l = s.lesson();
    let pos = s.position();
    let len = s.len();

    // Interview mode asks the next step first; a timed answer before all, once per attempt.
    let next = l.steps.get(pos);
    let asks = state.quiz
        && next.is_some_and(|st| st.quiz.is_some() || (st.cmd.is_some() && st.expect.is_some()))
        && !judged.contains_key(&pos);
    let attempt = Some((l.id.clone(), state.quiz_seed));
    let timed = (l.timed.as_ref()).filter(|_| state.quiz && pos == 0 && *timed_scored != attempt);
    let (ongate, gate) = (props.ongate.clone(), (asks || timed.is_some()).then_some(pos));
    use_effect_with(gate, move |g| ongate.emit(*g));
    let submit = submit_prediction(&guesses, &draft, props, lesson_id.clone(), pos);
    let quiz_box = if let Some(t) = timed {
        timed_box(t, &l.id, state.quiz_seed, &timed_scored, &props.ongate, lang)
    } else if asks {
        quiz_form(&*s, &draft, &submit, state.quiz_seed, lang)
    } else if let Some(ex) = next.and_then(|st| st.exercise.as_ref()) {
        // A "write the fix" step: its code box and the lab's verdict.
        html! { <ExerciseBox key={ format!("{}-{pos}", l.id) } lesson={ l.id.clone() } step={ pos } exercise={ ex.clone() } {lang}
        onplay={ props.onplay.clone() } /> }
    } else {
        html! {}
    };
    let score = stored::load(&l.id);
    let onreset = reset_score(&guesses, l.id.clone());

    let steps =
        (0..l.steps.len()).map(|i| step_item(&*s, i, judged.get(&i).cloned(), state.quiz, lang, props.onmove.clone()));

    // Interview mode's misses, for the review at the end.
    let missed = missed(&*s, &judged, lang);
    // As the URL names it (`end` at the end); shown in the page's language.
    let step_name = state.step().unwrap_or_else(|| "0".into());
    html! {
        <section class="lesson-panel" data-testid="lesson-panel">
            { heading(&*s, expanded.clone(), !state.quiz || !judged.is_empty(), lang) }
            { transport_row(props, &state, &*s, step_name, &score, onreset) }
            { quiz_box }
            <div class="lesson-details">
            <h2 class="steps-title">{ Text::Steps.get(lang) }</h2>
            <ol class="steps" data-testid="steps" ref={ steps_ref }>{ for steps }</ol>
            if state.quiz && pos == len && !missed.is_empty() {
                { missed_review(&missed, lang) }
            }
            { if state.quiz && pos < len { outcome_hidden(lang) } else { outcome_box(&*s, lang) } }
            </div>
        </section>
    }
}

/// One step of the list: what it runs, the expected and actual replies,
/// the prediction's verdict, the driver's note, and once done its
/// explanation. Clicking it seeks there.
fn step_item(
    s: &dyn LessonDriver,
    i: usize,
    guess: Option<String>,
    quiz: bool,
    lang: Lang,
    onmove: Callback<Transport>,
) -> Html {
    let st = &s.lesson().steps[i];
    let pos = s.position();
    let r = s.results().get(i);
    let done = r.is_some();
    let class = classes!(
        "step",
        if done { "done" } else { "pending" },
        (i + 1 == pos).then_some("current"),
        (i == pos).then_some("next"),
        r.is_some_and(|r| !r.ok).then_some("mismatch"),
    );
    // Interview mode: a point or question the lesson makes is read when
    // the step is reached, not ahead of the questions before it.
    let shown = step_shown(s, i, quiz && !done, lang);
    let expected = catalog::expected_text(s.lesson(), i, lang);
    let hide_expected = quiz && !done;
    // The reply as shown, worded once: also the answer when the quiz
    // names none.
    let reply = r.and_then(|r| catalog::reply_text(s.lesson(), r, lang));
    let answer = (st.quiz.as_ref().and_then(|q| q.answer_in(lang))).map(str::to_owned);
    let answer = answer.or_else(|| reply.clone());
    let right = guess
        .as_ref()
        .map(|g| prediction_right(st, g, r.and_then(|r| r.reply.as_deref()).unwrap_or_default()));
    html! {
        <li {class} data-testid="step" data-index={ i.to_string() }
            data-ok={ r.map(|r| r.ok.to_string()) }
            onclick={ move |_| onmove.emit(Transport::Seek(i + 1)) }>
            <span class="n">{ i + 1 }</span>
            // Faults, waits and notes belong to no client: keep the
            // column so the step text stays in its own.
            <span class="actor">{ st.client.clone().unwrap_or_else(|| "—".to_owned()) }</span>
            // A command as typed; the lesson's narration as prose.
            { shown }
            <div class="replies">
                if let (Some(e), false) = (&expected, hide_expected) {
                    <span class="expected" data-testid="step-expected">
                        <span class="k">{ Text::Expected.get(lang) }</span>{ e }
                    </span>
                }
                if let Some(reply) = reply {
                    <span class="actual" data-testid="step-reply">
                        <span class="k">{ Text::Actual.get(lang) }</span>{ reply }
                    </span>
                }
                if let (Some(g), Some(right)) = (&guess, right) {
                    <span class={ classes!("verdict", if right { "right" } else { "wrong" }) } data-testid="prediction"
                        data-right={ right.to_string() }>
                        <span class="k">{ Text::YourPrediction.get(lang) }</span>{ choice_in(st, g, lang) }
                        if right {
                            { format!(" ✓ {}", Text::Right.get(lang)) }
                        } else {
                            { format!(" ✗ {} {}", Text::Wrong.get(lang), answer.clone().unwrap_or_default()) }
                        }
                    </span>
                }
                if let Some(note) = s.step_note(i) {
                    <span class="driver-note" data-testid="step-note">{ note }</span>
                }
                if r.is_some_and(|r| !r.ok) {
                    <span class="mismatch-mark" data-testid="step-mismatch">{ format!("⚠ {}", Text::Mismatch.get(lang)) }</span>
                }
            </div>
            if let (Some(t), true) = (&st.explain, done) {
                <div class="explain" data-testid="step-explain">{ crate::markdown::render(catalog::text(t, lang)) }</div>
            }
        </li>
    }
}

/// A step's text: a command as typed, the lesson's narration as prose, or
/// (interview mode, a `say` not reached yet) a note that it waits.
/// `pending`: interview mode, not run yet.
fn step_shown(s: &dyn LessonDriver, i: usize, pending: bool, lang: Lang) -> Html {
    let prose = s.lesson().steps[i].say.is_some();
    let shown = s.step_text(i, lang);
    if pending && prose {
        html! { <div class="shown prose muted" data-testid="step-hidden">{ Text::StepHidden.get(lang) }</div> }
    } else if prose {
        html! { <div class="shown prose">{ crate::markdown::render(&shown) }</div> }
    } else {
        html! { <code class="shown">{ shown }</code> }
    }
}

/// Interview mode's outcome before the last step: a note that it waits.
fn outcome_hidden(lang: Lang) -> Html {
    html! {
        <div class="outcome" data-testid="outcome-hidden">
            <h3>{ Text::Outcome.get(lang) }</h3>
            <p class="muted">{ Text::OutcomeHidden.get(lang) }</p>
        </div>
    }
}

/// The timed answer of lesson `id` for the attempt `seed`; once scored it
/// records the attempt (so it is not asked again until a new one) and
/// lifts the gate.
fn timed_box(
    t: &locklab_core::lesson::Timed,
    id: &str,
    seed: u64,
    scored: &UseStateHandle<Option<(String, u64)>>,
    ongate: &Callback<Option<usize>>,
    lang: Lang,
) -> Html {
    let onscored = {
        let (scored, attempt, ongate) = (scored.clone(), (id.to_owned(), seed), ongate.clone());
        Callback::from(move |()| {
            scored.set(Some(attempt.clone()));
            ongate.emit(None);
        })
    };
    html! { <TimedAnswer key={ format!("{id}-{seed}") } lesson={ id.to_owned() } timed={ t.clone() } {lang} {onscored} /> }
}

/// Interview mode's question for the next step (`s`'s position): a text answer, or one
/// button per choice; either submits the prediction.
fn quiz_form(
    s: &dyn LessonDriver,
    draft: &UseStateHandle<String>,
    submit: &Callback<String>,
    seed: u64,
    lang: Lang,
) -> Html {
    let pos = s.position();
    let st = &s.lesson().steps[pos];
    let question = st
        .quiz
        .as_ref()
        .map(|q| if lang == Lang::Zh { q.zh.clone() } else { q.en.clone() })
        .unwrap_or_else(|| s.step_text(pos, lang));
    // In the attempt's order, worded in the page's language; a press
    // submits the choice's English form, which is what the judge reads.
    let choices: Vec<(String, String)> = st.quiz.as_ref().map_or_else(Vec::new, |q| {
        let shown = q.choices_in(lang);
        (q.choice_order(seed, pos).into_iter())
            .map(|c| (q.choices[c].clone(), shown[c].to_owned()))
            .collect()
    });
    let oninput = {
        let draft = draft.clone();
        Callback::from(move |e: InputEvent| draft.set(e.target_unchecked_into::<HtmlInputElement>().value()))
    };
    let onsubmit = {
        let submit = submit.clone();
        let draft = draft.clone();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            submit.emit((*draft).clone());
        })
    };
    html! {
        <form class="quiz" data-testid="quiz" {onsubmit}>
            <div class="question">{ question }</div>
            <div class="quiz-note" data-testid="quiz-blocks">{ Text::QuizBlocks.get(lang) }</div>
            if choices.is_empty() {
                <label>{ Text::Predict.get(lang) }
                    <input type="text" data-testid="quiz-input" value={ (**draft).clone() } {oninput}
                        autocomplete="off" spellcheck="false" />
                </label>
                <button type="submit" data-testid="quiz-check">{ Text::Check.get(lang) }</button>
            } else {
                { for choices.into_iter().map(|(c, label)| {
                    let submit = submit.clone();
                    html! { <button type="button" class="choice" data-testid="quiz-choice" data-choice={ c.clone() }
                        onclick={ move |_| submit.emit(c.clone()) }>{ label }</button> }
                }) }
            }
        </form>
    }
}

/// The outcome: what this run shows (from the invariant monitor's
/// violations), whether the user's own steps changed it, what the article
/// expects, and how many steps went off script.
fn outcome_box(s: &dyn LessonDriver, lang: Lang) -> Html {
    let l = s.lesson();
    let outcome = s.outcome();
    let run_shows = run_shows(&s.trace(), lang);
    // The outcome is judged on this run, so say when the user changed it.
    let off_script = s.off_script_count();
    let changed_by = (outcome == Some(false))
        .then(|| s.off_script_words(lang))
        .filter(|w| !w.is_empty())
        .map(|w| crate::i18n::changed_by_off_script(&crate::i18n::expected_outcome(&l.outcome, lang), &w, lang));
    html! {
        <div class={ classes!("outcome", outcome.map(|ok| if ok { "held" } else { "failed" })) }
            data-testid="outcome" data-ok={ outcome.map(|ok| ok.to_string()) }>
            <h3>{ Text::Outcome.get(lang) }</h3>
            if outcome.is_some() {
                <p class="run-shows" data-testid="run-shows">{ run_shows.clone() }</p>
                if let Some(why) = &changed_by {
                    <p class="changed-by" data-testid="outcome-changed">{ why.clone() }</p>
                }
                <p>{ format!("{}{}", Text::ArticleExpects.get(lang), catalog::text(&l.outcome.explain, lang)) }</p>
            } else {
                <p class="muted">{ Text::OutcomeNotYet.get(lang) }</p>
            }
            <p class="note">{ Text::OffScript.get(lang) }</p>
            if off_script > 0 {
                <p class="note off-script" data-testid="off-script-count" data-count={ off_script.to_string() }>
                    { format!("{} {off_script}", Text::OffScriptDone.get(lang)) }
                </p>
            }
        </div>
    }
}

/// A guess as the page's language words it: a choice's `lang` form (the
/// guess is its English form), anything typed as typed.
fn choice_in<P>(st: &locklab_core::lesson::Step<P>, guess: &str, lang: Lang) -> String {
    let q = st.quiz.as_ref();
    let at = q.and_then(|q| q.choices.iter().position(|c| c == guess));
    match (q, at) {
        (Some(q), Some(at)) => q.choices_in(lang)[at].to_owned(),
        _ => guess.to_owned(),
    }
}

/// The lesson's title, source and narration (clamped until expanded; in
/// interview mode, until `narrate`, a note that it waits for the first
/// answer), and the driver's error or notice.
fn heading(s: &dyn LessonDriver, expanded: UseStateHandle<bool>, narrate: bool, lang: Lang) -> Html {
    let l = s.lesson();
    html! {
        <div class="lesson-heading">
            <h1 data-testid="lesson-title" data-lesson={ l.id.clone() }>
                <span class="id">{ &l.id }</span>{ catalog::text(&l.title, lang) }
            </h1>
            <p class="source">{ format!("{} · {}", Text::Source.get(lang), catalog::source_label(l, lang)) }</p>
            if narrate {
                <div class={ classes!("narration", (!*expanded).then_some("clamped")) } data-testid="narration"
                    onclick={ let e = expanded.clone(); move |_| e.set(!*e) }>
                    { crate::markdown::render(catalog::text(&l.narration, lang)) }
                </div>
                <button class="more" data-testid="narration-more" aria-expanded={ expanded.to_string() }
                    onclick={ let e = expanded.clone(); move |_| e.set(!*e) }>
                    { if *expanded { Text::Less.get(lang) } else { Text::More.get(lang) } }
                </button>
            } else {
                <p class="narration muted" data-testid="narration-hidden">{ Text::NarrationHidden.get(lang) }</p>
            }
            if let Some(e) = s.error() {
                <p class="error" data-testid="lesson-error">{ e }</p>
            }
            if let Some(n) = s.notice() {
                <p class="driver-notice" data-testid="driver-notice">{ n }</p>
            }
            // The simulator is busy only while its module loads.
            if s.is_busy() && s.has_virtual_clock() {
                <p class="driver-notice" data-testid="engine-loading">{ Text::SimLoading.get(lang) }</p>
            }
        </div>
    }
}

/// The transport (home, back, play, forward, end, scrub), the step
/// counter, the speeds (and the real driver's time factors), interview
/// mode's switch and its score.
fn transport_row(
    props: &LessonPanelProps,
    state: &AppContext,
    s: &dyn LessonDriver,
    step_name: String,
    score: &LessonScore,
    onreset: Callback<MouseEvent>,
) -> Html {
    let lang = state.lang;
    // Where the URL puts the run: while the simulator loads, the step it
    // will open at, as the counter beside the slider says.
    let (pos, len) = (s.url_position(), s.len());
    let button = |t: Transport, label: &'static str, title: Text, testid: &'static str| {
        let onmove = props.onmove.clone();
        html! {
            <button class="transport" title={ title.get(lang) } aria-label={ title.get(lang) }
                data-testid={ testid } onclick={ move |_| onmove.emit(t) }>{ label }</button>
        }
    };
    let onscrub = {
        let onmove = props.onmove.clone();
        Callback::from(move |e: InputEvent| {
            let v = e.target_unchecked_into::<HtmlInputElement>().value();
            if let Ok(n) = v.parse::<usize>() {
                onmove.emit(Transport::Seek(n));
            }
        })
    };

    html! {
        <div class="transport-row">
            { button(Transport::Home, "⇤", Text::Restart, "restart") }
            { button(Transport::Back, "←", Text::HelpBack, "step-back") }
            { button(Transport::TogglePlay, if state.playing { "❚❚" } else { "▶" }, Text::HelpPlay, "play") }
            { button(Transport::Forward, "→", Text::HelpForward, "step-forward") }
            { button(Transport::End, "⇥", Text::HelpEnd, "end") }
            <input type="range" class="scrub" data-testid="scrub" min="0" max={ len.to_string() }
                value={ pos.to_string() } title={ Text::Scrub.get(lang) } oninput={ onscrub } />
            <span class="counter"><span data-testid="step-name" data-step={ step_name.clone() }>
                { if step_name == "end" { Text::StepEnd.get(lang).to_owned() } else { step_name.clone() } }</span>
                { format!(" / {len}") }
                if s.is_busy() {
                    <span class="busy" data-testid="step-busy"
                        title={ if s.has_virtual_clock() { Text::SimLoading.get(lang) } else { Text::RealBusy.get(lang) } }>{ " …" }</span>
                }</span>
            <span class="speeds" role="group" aria-label={ Text::Speed.get(lang) }>
                { for SPEEDS.iter().enumerate().map(|(i, sp)| {
                    let onspeed = props.onspeed.clone();
                    html! { <button class={ classes!("speed", (i == state.speed).then_some("on")) }
                        data-testid="speed" onclick={ move |_| onspeed.emit(i) }>{ format!("{sp}×") }</button> }
                }) }
            </span>
            if let Some(real) = &state.real {
                <span class="speeds factors" role="group" aria-label={ Text::RealTime.get(lang) }
                    title={ Text::RealFactorHint.get(lang) }>
                    <span class="k">{ Text::RealTime.get(lang) }</span>
                    { for crate::driver::real::FACTORS.into_iter().map(|f| {
                        let onfactor = props.onfactor.clone();
                        let on = real.borrow().factor() == f;
                        html! { <button class={ classes!("speed", on.then_some("on")) } data-testid="factor"
                            data-factor={ f.to_string() } aria-pressed={ on.to_string() }
                            onclick={ move |_| onfactor.emit(f) }>{ format!("{f}×") }</button> }
                    }) }
                </span>
            }
            <label class="quiz-toggle">
                <input type="checkbox" data-testid="quiz-mode" checked={ state.quiz }
                    onchange={ props.onquiz.reform(|_| ()) } />
                { Text::QuizMode.get(lang) }
            </label>
            if let Some(label) = score.label() {
                <span class="score" data-testid="score" data-right={ score.right().to_string() }
                    data-total={ score.total().to_string() } title={ Text::ScoreHint.get(lang) }>
                    { format!("{} {label}", Text::Score.get(lang)) }
                </span>
                <button class="quiet score-reset" data-testid="score-reset" onclick={ onreset }>{ Text::ScoreReset.get(lang) }</button>
            }
        </div>
    }
}

/// The step list keeps the current step in view (its own scroll only,
/// never the page's).
#[hook]
fn use_current_step_in_view(steps_ref: NodeRef, pos_now: usize, lesson_id: Option<String>) {
    use_effect_with((pos_now, lesson_id), move |_| {
        if let Some(list) = steps_ref.cast::<web_sys::HtmlElement>() {
            let current = list
                .query_selector(".step.current")
                .ok()
                .flatten()
                .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok());
            if let Some(li) = current {
                let (top, h) = (li.offset_top(), li.offset_height());
                let (view, height) = (list.scroll_top(), list.client_height());
                if top < view || top + h > view + height {
                    list.set_scroll_top((top - height / 3).max(0));
                }
            } else if pos_now == 0 {
                list.set_scroll_top(0);
            }
        }
    });
}

/// Records the guess for step `pos`, clears the draft, lifts the gate and
/// steps on.
fn submit_prediction(
    guesses: &UseStateHandle<Guesses>,
    draft: &UseStateHandle<String>,
    props: &LessonPanelProps,
    lesson_id: Option<String>,
    pos: usize,
) -> Callback<String> {
    let guesses = guesses.clone();
    let draft = draft.clone();
    let onmove = props.onmove.clone();
    let ongate = props.ongate.clone();
    Callback::from(move |guess: String| {
        let mut g = if guesses.0 == lesson_id {
            guesses.1.clone()
        } else {
            BTreeMap::new()
        };
        g.insert(pos, guess);
        guesses.set((lesson_id.clone(), g));
        draft.set(String::new());
        ongate.emit(None);
        onmove.emit(Transport::Forward);
    })
}

/// Forgets the lesson's stored score and this visit's guesses.
fn reset_score(guesses: &UseStateHandle<Guesses>, id: String) -> Callback<MouseEvent> {
    let guesses = guesses.clone();
    Callback::from(move |_: MouseEvent| {
        stored::reset(&id);
        guesses.set((None, BTreeMap::new()));
    })
}

/// Interview mode's review at the end: each missed step, the guess and
/// the answer.
fn missed_review(missed: &[(usize, String, String, String)], lang: Lang) -> Html {
    html! {
        <div class="missed" data-testid="missed">
            <h3>{ Text::Missed.get(lang) }</h3>
            <ul>{ for missed.iter().map(|(i, q, g, a)| html! {
                <li data-testid="missed-item"><span class="n">{ i + 1 }</span>{ " " }{ q }
                    <span class="verdict wrong">{ format!(" ✗ {g}") }</span>
                    <span class="verdict right">{ format!(" ✓ {a}") }</span></li>
            }) }</ul>
        </div>
    }
}
