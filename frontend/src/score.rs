//! Interview mode's judge and score: whether a prediction matches the
//! reply ([`prediction_right`](locklab_core::lesson::judge::prediction_right), in core so class mode's server judges the room alike), and for a lesson how many of its steps the
//! user predicted right, out of how many they predicted.
//!
//! Only a step's *first* prediction counts. Stepping back and predicting
//! again shows a fresh verdict, but the score keeps the first one: a score
//! you can raise by retrying until you are right says nothing, and one
//! verdict per step means no step is ever counted twice — not after a step
//! back, a replay, nor a reload (the verdicts, not two counters, are what
//! is stored). Reset starts the lesson's score over.
//!
//! A timed answer's rubric (lesson 35) is scored with the lesson: each
//! point the candidate ticked is one right, each left unticked one wrong,
//! and, as with a prediction, only the first scoring counts.
//!
//! The score is kept in the browser's `localStorage` under
//! [`key`]`(lesson)` as [`LessonScore::encode`] writes it; the storage
//! calls live in a hook ([`crate::hooks::score`]), this is the plain part.

/// The `localStorage` key of a lesson's score.
pub fn key(lesson: &str) -> String {
    format!("locklab.score.{lesson}")
}

/// The first verdict for each step of one lesson, by step index, and the
/// timed answer's rubric as first ticked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LessonScore {
    verdicts: Vec<Option<bool>>,
    points: Vec<bool>,
}

impl LessonScore {
    /// Read what [`LessonScore::encode`] wrote: a character per step, `1`
    /// right, `0` wrong, `-` not predicted; then, if the rubric was scored,
    /// `|` and a character per point, `1` ticked. Anything else reads as not predicted,
    /// so a damaged entry costs a score, never the page.
    pub fn parse(s: &str) -> LessonScore {
        let (s, points) = s.split_once('|').unwrap_or((s, ""));
        let points = points.chars().map(|c| c == '1').collect();
        let verdicts = s
            .chars()
            .map(|c| match c {
                '1' => Some(true),
                '0' => Some(false),
                _ => None,
            })
            .collect();
        LessonScore { verdicts, points }
    }

    pub fn encode(&self) -> String {
        let mut out: String = self
            .verdicts
            .iter()
            .map(|v| match v {
                Some(true) => '1',
                Some(false) => '0',
                None => '-',
            })
            .collect();
        if !self.points.is_empty() {
            out.push('|');
            out.extend(self.points.iter().map(|&p| if p { '1' } else { '0' }));
        }
        out
    }

    /// Record the rubric as ticked (one flag per point), unless it was
    /// scored before. True if it was recorded.
    pub fn record_points(&mut self, ticked: &[bool]) -> bool {
        if !self.points.is_empty() || ticked.is_empty() {
            return false;
        }
        self.points = ticked.to_vec();
        true
    }

    /// The rubric as first ticked (empty: not scored yet).
    pub fn points(&self) -> &[bool] {
        &self.points
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
        self.verdicts.iter().filter(|v| **v == Some(true)).count() + self.points.iter().filter(|p| **p).count()
    }

    pub fn total(&self) -> usize {
        self.verdicts.iter().filter(|v| v.is_some()).count() + self.points.len()
    }

    /// `4/6`, or nothing before the first prediction.
    pub fn label(&self) -> Option<String> {
        (self.total() > 0).then(|| format!("{}/{}", self.right(), self.total()))
    }
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

    #[test]
    fn a_rubric_counts_with_the_predictions_once() {
        let mut s = LessonScore::default();
        s.record(2, true);
        assert!(s.record_points(&[true, false, true]));
        assert!(!s.record_points(&[true, true, true]), "the first scoring counts");
        assert_eq!((s.right(), s.total()), (3, 4));
        assert_eq!(s.encode(), "--1|101");
        assert_eq!(LessonScore::parse("--1|101"), s);
        assert_eq!(
            LessonScore::parse("--1").points(),
            &[] as &[bool],
            "an entry from before rubrics"
        );
    }
}
