//! Class mode's protocol, as types: what a presenter and the room's
//! followers send the backend's class routes, and what it relays to them.
//!
//! A class is a room following one trainer. The presenter's page drives a
//! lesson as it always does; each move (lesson, step, seed, presenter
//! view) goes to the server as a small [`Control`], and the server relays
//! it as a [`Position`] to every follower, whose own wasm engine replays
//! the lesson deterministically to that point. The server never runs or
//! sends a timeline for the simulator; only when the presenter plays on
//! real servers (a live demo nobody else can run) are the run's events
//! relayed ([`Control::Live`]).
//!
//! Who may say what is decided here by type, and checked by the server:
//! a [`ClassClientMsg::Control`] carries the presenter secret, which only
//! the presenter's page holds; a follower can only join, answer and
//! report a drill, and nothing a follower sends reaches another follower
//! except as counts (a name is shown as text, cleaned by [`clean_name`]).
//!
//! Answers are judged with the one judge of a quiz answer
//! ([`crate::lesson::judge::prediction_right`]) against the reply the
//! presenter's step got, which the presenter sends with the question —
//! on real servers that reply may differ from the simulator's.
//!
//! Serde only, no I/O: this compiles to wasm32 with the rest of core.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::lesson::judge::prediction_right;
use crate::lesson::{Lang, Step};
use crate::rng::Rng;
use crate::trace::Event;

/// A class code's characters: digits and capitals without the ones people
/// misread across a room (0/O, 1/I/L).
pub const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
/// A class code's length: 31⁶ ≈ 887 million codes, against join attempts
/// throttled per peer.
pub const CODE_LEN: usize = 6;
/// A follower's nickname, in characters, after [`clean_name`].
pub const NAME_MAX_CHARS: usize = 24;
/// A free-text answer, in characters.
pub const ANSWER_MAX_CHARS: usize = 200;
/// The largest frame a follower may send (its messages are a join, an
/// answer or a drill report: a few hundred bytes).
pub const FOLLOWER_FRAME_MAX: usize = 4 * 1024;
/// The largest frame a presenter may send: a batch of a real run's events.
pub const PRESENTER_FRAME_MAX: usize = 256 * 1024;
/// `--class-max`'s default: followers per class.
pub const DEFAULT_MAX_FOLLOWERS: usize = 1000;

/// What a class message or value can be wrong about.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ClassError {
    #[error("a class code is {CODE_LEN} characters from {}", std::str::from_utf8(CODE_ALPHABET).unwrap_or_default())]
    BadCode,
    #[error("no class has code {0}")]
    NoSuchClass(String),
    #[error("only the presenter can do that")]
    NotPresenter,
    #[error("the class is full ({0} followers)")]
    Full(usize),
    #[error("too many join attempts: try again in {0} s")]
    Throttled(u64),
    #[error("message too large ({size} bytes; at most {max})")]
    TooLarge { size: usize, max: usize },
    #[error("bad message: {0}")]
    Malformed(String),
    #[error("no question is open")]
    NoOpenQuestion,
    #[error("that choice does not exist")]
    NoSuchChoice,
    #[error("the class has ended")]
    Ended,
    #[error("a class is started on the machine that serves the lab (from a loopback address), not over the network")]
    LoopbackOnly,
    #[error("this connection is already in a class; open another to join or start one")]
    AlreadyInClass,
    #[error("this lab runs at most {0} classes at once; end one first")]
    TooManyClasses(usize),
    /// The class store (`--class-store`) did not answer: nothing was
    /// changed, and the same message may be sent again.
    #[error("the class store is unavailable ({0}); try again")]
    Unavailable(String),
}

/// A class's join code, always in canonical form (capitals, no spaces).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClassCode(String);

impl ClassCode {
    /// A fresh code from `rng` (the server seeds it from the OS).
    pub fn generate(rng: &mut Rng) -> ClassCode {
        let n = CODE_ALPHABET.len() as u64;
        ClassCode(
            (0..CODE_LEN)
                .map(|_| CODE_ALPHABET[rng.below(n) as usize] as char)
                .collect(),
        )
    }

