//! Presenter mode's caption: what the last step did, in type a room can
//! read — the command, its reply and the lesson's one-line explanation —
//! with the transport a clicker drives (PageDown/PageUp) and, at the end,
//! the next lesson. In a class, the class's chip and the question's live
//! chart ([`super::class`]); before one, "Start a class".

use yew::prelude::*;

use crate::catalog;
use crate::driver::LessonDriver;
use crate::i18n::{Lang, Text};
use crate::state::{AppContext, ClassAction, Transport};

#[derive(Properties, PartialEq)]
pub struct CaptionProps {
    pub onmove: Callback<Transport>,
    pub onnext: Callback<()>,
    pub ontheme: Callback<()>,
    pub onexit: Callback<()>,
    pub onclass: Callback<ClassAction>,
}

#[function_component(Caption)]
pub fn caption(props: &CaptionProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let (id, at) = (state.lesson.as_ref())
        .map(|s| {
            let s = s.borrow();
            (Some(s.lesson().id.clone()), s.position())
        })
        .unwrap_or((None, 0));
    crate::hooks::use_notes_sync(id, at, lang);
    let Some(session) = state.lesson.as_ref() else {
        return html! {
            <div class="caption" data-testid="caption">
                <p class="caption-explain">{ Text::PickLesson.get(lang) }</p>
            </div>
        };
    };
    let s = session.borrow();
    let l = s.lesson();
    let pos = s.position();
    let len = s.len();
    let current = pos.checked_sub(1);
    let explain = current
        .and_then(|i| l.steps[i].explain.as_ref())
        .map(|t| catalog::text(t, lang).to_owned());
    let first_line = explain.map(|e| lead_sentence(&e));
    let finished = pos == len;
    let next_exists = {
        let all = catalog::all();
        all.iter().position(|x| x.id == l.id).is_some_and(|i| i + 1 < all.len())
    };
    let mv = |t: Transport| {
        let onmove = props.onmove.clone();
        Callback::from(move |_: MouseEvent| onmove.emit(t))
    };
    html! {
        <div class="caption" data-testid="caption" aria-live="polite">
            // The counter and the buttons share the first row, so a long
            // command or sentence below gets the caption's whole width.
            <div class="caption-head">
                <span class="caption-n">{ format!("{} {pos} / {len}", Text::Steps.get(lang)) }</span>
                <div class="caption-keys">
                    <button class="quiet step-keys" data-testid="present-back" onclick={ mv(Transport::Back) }>{ "◀" }</button>
                    <button class="quiet step-keys" data-testid="present-forward" onclick={ mv(Transport::Forward) }>{ "▶" }</button>
                    if finished && next_exists {
                        <button class="next-lesson" data-testid="next-lesson" onclick={ props.onnext.reform(|_| ()) }>
                            { Text::NextLesson.get(lang) }
                        </button>
                    }
                    <span class="caption-hint">{ Text::PresentHint.get(lang) }</span>
                    { class_key(&state, &props.onclass) }
                    <button class="quiet" data-testid="notes-open" onclick={ open_notes(lang) }>{ Text::NotesOpen.get(lang) }</button>
                    <button class="quiet" data-testid="theme" onclick={ props.ontheme.reform(|_| ()) }>{ Text::Theme.get(lang) }</button>
                    <button class="quiet" data-testid="present-exit" onclick={ props.onexit.reform(|_| ()) }>{ Text::PresentExit.get(lang) }</button>
                </div>
            </div>
            <div class="caption-step">
                if let Some(i) = current {
                    { step_row(&*s, i, lang) }
                } else {
                    <span class="caption-cmd muted">{ catalog::text(&l.title, lang) }</span>
                }
            </div>
            if let Some(e) = first_line {
                <p class="caption-explain" data-testid="caption-explain">{ e }</p>
            }
            if let Some(c) = state.class.as_ref().filter(|c| c.borrow().is_presenter()) {
                { super::class::presenter_question(&state, &c.borrow(), &props.onclass) }
            }
        </div>
    }
}

/// "Start a class"; in one, its code and how many joined (which shows or
/// hides the class panel). A follower's page has neither.
fn class_key(state: &AppContext, onclass: &Callback<ClassAction>) -> Html {
    let lang = state.lang;
    let (label, action, testid) = match state.class.as_ref().map(|c| c.borrow()) {
        None => (Text::ClassStart.get(lang).to_owned(), ClassAction::Start, "class-start"),
        Some(c) if c.is_presenter() => {
            let code = c.code().map(|c| c.to_string()).unwrap_or_default();
            (
                format!("{code} · {}", c.joined()),
                ClassAction::TogglePanel,
                "class-toggle",
            )
        }
        Some(_) => return html! {},
    };
    let onclass = onclass.clone();
    html! { <button class="quiet class-key" data-testid={ testid } onclick={ move |_| onclass.emit(action.clone()) }>{ label }</button> }
}

