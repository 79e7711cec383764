//! Trainer notes (issue 39): what a trainer should know, kept off the room's
//! screen.
//!
//! A lesson's narration is a hook — at most [`HOOK_ZH_CHARS`] Chinese
//! characters (or [`HOOK_EN_CHARS`] English ones) before the first step, so
//! the room starts on a question rather than a page of text. What the hook
//! leaves out (how the simulator's figures compare with a real server's,
//! what the runner does behind a step, the follow-up a room usually asks,
//! where the article says it) goes into a **note**: one per lesson
//! (`notes = { zh, en }`) and optionally one per step (`[[steps]]`
//! `notes = …`).
//!
//! Notes are never part of what the page is sent as a lesson
//! ([`super::Lesson::worded`] drops them), because the page is also what a
//! class serves to followers over the LAN; the presenter's notes window
//! asks the lab's own backend for them (`/api/notes`, loopback only), and
//! `locklab lesson show NN --notes` prints them.

use serde::{Deserialize, Serialize};

use super::{Bilingual, Lang, Lesson};

/// The most Chinese characters a narration may have: a hook, not a page
/// (issue 39 asks for "at most ~300").
pub const HOOK_ZH_CHARS: usize = 300;
/// The same for English, about three letters per Chinese character.
pub const HOOK_EN_CHARS: usize = 900;
/// The most characters of one note, per language: a note is read at a
/// glance while presenting, not a second article.
pub const NOTE_CHARS: usize = 2000;

/// The length of a narration or note as the lint counts it: Unicode scalar
/// values, line breaks and the indentation of a TOML multi-line string not
/// counted.
pub fn length(text: &str) -> usize {
    text.lines().map(|l| l.trim().chars().count()).sum()
}

/// A note's own rules: both languages, neither empty nor over
/// [`NOTE_CHARS`].
pub fn check(note: &Bilingual) -> Result<(), String> {
    for lang in [Lang::Zh, Lang::En] {
        let n = length(note.get(lang));
        if n == 0 {
            return Err(format!("notes need both zh and en ({} is empty)", lang.code()));
        }
        if n > NOTE_CHARS {
            return Err(format!(
                "notes.{} has {n} characters: at most {NOTE_CHARS}",
                lang.code()
            ));
        }
    }
    Ok(())
}

/// A lesson's notes as the presenter's notes window reads them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LessonNotes {
    pub id: String,
    pub title: Bilingual,
    /// The note on the whole lesson.
    pub lesson: Option<Bilingual>,
    /// Each step's note, by step number (1-based, as the page counts).
    pub steps: Vec<StepNote>,
}

/// One step's note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepNote {
    pub step: usize,
    pub text: Bilingual,
}

impl<P> Lesson<P> {
    /// This lesson's notes, or `None` if it has none.
    pub fn notes(&self) -> Option<LessonNotes> {
        let steps: Vec<StepNote> = (self.steps.iter().enumerate())
            .filter_map(|(i, s)| {
                Some(StepNote {
                    step: i + 1,
                    text: s.notes.clone()?,
                })
            })
            .collect();
        if self.notes.is_none() && steps.is_empty() {
            return None;
        }
        Some(LessonNotes {
            id: self.id.clone(),
            title: self.title.clone(),
            lesson: self.notes.clone(),
            steps,
        })
    }

    /// The same lesson without its notes: what leaves the lab's machine.
    pub fn without_notes(mut self) -> Lesson<P> {
        self.notes = None;
        for s in &mut self.steps {
            s.notes = None;
        }
        self
    }
}

impl LessonNotes {
    /// The notes as plain text in `lang`: the lesson's note, then each
    /// step's under its number (`lesson show --notes`).
    pub fn render(&self, lang: Lang) -> String {
        let mut out = String::new();
        let step_word = match lang {
            Lang::En => "step",
            Lang::Zh => "第",
        };
        if let Some(t) = &self.lesson {
            out.push_str(t.get(lang).trim());
            out.push('\n');
        }
        for s in &self.steps {
            let head = match lang {
                Lang::En => format!("{step_word} {}", s.step),
                Lang::Zh => format!("{step_word} {} 步", s.step),
            };
            out.push_str(&format!("\n[{head}] {}\n", s.text.get(lang).trim()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(zh: &str, en: &str) -> Bilingual {
        Bilingual {
            zh: zh.into(),
            en: en.into(),
        }
    }

    #[test]
    fn length_counts_letters_not_line_breaks_or_indentation() {
        assert_eq!(length("\n  ab\n  cd\n"), 4);
        assert_eq!(length("锁\n过期"), 3);
    }

    #[test]
    fn a_note_needs_both_languages_and_a_bound() {
        assert!(check(&text("注", "note")).is_ok());
        assert!(check(&text("", "note")).unwrap_err().contains("zh is empty"));
        assert!(check(&text("注", " \n ")).unwrap_err().contains("en is empty"));
        let long = "x".repeat(NOTE_CHARS + 1);
        assert!(check(&text("注", &long)).unwrap_err().contains("at most"));
    }
}
