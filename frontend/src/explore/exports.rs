//! A counterexample explained and exported on the explore screen (issue 44
//! item 4): the "because" chain in the page's language, then the Mermaid
//! sequence diagram, the redis-cli script with its waits and the lesson
//! file, each to read in place or download. The texts are core's
//! (`explore::export`), made by the worker with the search, so they are
//! what `locklab explore --explain --export …` prints for the same design
//! and seed.

use locklab_core::explore::export::Exports;
use yew::prelude::*;

use crate::i18n::Lang;

/// `text` as a link the browser saves as a file: a `data:` URL, so no
/// object URL has to be made and freed.
fn data_url(text: &str) -> String {
    let encoded: String = web_sys::js_sys::encode_uri_component(text).into();
    format!("data:text/plain;charset=utf-8,{encoded}")
}

/// One export: a title with its download link, and the text when opened.
fn item(lang: Lang, testid: &'static str, title: &str, file: &'static str, text: &str) -> Html {
    html! {
        <details class="explore-export" data-testid={ testid }>
            <summary>
                <span>{ title.to_owned() }</span>
                <a class="explore-download" download={ file } href={ data_url(text) }
                    data-testid={ format!("{testid}-download") }>
                    { if lang == Lang::Zh { "下载" } else { "Download" } }
                </a>
            </summary>
            <pre class="explore-transcript">{ text.to_owned() }</pre>
        </details>
    }
}

/// The because chain and the three exports of a counterexample.
pub(super) fn exports_view(lang: Lang, ex: &Exports) -> Html {
    let zh = lang == Lang::Zh;
    let pick = |en: &'static str, zh_text: &'static str| if zh { zh_text } else { en };
    let because = if zh { &ex.because_zh } else { &ex.because_en };
    let lesson = match (&ex.lesson, &ex.lesson_error) {
        (Some(text), _) => item(
            lang,
            "explore-export-lesson",
            pick("Lesson file", "课程文件"),
            "counterexample.toml",
            text,
        ),
        (None, Some(e)) => {
            html! { <p class="explore-note">{ format!("{}: {e}", pick("No lesson file", "无法生成课程文件")) }</p> }
        }
        (None, None) => Html::default(),
    };
    html! {
        <section class="explore-exports" data-testid="explore-exports">
            <p class="explore-because" data-testid="explore-because">
                <strong>{ pick("Because: ", "因为：") }</strong>{ because.clone() }
            </p>
            { item(lang, "explore-export-mermaid", pick("Mermaid sequence diagram", "Mermaid 时序图"), "counterexample.mmd", &ex.mermaid) }
            { item(lang, "explore-export-cli", pick("redis-cli script, with its waits", "redis-cli 脚本（含等待）"), "counterexample.sh", &ex.cli) }
            { lesson }
        </section>
    }
}
