//! The lesson lint: quiz questions that do not give themselves away
//! (issue 38).
//!
//! Interview practice only tests when the candidate cannot read the answer
//! off the screen or guess it from the shape of the options. [`lint`] checks
//! the whole catalogue, in both languages, for four ways a question gives
//! itself away, and for two ways its choices can be malformed:
//!
//! 1. **The longest option.** Over the catalogue, the answer may be the
//!    strictly longest option in at most [`MAX_LONGEST_PCT`] % of the *prose*
//!    multiple-choice questions, counted in characters (Unicode scalar values
//!    of the text as written), separately in zh and in en. A question is
//!    prose when it has three or more choices and at least one of them is not
//!    a [literal](is_literal): a reply as redis-cli prints it (`(integer) 1`,
//!    `(nil)`, `(error) …`, `"token-A-111"`, `OK`, `1) …`), `True`/`False`,
//!    or a figure made only of digits and `. , / < > ≤ ≥ = – - + % ~ ≈`,
//!    with at most an "about" / "约" before it and a unit (`ms`, `s`, `min`,
//!    `h`) after it (`0/5`, `≈ 14 ms`, `about 30000`). The other way round
//!    gives it away as surely (distractors padded past the answer), so the
//!    answer may be the strictly shortest option in at most
//!    [`MAX_SHORTEST_PCT`] % of them too.
//! 2. **The answer on the screen.** No answer may appear in what is shown
//!    before the step that asks it: the narration, a timed answer's question
//!    and rubric, and every earlier step's
//!    `say`, `explain` and quiz question (the asking step's own `say` and
//!    `explain` are shown after the answer, as its reply is). Texts are
//!    [normalised](normalize) (case, whitespace, Markdown marks, full-width
//!    punctuation, "3 of 5" read as "3/5"). What is searched for — the
//!    [needles](needles) — is the answer itself; for a redis-cli reply, the
//!    value it shows too (`(integer) 0` → `0`, `"token-B-222"` →
//!    `token-B-222`, `(nil)` → `nil`, `(error) MSG` → `MSG`, each element of
//!    an array); and each part of an answer cut at `,` `:` `;` `—` and a
//!    bracket after a word (`no (2 < 3)`: `no`, `2 < 3`)
//!    that no other choice contains and that is long enough to mean
//!    something (two words and 8 characters, or 4 characters with Chinese).
//!    A needle is found only as a whole: a Latin letter or digit next to it
//!    in the text makes it another word or number. A needle of at most three
//!    Latin or two Chinese letters (`ok`, `nil`, `yes`, `不会`) or a bare
//!    number of any size is
//!    trivially present in prose ("step 1", "TTL 30 s", "OK, so"), so it
//!    counts only as a reply: right
//!    after a word that says one ([`REPLY_WORDS`]: "answers 0", "返回 1",
//!    "gets (nil)", "→ 0", "token: 1").
//! 3. **zh and en lists that differ.** Each choice says the same in both
//!    languages as far as a program can tell: the same numbers (as a
//!    multiset, after the normalisation above), the same symbols among
//!    `< > ≤ ≥ = / + %`, and a parenthesised part in both or in neither (a
//!    number spelt as a word, "all three", is not checked). Lesson 17's zh
//!    "拿到" against en "yes (3 ≥ N/2+1)" fails all three.
//! 4. **The answer's slot.** Over the questions with three or more choices,
//!    the answer is in the first slot and in the last slot each in
//!    [`MIN_SLOT_PCT`]–[`MAX_SLOT_PCT`] % of them, so the file order gives
//!    nothing away (before this lint it was last in 6 of 52 three-choice
//!    questions).
//!
//! 5. **No silent clicks** (issue 39). Every step changes what the room
//!    sees when presenter mode steps to it: a `wait_ms`, a `fault`, and a
//!    `hold` or `unhold` step of its own show only the runner's wording of
//!    themselves, so each carries an `explain` (its caption), and a belief is
//!    better folded into the `cmd` or `write` that causes it
//!    (`Step::belief`), where the reply is the caption.
//!
//! 6. **Narration as a hook** (issue 39): at most
//!    [`notes::HOOK_ZH_CHARS`] characters in zh and [`notes::HOOK_EN_CHARS`]
//!    in en ([`notes::length`]); the rest belongs in the steps'
//!    explanations or the trainer's note.
//! 7. **Trainer notes:** every lesson has its note (`notes = { zh, en }`),
//!    the one thing presenter mode's notes window always shows.
//!
//! Choices are also distinct within a question (in each language, once
//! normalised). That the answer is one of the choices, and its zh form the
//! zh form of that choice, `Lesson::validate` already checks on parsing.

