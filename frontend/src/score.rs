//! Interview mode's judge and score: whether a prediction matches the
//! reply ([`prediction_right`]), and for a lesson how many of its steps the
//! user predicted right, out of how many they predicted.
//!
//! Only a step's *first* prediction counts. Stepping back and predicting
//! again shows a fresh verdict, but the score keeps the first one: a score
//! you can raise by retrying until you are right says nothing, and one
//! verdict per step means no step is ever counted twice — not after a step
//! back, a replay, nor a reload (the verdicts, not two counters, are what
//! is stored). Reset starts the lesson's score over.
//!
//! The score is kept in the browser's `localStorage` under
//! [`key`]`(lesson)` as [`LessonScore::encode`] writes it; the storage
//! calls live in a hook ([`crate::hooks::score`]), this is the plain part.

use locklab_core::lesson::{Expect, Step};

/// The `localStorage` key of a lesson's score.
pub fn key(lesson: &str) -> String {
    format!("locklab.score.{lesson}")
}

/// The first verdict for each step of one lesson, by step index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LessonScore {
    verdicts: Vec<Option<bool>>,
}

impl LessonScore {
    /// Read what [`LessonScore::encode`] wrote: a character per step, `1`
    /// right, `0` wrong, `-` not predicted. Anything else reads as not predicted,
    /// so a damaged entry costs a score, never the page.
    pub fn parse(s: &str) -> LessonScore {
        let verdicts = s
            .chars()
            .map(|c| match c {
                '1' => Some(true),
                '0' => Some(false),
                _ => None,
            })
            .collect();
        LessonScore { verdicts }
    }

    pub fn encode(&self) -> String {
        self.verdicts
            .iter()
            .map(|v| match v {
                Some(true) => '1',
                Some(false) => '0',
                None => '-',
            })
            .collect()
    }

    /// Record the verdict on step `index`'s prediction, unless the step
    /// already has one. True if it was recorded.
    pub fn record(&mut self, index: usize, right: bool) -> bool {
        if self.verdicts.len() <= index {
            self.verdicts.resize(index + 1, None);
        }
        let slot = &mut self.verdicts[index];
        if slot.is_some() {
            return false;
        }
        *slot = Some(right);
        true
    }

    /// The counted verdict on step `index`, if any.
    pub fn verdict(&self, index: usize) -> Option<bool> {
        self.verdicts.get(index).copied().flatten()
    }

    pub fn right(&self) -> usize {
        self.verdicts.iter().filter(|v| **v == Some(true)).count()
    }

    pub fn total(&self) -> usize {
        self.verdicts.iter().filter(|v| v.is_some()).count()
    }

    /// `4/6`, or nothing before the first prediction.
    pub fn label(&self) -> Option<String> {
        (self.total() > 0).then(|| format!("{}/{}", self.right(), self.total()))
    }
}

/// Does a prediction match the reply? Forgiving about what people leave
/// out: `1` for `(integer) 1`, `token-B-222` for `"token-B-222"`, `nil` for
/// `(nil)`, case and surrounding space.
pub fn prediction_matches(guess: &str, reply: &str) -> bool {
    fn norm(s: &str) -> String {
        let s = s.trim();
        let s = s.strip_prefix("(integer) ").unwrap_or(s);
        let s = s.trim_matches('"');
        let s = s.trim_start_matches('(').trim_end_matches(')');
        s.trim().to_ascii_lowercase()
    }
    !guess.trim().is_empty() && norm(guess) == norm(reply)
}

/// Is a prediction for `step` right, given the reply it got? A quiz with
/// its own answer (a multiple choice such as `(integer) > 0`) is judged by
/// that answer; a reply the lesson expects within a range (a PTTL) by the
/// range; anything else by the reply itself.
pub fn prediction_right<P>(step: &Step<P>, guess: &str, reply: &str) -> bool {
    if let Some(answer) = step.quiz.as_ref().and_then(|q| q.answer.as_deref()) {
        return prediction_matches(guess, answer);
    }
    if let Some(range @ Expect::Range { .. }) = &step.expect {
        let as_integer = guess.trim().strip_prefix("(integer)").unwrap_or(guess).trim();
        if range.matches(&format!("(integer) {as_integer}")) {
            return true;
        }
    }
    prediction_matches(guess, reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_prediction_per_step_counts_once() {
        let mut s = LessonScore::default();
        assert_eq!(s.label(), None);
        assert!(s.record(0, true));
        assert!(s.record(3, false));
        assert!(!s.record(3, true), "a second try at step 3 does not count");
        assert!(!s.record(0, true));
        assert_eq!((s.right(), s.total()), (1, 2));
        assert_eq!(s.label().as_deref(), Some("1/2"));
        assert_eq!(s.verdict(3), Some(false));
        assert_eq!(s.verdict(1), None);
    }

    #[test]
    fn survives_a_round_trip_through_storage_text() {
        let mut s = LessonScore::default();
        s.record(1, true);
        s.record(4, false);
        assert_eq!(s.encode(), "-1--0");
        assert_eq!(LessonScore::parse(&s.encode()), s);
        assert_eq!(
            LessonScore::parse("1x0").label().as_deref(),
            Some("1/2"),
            "damage reads as unanswered"
        );
        assert_eq!(key("07"), "locklab.score.07");
    }
}

#[cfg(test)]
mod prediction_tests {
    use super::prediction_matches as m;
    use super::prediction_right;
    use crate::catalog;

    #[test]
    fn quiz_answers_and_ranges_judge_predictions() {
        let l = catalog::find("01").unwrap();
        let (set, pttl) = (&l.steps[0], &l.steps[4]);
        assert!(prediction_right(set, "ok", "OK"));
        assert!(!prediction_right(set, "(nil)", "OK"));
        assert!(
            prediction_right(pttl, "(integer) > 0", "(integer) 29998"),
            "the quiz's own answer"
        );
        assert!(!prediction_right(pttl, "(integer) -2", "(integer) 29998"));
        let range: locklab_core::lesson::Step = locklab_core::lesson::Step {
            client: Some("A".into()),
            cmd: Some("PTTL k".into()),
            expect: Some(locklab_core::lesson::Expect::Range { min: 1, max: 30000 }),
            ..Default::default()
        };
        assert!(
            prediction_right(&range, "30000", "(integer) 29998"),
            "a number within the expected range"
        );
        assert!(prediction_right(&range, "(integer) 29998", "(integer) 29998"));
        assert!(!prediction_right(&range, "-1", "(integer) 29998"));
    }

    #[test]
    fn predictions_are_read_generously() {
        assert!(m("1", "(integer) 1"));
        assert!(m("(integer) 0", "(integer) 0"));
        assert!(m("token-B-222", "\"token-B-222\""));
        assert!(m("nil", "(nil)"));
        assert!(m(" ok ", "OK"));
        assert!(!m("0", "(integer) 1"));
        assert!(!m("", "OK"));
    }
}
