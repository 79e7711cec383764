//! Class mode's views: the presenter's class panel (the code, the join
//! URL and its QR code, who joined), the question's live chart in the
//! caption, a follower's bar (following or looking around, the question
//! with big answer buttons, the reveal, its score), the start page's
//! "Join a class" form, and the summary with its downloads.
//!
//! Everything a follower typed (a nickname) is shown as text; the QR code
//! is the server's SVG as an image (`data:` URL), which runs nothing.

use locklab_core::class::{Answer, ClassCode, Question, Summary, Tally};
use web_sys::HtmlInputElement;
use yew::prelude::*;

use crate::catalog;
use crate::class::{share, Ask, Class, DrillBoard, FollowerDrill};
use crate::driver::real::SocketState;
use crate::i18n::{Lang, Text};
use crate::state::{AppContext, ClassAction};

#[derive(Properties, PartialEq)]
pub struct ClassProps {
    pub onclass: Callback<ClassAction>,
}

fn act(onclass: &Callback<ClassAction>, a: ClassAction) -> Callback<MouseEvent> {
    let onclass = onclass.clone();
    Callback::from(move |_| onclass.emit(a.clone()))
}

/// The link's state, when it is not simply open.
fn link_note(c: &Class, lang: Lang) -> Option<String> {
    match &c.link {
        SocketState::Open => None,
        SocketState::Connecting { .. } => Some(Text::ClassConnecting.get(lang).to_owned()),
        SocketState::Lost { attempt, .. } => {
            let secs = crate::class::rejoin_delay_ms(*attempt) / 1000;
            Some(Text::ClassLost.get(lang).replace("{}", &secs.to_string()))
        }
    }
}

/// The quiz of `q`'s step: the question and the choices, in `lang`.
fn quiz_of(q: &Question, lang: Lang) -> Option<(String, Vec<String>)> {
    let quiz = catalog::find(&q.lesson)?.steps.get(q.step)?.quiz.as_ref()?;
    Some((
        quiz.question(lang).to_owned(),
        quiz.choices_in(lang).into_iter().map(str::to_owned).collect(),
    ))
}

/// The distribution as bars, "N of M answered"; the right choice marked
/// once it is known (for a typed answer the bars are right and wrong).
pub fn tally_chart(q: &Question, t: &Tally, right: Option<usize>, lang: Lang) -> Html {
    let labels = match quiz_of(q, lang) {
        Some((_, c)) if !c.is_empty() => c,
        _ => vec![
            Text::ClassRight.get(lang).to_owned(),
            Text::ClassWrong.get(lang).to_owned(),
        ],
    };
    let answered = Text::ClassAnsweredOf
        .get(lang)
        .replace("{n}", &t.answered.to_string())
        .replace("{m}", &t.of.to_string());
    html! {
        <div class="tally" data-testid="tally" data-answered={ t.answered.to_string() } data-of={ t.of.to_string() }>
            <p class="tally-n" data-testid="tally-answered">{ answered }</p>
            { for labels.iter().enumerate().map(|(i, label)| {
                let n = t.counts.get(i).copied().unwrap_or(0);
                let pct = share(n, t.answered);
                let is_right = right == Some(i);
                html! {
                    <div class={ classes!("tally-row", is_right.then_some("right")) } data-testid="tally-bar"
                        data-count={ n.to_string() }>
                        <span class="tally-label">{ label.clone() }</span>
                        <span class="tally-track"><span class="tally-fill" style={ format!("width:{pct}%") } /></span>
                        <span class="tally-count">{ format!("{n} · {pct}%") }</span>
                    </div>
                }
            }) }
        </div>
    }
}

/// The bar to mark as right after the reveal: the right choice, or for
/// a typed answer the "right" bar.
fn revealed_right(q: &Question, right_choice: Option<usize>) -> Option<usize> {
    right_choice.or((q.choices == 0).then_some(0))
}

