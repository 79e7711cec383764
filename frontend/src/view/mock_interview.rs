//! The mock interview (issue 38, item 5): a thin view over
//! [`locklab_core::lesson::mock`], which holds the questions, the
//! branching, the scores and what to revisit. Each answer gets its verdict;
//! a wrong one shows the demonstration (a link opening the lesson at that
//! step, in a new tab so the interview stays) before the next question.
//! The end shows the score per topic, this time and over every interview
//! kept in `localStorage`, and the lessons to revisit; the questions missed
//! are asked first next time.

use std::rc::Rc;

use yew::prelude::*;

use crate::catalog;
use crate::hooks::score::{load_mock, save_mock};
use crate::i18n::{Lang, Text};
use locklab_core::lesson::mock::{Answered, Mock, MockSession};
use locklab_core::rng::Rng;

#[derive(Properties, PartialEq)]
pub struct MockProps {
    pub lang: Lang,
    pub onclose: Callback<()>,
}

/// One interview: its session, the answer just given (shown until "next"),
/// and the seed its choices are shuffled by.
#[derive(Clone, PartialEq)]
struct Attempt {
    session: MockSession,
    last: Option<Answered>,
    seed: u64,
}

impl Attempt {
    fn new(mock: &Mock) -> Attempt {
        let seed = web_sys::window()
            .and_then(|w| w.performance())
            .map_or(1, |p| p.now().to_bits());
        Attempt {
            session: mock.start(&load_mock().missed),
            last: None,
            seed,
        }
    }
}

#[function_component(MockInterview)]
pub fn mock_interview(props: &MockProps) -> Html {
    let lang = props.lang;
    let mock = use_memo((), |_| Mock::builtin());
    let attempt = use_state({
        let mock = mock.clone();
        move || Attempt::new(&mock)
    });
    let restart = {
        let (attempt, mock) = (attempt.clone(), mock.clone());
        Callback::from(move |_: MouseEvent| attempt.set(Attempt::new(&mock)))
    };
    let body = match (&attempt.last, attempt.session.current()) {
        (Some(a), _) => verdict(&mock, a, &attempt, lang),
        (None, Some(id)) => question(&mock, id, &attempt, lang),
        (None, None) => report(&mock, &attempt.session, lang),
    };
    html! {
        <section class="mock" data-testid="mock">
            <div class="lesson-heading">
                <h1>{ Text::MockTitle.get(lang) }</h1>
                <p class="source">{ Text::MockSource.get(lang) }</p>
            </div>
            { body }
            <p class="mock-actions">
                <button class="go" data-testid="mock-restart" onclick={ restart }>{ Text::MockRestart.get(lang) }</button>
                <button class="go" data-testid="mock-close" onclick={ props.onclose.reform(|_| ()) }>{ Text::MockClose.get(lang) }</button>
            </p>
        </section>
    }
}

/// The current question, its choices in the attempt's shuffled order.
fn question(mock: &Rc<Mock>, id: &str, attempt: &UseStateHandle<Attempt>, lang: Lang) -> Html {
    let Some(q) = mock.question(id) else { return html! {} };
    let n = attempt.session.answered().len();
    let order = Rng::derive(attempt.seed, n as u64).permutation(q.choices.len());
    html! {
        <form class="quiz" data-testid="mock-question" data-question={ q.id.clone() }
            onsubmit={ |e: SubmitEvent| e.prevent_default() }>
            <div class="question">{ catalog::text(&q.ask, lang) }</div>
            { for order.into_iter().map(|c| {
                let (attempt, mock) = (attempt.clone(), mock.clone());
                let onclick = Callback::from(move |_: MouseEvent| {
                    let mut next = (*attempt).clone();
                    next.last = next.session.answer(&mock, c);
                    if next.session.is_finished() {
                        let mut record = load_mock();
                        record.finished(&next.session, &mock);
                        save_mock(&record);
                    }
                    attempt.set(next);
                });
                html! { <button type="button" class="choice" data-testid="mock-choice" data-index={ c.to_string() } {onclick}>
                    { catalog::text(&q.choices[c], lang) }</button> }
            }) }
        </form>
    }
}