    /// Read a code as a person types it: case, spaces and dashes do not
    /// matter (`abc-234` is `ABC234`).
    pub fn parse(typed: &str) -> Result<ClassCode, ClassError> {
        let code: String = typed
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .map(|c| c.to_ascii_uppercase())
            .collect();
        let ok = code.len() == CODE_LEN && code.bytes().all(|b| CODE_ALPHABET.contains(&b));
        ok.then_some(ClassCode(code)).ok_or(ClassError::BadCode)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ClassCode {
    type Error = ClassError;
    fn try_from(s: String) -> Result<ClassCode, ClassError> {
        ClassCode::parse(&s)
    }
}

impl From<ClassCode> for String {
    fn from(c: ClassCode) -> String {
        c.0
    }
}

impl std::fmt::Display for ClassCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A nickname as the room will see it: control and formatting characters
/// dropped, whitespace runs made one space, at most [`NAME_MAX_CHARS`];
/// `None` when nothing is left (the follower is then shown by number).
pub fn clean_name(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        // Cc and the bidi/format controls a name could hide behind.
        if c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            continue;
        }
        if out.chars().count() >= NAME_MAX_CHARS {
            break;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    (!out.is_empty()).then_some(out)
}

/// Which driver the presenter plays on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassDriver {
    /// The simulator: each follower replays the lesson itself.
    #[default]
    Sim,
    /// Real servers: followers show the relayed events ([`ServerSays::Live`]).
    Real,
}

/// Where the presenter is: everything a follower's page needs to show the
/// same thing by replaying it. A follower's language stays its own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// The lesson's id; `None`: the presenter is on the start page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lesson: Option<String>,
    /// Steps done (0: none yet).
    #[serde(default)]
    pub step: usize,
    /// The page's seed, when one is set (`?seed=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub driver: ClassDriver,
    /// Presenter mode's projector theme.
    #[serde(default)]
    pub dark: bool,
}

/// A follower's answer to the open question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The index of a multiple-choice option (the same index in zh and en).
    Choice(usize),
    /// A typed reply, for a "what does it answer" question.
    Text(String),
}

/// A question the presenter opened: the quiz of step `step` (0-based) of
/// lesson `lesson`, judged against `reply`, the reply that step got in the
/// presenter's run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The server's number for it, unique within the class.
    pub id: u32,
    pub lesson: String,
    pub step: usize,
    /// How many choices it has (0: a typed answer).
    pub choices: usize,
}

/// The room's answers to one question so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub question: u32,
    /// Answers per choice (for a typed answer: `[right, wrong]`).
    pub counts: Vec<u32>,
    /// Followers who answered, of `of` present.
    pub answered: u32,
    pub of: u32,
    /// Right answers (known to the presenter before the reveal, to the
    /// room after it).
    pub right: u32,
}

/// What the presenter controls. Every one is checked against the class's
/// secret by the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Control {
    /// The presenter moved: relay it.
    Move { position: Position },
    /// Ask the room the quiz of this step; `reply` is what the step got.
    Ask { lesson: String, step: usize, reply: String },
    /// Show the answer and the distribution on every screen.
    Reveal { question: u32 },
    /// Push a "break my lock" drill: each follower searches `design` (an
    /// explorer link, as `?explore=` carries it) in its own worker.
    Drill { design: String },
    /// Events of the presenter's real run, relayed to followers as they are.
    Live { events: Vec<Event> },
    /// End the class: followers get the summary and are disconnected.
    End,
}

/// A message to the class routes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClassClientMsg {
    /// Start a class (loopback only: the presenter runs the lab).
    Start,
    /// The presenter, reconnecting (a new page, another instance) with
    /// the secret it was given.
    Resume { code: ClassCode, secret: String },
    /// A follower joins. `member` and `since` come back on a reconnect:
    /// the member id the server gave, and the last stream id seen, so
    /// nothing in between is missed and no answer counts twice.
    Join {
        code: ClassCode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        member: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<String>,
    },
    /// The presenter's controls.
    Control { secret: String, control: Control },
    /// A follower answers the open question `question`; the first answer counts.
    Answer { question: u32, answer: Answer },
    /// A follower's drill ended: whether its explorer found a counterexample.
    DrillResult {
        drill: u32,
        found: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steps: Option<usize>,
        /// Schedules its explorer searched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schedules: Option<u64>,
    },
}

/// A follower's line in the roster the presenter sees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub member: String,
    pub name: Option<String>,
    pub score: u32,
    pub connected: bool,
}

impl Member {
    /// How the follower is shown: its nickname, or its member id when it
    /// gave none (the roster, the summary's CSV and Markdown alike).
    pub fn shown(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.member)
    }
}