/// The presenter's buttons and chart in the caption: ask the step about
/// to run's quiz, the live answers, reveal.
pub fn presenter_question(state: &AppContext, c: &Class, onclass: &Callback<ClassAction>) -> Html {
    let lang = state.lang;
    let asks_next = state.lesson.as_ref().is_some_and(|d| {
        let s = d.borrow();
        s.lesson().steps.get(s.position()).is_some_and(|st| st.quiz.is_some())
    });
    let ask_button = html! {
        <button class="class-ask" data-testid="class-ask" onclick={ act(onclass, ClassAction::Ask) }>
            { Text::ClassAsk.get(lang) }
        </button>
    };
    match &c.ask {
        Some(Ask::Revealed {
            question,
            tally,
            right_choice,
            ..
        }) => html! {
            <div class="class-question" data-testid="class-revealed">
                { tally_chart(question, tally, revealed_right(question, *right_choice), lang) }
                if asks_next { { ask_button } }
            </div>
        },
        Some(a) => {
            let q = a.question();
            let empty = Tally {
                question: q.id,
                counts: vec![0; q.choices.max(2)],
                ..Tally::default()
            };
            let question = quiz_of(q, lang).map(|(text, _)| text).unwrap_or_default();
            html! {
                <div class="class-question" data-testid="class-asked">
                    <p class="class-q">{ question }</p>
                    { tally_chart(q, c.tally.as_ref().unwrap_or(&empty), None, lang) }
                    if !c.answered_by.is_empty() {
                        <p class="class-answered-by muted" data-testid="class-answered-by">
                            { format!("{}{}", Text::ClassAnsweredBy.get(lang), c.answered_by.join(", ")) }
                        </p>
                    }
                    <button class="class-reveal" data-testid="class-reveal" onclick={ act(onclass, ClassAction::Reveal) }>
                        { Text::ClassReveal.get(lang) }
                    </button>
                </div>
            }
        }
        None if asks_next => ask_button,
        None => html! {},
    }
}

/// A drill's design as the room reads it: a built-in design by its
/// name, the trainer's own text as such.
fn design_name(design: &str, lang: Lang) -> String {
    if design.starts_with(&format!("{}.", locklab_core::explore::link::VERSION)) {
        Text::ClassDrillOwn.get(lang).to_owned()
    } else {
        design.to_owned()
    }
}

/// The presenter's view of the drill pushed last: how many searched, how
/// many found a counterexample, and who (names as text).
fn drill_board(b: &DrillBoard, lang: Lang) -> Html {
    let line = Text::ClassDrillBoard
        .get(lang)
        .replace("{d}", &design_name(&b.design, lang))
        .replace("{n}", &b.reported.to_string())
        .replace("{m}", &b.of.to_string())
        .replace("{k}", &b.found.len().to_string());
    html! {
        <div class="drill-board" data-testid="drill-board" data-reported={ b.reported.to_string() }
            data-of={ b.of.to_string() } data-found={ b.found.len().to_string() }>
            <p class="drill-board-line">{ line }</p>
            if !b.found.is_empty() {
                <p class="drill-found-by muted" data-testid="drill-found-by">
                    { format!("{}{}", Text::ClassDrillFoundBy.get(lang), b.found.join(", ")) }
                </p>
            }
        </div>
    }
}

/// The presenter's drill board above the explore screen (where the
/// presenter pushes drills from).
#[function_component(DrillBoardView)]
pub fn drill_board_view() -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let board = state.class.as_ref().and_then(|c| c.borrow().board.clone());
    board.map(|b| drill_board(&b, state.lang)).unwrap_or_default()
}

