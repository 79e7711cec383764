//! A mock interview (issue 38, item 5): article C's question — "how do you
//! implement a distributed lock with Redis?" — and its five follow-ups,
//! where the next question depends on the last answer. A right answer goes
//! on to the next follow-up; a wrong one first shows the lesson step that
//! demonstrates why (`why`: a lesson, the steps done, a sentence) and
//! leads to a probing question on the same point. The end is a score per
//! topic and the lessons to revisit; the questions missed come back first
//! next time ([`Mock::start`] takes them).
//!
//! The interview is data, `lessons/mock-interview.json` (JSON, not TOML:
//! the page parses it too, and the page has no TOML parser; the format is
//! in `lessons/README.md`). This module is the whole of its logic, pure,
//! so the page is a thin view and the rules are tested here.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::Bilingual;

/// The built-in mock interview's file.
pub const BUILTIN: &str = include_str!("../../../lessons/mock-interview.json");

/// The most questions one interview asks, missed ones included: a bound a
/// malformed file or stored list cannot lift.
pub const MAX_ASKED: usize = 64;

/// A topic the score is kept by, and the lessons that teach it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topic {
    pub id: String,
    pub title: Bilingual,
    pub lessons: Vec<String>,
}

/// The demonstration a wrong answer leads to: the lesson, opened with
/// `step` steps done (as the page's `step=`), and what it shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Why {
    pub lesson: String,
    pub step: usize,
    pub say: Bilingual,
}

/// One question: its choices (`answer` is the right one's index), the
/// question after a right and after a wrong answer (none: the end), and
/// the demonstration a wrong answer shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub id: String,
    pub topic: String,
    pub ask: Bilingual,
    pub choices: Vec<Bilingual>,
    pub answer: usize,
    pub right: Option<String>,
    pub wrong: Option<String>,
    pub why: Why,
}

/// A mock interview as its file writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mock {
    pub start: String,
    pub topics: Vec<Topic>,
    pub questions: Vec<Question>,
}

/// A mock interview file that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MockError {
    #[error("mock interview: {0}")]
    Parse(String),
    #[error("mock interview, question {id:?}: {msg}")]
    Invalid { id: String, msg: String },
}

/// One answer given: the question, the choice (an index into its
/// `choices`), and whether it was right.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answered {
    pub question: String,
    pub choice: usize,
    pub right: bool,
}

/// An interview under way: what was answered, and what comes next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MockSession {
    answered: Vec<Answered>,
    /// Missed last time, still to ask first (the next one last).
    again: Vec<String>,
    /// How many of the first answers are such retries.
    retries: usize,
    current: Option<String>,
}

/// A topic's score at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicScore {
    pub topic: String,
    pub right: usize,
    pub asked: usize,
}

impl Mock {
    /// Read and check a mock interview file.
    pub fn parse(json: &str) -> Result<Mock, MockError> {
        let mock: Mock = serde_json::from_str(json).map_err(|e| MockError::Parse(e.to_string()))?;
        mock.validate()?;
        Ok(mock)
    }

    /// The interview in `lessons/mock-interview.json`.
    pub fn builtin() -> Mock {
        Mock::parse(BUILTIN).expect("lessons/mock-interview.json is checked by core's tests")
    }

