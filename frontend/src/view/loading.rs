//! What the page shows before the lab: the lesson catalogue is a separate
//! file (so the wasm carries neither the lessons nor a parser for their
//! TOML), fetched first. While it comes the page says so; if it cannot be
//! had, the page says what failed instead of showing an empty lab. The lab
//! mounts only once the lessons are in, so a `?lesson=05` URL finds its
//! lesson and nothing else has to wait for them.

use yew::prelude::*;

use crate::catalog;
use crate::i18n::{Lang, Text};
use crate::query::Query;
use crate::view::app::App;

#[derive(Clone, PartialEq)]
enum Catalogue {
    Loading,
    Failed(String),
    Ready,
}

/// The language the lab will open in (the URL's, else the browser's).
fn page_lang() -> Lang {
    let (query, browser) = Query::from_page();
    query.lang.or(browser).unwrap_or_default()
}

/// Is this window presenter mode's notes window (`?notes=1`)?
fn notes_window() -> bool {
    let search = web_sys::window().and_then(|w| w.location().search().ok());
    Query::parse(&search.unwrap_or_default()).notes
}

#[function_component(Loading)]
pub fn loading() -> Html {
    if notes_window() {
        return html! { <crate::view::notes::NotesWindow lang={ page_lang() } /> };
    }
    html! { <Lab /> }
}

/// The lab, once the lessons are in.
#[function_component(Lab)]
fn lab() -> Html {
    let catalogue = use_state(|| Catalogue::Loading);
    {
        let catalogue = catalogue.clone();
        use_effect_with((), move |_| {
            wasm_bindgen_futures::spawn_local(async move {
                match catalog::fetch().await {
                    Ok(lessons) => {
                        catalog::install(lessons);
                        catalogue.set(Catalogue::Ready);
                    }
                    Err(e) => catalogue.set(Catalogue::Failed(e)),
                }
            });
        });
    }
    let lang = page_lang();
    match &*catalogue {
        Catalogue::Ready => html! { <App /> },
        Catalogue::Loading => html! {
            <p class="page-status" data-testid="loading" aria-busy="true">{ Text::LessonsLoading.get(lang) }</p>
        },
        Catalogue::Failed(e) => html! {
            <div class="page-status error" role="alert" data-testid="load-error">
                <p><strong>{ Text::LessonsFailed.get(lang) }</strong></p>
                <p><code>{ e }</code></p>
                <p>{ Text::LessonsReload.get(lang) }</p>
            </div>
        },
    }
}
