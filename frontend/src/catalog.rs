//! The lesson list, from the lesson files themselves.
//!
//! In the browser the `lessons/*.toml` files arrive as one JSON file that
//! `cargo xtask dist` (or Trunk's hook) writes from core's checked catalogue
//! and the page links as `<link id="locklab-lessons">`; [`fetch`] loads it
//! before the app mounts (`view::loading`). Natively (the unit tests) the
//! catalogue is core's embedded lesson files. This module keeps the lessons
//! for the page's lifetime and answers the list's questions: which lessons a
//! theme has, what a lesson is called in a language, and where in the
//! source article it comes from.

use std::sync::OnceLock;

use locklab_core::lesson::render::{lab_words, localized_reply};
use locklab_core::lesson::run::StepResult;
pub use locklab_core::lesson::Theme;
use locklab_core::lesson::{self, worded::PageLesson};

use crate::i18n::{Lang, Text};

static LESSONS: OnceLock<Vec<PageLesson>> = OnceLock::new();

/// The `id` of the `<link>` whose `href` is the lesson catalogue's URL.
pub const LINK_ID: &str = "locklab-lessons";

/// Keep the catalogue for the page's lifetime (the first one installed wins).
pub fn install(lessons: Vec<PageLesson>) {
    let _ = LESSONS.set(lessons);
}

/// Every lesson, in id order; empty until the catalogue is installed.
pub fn all() -> &'static [PageLesson] {
    #[cfg(not(target_arch = "wasm32"))]
    if LESSONS.get().is_none() {
        // Through the same JSON the browser fetches.
        let lessons = lesson::builtin().expect("core's tests check the lesson files");
        install(lesson::from_json(&lesson::to_json(&lessons)).expect("core's tests check the round trip"));
    }
    LESSONS.get().map_or(&[], Vec::as_slice)
}

/// Fetch the catalogue the page links and check it. The error says what
/// failed, for the page to show. Only meaningful in a browser.
pub async fn fetch() -> Result<Vec<PageLesson>, String> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    let window = web_sys::window().ok_or("no window")?;
    let url = window
        .document()
        .and_then(|d| d.get_element_by_id(LINK_ID))
        .and_then(|l| l.get_attribute("href"))
        .ok_or_else(|| format!("the page has no <link id=\"{LINK_ID}\"> naming the lesson file"))?;
    let failed = |e: wasm_bindgen::JsValue| format!("{url}: {}", e.as_string().unwrap_or_else(|| format!("{e:?}")));
    let response: web_sys::Response = JsFuture::from(window.fetch_with_str(&url))
        .await
        .map_err(failed)?
        .dyn_into()
        .map_err(failed)?;
    if !response.ok() {
        return Err(format!("{url}: HTTP {} {}", response.status(), response.status_text()));
    }
    let text = JsFuture::from(response.text().map_err(failed)?).await.map_err(failed)?;
    lesson::from_json(&text.as_string().unwrap_or_default()).map_err(|e| format!("{url}: {e}"))
}

/// Look a lesson up by id.
pub fn find(id: &str) -> Option<&'static PageLesson> {
    all().iter().find(|l| l.id == id)
}

/// The lessons of one theme, in id order.
pub fn by_theme(theme: Theme) -> impl Iterator<Item = &'static PageLesson> {
    all().iter().filter(move |l| l.theme == theme)
}

/// What step `r` of `lesson` answered, in the UI's language: Redis's reply
/// as redis-cli printed it, or the lab's own words (a write's verdict, a
/// metrics step's figures, "no reply") worded by core.
pub fn reply_text(lesson: &PageLesson, r: &StepResult, lang: Lang) -> Option<String> {
    let kind = lesson.steps.get(r.index).and_then(|s| s.kind().ok());
    localized_reply(kind.as_ref(), r, lang).or_else(|| r.reply.clone())
}

/// What step `index` of `lesson` expects, in the UI's language, worded as
/// its reply is ([`reply_text`]).
pub fn expected_text(lesson: &PageLesson, index: usize, lang: Lang) -> Option<String> {
    let step = lesson.steps.get(index)?;
    let said = step.expect.as_ref()?.describe();
    Some(lab_words(step.kind().ok().as_ref(), &said, None, lang).unwrap_or(said))
}

/// A lesson file's text in the UI's language.
pub fn text(t: &lesson::Bilingual, lang: Lang) -> &str {
    t.get(lang).trim()
}

pub fn theme_title(theme: Theme, lang: Lang) -> &'static str {
    match theme {
        Theme::Basics => Text::ThemeBasics,
        Theme::Release => Text::ThemeRelease,
        Theme::Renewal => Text::ThemeRenewal,
        Theme::Replication => Text::ThemeReplication,
        Theme::Redlock => Text::ThemeRedlock,
        Theme::Fencing => Text::ThemeFencing,
        Theme::Patterns => Text::ThemePatterns,
        Theme::Interview => Text::ThemeInterview,
    }
    .get(lang)
}

/// Stable name for CSS and tests.
pub fn theme_slug(theme: Theme) -> &'static str {
    match theme {
        Theme::Basics => "basics",
        Theme::Release => "release",
        Theme::Renewal => "renewal",
        Theme::Replication => "replication",
        Theme::Redlock => "redlock",
        Theme::Fencing => "fencing",
        Theme::Patterns => "patterns",
        Theme::Interview => "interview",
    }
}

/// Where the lesson comes from: `seed A · §6.2`.
pub fn source_label(l: &PageLesson, lang: Lang) -> String {
    let (seed, sec) = match lang {
        Lang::Zh => ("来源", "§"),
        Lang::En => ("seed", "§"),
    };
    // The lesson files write cross-references in English ("also B 3.2").
    let section = match lang {
        Lang::Zh => l.source.section.replace("also ", "另见 "),
        Lang::En => l.source.section.clone(),
    };
    format!("{seed} {} · {sec}{section}", l.source.seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lesson_files_fill_every_theme() {
        let ids: Vec<_> = all().iter().map(|l| l.id.as_str()).collect();
        // Every lesson file on disk, and no other.
        let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../lessons"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "toml"))
            .count();
        assert_eq!(ids.len(), files);
        assert!(files >= 42, "{files}");
        let mut sorted = ids.clone();
        sorted.dedup();
        assert_eq!(ids, sorted);
        for theme in Theme::ALL {
            assert!(by_theme(theme).next().is_some(), "{theme:?} has no lesson");
        }
        assert_eq!(find("05").map(|l| l.theme), Some(Theme::Release));
        assert!(find("99").is_none());
        assert_eq!(source_label(find("07").unwrap(), Lang::En), "seed A · §6.2");
        assert!(source_label(find("01").unwrap(), Lang::Zh).starts_with("来源 A"));
        assert!(!source_label(find("01").unwrap(), Lang::Zh).contains("also"));
    }
}
