//! What a lesson step is made of besides its action: the reply it
//! [`Expect`]s, its [`Quiz`] and the [`Localized`] text of its choices, the
//! protected-resource [`WriteSpec`] and the [`MetricsSpec`] of a metrics
//! step. Split from `lesson/mod.rs` (issue 36: one seam a file).

use serde::{Deserialize, Serialize};

use super::{Bilingual, Lang};

/// What a step's reply should be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expect {
    /// Exactly this redis-cli rendering (`OK`, `(nil)`, `(integer) 1`,
    /// `"token-A-111"`, or a numbered array on several lines). For a write
    /// step: `accepted` or `rejected`.
    Exact(String),
    /// An integer reply within `min..=max` — for "a positive number of
    /// milliseconds" or "close to 20000".
    Range { min: i64, max: i64 },
}

impl Expect {
    /// Does `reply` (a redis-cli rendering) meet the expectation?
    pub fn matches(&self, reply: &str) -> bool {
        match self {
            Expect::Exact(want) => want.trim_end() == reply.trim_end(),
            Expect::Range { min, max } => reply
                .strip_prefix("(integer) ")
                .and_then(|n| n.trim().parse::<i64>().ok())
                .is_some_and(|n| (*min..=*max).contains(&n)),
        }
    }

    /// How the expectation is shown.
    pub fn describe(&self) -> String {
        match self {
            Expect::Exact(s) => s.clone(),
            Expect::Range { min, max } => format!("(integer) {min}..{max}"),
        }
    }
}

/// A text a lesson file may give once for both languages (`"(integer) 1"`,
/// `"5–50 ms"`) or in each (`{ zh = "…", en = "…" }`): quiz choices and
/// answers, values written to the resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Localized {
    Same(String),
    Both(Bilingual),
}

impl Localized {
    pub fn get(&self, lang: Lang) -> &str {
        match self {
            Localized::Same(s) => s,
            Localized::Both(t) => t.get(lang),
        }
    }
}

/// A quiz question asked before the step runs; its answer is the step's
/// expected reply (or `answer`).
///
/// Choices and the answer have a Chinese and an English form each. The
/// English (or language-neutral) forms are `choices` and `answer`, the
/// Chinese ones `choices_zh` and `answer_zh` (empty / none: the same as the
/// English); a lesson file writes each choice once, as a string or as
/// `{ zh, en }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RawQuiz", into = "RawQuiz")]
pub struct Quiz {
    pub zh: String,
    pub en: String,
    /// Multiple-choice options, if the question is not "what is the reply".
    pub choices: Vec<String>,
    pub choices_zh: Vec<String>,
    /// The right answer when it is not the expected reply.
    pub answer: Option<String>,
    pub answer_zh: Option<String>,
}

impl Quiz {
    /// The question in `lang`.
    pub fn question(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        }
    }

    /// The choices in `lang`.
    pub fn choices_in(&self, lang: Lang) -> Vec<&str> {
        match lang {
            Lang::Zh if self.choices_zh.len() == self.choices.len() => {
                self.choices_zh.iter().map(String::as_str).collect()
            }
            _ => self.choices.iter().map(String::as_str).collect(),
        }
    }

    /// The answer in `lang`, when the quiz states one.
    pub fn answer_in(&self, lang: Lang) -> Option<&str> {
        match lang {
            Lang::Zh => self.answer_zh.as_deref().or(self.answer.as_deref()),
            Lang::En => self.answer.as_deref(),
        }
    }

    /// The order interview mode shows the choices in, as indices into
    /// `choices` (and `choices_zh`, which move with them): shuffled by the
    /// attempt's `seed` and the step's index, so every question of an
    /// attempt has its own order, a link with the seed asks in the same
    /// one, and a file's slot for the answer says nothing. The judge is
    /// unaffected: it compares the chosen text, not its slot.
    pub fn choice_order(&self, seed: u64, step: usize) -> Vec<usize> {
        crate::rng::Rng::derive(seed, step as u64).permutation(self.choices.len())
    }
}