use std::collections::BTreeSet;
use std::fmt;

use super::render::quiz_answer;
use super::{notes, Lang, Lesson, Quiz, Step, StepKind};

/// The most the answer may be the longest option, over the catalogue's
/// prose multiple-choice questions, per language (issue 38).
pub const MAX_LONGEST_PCT: f64 = 40.0;
/// The same for the answer being the shortest option.
pub const MAX_SHORTEST_PCT: f64 = 40.0;
/// The least and most share of questions (three or more choices) whose
/// answer is in the first, and in the last, slot.
pub const MIN_SLOT_PCT: f64 = 20.0;
pub const MAX_SLOT_PCT: f64 = 50.0;

/// Words after which a short needle or a number is a reply being stated
/// (normalised: lower case, full-width colons as `:`).
pub const REPLY_WORDS: &[&str] = &[
    "answer",
    "answers",
    "answered",
    "return",
    "returns",
    "returned",
    "reply",
    "replies",
    "replied",
    "gets",
    "got",
    "gives",
    "says",
    "→",
    ":",
    "返回",
    "回复",
    "答复",
    "应答",
    "得到",
    "结果是",
    "结果为",
    "给出",
];

/// One thing the lint found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The answer appears in text shown before its question.
    OnScreen {
        id: String,
        step: usize,
        lang: Lang,
        answer: String,
        needle: String,
        context: String,
    },
    /// A choice's zh and en forms differ in their numbers, symbols or
    /// parenthesised part, or the lists differ in length.
    Mismatch {
        id: String,
        step: usize,
        en: String,
        zh: String,
    },
    /// A wait, a fault or a belief of its own with no caption: pressing
    /// "next" on it shows the room nothing (issue 39).
    Silent {
        id: String,
        step: usize,
        what: &'static str,
    },
    /// A narration longer than a hook (rule 6).
    LongNarration {
        id: String,
        lang: Lang,
        chars: usize,
        max: usize,
    },
    /// A lesson with no trainer's note (rule 7).
    NoNotes { id: String },
    /// Two choices of one question read the same.
    Duplicate {
        id: String,
        step: usize,
        lang: Lang,
        choice: String,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::OnScreen {
                id,
                step,
                lang,
                answer,
                needle,
                context,
            } => write!(
                f,
                "lesson {id}, step {step} [{}]: the answer {answer:?} is on the screen before it is asked ({needle:?} in “…{context}…”)",
                lang.code()
            ),
            Finding::Mismatch { id, step, en, zh } => {
                write!(f, "lesson {id}, step {step}: the choice {en:?} says something else in zh: {zh:?}")
            }
            Finding::Silent { id, step, what } => {
                let a = if what.starts_with('u') { "an" } else { "a" };
                write!(f, "lesson {id}, step {step}: {a} {what} step with no caption (give it an explain)")
            }
            Finding::LongNarration { id, lang, chars, max } => write!(
                f,
                "lesson {id} [{}]: the narration has {chars} characters, a hook has at most {max} (move the rest into \
                 the steps' explanations or the notes)",
                lang.code()
            ),
            Finding::NoNotes { id } => write!(f, "lesson {id}: no trainer's note (notes = {{ zh = …, en = … }})"),
            Finding::Duplicate { id, step, lang, choice } => {
                write!(f, "lesson {id}, step {step} [{}]: the choice {choice:?} is there twice", lang.code())
            }
        }
    }
}

/// A count out of a total, shown as "n/total (p %)".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub count: usize,
    pub total: usize,
}