/// The verdict on the answer just given; a wrong one, the demonstration.
fn verdict(mock: &Mock, a: &Answered, attempt: &UseStateHandle<Attempt>, lang: Lang) -> Html {
    let Some(q) = mock.question(&a.question) else {
        return html! {};
    };
    let next = {
        let attempt = attempt.clone();
        Callback::from(move |_: MouseEvent| {
            let mut n = (*attempt).clone();
            n.last = None;
            attempt.set(n);
        })
    };
    let link = format!("?lang={}&lesson={}&step={}", lang.code(), q.why.lesson, q.why.step);
    html! {
        <div class={ classes!("mock-verdict", if a.right { "right" } else { "wrong" }) } data-testid="mock-verdict"
            data-right={ a.right.to_string() }>
            <p class="question">{ catalog::text(&q.ask, lang) }</p>
            if a.right {
                <p class="verdict right">{ format!("✓ {}", Text::Right.get(lang)) }</p>
            } else {
                <p class="verdict wrong">{ format!("✗ {} {}", Text::Wrong.get(lang), catalog::text(&q.choices[q.answer], lang)) }</p>
                <div class="mock-why" data-testid="mock-why" data-lesson={ q.why.lesson.clone() } data-step={ q.why.step.to_string() }>
                    <p>{ catalog::text(&q.why.say, lang) }</p>
                    <a href={ link } target="_blank" rel="noopener" data-testid="mock-why-link">
                        { lesson_link_text(&q.why.lesson, Some(q.why.step), lang) }</a>
                </div>
            }
            <button class="go" data-testid="mock-next" onclick={ next }>
                { if attempt.session.is_finished() { Text::MockResults.get(lang) } else { Text::MockNext.get(lang) } }
            </button>
        </div>
    }
}

/// "Lesson 03 · its title", and the step when one is named.
fn lesson_link_text(id: &str, step: Option<usize>, lang: Lang) -> String {
    let title = catalog::find(id)
        .map(|l| catalog::text(&l.title, lang).to_owned())
        .unwrap_or_default();
    match (step, lang) {
        (Some(s), Lang::En) => format!("▶ lesson {id}, step {s}: {title}"),
        (Some(s), Lang::Zh) => format!("▶ 第 {id} 课第 {s} 步：{title}"),
        (None, Lang::En) => format!("lesson {id}: {title}"),
        (None, Lang::Zh) => format!("第 {id} 课：{title}"),
    }
}

/// The end: per topic this time and over all interviews, and what to
/// revisit.
fn report(mock: &Mock, s: &MockSession, lang: Lang) -> Html {
    let record = load_mock();
    let revisit = s.revisit(mock);
    html! {
        <div class="mock-report" data-testid="mock-report">
            <h3>{ Text::MockScores.get(lang) }</h3>
            <table>
                <tr><th></th><th>{ Text::MockThisTime.get(lang) }</th><th>{ Text::MockAllTime.get(lang) }</th></tr>
                { for s.scores(mock).into_iter().map(|t| {
                    let title = mock.topic(&t.topic).map(|x| catalog::text(&x.title, lang).to_owned()).unwrap_or_default();
                    let all = record.topics.get(&t.topic).copied().unwrap_or_default();
                    html! { <tr data-testid="mock-topic" data-topic={ t.topic.clone() } data-right={ t.right.to_string() }
                        data-asked={ t.asked.to_string() }>
                        <td>{ title }</td><td>{ format!("{}/{}", t.right, t.asked) }</td><td>{ format!("{}/{}", all.0, all.1) }</td>
                    </tr> }
                }) }
            </table>
            if revisit.is_empty() {
                <p>{ Text::MockNothingToRevisit.get(lang) }</p>
            } else {
                <h3>{ Text::MockRevisit.get(lang) }</h3>
                <ul>{ for revisit.iter().map(|id| html! {
                    <li><a href={ format!("?lang={}&lesson={id}", lang.code()) } data-testid="mock-revisit" data-lesson={ id.clone() }>
                        { lesson_link_text(id, None, lang) }</a></li>
                }) }</ul>
            }
            if !s.missed().is_empty() {
                <p class="note">{ Text::MockMissedFirst.get(lang) }</p>
            }
        </div>
    }
}