/// A follower's drill card: what the trainer asks, "take the drill",
/// then what this page's explorer found.
fn drill_card(d: &FollowerDrill, onclass: &Callback<ClassAction>, lang: Lang) -> Html {
    let ask = Text::ClassDrillAsk
        .get(lang)
        .replace("{}", &design_name(&d.drill.design, lang));
    let (state, result) = match d.result {
        None => ("open", None),
        Some((true, n)) => (
            "found",
            Some(Text::ClassDrillFound.get(lang).replace("{}", &n.to_string())),
        ),
        Some((false, n)) => (
            "held",
            Some(Text::ClassDrillHeld.get(lang).replace("{}", &n.to_string())),
        ),
    };
    html! {
        <div class="drill-card" data-testid="drill-card" data-drill={ d.drill.id.to_string() } data-state={ state }>
            <p class="drill-title">{ Text::ClassDrillTitle.get(lang) }</p>
            <p>{ ask }</p>
            if let Some(r) = result {
                <p class="drill-result" data-testid="drill-result">{ r }</p>
            } else {
                <button class="answer drill-take" data-testid="drill-take" onclick={ act(onclass, ClassAction::TakeDrill) }>
                    { Text::ClassDrillTake.get(lang) }
                </button>
            }
        </div>
    }
}

/// The presenter's class panel: the code big, the join URL and its QR
/// code, how many joined, and the end of the class.
#[function_component(PresenterPanel)]
pub fn presenter_panel(props: &ClassProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let Some(class) = state.class.as_ref() else {
        return html! {};
    };
    let c = class.borrow();
    let crate::class::ClassRole::Presenter { join_url, .. } = &c.role else {
        return html! {};
    };
    let code = c.code().map(ClassCode::to_string).unwrap_or_else(|| "······".into());
    let qr =
        (!c.qr_svg.is_empty()).then(|| format!("data:image/svg+xml;charset=utf-8,{}", crate::query::escape(&c.qr_svg)));
    let joined = c.joined();
    html! {
        <aside class="class-panel" data-testid="class-panel">
            <div class="class-panel-text">
                <p class="k">{ Text::ClassJoinAt.get(lang) }</p>
                <p class="class-code" data-testid="class-code">{ code }</p>
                <p class="class-url" data-testid="class-url">{ join_url.clone() }</p>
                <p class="class-joined" data-testid="class-joined" data-count={ joined.to_string() }>
                    { Text::ClassJoined.get(lang).replace("{}", &joined.to_string()) }
                </p>
                if let Some(n) = link_note(&c, lang) {
                    <p class="muted" data-testid="class-link">{ n }</p>
                }
                if let Some(e) = &c.error {
                    <p class="error" data-testid="class-error">{ e.clone() }</p>
                }
                if let Some(b) = &c.board {
                    { drill_board(b, lang) }
                }
                <div class="class-panel-keys">
                    <button class="quiet" data-testid="class-hide" onclick={ act(&props.onclass, ClassAction::TogglePanel) }>
                        { Text::ClassHide.get(lang) }
                    </button>
                    <button data-testid="class-drill" onclick={ act(&props.onclass, ClassAction::PickDrill) }>
                        { Text::ClassDrillPick.get(lang) }
                    </button>
                    <button class="danger" data-testid="class-end" onclick={ act(&props.onclass, ClassAction::End) }>
                        { Text::ClassEnd.get(lang) }
                    </button>
                </div>
            </div>
            if let Some(src) = qr {
                <img class="class-qr" data-testid="class-qr" {src} alt={ Text::ClassJoinAt.get(lang) } />
            }
        </aside>
    }
}

/// A follower's bar: the class, following or looking around (and the way
/// back), the score, and the open question.
#[function_component(FollowerBar)]
pub fn follower_bar(props: &ClassProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let draft = use_state(String::new);
    let Some(class) = state.class.as_ref() else {
        return html! {};
    };
    let c = class.borrow();
    if c.is_presenter() {
        return html! {};
    }
    let code = c.code().map(ClassCode::to_string).unwrap_or_default();
    html! {
        <section class="follower" data-testid="follower" data-following={ c.following.to_string() }>
            <div class="follower-head">
                <span class="follower-code">{ format!("{} {code}", Text::ClassTitle.get(lang)) }</span>
                if c.following {
                    <span class="badge ok" data-testid="following">{ Text::ClassFollowing.get(lang) }</span>
                } else {
                    <button class="follow-again" data-testid="follow-again"
                        onclick={ act(&props.onclass, ClassAction::FollowAgain) }>{ Text::ClassFollowAgain.get(lang) }</button>
                }
                <span class="class-score" data-testid="class-score" data-score={ c.score.to_string() }>
                    { format!("{} {}", Text::ClassScore.get(lang), c.score) }
                </span>
                if let Some(n) = link_note(&c, lang) {
                    <span class="muted" data-testid="class-link">{ n }</span>
                }
            </div>
            if let Some(e) = &c.error {
                <p class="error" data-testid="class-error">{ e.clone() }</p>
            }
            if c.shows_live() {
                <p class="muted" data-testid="class-live">{ Text::ClassLive.get(lang) }</p>
            }
            if let Some(d) = &c.drill {
                { drill_card(d, &props.onclass, lang) }
            }
            if let Some(a) = &c.ask {
                { follower_question(a, c.choice_seed(), &draft, &props.onclass, lang) }
            }
        </section>
    }
}