impl Share {
    pub fn pct(self) -> f64 {
        match self.total {
            0 => 0.0,
            t => 100.0 * self.count as f64 / t as f64,
        }
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} ({:.0} %)", self.count, self.total, self.pct())
    }
}

/// What the lint found over a catalogue.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LintReport {
    /// Prose multiple-choice questions whose answer is the longest option:
    /// zh, then en.
    pub longest: [Share; 2],
    /// … and the shortest option, zh then en.
    pub shortest: [Share; 2],
    /// Questions with three or more choices whose answer is in the first
    /// slot, and in the last.
    pub first_slot: Share,
    pub last_slot: Share,
    /// Quizzes (with an answer that can be searched for) and how many of
    /// them are on the screen before they are asked, in either language.
    pub on_screen: Share,
    pub findings: Vec<Finding>,
}

impl LintReport {
    /// Every rule of the module doc holds.
    pub fn passes(&self) -> bool {
        self.findings.is_empty() && self.failed_shares().is_empty()
    }

    /// The catalogue-wide figures that are out of bounds, as sentences.
    pub fn failed_shares(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (lang, s) in [(Lang::Zh, self.longest[0]), (Lang::En, self.longest[1])] {
            if s.pct() > MAX_LONGEST_PCT {
                out.push(format!(
                    "[{}] the answer is the longest option in {s} of the prose multiple-choice questions (at most {MAX_LONGEST_PCT} %)",
                    lang.code()
                ));
            }
        }
        for (lang, s) in [(Lang::Zh, self.shortest[0]), (Lang::En, self.shortest[1])] {
            if s.pct() > MAX_SHORTEST_PCT {
                out.push(format!(
                    "[{}] the answer is the shortest option in {s} of the prose multiple-choice questions (at most {MAX_SHORTEST_PCT} %)",
                    lang.code()
                ));
            }
        }
        for (slot, s) in [("first", self.first_slot), ("last", self.last_slot)] {
            if s.total > 0 && !(MIN_SLOT_PCT..=MAX_SLOT_PCT).contains(&s.pct()) {
                out.push(format!(
                    "the answer is in the {slot} slot in {s} of the questions with three or more choices ({MIN_SLOT_PCT}–{MAX_SLOT_PCT} %)"
                ));
            }
        }
        out
    }
}

impl fmt::Display for LintReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "answer is the longest option: zh {}, en {} of prose multiple-choice questions",
            self.longest[0], self.longest[1]
        )?;
        writeln!(
            f,
            "answer is the shortest option: zh {}, en {}",
            self.shortest[0], self.shortest[1]
        )?;
        writeln!(
            f,
            "answer slot (3+ choices): first {}, last {}",
            self.first_slot, self.last_slot
        )?;
        writeln!(f, "answers on the screen before their question: {}", self.on_screen)?;
        for s in self.failed_shares() {
            writeln!(f, "FAIL {s}")?;
        }
        for x in &self.findings {
            writeln!(f, "FAIL {x}")?;
        }
        Ok(())
    }
}

/// Lint a catalogue (see the module doc for the rules).
pub fn lint(lessons: &[Lesson]) -> LintReport {
    let mut r = LintReport::default();
    for lesson in lessons {
        lint_lesson(lesson, &mut r);
    }
    r
}

