//! The lesson list, from the lesson files themselves.
//!
//! `locklab_core::lesson::builtin()` parses the 36 `lessons/*.toml` files
//! embedded in core at build time; this module keeps them for the page's
//! lifetime (parsed once, on first use) and answers the list's questions:
//! which lessons a theme has, what a lesson is called in a language, and
//! where in the source article it comes from.

use std::sync::OnceLock;

use locklab_core::lesson::{self, Lesson};
pub use locklab_core::lesson::Theme;

use crate::i18n::{Lang, Text};

static LESSONS: OnceLock<Vec<Lesson>> = OnceLock::new();

/// Every lesson, in id order. A lesson file that fails to parse is a build
/// bug caught by core's tests; the page then shows an empty list, not a panic.
pub fn all() -> &'static [Lesson] {
    LESSONS.get_or_init(|| {
        let mut v = lesson::builtin().unwrap_or_default();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    })
}

/// Look a lesson up by id.
pub fn find(id: &str) -> Option<&'static Lesson> {
    all().iter().find(|l| l.id == id)
}

/// The lessons of one theme, in id order.
pub fn by_theme(theme: Theme) -> impl Iterator<Item = &'static Lesson> {
    all().iter().filter(move |l| l.theme == theme)
}

pub fn core_lang(lang: Lang) -> lesson::Lang {
    match lang {
        Lang::Zh => lesson::Lang::Zh,
        Lang::En => lesson::Lang::En,
    }
}

/// A lesson file's text in the UI's language.
pub fn text(t: &lesson::Text, lang: Lang) -> &str {
    t.get(core_lang(lang)).trim()
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
pub fn source_label(l: &Lesson, lang: Lang) -> String {
    let (seed, sec) = match lang {
        Lang::Zh => ("种子", "§"),
        Lang::En => ("seed", "§"),
    };
    format!("{seed} {} · {sec}{}", l.source.seed, l.source.section)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lesson_files_fill_every_theme() {
        let ids: Vec<_> = all().iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids.len(), 36);
        let mut sorted = ids.clone();
        sorted.dedup();
        assert_eq!(ids, sorted);
        for theme in Theme::ALL {
            assert!(by_theme(theme).next().is_some(), "{theme:?} has no lesson");
        }
        assert_eq!(find("05").map(|l| l.theme), Some(Theme::Release));
        assert!(find("99").is_none());
        assert_eq!(source_label(find("07").unwrap(), Lang::En), "seed A · §6.2");
    }
}
