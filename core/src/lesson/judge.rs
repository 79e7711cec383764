//! Whether a prediction is right: the one judge of a quiz answer, used by
//! interview mode in the page and by class mode's server, which scores a
//! room's answers without running the lesson (the presenter's page sends
//! the reply its step got).

use super::{Expect, Step};

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
mod prediction_tests {
    use super::prediction_matches as m;
    use super::prediction_right;
    #[cfg(feature = "toml")]
    use crate::lesson::{builtin, Expect, Step};

    #[test]
    #[cfg(feature = "toml")]
    fn quiz_answers_and_ranges_judge_predictions() {
        let all = builtin().unwrap();
        let l = all.iter().find(|l| l.id == "01").unwrap();
        let pttl = l
            .steps
            .iter()
            .find(|s| s.quiz.is_some() && s.cmd.as_deref().is_some_and(|c| c.starts_with("PTTL")))
            .expect("lesson 01 asks what PTTL answers");
        let set = &l.steps[0];
        assert!(prediction_right(set, "ok", "OK"));
        assert!(!prediction_right(set, "(nil)", "OK"));
        assert!(
            prediction_right(pttl, "(integer) > 0", "(integer) 29998"),
            "the quiz's own answer"
        );
        assert!(!prediction_right(pttl, "(integer) -2", "(integer) 29998"));
        let range: Step = Step {
            client: Some("A".into()),
            cmd: Some("PTTL k".into()),
            expect: Some(Expect::Range { min: 1, max: 30000 }),
            ..Default::default()
        };
        assert!(
            prediction_right(&range, "30000", "(integer) 29998"),
            "a number within the expected range"
        );
        assert!(prediction_right(&range, "(integer) 29998", "(integer) 29998"));
        assert!(!prediction_right(&range, "-1", "(integer) 29998"));
    }

    /// Interview mode shuffles choices per attempt (`Quiz::choice_order`);
    /// the judge reads the chosen text, so the answer is right in any slot,
    /// and over attempts it visits every slot.
    #[test]
    #[cfg(feature = "toml")]
    fn shuffled_choices_are_judged_by_their_text() {
        let all = builtin().unwrap();
        let l = all.iter().find(|l| l.id == "35").unwrap();
        let (i, step) = (l.steps.iter().enumerate())
            .find(|(_, s)| {
                s.quiz
                    .as_ref()
                    .is_some_and(|q| q.choices.len() == 3 && q.answer.is_some())
            })
            .expect("lesson 35 asks a three-choice question");
        let q = step.quiz.as_ref().unwrap();
        let answer = q.answer.clone().unwrap();
        let mut slots = std::collections::BTreeSet::new();
        for seed in 0..60 {
            let order = q.choice_order(seed, i);
            assert_eq!(order, q.choice_order(seed, i), "a seed names one order");
            let at = order.iter().position(|&c| q.choices[c] == answer).unwrap();
            slots.insert(at);
            assert!(prediction_right(step, &q.choices[order[at]], ""));
            let wrong = order.iter().find(|&&c| q.choices[c] != answer).unwrap();
            assert!(!prediction_right(step, &q.choices[*wrong], ""));
        }
        assert_eq!(slots.len(), 3, "the answer moves between slots: {slots:?}");
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