fn lint_lesson(lesson: &Lesson, r: &mut LintReport) {
    let langs = [Lang::Zh, Lang::En];
    for (lang, max) in [(Lang::Zh, notes::HOOK_ZH_CHARS), (Lang::En, notes::HOOK_EN_CHARS)] {
        let chars = notes::length(lesson.narration.get(lang));
        if chars > max {
            r.findings.push(Finding::LongNarration {
                id: lesson.id.clone(),
                lang,
                chars,
                max,
            });
        }
    }
    if lesson.notes.is_none() {
        r.findings.push(Finding::NoNotes { id: lesson.id.clone() });
    }
    // What is on the screen before the current step, per language.
    let mut shown: [Vec<String>; 2] = langs.map(|l| vec![normalize(lesson.narration.get(l))]);
    // A timed answer's question and rubric come before the first step.
    for t in lesson
        .timed
        .iter()
        .flat_map(|t| std::iter::once(&t.question).chain(&t.rubric))
    {
        for (k, lang) in langs.into_iter().enumerate() {
            shown[k].push(normalize(t.get(lang)));
        }
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        if let Some(what) = silent(step) {
            r.findings.push(Finding::Silent {
                id: lesson.id.clone(),
                step: i + 1,
                what,
            });
        }
        if let Some(q) = &step.quiz {
            let (id, n) = (lesson.id.as_str(), i + 1);
            let mut hit = false;
            for (k, lang) in langs.into_iter().enumerate() {
                if let Some(f) = on_screen(id, n, step, q, lang, &shown[k]) {
                    r.findings.push(f);
                    hit = true;
                }
            }
            r.on_screen.total += 1;
            r.on_screen.count += usize::from(hit);
            check_choices(id, n, step, q, r);
        }
        for (k, lang) in langs.into_iter().enumerate() {
            let texts = [step.say.as_ref(), step.explain.as_ref()];
            shown[k].extend(texts.into_iter().flatten().map(|t| normalize(t.get(lang))));
            if let Some(q) = &step.quiz {
                shown[k].push(normalize(q.question(lang)));
            }
        }
    }
}

/// What kind of step `step` is, when it shows nothing but its own wording:
/// a wait, a fault or a belief of its own without an `explain` (rule 5).
pub fn silent<P>(step: &Step<P>) -> Option<&'static str> {
    if step.explain.is_some() {
        return None;
    }
    match step.kind().ok()? {
        StepKind::Wait(_) => Some("wait"),
        StepKind::Fault(_) => Some("fault"),
        StepKind::Hold { holds: true, .. } => Some("hold"),
        StepKind::Hold { holds: false, .. } => Some("unhold"),
        _ => None,
    }
}

/// The first needle of `q`'s answer found in `shown`, as a finding.
fn on_screen(id: &str, step_no: usize, step: &Step, q: &Quiz, lang: Lang, shown: &[String]) -> Option<Finding> {
    let answer = quiz_answer(step, q, lang);
    let others: Vec<String> = (q.choices_in(lang).into_iter())
        .filter(|c| *c != answer)
        .map(normalize)
        .collect();
    for needle in needles(&answer, &others) {
        for text in shown {
            if let Some(at) = find(text, &needle) {
                return Some(Finding::OnScreen {
                    id: id.to_owned(),
                    step: step_no,
                    lang,
                    answer: answer.clone(),
                    needle,
                    context: around(text, at),
                });
            }
        }
    }
    None
}

/// Up to 40 characters either side of byte `at`.
fn around(text: &str, at: usize) -> String {
    let before: Vec<char> = text[..at].chars().rev().take(40).collect();
    let after: String = text[at..].chars().take(60).collect();
    before.into_iter().rev().collect::<String>() + &after
}

/// The longest-option and slot counts, zh/en agreement and distinctness
/// of one multiple-choice question.
fn check_choices(id: &str, step_no: usize, step: &Step, q: &Quiz, r: &mut LintReport) {
    if q.choices.is_empty() {
        return;
    }
    let langs = [Lang::Zh, Lang::En];
    if q.choices.len() >= 3 {
        let en_answer = quiz_answer(step, q, Lang::En);
        let at = q.choices.iter().position(|c| *c == en_answer);
        r.first_slot.total += 1;
        r.last_slot.total += 1;
        r.first_slot.count += usize::from(at == Some(0));
        r.last_slot.count += usize::from(at == Some(q.choices.len() - 1));
        if !q.choices.iter().all(|c| is_literal(c)) {
            for (k, lang) in langs.into_iter().enumerate() {
                let answer = quiz_answer(step, q, lang);
                let len = |s: &str| s.trim().chars().count();
                let others: Vec<usize> = (q.choices_in(lang).into_iter())
                    .filter(|c| *c != answer)
                    .map(len)
                    .collect();
                let n = len(&answer);
                r.longest[k].total += 1;
                r.longest[k].count += usize::from(others.iter().all(|o| *o < n));
                r.shortest[k].total += 1;
                r.shortest[k].count += usize::from(others.iter().all(|o| *o > n));
            }
        }
    }
    let (en, zh) = (q.choices_in(Lang::En), q.choices_in(Lang::Zh));
    let mismatch = |en: &str, zh: &str| Finding::Mismatch {
        id: id.to_owned(),
        step: step_no,
        en: en.to_owned(),
        zh: zh.to_owned(),
    };
    if !q.choices_zh.is_empty() && q.choices_zh.len() != q.choices.len() {
        r.findings.push(mismatch(&en.join(" | "), &q.choices_zh.join(" | ")));
    }
    for (e, z) in en.iter().zip(&zh) {
        if !says_the_same(e, z) {
            r.findings.push(mismatch(e, z));
        }
    }
    for lang in langs {
        let mut seen = BTreeSet::new();
        for c in q.choices_in(lang) {
            if !seen.insert(normalize(c)) {
                r.findings.push(Finding::Duplicate {
                    id: id.to_owned(),
                    step: step_no,
                    lang,
                    choice: c.to_owned(),
                });
            }
        }
    }
}