/// A message from the class routes. `id` on relayed messages is the
/// class stream's id, what a reconnecting follower sends back as `since`.
///
/// Its `Deserialize` is written by hand ([`decode`]): serde's derive of an
/// internally tagged enum buffers each message and instantiates every
/// nested type's decoder twice, the page's largest function.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerSays {
    /// To the presenter: the class exists. `join_url` is what the QR code
    /// encodes (the LAN address when one is served).
    Started {
        code: ClassCode,
        secret: String,
        join_url: String,
        /// `join_url` as a QR code, an SVG document the server renders
        /// (the page's wasm need not carry a QR encoder); empty from a
        /// server that does not render one.
        #[serde(default)]
        qr_svg: String,
    },
    /// To a follower: joined (or rejoined); where the presenter is now and
    /// the open question, if any.
    Joined {
        member: String,
        #[serde(default)]
        name: Option<String>,
        position: Position,
        #[serde(default)]
        question: Option<Question>,
        #[serde(default)]
        drill: Option<Drill>,
        score: u32,
        since: String,
    },
    /// The presenter moved.
    Moved {
        id: String,
        position: Position,
    },
    /// A question is open.
    Asked {
        id: String,
        question: Question,
    },
    /// To the presenter, live: the answers so far, and who has given one
    /// (each as [`Member::shown`], in roster order), so the presenter's
    /// page names them without guessing from the counts. Never sent to
    /// followers: the room does not learn who answered.
    Tally {
        tally: Tally,
        #[serde(default)]
        names: Vec<String>,
    },
    /// To everyone: the answer and the distribution. `right_choice` is the
    /// right option's index (none for a typed answer).
    Revealed {
        id: String,
        tally: Tally,
        #[serde(default)]
        right_choice: Option<usize>,
    },
    /// To a follower: its answer was recorded (`right` none yet), and at
    /// the reveal whether it was right. `score` counts revealed questions
    /// only: a verdict or a score that moved before the reveal would tell
    /// the room the answer, from any follower's screen or devtools.
    Answered {
        question: u32,
        #[serde(default)]
        right: Option<bool>,
        score: u32,
    },
    /// A drill was pushed.
    DrillAsked {
        id: String,
        drill: Drill,
    },
    /// To the presenter: who has reported, and who found a counterexample.
    DrillTally {
        drill: u32,
        found: Vec<String>,
        reported: u32,
        of: u32,
    },
    /// Events of the presenter's real run.
    Live {
        id: String,
        events: Vec<Event>,
    },
    /// The class URLs of the instances serving the class now (each
    /// `locklab serve` advertises its `--class-url` in its heartbeat): a
    /// page whose instance dies reconnects to the next ([`reconnect_url`]).
    Instances {
        urls: Vec<String>,
    },
    /// To the presenter: the followers, when one joins or leaves.
    Roster {
        members: Vec<Member>,
    },
    /// The class ended; the summary is the same for everyone.
    Ended {
        summary: Summary,
    },
    Error {
        message: String,
    },
    /// A message this build does not know (a newer server): ignored.
    Unknown,
}

/// A pushed drill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drill {
    pub id: u32,
    pub design: String,
}

/// A question's line in the summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionSummary {
    pub question: Question,
    pub tally: Tally,
}

impl QuestionSummary {
    /// How many chose each answer, as the reports print them.
    fn counts(&self) -> Vec<String> {
        self.tally.counts.iter().map(u32::to_string).collect()
    }
}

/// The class at its end: per question the distribution and how many were
/// right; per follower the score.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub code: String,
    pub questions: Vec<QuestionSummary>,
    pub members: Vec<Member>,
}

