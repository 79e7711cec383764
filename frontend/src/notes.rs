//! Presenter mode's notes window (issue 39), as the page holds it (sans-IO):
//! the trainer's notes of every lesson, and where the presenter is.
//!
//! The notes stay off the projected page: presenter mode opens a second
//! window (`?notes=1`) that the trainer keeps on their own screen, the way
//! reveal.js's speaker view works. The two windows of one browser talk over
//! a `BroadcastChannel` ([`CHANNEL`]): the presenter says where it is
//! ([`Sync::At`]) whenever the lesson, the step or the language changes, and
//! a notes window that has just opened asks ([`Sync::Hello`]) so it need not
//! wait for the next press. The notes themselves come from the lab's own
//! backend (`/api/notes`, loopback only): the lessons file the page (and a
//! class's followers) load carries none.

use locklab_core::lesson::notes::LessonNotes;
use locklab_core::lesson::Bilingual;

use crate::i18n::Lang;

/// The channel's name: one per origin, shared by the lab's windows.
pub const CHANNEL: &str = "locklab-presenter";

/// A message on [`CHANNEL`], as one short line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sync {
    /// A notes window has opened: the presenter answers with `At`.
    Hello,
    /// The presenter is at this lesson, after this many steps (0: none
    /// yet), in this language.
    At { lesson: String, step: usize, lang: Lang },
}

impl Sync {
    /// `hello` or `at <lesson> <step> <lang>`.
    pub fn to_line(&self) -> String {
        match self {
            Sync::Hello => "hello".to_owned(),
            Sync::At { lesson, step, lang } => format!("at {lesson} {step} {}", lang.code()),
        }
    }

    /// A line [`to_line`](Sync::to_line) wrote; anything else is `None`
    /// (another page of the origin may use the channel name too).
    pub fn parse(line: &str) -> Option<Sync> {
        let mut parts = line.split(' ');
        match parts.next()? {
            "hello" => parts.next().is_none().then_some(Sync::Hello),
            "at" => {
                let lesson = parts.next()?;
                let step = parts.next()?.parse().ok()?;
                let lang = Lang::parse(parts.next()?)?;
                let word = !lesson.is_empty() && lesson.len() <= 8 && lesson.bytes().all(|b| b.is_ascii_alphanumeric());
                (word && parts.next().is_none()).then(|| Sync::At {
                    lesson: lesson.to_owned(),
                    step,
                    lang,
                })
            }
            _ => None,
        }
    }
}

/// What the notes window shows at a position: the lesson's note, the
/// current step's, and the next step's (to prepare what to say).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AtNotes<'a> {
    pub title: Option<&'a Bilingual>,
    pub lesson: Option<&'a Bilingual>,
    /// The step just played (1-based) and its note.
    pub current: Option<(usize, &'a Bilingual)>,
    /// The next step with a note after the current one.
    pub upcoming: Option<(usize, &'a Bilingual)>,
}

/// The notes for `lesson` after `step` steps.
pub fn at<'a>(all: &'a [LessonNotes], lesson: &str, step: usize) -> AtNotes<'a> {
    let Some(n) = all.iter().find(|n| n.id == lesson) else {
        return AtNotes::default();
    };
    AtNotes {
        title: Some(&n.title),
        lesson: n.lesson.as_ref(),
        current: n.steps.iter().find(|s| s.step == step).map(|s| (s.step, &s.text)),
        upcoming: n.steps.iter().find(|s| s.step > step).map(|s| (s.step, &s.text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::lesson::notes::StepNote;

    #[test]
    fn sync_lines_round_trip_and_strangers_are_ignored() {
        for s in [
            Sync::Hello,
            Sync::At {
                lesson: "05".into(),
                step: 3,
                lang: Lang::Zh,
            },
        ] {
            assert_eq!(Sync::parse(&s.to_line()), Some(s));
        }
        for bad in [
            "",
            "at",
            "at 05",
            "at 05 x en",
            "at 05 3 fr",
            "at 0<5 3 en",
            "hello there",
            "at 05 3 en x",
        ] {
            assert_eq!(Sync::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_window_shows_the_lessons_note_the_current_steps_and_the_next() {
        let t = |s: &str| Bilingual {
            zh: s.into(),
            en: s.into(),
        };
        let all = vec![LessonNotes {
            id: "05".into(),
            title: t("title"),
            lesson: Some(t("lesson")),
            steps: vec![
                StepNote {
                    step: 2,
                    text: t("two"),
                },
                StepNote {
                    step: 5,
                    text: t("five"),
                },
            ],
        }];
        let a = at(&all, "05", 2);
        assert_eq!(a.lesson.map(|x| x.en.as_str()), Some("lesson"));
        assert_eq!(a.current.map(|(n, x)| (n, x.en.as_str())), Some((2, "two")));
        assert_eq!(a.upcoming.map(|(n, _)| n), Some(5));
        let a = at(&all, "05", 3);
        assert_eq!((a.current, a.upcoming.map(|(n, _)| n)), (None, Some(5)));
        assert_eq!(at(&all, "06", 1), AtNotes::default());
    }
}
