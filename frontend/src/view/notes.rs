//! Presenter mode's notes window (`?notes=1`, opened from the caption):
//! the trainer's notes for where the presenter is ([`crate::notes`]), on
//! the trainer's own screen, never on the projected page.

use std::rc::Rc;

use locklab_core::lesson::notes::LessonNotes;
use wasm_bindgen::prelude::*;
use yew::prelude::*;

use crate::catalog;
use crate::i18n::{Lang, Text};
use crate::notes::{at, Sync, CHANNEL};

#[derive(Clone, PartialEq)]
enum Loaded {
    Loading,
    Failed(String),
    Ready(Rc<Vec<LessonNotes>>),
}

#[derive(Properties, PartialEq)]
pub struct NotesProps {
    /// The language until the presenter says its own.
    pub lang: Lang,
}

#[function_component(NotesWindow)]
pub fn notes_window(props: &NotesProps) -> Html {
    let loaded = use_state(|| Loaded::Loading);
    let where_ = use_state(|| None::<(String, usize, Lang)>);
    {
        let loaded = loaded.clone();
        use_effect_with((), move |_| {
            wasm_bindgen_futures::spawn_local(async move {
                let got = crate::socket::fetch_text("/api/notes").await.and_then(|text| {
                    serde_json::from_str::<Vec<LessonNotes>>(&text).map_err(|e| format!("/api/notes: {e}"))
                });
                loaded.set(match got {
                    Ok(all) => Loaded::Ready(Rc::new(all)),
                    Err(e) => Loaded::Failed(e),
                });
            });
        });
    }
    {
        let where_ = where_.clone();
        use_effect_with((), move |_| {
            let channel = web_sys::BroadcastChannel::new(CHANNEL).ok();
            let onmessage = Closure::<dyn FnMut(_)>::new(move |e: web_sys::MessageEvent| {
                if let Some(Sync::At { lesson, step, lang }) = e.data().as_string().and_then(|l| Sync::parse(&l)) {
                    where_.set(Some((lesson, step, lang)));
                }
            });
            if let Some(ch) = &channel {
                ch.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
                let _ = ch.post_message(&JsValue::from_str(&Sync::Hello.to_line()));
            }
            move || {
                if let Some(ch) = channel {
                    ch.set_onmessage(None);
                    ch.close();
                }
                drop(onmessage);
            }
        });
    }
    let lang = where_.as_ref().map_or(props.lang, |w| w.2);
    let body = body(&loaded, where_.as_ref(), lang);
    html! {
        <main class="notes-window" lang={ lang.code() } data-testid="notes-window">
            <header><strong>{ Text::NotesTitle.get(lang) }</strong></header>
            { body }
        </main>
    }
}

/// What the window shows below its header: the notes for where the
/// presenter is, or why there are none yet.
fn body(loaded: &Loaded, place: Option<&(String, usize, Lang)>, lang: Lang) -> Html {
    let t = |x: &locklab_core::lesson::Bilingual| catalog::text(x, lang).trim().to_owned();
    match (loaded, place) {
        (Loaded::Loading, _) => html! { <p class="muted">{ Text::LessonsLoading.get(lang) }</p> },
        (Loaded::Failed(e), _) => html! {
            <div role="alert" data-testid="notes-error">
                <p>{ Text::NotesFailed.get(lang) }</p>
                <p><code>{ e }</code></p>
            </div>
        },
        (Loaded::Ready(_), None) => {
            html! { <p class="muted" data-testid="notes-waiting">{ Text::NotesWaiting.get(lang) }</p> }
        }
        (Loaded::Ready(all), Some((lesson, step, _))) => {
            let a = at(all, lesson, *step);
            let step_head = |n: usize| Text::NotesStep.get(lang).replace("{}", &n.to_string());
            html! {
                <>
                    <h2 data-testid="notes-lesson">
                        { format!("{lesson} · ") }{ a.title.map(&t).unwrap_or_default() }
                        <span class="notes-at">{ step_head(*step) }</span>
                    </h2>
                    if let Some((n, x)) = a.current {
                        <section class="notes-step current" data-testid="notes-current">
                            <h3>{ step_head(n) }</h3>
                            <div class="prose">{ crate::markdown::render(&t(x)) }</div>
                        </section>
                    }
                    if let Some(x) = a.lesson {
                        <section class="notes-lesson" data-testid="notes-body">
                            <div class="prose">{ crate::markdown::render(&t(x)) }</div>
                        </section>
                    } else {
                        <p class="muted" data-testid="notes-none">{ Text::NotesNone.get(lang) }</p>
                    }
                    if let Some((n, x)) = a.upcoming {
                        <section class="notes-step upcoming" data-testid="notes-upcoming">
                            <h3>{ Text::NotesNext.get(lang) }{ " " }{ step_head(n) }</h3>
                            <div class="prose">{ crate::markdown::render(&t(x)) }</div>
                        </section>
                    }
                </>
            }
        }
    }
}