/// Open the notes window (or bring the open one to this lesson: it
/// follows the presenter over [`crate::notes::CHANNEL`]).
fn open_notes(lang: Lang) -> Callback<MouseEvent> {
    Callback::from(move |_: MouseEvent| {
        if let Some(w) = web_sys::window() {
            let url = format!("?notes=1&lang={}", lang.code());
            let _ = w.open_with_url_and_target_and_features(&url, "locklab-notes", "popup,width=760,height=680");
        }
    })
}

/// Step `i` as the caption shows it: who, what, and the answer.
fn step_row(s: &dyn LessonDriver, i: usize, lang: Lang) -> Html {
    let l = s.lesson();
    let step = &l.steps[i];
    let cmd = s.step_text(i, lang);
    let typed = step.cmd.is_some();
    let reply = s.results().get(i).and_then(|r| catalog::reply_text(l, r, lang));
    html! {
        <>
            if let Some(a) = step.client.clone() {
                <span class="caption-actor">{ a }</span>
            }
            if typed {
                <code class="caption-cmd" data-testid="caption-command">{ cmd }</code>
            } else if step.say.is_some() || cmd.len() > LONG_SAY {
                // Narration as prose, its lists as lists; a long one (an
                // exercise's question too) in the regular weight, which
                // reads as text rather than as a wall of bold.
                <div class={ classes!("caption-say", "prose", (cmd.len() > LONG_SAY).then_some("long")) }
                    data-testid="caption-command">
                    { crate::markdown::render(&cmd) }
                </div>
            } else {
                <span class="caption-say" data-testid="caption-command">{ cmd }</span>
            }
            if let Some(r) = reply {
                <span class="caption-arrow">{ "→" }</span>
                // Redis's answer to a command is set as redis-cli prints
                // it; the lab's own words (a metrics step's figures, a
                // write's verdict) are prose, narrower than in a monospace
                // face (lesson 18's figures fit one line at 1280 px).
                if typed {
                    <code class="caption-reply" data-testid="caption-reply">{ r }</code>
                } else {
                    <span class="caption-reply caption-words" data-testid="caption-reply">{ r }</span>
                }
            }
        </>
    }
}

/// Bytes past which a narration step is set in the regular weight: about
/// two lines of the caption at 1280 px (a Chinese character is three).
const LONG_SAY: usize = 200;

/// The first sentence of an explanation, for the caption: a lesson file
/// wraps its text at about 100 columns, so its first *line* can stop in
/// the middle of a sentence ("… pausing. What"). Lines of the first
/// paragraph are joined (with a space between Latin words, with nothing
/// between Chinese ones) and cut after the first full stop.
fn lead_sentence(text: &str) -> String {
    let mut joined = String::new();
    for line in text.trim().lines().map(str::trim).take_while(|l| !l.is_empty()) {
        let cjk = |c: Option<char>| c.is_some_and(|c| c >= '\u{2e80}');
        let between_chinese = cjk(joined.chars().last()) && cjk(line.chars().next());
        if !joined.is_empty() && !between_chinese {
            joined.push(' ');
        }
        joined.push_str(line);
    }
    let mut chars = joined.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = match c {
            '。' | '！' | '？' => true,
            '.' => next.is_none_or(char::is_whitespace) && !abbreviation(&joined[..i]),
            '!' | '?' => next.is_none_or(char::is_whitespace),
            _ => false,
        };
        if ends {
            return joined[..i + c.len_utf8()].to_owned();
        }
    }
    joined
}

/// Does the text before a full stop end in an abbreviation ("e.g",
/// "i.e", "vs", "etc") rather than a sentence?
fn abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default();
    word.contains('.') || ["vs", "etc", "cf"].contains(&word)
}

#[cfg(test)]
mod tests {
    use super::lead_sentence;

    #[test]
    fn the_caption_takes_the_first_sentence_not_the_first_wrapped_line() {
        let en = "A TTL, a lease and a session are all leases, and consensus cannot stop the holder from pausing. What\nprotects the resource is a number.\n";
        assert_eq!(
            lead_sentence(en),
            "A TTL, a lease and a session are all leases, and consensus cannot stop the holder from pausing."
        );
        let zh = "TTL、lease、session 本质上都是租约，共识挡不住持锁进程停顿。真正把资源保护住的，\n是随锁发放的号。";
        assert_eq!(
            lead_sentence(zh),
            "TTL、lease、session 本质上都是租约，共识挡不住持锁进程停顿。"
        );
        assert_eq!(lead_sentence("第一行，\n第二行没有句号"), "第一行，第二行没有句号");
        assert_eq!(
            lead_sentence("SET k v PX 30000 (30 s, e.g. 3.5 ms)\nwraps here."),
            "SET k v PX 30000 (30 s, e.g. 3.5 ms) wraps here."
        );
        assert_eq!(lead_sentence("One.\n\nTwo."), "One.");
    }
}
