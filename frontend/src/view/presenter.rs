//! Presenter mode's caption: what the last step did, in type a room can
//! read — the command, its reply and the lesson's one-line explanation —
//! with the transport a clicker drives (PageDown/PageUp) and, at the end,
//! the next lesson.

use yew::prelude::*;

use crate::catalog;
use crate::i18n::Text;
use crate::state::{AppContext, Transport};

#[derive(Properties, PartialEq)]
pub struct CaptionProps {
    pub onmove: Callback<Transport>,
    pub onnext: Callback<()>,
    pub ontheme: Callback<()>,
    pub onexit: Callback<()>,
}

#[function_component(Caption)]
pub fn caption(props: &CaptionProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let Some(session) = state.session.as_ref() else {
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
    let command = current.map(|i| s.step_text(i, lang));
    let actor = current.and_then(|i| l.steps[i].client.clone());
    let reply = current.and_then(|i| s.results().get(i).and_then(|r| r.reply.clone()));
    let explain = current
        .and_then(|i| l.steps[i].explain.as_ref())
        .map(|t| catalog::text(t, lang).to_owned());
    let first_line = explain.map(|e| e.lines().next().unwrap_or_default().to_owned());
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
            <div class="caption-step">
                <span class="caption-n">{ format!("{} {pos} / {len}", Text::Steps.get(lang)) }</span>
                if let Some(cmd) = command {
                    if let Some(a) = actor {
                        <span class="caption-actor">{ a }</span>
                    }
                    if current.is_some_and(|i| l.steps[i].cmd.is_some()) {
                        <code class="caption-cmd" data-testid="caption-command">{ cmd }</code>
                    } else {
                        <span class="caption-say" data-testid="caption-command">{ cmd }</span>
                    }
                    if let Some(r) = reply {
                        <span class="caption-arrow">{ "→" }</span>
                        <code class="caption-reply" data-testid="caption-reply">{ r }</code>
                    }
                } else {
                    <span class="caption-cmd muted">{ catalog::text(&l.title, lang) }</span>
                }
            </div>
            if let Some(e) = first_line {
                <p class="caption-explain" data-testid="caption-explain">{ e }</p>
            }
            <div class="caption-keys">
                <button class="quiet step-keys" data-testid="present-back" onclick={ mv(Transport::Back) }>{ "◀" }</button>
                <button class="quiet step-keys" data-testid="present-forward" onclick={ mv(Transport::Forward) }>{ "▶" }</button>
                if finished && next_exists {
                    <button class="next-lesson" data-testid="next-lesson" onclick={ props.onnext.reform(|_| ()) }>
                        { Text::NextLesson.get(lang) }
                    </button>
                }
                <span class="caption-hint">{ Text::PresentHint.get(lang) }</span>
                <button class="quiet" data-testid="theme" onclick={ props.ontheme.reform(|_| ()) }>{ Text::Theme.get(lang) }</button>
                <button class="quiet" data-testid="present-exit" onclick={ props.onexit.reform(|_| ()) }>{ Text::PresentExit.get(lang) }</button>
            </div>
        </div>
    }
}