impl Summary {
    /// Per question, then per follower, as CSV (RFC 4180 quoting; a name
    /// that starts like a formula is prefixed with `'`, so a spreadsheet
    /// shows it rather than evaluating it).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("kind,lesson,step,name,answered,of,right,percent_right,counts\n");
        for q in &self.questions {
            let (lesson, step, counts) = (csv_field(&q.question.lesson), q.question.step + 1, q.counts());
            let (answered, of, right) = (q.tally.answered, q.tally.of, q.tally.right);
            let pct = percent(right, answered);
            let counts = csv_field(&counts.join(" "));
            out.push_str(&format!(
                "question,{lesson},{step},,{answered},{of},{right},{pct},{counts}\n"
            ));
        }
        for m in &self.members {
            out.push_str(&format!("follower,,,{},,,{},,\n", csv_field(m.shown()), m.score));
        }
        out
    }

    /// The same as a Markdown report, in `lang`.
    pub fn to_markdown(&self, lang: Lang) -> String {
        let (title, qh, fh, name, score) = match lang {
            Lang::En => (
                "Class",
                "| lesson | step | answered | right | counts |",
                "Followers",
                "name",
                "score",
            ),
            Lang::Zh => ("课堂", "| 课程 | 步骤 | 作答 | 答对 | 分布 |", "学员", "名字", "得分"),
        };
        let mut out = format!("# {title} {}\n\n{qh}\n|---|---|---|---|---|\n", self.code);
        for q in &self.questions {
            let (lesson, step, counts) = (md_cell(&q.question.lesson), q.question.step + 1, q.counts());
            let (answered, of, right) = (q.tally.answered, q.tally.of, q.tally.right);
            let pct = percent(right, answered);
            let counts = counts.join(" / ");
            out.push_str(&format!(
                "| {lesson} | {step} | {answered}/{of} | {pct}% | {counts} |\n"
            ));
        }
        out.push_str(&format!("\n## {fh}\n\n| {name} | {score} |\n|---|---|\n"));
        for m in &self.members {
            out.push_str(&format!("| {} | {} |\n", md_cell(m.shown()), m.score));
        }
        out
    }
}

/// The class socket of an instance whose page is at `base` (its
/// `--class-url`, e.g. `http://192.168.1.5:8080/?x`): `ws://192.168.1.5:8080/api/class/ws`.
pub fn socket_url(base: &str) -> Option<String> {
    let (scheme, rest) = base.split_once("://")?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        _ => return None,
    };
    let host = rest
        .split(['/', '?', '#'])
        .next()
        .filter(|h| !h.is_empty() && !h.contains('@'))?;
    Some(format!("{scheme}://{host}/api/class/ws"))
}

/// Where a page reconnects after losing `current`: the next of
/// `candidates` (its own instance first, then the instances the server
/// advertised, [`ServerSays::Instances`]), round the list; `current`
/// again when it is the only one. A page whose instance died thus tries
/// each live one in turn, with its backoff between tries.
pub fn reconnect_url<'a>(candidates: &'a [String], current: &str) -> Option<&'a String> {
    let at = candidates.iter().position(|c| c == current);
    let next = at.map_or(0, |i| (i + 1) % candidates.len().max(1));
    candidates.get(next)
}

fn percent(part: u32, whole: u32) -> u32 {
    (u64::from(part) * 100).checked_div(u64::from(whole)).unwrap_or(0) as u32
}