    /// Every id a question names exists, every answer is a choice, every
    /// text has both languages. (Which lessons and steps a `why` names is
    /// the catalogue's business: core's tests check them against it.)
    pub fn validate(&self) -> Result<(), MockError> {
        let bad = |id: &str, msg: String| MockError::Invalid { id: id.to_owned(), msg };
        let both = |t: &Bilingual| !t.zh.trim().is_empty() && !t.en.trim().is_empty();
        if self.question(&self.start).is_none() {
            return Err(bad(&self.start, "the start is not a question".into()));
        }
        let mut ids = BTreeSet::new();
        for q in &self.questions {
            if !ids.insert(q.id.as_str()) {
                return Err(bad(&q.id, "two questions have this id".into()));
            }
            if !self.topics.iter().any(|t| t.id == q.topic) {
                return Err(bad(&q.id, format!("topic {:?} is not one of the topics", q.topic)));
            }
            if q.choices.len() < 2 || q.answer >= q.choices.len() {
                return Err(bad(
                    &q.id,
                    format!("answer {} of {} choices", q.answer, q.choices.len()),
                ));
            }
            for next in q.right.iter().chain(&q.wrong) {
                if self.question(next).is_none() {
                    return Err(bad(&q.id, format!("the next question {next:?} does not exist")));
                }
            }
            if !(both(&q.ask) && both(&q.why.say) && q.choices.iter().all(both)) {
                return Err(bad(&q.id, "every text needs both zh and en".into()));
            }
        }
        Ok(())
    }

    pub fn question(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.id == id)
    }

    pub fn topic(&self, id: &str) -> Option<&Topic> {
        self.topics.iter().find(|t| t.id == id)
    }

    /// A new interview. The questions `missed` last time (unknown ids
    /// dropped, each once) are asked first, then the interview proper.
    pub fn start(&self, missed: &[String]) -> MockSession {
        let mut again: Vec<String> = Vec::new();
        for id in missed {
            if self.question(id).is_some() && !again.contains(id) && again.len() < MAX_ASKED / 2 {
                again.push(id.clone());
            }
        }
        again.reverse();
        let mut s = MockSession {
            answered: Vec::new(),
            retries: again.len(),
            again,
            current: None,
        };
        s.current = s.again.pop().or_else(|| Some(self.start.clone()));
        s
    }
}

impl MockSession {
    /// The question to answer now; none at the end.
    pub fn current(&self) -> Option<&str> {
        self.current.as_deref()
    }

    pub fn answered(&self) -> &[Answered] {
        &self.answered
    }

    pub fn is_finished(&self) -> bool {
        self.current.is_none()
    }

    /// Answer the current question with its choice `choice`; returns the
    /// answer as judged (none when the interview is over or the choice is
    /// not one). The next question: a missed one still waiting, else the
    /// branch the answer chose; a question already asked is not asked
    /// again — its own right branch is followed instead — so every
    /// interview ends.
    pub fn answer(&mut self, mock: &Mock, choice: usize) -> Option<Answered> {
        let q = mock.question(self.current.as_deref()?)?;
        if choice >= q.choices.len() {
            return None;
        }
        let a = Answered {
            question: q.id.clone(),
            choice,
            right: choice == q.answer,
        };
        self.answered.push(a.clone());
        // Last time's misses come first, as retries; the interview proper
        // starts after them.
        let n = self.answered.len();
        let branch = if n < self.retries {
            self.again.pop()
        } else if n == self.retries {
            Some(mock.start.clone())
        } else if a.right {
            q.right.clone()
        } else {
            q.wrong.clone()
        };
        self.current = self.unasked(mock, branch);
        if self.answered.len() >= MAX_ASKED {
            self.current = None;
        }
        Some(a)
    }

    /// `next`, or if it was asked already the first question down its
    /// right branches that was not; none past the end.
    fn unasked(&self, mock: &Mock, mut next: Option<String>) -> Option<String> {
        let asked = |id: &str| self.answered.iter().any(|a| a.question == id);
        let mut hops = 0;
        while let Some(id) = next.clone() {
            if !asked(&id) {
                return Some(id);
            }
            hops += 1;
            if hops > mock.questions.len() {
                return None;
            }
            next = mock.question(&id).and_then(|q| q.right.clone());
        }
        None
    }

    /// Right and asked per topic, in the file's topic order (topics not
    /// asked left out).
    pub fn scores(&self, mock: &Mock) -> Vec<TopicScore> {
        let mut out: Vec<TopicScore> = Vec::new();
        for t in &mock.topics {
            let of_topic =
                (self.answered.iter()).filter(|a| mock.question(&a.question).is_some_and(|q| q.topic == t.id));
            let (right, asked) = of_topic.fold((0, 0), |(r, n), a| (r + usize::from(a.right), n + 1));
            if asked > 0 {
                out.push(TopicScore {
                    topic: t.id.clone(),
                    right,
                    asked,
                });
            }
        }
        out
    }