/// Rule 3: the same numbers, symbols and parenthesised part.
pub fn says_the_same(en: &str, zh: &str) -> bool {
    let (en, zh) = (normalize(en), normalize(zh));
    let symbols = |s: &str| {
        s.chars()
            .filter(|c| "<>≤≥=/+%".contains(*c))
            .collect::<BTreeSet<char>>()
    };
    numbers(&en) == numbers(&zh) && symbols(&en) == symbols(&zh) && en.contains('(') == zh.contains('(')
}

/// The numbers in a text, sorted (`25 000` is two: `25`, `000`).
fn numbers(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let decimal_point = c == '.' && !cur.is_empty() && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || decimal_point {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out.sort();
    out
}

/// Is a choice a literal rather than prose (rule 1)?
pub fn is_literal(choice: &str) -> bool {
    let c = normalize(choice);
    let reply = ["(integer)", "(nil)", "(error)", "(empty", "\"", "1) "];
    if reply.iter().any(|p| c.starts_with(p)) || ["ok", "true", "false"].contains(&c.as_str()) {
        return true;
    }
    let mut rest = c.as_str();
    for p in ["about ", "约 ", "约", "≈ ", "≈", "~"] {
        rest = rest.strip_prefix(p).unwrap_or(rest);
    }
    for u in [" ms", " min", " s", " h"] {
        rest = rest.strip_suffix(u).unwrap_or(rest);
    }
    rest.chars().any(|c| c.is_ascii_digit())
        && rest
            .chars()
            .all(|c| c.is_ascii_digit() || c == ' ' || ".,/<>≤≥=–-+%~≈".contains(c))
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303f}' | '\u{4e00}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

/// Lower case; full-width `（）：；，“”` as ASCII; no Markdown `` ` `` or
/// `*`; whitespace runs as one space, none between two Chinese characters
/// (a file's line break inside a zh paragraph); "3 of 5" as "3/5".
pub fn normalize(s: &str) -> String {
    let lower = s.to_lowercase();
    let mapped = lower.chars().filter(|c| !matches!(c, '`' | '*')).map(|c| match c {
        '（' => '(',
        '）' => ')',
        '：' => ':',
        '；' => ';',
        '，' => ',',
        '“' | '”' => '"',
        c if c.is_whitespace() => ' ',
        c => c,
    });
    let mut out: Vec<char> = Vec::with_capacity(s.len());
    for c in mapped {
        if c == ' ' && out.last().is_none_or(|p| *p == ' ') {
            continue;
        }
        if out.last() == Some(&' ') && is_cjk(c) && out.len() >= 2 && is_cjk(out[out.len() - 2]) {
            out.pop();
        }
        out.push(c);
    }
    let s: String = out.into_iter().collect::<String>().trim().to_owned();
    of_as_slash(&s)
}

/// "3 of 5" → "3/5" (a digit on both sides of " of ").
fn of_as_slash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(" of ") {
        let digit_before = rest[..at].ends_with(|c: char| c.is_ascii_digit());
        let digit_after = rest[at + 4..].starts_with(|c: char| c.is_ascii_digit());
        out.push_str(&rest[..at]);
        out.push_str(if digit_before && digit_after { "/" } else { " of " });
        rest = &rest[at + 4..];
    }
    out.push_str(rest);
    out
}