/// The question on a follower's screen: big answer buttons in this
/// follower's order (`seed`, [`crate::class::Class::choice_seed`]), or a
/// field for a typed answer; then "recorded", then the reveal.
// long: one html! arm per state of the question (open, answered, revealed)
fn follower_question(
    a: &Ask,
    seed: u64,
    draft: &UseStateHandle<String>,
    onclass: &Callback<ClassAction>,
    lang: Lang,
) -> Html {
    let q = a.question();
    let (text, choices) = quiz_of(q, lang).unwrap_or_default();
    let order = (catalog::find(&q.lesson).and_then(|l| l.steps.get(q.step)?.quiz.as_ref()))
        .map_or_else(Vec::new, |quiz| quiz.choice_order(seed, q.step));
    let body = match a {
        Ask::Open(_) if choices.is_empty() => {
            let oninput = {
                let draft = draft.clone();
                Callback::from(move |e: InputEvent| draft.set(e.target_unchecked_into::<HtmlInputElement>().value()))
            };
            let onsubmit = {
                let (draft, onclass) = (draft.clone(), onclass.clone());
                Callback::from(move |e: SubmitEvent| {
                    e.prevent_default();
                    if !draft.trim().is_empty() {
                        onclass.emit(ClassAction::Answer(Answer::Text((*draft).clone())));
                    }
                })
            };
            html! {
                <form class="answer-text" {onsubmit}>
                    <input type="text" data-testid="answer-input" value={ (**draft).clone() } {oninput}
                        maxlength={ locklab_core::class::ANSWER_MAX_CHARS.to_string() } autocomplete="off" />
                    <button type="submit" class="answer" data-testid="answer-submit">{ Text::Check.get(lang) }</button>
                </form>
            }
        }
        Ask::Open(_) => html! {
            <div class="answers">
                { for order.iter().filter_map(|&i| Some((i, choices.get(i)?))).map(|(i, label)| html! {
                    <button class="answer" data-testid="answer-choice" data-index={ i.to_string() }
                        onclick={ act(onclass, ClassAction::Answer(Answer::Choice(i))) }>{ label.clone() }</button>
                }) }
            </div>
        },
        Ask::Answered(..) => {
            html! { <p class="answer-sent" data-testid="answer-sent">{ Text::ClassAnswerSent.get(lang) }</p> }
        }
        Ask::Revealed {
            tally,
            right_choice,
            mine,
            right,
            ..
        } => {
            let answer = right_choice.and_then(|i| choices.get(i).cloned()).or_else(|| {
                let st = catalog::find(&q.lesson)?.steps.get(q.step)?;
                st.quiz.as_ref()?.answer_in(lang).map(str::to_owned)
            });
            let verdict = match right {
                Some(true) => Some(("right", Text::ClassRight)),
                Some(false) => Some(("wrong", Text::ClassWrong)),
                None => None,
            };
            html! {
                <div class="revealed" data-testid="answer-revealed">
                    if let Some(a) = answer {
                        <p class="answer-is">{ format!("{}{a}", Text::ClassAnswerIs.get(lang)) }</p>
                    }
                    if let (Some((class, t)), Some(_)) = (verdict, mine) {
                        <p class={ classes!("verdict", class) } data-testid="answer-verdict" data-right={ class }>{ t.get(lang) }</p>
                    }
                    { tally_chart(q, tally, revealed_right(q, *right_choice), lang) }
                </div>
            }
        }
    };
    html! {
        <div class="class-question follower-question" data-testid="class-question" data-question={ q.id.to_string() }>
            <p class="class-q">{ text }</p>
            { body }
        </div>
    }
}