    /// The questions answered wrong, in the order asked (each once).
    pub fn missed(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for a in self.answered.iter().filter(|a| !a.right) {
            if !out.contains(&a.question) {
                out.push(a.question.clone());
            }
        }
        out
    }

    /// The lessons to revisit: those of every topic with a miss, in topic
    /// order, each once.
    pub fn revisit(&self, mock: &Mock) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.scores(mock).iter().filter(|s| s.right < s.asked) {
            for l in mock.topic(&s.topic).map_or(&[][..], |t| &t.lessons[..]) {
                if !out.contains(l) {
                    out.push(l.clone());
                }
            }
        }
        out
    }
}

/// What the browser keeps between interviews (`localStorage`, as JSON):
/// each topic's right and asked over every finished interview, and the
/// last one's misses, which the next one asks first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub topics: BTreeMap<String, (u32, u32)>,
    pub missed: Vec<String>,
}

impl Record {
    /// Read what [`Record::encode`] wrote; a damaged entry reads as none,
    /// so it costs the record, never the page.
    pub fn parse(s: &str) -> Record {
        serde_json::from_str(s).unwrap_or_default()
    }

    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a record always serialises")
    }

    /// Add a finished interview's scores; its misses replace the last.
    pub fn finished(&mut self, s: &MockSession, mock: &Mock) {
        for t in s.scores(mock) {
            let e = self.topics.entry(t.topic).or_default();
            e.0 = e.0.saturating_add(t.right as u32);
            e.1 = e.1.saturating_add(t.asked as u32);
        }
        self.missed = s.missed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every question with `pick(question)`, returning the ids
    /// asked in order.
    fn run(mock: &Mock, s: &mut MockSession, mut pick: impl FnMut(&Question) -> usize) -> Vec<String> {
        let mut asked = Vec::new();
        while let Some(id) = s.current().map(str::to_owned) {
            let q = mock.question(&id).unwrap();
            asked.push(id);
            s.answer(mock, pick(q)).unwrap();
        }
        asked
    }

    #[test]
    fn all_right_is_the_question_and_its_five_follow_ups() {
        let m = Mock::builtin();
        let mut s = m.start(&[]);
        let asked = run(&m, &mut s, |q| q.answer);
        assert_eq!(
            asked,
            [
                "implement",
                "setnx-expire",
                "plain-del",
                "lua",
                "watchdog",
                "redis-alone",
                "failover"
            ]
        );
        assert!(s.is_finished() && s.missed().is_empty() && s.revisit(&m).is_empty());
        assert!(s.scores(&m).iter().all(|t| t.right == t.asked));
        assert_eq!(s.answer(&m, 0), None, "nothing to answer after the end");
    }

    #[test]
    fn a_wrong_answer_branches_to_its_demonstration_and_a_probe() {
        let m = Mock::builtin();
        let mut s = m.start(&[]);
        let wrong = (m.question("implement").unwrap().answer + 1) % 3;
        let a = s.answer(&m, wrong).unwrap();
        assert!(!a.right);
        assert_eq!(
            s.current(),
            Some("probe-atomic"),
            "a wrong answer probes the same point"
        );
        assert_eq!(m.question("implement").unwrap().why.lesson, "03");
        let probe = m.question("probe-atomic").unwrap().answer;
        assert!(s.answer(&m, probe).unwrap().right);
        assert_eq!(s.current(), Some("setnx-expire"), "then the follow-ups go on");
        let rest = run(&m, &mut s, |q| q.answer);
        assert_eq!(rest.first().map(String::as_str), Some("setnx-expire"));
        let acquire = s.scores(&m).into_iter().find(|t| t.topic == "acquire").unwrap();
        assert_eq!((acquire.right, acquire.asked), (2, 3));
        assert_eq!(s.missed(), ["implement"]);
        assert_eq!(s.revisit(&m), ["01", "03"], "the acquire topic's lessons");
        assert_eq!(s.answer(&m, 7), None);
    }

    #[test]
    fn missed_questions_come_back_first() {
        let m = Mock::builtin();
        let missed: Vec<String> = ["lua", "gone", "lua", "watchdog"].map(String::from).to_vec();
        let mut s = m.start(&missed);
        assert_eq!(s.current(), Some("lua"));
        s.answer(&m, m.question("lua").unwrap().answer);
        assert_eq!(s.current(), Some("watchdog"), "the next miss, whatever the answer");
        s.answer(&m, (m.question("watchdog").unwrap().answer + 1) % 3);
        assert_eq!(s.current(), Some("implement"), "then the interview proper");
        let asked = run(&m, &mut s, |q| q.answer);
        assert!(!asked.contains(&"lua".to_owned()), "not asked twice: {asked:?}");
        assert_eq!(s.missed(), ["watchdog"]);
    }

    /// Whatever is answered, an interview ends, asks no question twice,
    /// and every question is reachable from the start.
    #[test]
    fn every_interview_ends_and_every_question_is_reachable() {
        let m = Mock::builtin();
        let mut reached = BTreeSet::new();
        for seed in 0..200 {
            let mut rng = crate::rng::Rng::new(seed);
            let mut s = m.start(&[]);
            let asked = run(&m, &mut s, |q| rng.below(q.choices.len() as u64) as usize);
            let unique: BTreeSet<_> = asked.iter().collect();
            assert_eq!(unique.len(), asked.len(), "{asked:?}");
            assert!(asked.len() <= m.questions.len());
            reached.extend(asked);
        }
        assert_eq!(reached.len(), m.questions.len(), "{reached:?}");
    }

    #[test]
    fn the_record_adds_up_and_keeps_the_last_misses() {
        let m = Mock::builtin();
        let mut r = Record::parse("not json");
        assert_eq!(r, Record::default());
        let mut s = m.start(&r.missed);
        run(&m, &mut s, |q| {
            (q.answer + usize::from(q.id == "lua")) % q.choices.len()
        });
        r.finished(&s, &m);
        assert_eq!(r.missed, ["lua"]);
        let mut s = m.start(&r.missed);
        assert_eq!(s.current(), Some("lua"));
        run(&m, &mut s, |q| q.answer);
        r.finished(&s, &m);
        assert!(r.missed.is_empty(), "answered right this time");
        // plain-del, lua (missed), probe-get-del; then lua (retried), plain-del.
        assert_eq!(r.topics["release"], (2 + 2, 3 + 2));
        assert_eq!(Record::parse(&r.encode()), r);
    }

    #[test]
    fn a_malformed_file_is_refused() {
        let m = Mock::builtin();
        let mut bad = m.clone();
        bad.questions[0].right = Some("nowhere".into());
        assert!(matches!(bad.validate(), Err(MockError::Invalid { .. })));
        let mut bad = m.clone();
        bad.questions[1].answer = 9;
        assert!(bad.validate().is_err());
        let mut bad = m.clone();
        bad.start = "x".into();
        assert!(bad.validate().is_err());
        assert!(matches!(Mock::parse("{"), Err(MockError::Parse(_))));
    }

    /// Each demonstration is a lesson of the catalogue, opened within it.
    #[test]
    #[cfg(feature = "toml")]
    fn every_demonstration_and_topic_names_a_real_lesson() {
        let all = crate::lesson::builtin().unwrap();
        let m = Mock::builtin();
        for q in &m.questions {
            let l = crate::lesson::find(&all, &q.why.lesson).unwrap();
            assert!((1..=l.len()).contains(&q.why.step), "{}: step {}", q.id, q.why.step);
        }
        for t in &m.topics {
            for id in &t.lessons {
                crate::lesson::find(&all, id).unwrap();
            }
        }
    }
}