fn csv_field(s: &str) -> String {
    let s = match s.chars().next() {
        Some('=' | '+' | '-' | '@') => format!("'{s}"),
        _ => s.to_owned(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn md_cell(s: &str) -> String {
    s.replace('\\', "\\\\").replace('|', "\\|").replace(['<', '>'], "")
}

/// Is `answer` right for `step`'s quiz, given the reply the presenter's
/// step got? A choice is judged by its English text, so a room answering
/// in two languages is judged alike.
pub fn judge<P>(step: &Step<P>, answer: &Answer, reply: &str) -> Result<bool, ClassError> {
    let quiz = step.quiz.as_ref().ok_or(ClassError::NoOpenQuestion)?;
    let guess = match answer {
        Answer::Choice(i) => quiz.choices.get(*i).ok_or(ClassError::NoSuchChoice)?.as_str(),
        Answer::Text(t) => t.as_str(),
    };
    Ok(prediction_right(step, guess, reply))
}

/// The index of the right choice of `step`'s quiz, if it is multiple-choice.
pub fn right_choice<P>(step: &Step<P>, reply: &str) -> Option<usize> {
    let quiz = step.quiz.as_ref()?;
    (0..quiz.choices.len()).find(|&i| judge(step, &Answer::Choice(i), reply) == Ok(true))
}

mod decode;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_read_as_typed_and_refused_when_not_ours() {
        let mut rng = Rng::new(7);
        let c = ClassCode::generate(&mut rng);
        assert_eq!(c.as_str().len(), CODE_LEN);
        assert_eq!(ClassCode::parse(&c.as_str().to_lowercase()).unwrap(), c);
        assert_eq!(ClassCode::parse("abc-234").unwrap().as_str(), "ABC234");
        assert_eq!(ClassCode::parse("ABC2340"), Err(ClassError::BadCode), "too long");
        assert_eq!(
            ClassCode::parse("ABC23O"),
            Err(ClassError::BadCode),
            "O is not in the alphabet"
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ClassCode>(&json).unwrap(), c);
        assert!(serde_json::from_str::<ClassCode>("\"IIIIII\"").is_err());
    }

    #[test]
    fn names_are_cleaned_and_capped() {
        assert_eq!(clean_name("  Ada \n Lovelace "), Some("Ada Lovelace".into()));
        assert_eq!(clean_name("\u{202e}evil\u{0007}"), Some("evil".into()));
        assert_eq!(clean_name(" \t "), None);
        assert_eq!(clean_name(&"x".repeat(500)).unwrap().chars().count(), NAME_MAX_CHARS);
        assert_eq!(
            clean_name("<b>hi</b>"),
            Some("<b>hi</b>".into()),
            "markup stays text; the page escapes it"
        );
    }

    #[test]
    fn a_summary_is_csv_a_spreadsheet_cannot_run() {
        let s = Summary {
            code: "ABC234".into(),
            questions: vec![QuestionSummary {
                question: Question {
                    id: 1,
                    lesson: "05".into(),
                    step: 3,
                    choices: 3,
                },
                tally: Tally {
                    question: 1,
                    counts: vec![1, 2, 0],
                    answered: 3,
                    of: 4,
                    right: 2,
                },
            }],
            members: vec![Member {
                member: "m1".into(),
                name: Some("=1+1, \"x\"".into()),
                score: 1,
                connected: true,
            }],
        };
        let csv = s.to_csv();
        assert!(csv.contains("question,05,4,,3,4,2,66,1 2 0\n"), "{csv}");
        assert!(csv.contains("follower,,,\"'=1+1, \"\"x\"\"\",,,1,,\n"), "{csv}");
        let md = s.to_markdown(Lang::Zh);
        assert!(md.contains("| 05 | 4 | 3/4 | 66% | 1 / 2 / 0 |"), "{md}");
    }

    #[test]
    fn messages_keep_their_wire_shape() {
        let m = ClassClientMsg::Control {
            secret: "s".into(),
            control: Control::Move {
                position: Position {
                    lesson: Some("05".into()),
                    step: 2,
                    ..Default::default()
                },
            },
        };
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"type":"control","secret":"s","control":{"do":"move","position":{"lesson":"05","step":2,"driver":"sim","dark":false}}}"#
        );
        assert_eq!(serde_json::from_str::<ClassClientMsg>(&json).unwrap(), m);
        let a = r#"{"type":"answer","question":3,"answer":{"choice":1}}"#;
        assert_eq!(
            serde_json::from_str::<ClassClientMsg>(a).unwrap(),
            ClassClientMsg::Answer {
                question: 3,
                answer: Answer::Choice(1)
            }
        );
        assert_eq!(
            serde_json::from_str::<ServerSays>(r#"{"type":"future"}"#).unwrap(),
            ServerSays::Unknown
        );
    }

    #[cfg(feature = "toml")]
    #[test]
    fn answers_are_judged_by_the_quiz_judge_in_either_language() {
        let all = crate::lesson::builtin().unwrap();
        let (lesson, i) = all
            .iter()
            .flat_map(|l| l.steps.iter().enumerate().map(move |(i, s)| (l, i, s)))
            .find(|(_, _, s)| {
                s.quiz
                    .as_ref()
                    .is_some_and(|q| q.choices.len() >= 2 && q.answer.is_some())
            })
            .map(|(l, i, _)| (l, i))
            .expect("the catalogue has a multiple-choice quiz with its own answer");
        let step = &lesson.steps[i];
        let right = right_choice(step, "").expect("its answer is one of its choices");
        assert_eq!(judge(step, &Answer::Choice(right), ""), Ok(true));
        let wrong = (right + 1) % step.quiz.as_ref().unwrap().choices.len();
        assert_eq!(judge(step, &Answer::Choice(wrong), ""), Ok(false));
        assert_eq!(judge(step, &Answer::Choice(99), ""), Err(ClassError::NoSuchChoice));
    }
}