/// What to search for (rule 2): the normalised answer, the value a reply
/// shows, and each part of the answer no other choice contains.
pub fn needles(answer: &str, others: &[String]) -> Vec<String> {
    let a = normalize(answer);
    let mut out = Vec::new();
    reply_values(&a, &mut out);
    // A bracket opened after a word starts a part ("no (2 < 3)"); one
    // that opens the answer is a reply's type ("(integer) 1").
    let cut = a.replace(" (", ", ");
    let parts: Vec<&str> = (cut.split([',', ':', ';', '—']))
        .map(|p| match p.contains('(') {
            true => p.trim(),
            false => p.trim().trim_end_matches(')').trim_end(),
        })
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() > 1 {
        for p in parts {
            let long_enough = match p.chars().any(is_cjk) {
                true => p.chars().count() >= 4,
                false => p.split(' ').count() >= 2 && p.chars().count() >= 8,
            };
            if long_enough && !others.iter().any(|o| o.contains(p)) {
                reply_values(p, &mut out);
            }
        }
    }
    let mut seen = BTreeSet::new();
    out.retain(|n| !n.is_empty() && seen.insert(n.clone()));
    out
}

/// `a` itself, and the value it shows when it is a redis-cli reply.
fn reply_values(a: &str, out: &mut Vec<String>) {
    out.push(a.to_owned());
    if a.starts_with("1) ") {
        // An array: each element, numbered `1) `, `2) `, ….
        let mut rest = a;
        for n in 1.. {
            let mark = format!("{n}) ");
            let Some(at) = rest.find(&mark) else { break };
            rest = &rest[at + mark.len()..];
            let end = rest.find(&format!(" {}) ", n + 1)).unwrap_or(rest.len());
            reply_values(rest[..end].trim(), out);
        }
        return;
    }
    if let Some(n) = a.strip_prefix("(integer) ") {
        out.push(n.to_owned());
    } else if let Some(s) = a.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        out.push(s.to_owned());
    } else if a == "(nil)" {
        out.push("nil".to_owned());
    } else if let Some(m) = a.strip_prefix("(error) ") {
        out.push(m.to_owned());
    }
}

fn is_number(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.') && !digits.starts_with('.')
}

/// Where `needle` is in `text` as a whole (rule 2), by byte offset.
pub fn find(text: &str, needle: &str) -> Option<usize> {
    let letters = needle.chars().count();
    let word_like = needle.chars().all(char::is_alphabetic) && (letters <= 2 || letters == 3 && needle.is_ascii());
    let as_reply = word_like || is_number(needle);
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let mut from = 0;
    while let Some(rel) = text[from..].find(needle) {
        let at = from + rel;
        let end = at + needle.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        let glued_before = needle.starts_with(|c: char| c.is_ascii_alphanumeric()) && word(before)
            || is_number(needle) && matches!(before, Some('-' | '.'));
        let glued_after = needle.ends_with(|c: char| c.is_ascii_alphanumeric())
            && (word(after) || after == Some('.') && word(text[end + 1..].chars().next()));
        if !glued_before && !glued_after && (!as_reply || after_reply_word(&text[..at])) {
            return Some(at);
        }
        from = at + needle.chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Does `before` end with a word that states a reply (an opening quote or
/// bracket and a space between them allowed)?
fn after_reply_word(before: &str) -> bool {
    let b = before.strip_suffix(['"', '\'', '(']).unwrap_or(before);
    let b = b.strip_suffix(' ').unwrap_or(b);
    REPLY_WORDS.iter().any(|w| {
        b.strip_suffix(w).is_some_and(|rest| {
            !w.starts_with(|c: char| c.is_ascii_alphabetic()) || !rest.ends_with(|c: char| c.is_ascii_alphanumeric())
        })
    })
}