/// The start page's "Join a class": the 6-character code and a nickname.
#[function_component(JoinClass)]
pub fn join_class(props: &ClassProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let code = use_node_ref();
    let name = use_node_ref();
    let bad = use_state(|| false);
    let onsubmit = {
        let (code, name, bad, onclass) = (code.clone(), name.clone(), bad.clone(), props.onclass.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let value = |r: &NodeRef| r.cast::<HtmlInputElement>().map(|i| i.value()).unwrap_or_default();
            match ClassCode::parse(&value(&code)) {
                Ok(code) => {
                    let n = value(&name);
                    onclass.emit(ClassAction::Join {
                        code,
                        name: (!n.trim().is_empty()).then_some(n),
                    });
                }
                Err(_) => bad.set(true),
            }
        })
    };
    html! {
        <form class="join-class" data-testid="join-class" {onsubmit}>
            <h2>{ Text::ClassJoinTitle.get(lang) }</h2>
            <input ref={ code } data-testid="join-code" placeholder={ Text::ClassCodeLabel.get(lang) }
                aria-label={ Text::ClassCodeLabel.get(lang) } maxlength="9" autocomplete="off" autocapitalize="characters" />
            <input ref={ name } data-testid="join-name" placeholder={ Text::ClassNameLabel.get(lang) }
                aria-label={ Text::ClassNameLabel.get(lang) } maxlength={ locklab_core::class::NAME_MAX_CHARS.to_string() } />
            <button type="submit" data-testid="join-submit">{ Text::ClassJoin.get(lang) }</button>
            if *bad {
                <p class="error" data-testid="join-bad">{ Text::ClassBadCode.get(lang) }</p>
            }
        </form>
    }
}

/// A text as a download link's `data:` URL.
fn data_url(mime: &str, text: &str) -> String {
    format!("data:{mime};charset=utf-8,{}", crate::query::escape(text))
}

/// The class's summary (both roles see the same), with CSV and Markdown.
pub fn summary_box(s: &Summary, lang: Lang, onclass: &Callback<ClassAction>) -> Html {
    let md = s.to_markdown(lang);
    html! {
        <div class="overlay class-summary" data-testid="class-summary" role="dialog">
            <div class="card">
                <h2>{ format!("{} {}", Text::ClassSummary.get(lang), s.code) }</h2>
                <table>
                    <tbody>
                    { for s.questions.iter().map(|q| html! {
                        <tr data-testid="summary-question">
                            <td>{ format!("{} · {}", q.question.lesson, q.question.step + 1) }</td>
                            <td>{ format!("{}/{}", q.tally.answered, q.tally.of) }</td>
                            <td>{ format!("{}%", share(q.tally.right, q.tally.answered)) }</td>
                        </tr>
                    }) }
                    { for s.members.iter().map(|m| html! {
                        <tr data-testid="summary-member">
                            <td colspan="2">{ m.shown().to_owned() }</td>
                            <td>{ m.score }</td>
                        </tr>
                    }) }
                    </tbody>
                </table>
                <p class="downloads">
                    <a data-testid="summary-csv" download={ format!("class-{}.csv", s.code) }
                        href={ data_url("text/csv", &s.to_csv()) }>{ Text::ClassDownloadCsv.get(lang) }</a>
                    <a data-testid="summary-md" download={ format!("class-{}.md", s.code) }
                        href={ data_url("text/markdown", &md) }>{ Text::ClassDownloadMd.get(lang) }</a>
                </p>
                <button data-testid="summary-close" onclick={ act(onclass, ClassAction::Leave) }>{ Text::ClassClose.get(lang) }</button>
            </div>
        </div>
    }
}