/// A quiz as a lesson file writes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuiz {
    zh: String,
    en: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    choices: Vec<Localized>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Localized>,
}

fn localized(en: String, zh: Option<String>) -> Localized {
    match zh {
        Some(zh) if zh != en => Localized::Both(Bilingual { zh, en }),
        _ => Localized::Same(en),
    }
}

impl From<RawQuiz> for Quiz {
    fn from(r: RawQuiz) -> Quiz {
        let en = |l: &Localized| l.get(Lang::En).to_owned();
        let zh = |l: &Localized| l.get(Lang::Zh).to_owned();
        Quiz {
            zh: r.zh,
            en: r.en,
            choices: r.choices.iter().map(en).collect(),
            choices_zh: r.choices.iter().map(zh).collect(),
            answer: r.answer.as_ref().map(en),
            answer_zh: r.answer.as_ref().map(zh),
        }
    }
}

impl From<Quiz> for RawQuiz {
    fn from(q: Quiz) -> RawQuiz {
        let mut zh = q.choices_zh.into_iter();
        RawQuiz {
            zh: q.zh,
            en: q.en,
            choices: q.choices.into_iter().map(|en| localized(en, zh.next())).collect(),
            answer: q.answer.map(|en| localized(en, q.answer_zh)),
        }
    }
}

/// A write a client makes to the protected resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RawWrite", into = "RawWrite")]
pub struct WriteSpec {
    /// A fixed fencing token.
    pub token: Option<i64>,
    /// Use the last integer reply this client saw (the `INCR` just before).
    pub token_from_last_reply: bool,
    /// What is written, in English (what the trace records) …
    pub value: String,
    /// … and in Chinese, when the file gives it (`value = { zh, en }`).
    pub value_zh: Option<String>,
    /// The lock the write is made under, when a lesson has several
    /// (lesson 45): that lock's store on the resource takes it.
    pub lock: Option<String>,
}

impl WriteSpec {
    pub fn value_in(&self, lang: Lang) -> &str {
        match lang {
            Lang::Zh => self.value_zh.as_deref().unwrap_or(&self.value),
            Lang::En => &self.value,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWrite {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<i64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    token_from_last_reply: bool,
    value: Localized,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lock: Option<String>,
}

impl From<RawWrite> for WriteSpec {
    fn from(r: RawWrite) -> WriteSpec {
        WriteSpec {
            token: r.token,
            token_from_last_reply: r.token_from_last_reply,
            value: r.value.get(Lang::En).to_owned(),
            value_zh: match r.value {
                Localized::Both(t) => Some(t.zh),
                Localized::Same(_) => None,
            },
            lock: r.lock,
        }
    }
}

impl From<WriteSpec> for RawWrite {
    fn from(w: WriteSpec) -> RawWrite {
        RawWrite {
            token: w.token,
            token_from_last_reply: w.token_from_last_reply,
            value: localized(w.value, w.value_zh),
            lock: w.lock,
        }
    }
}

/// Lock-health figures over the run so far (lessons 25–27): each bound that
/// is given must hold for the step to pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSpec {
    /// The clients to count (default: all actors).
    pub clients: Vec<String>,
    /// Count only events after the previous `metrics` step.
    pub since_last: bool,
    pub min_success_pct: Option<f64>,
    /// A ceiling too, for a lesson that shows clients failing (18: fixed
    /// retry delays split the votes round after round).
    pub max_success_pct: Option<f64>,
    pub max_mean_wait_ms: Option<f64>,
    /// A lower bound too, for a lesson that states a figure (18: "the
    /// mean wait is about 416 ms") rather than a ceiling.
    pub min_mean_wait_ms: Option<f64>,
    pub max_mean_retries: Option<f64>,
    pub min_mean_retries: Option<f64>,
    pub min_acquisitions: Option<u64>,
    pub max_commands: Option<u64>,
    pub min_commands: Option<u64>,
}

impl Eq for MetricsSpec {}
