//! Lessons as the page carries them: each client program with its wording,
//! and the program itself as JSON the page never reads.
//!
//! The page words a program step ("program: lock k (SET NX PX 10000, …)")
//! but never runs one: the engine module, the explore worker and the
//! backend do. Decoding a [`Program`] (its steps, conditions, watchdog and
//! Redlock options) is about 20 KB of wasm, so the page does not: the
//! catalogue it fetches and the counterexamples the explore worker sends
//! are [`PageLesson`]s, made once by [`Lesson::worded`], whose programs are
//! [`ProgramJson`] (JSON text, kept as it came) with their wording. When
//! the page plays such a lesson (on the engine, or on real servers through
//! the backend) it sends it on in the same shape, and the receiver decodes
//! the programs and drops the words ([`Lesson::decoded`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{Lesson, LessonError, Step};
use crate::client::Program;

/// A lesson as the page holds it: programs worded, not decoded.
pub type PageLesson = Lesson<Worded<ProgramJson>>;

/// A client program and what a step running it says, in both languages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worded<P> {
    pub en: String,
    pub zh: String,
    pub program: P,
}

/// A program as JSON text, passed on untouched by a reader that only words
/// it. Text rather than serde_json's `RawValue`, because a lesson also
/// travels inside internally tagged messages ([`ClientMsg`](crate::protocol::ClientMsg)),
/// which serde buffers, and a buffered value cannot be kept raw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProgramJson(String);

/// What a program step says, in either language: core's wording of a
/// [`Program`], or the wording a [`Worded`] program carries.
pub trait Wording {
    fn english(&self) -> Cow<'_, str>;
    fn chinese(&self) -> Cow<'_, str>;
}

impl<P> Wording for Worded<P> {
    fn english(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.en)
    }

    fn chinese(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.zh)
    }
}

impl Wording for Program {
    fn english(&self) -> Cow<'_, str> {
        Cow::Owned(describe(self, false))
    }

    fn chinese(&self) -> Cow<'_, str> {
        Cow::Owned(describe(self, true))
    }
}

impl Lesson {
    /// This lesson as the page is sent it: each program worded, and as
    /// JSON; the trainer's notes left out (the page is what a class serves
    /// to the LAN: see [`super::notes`]).
    pub fn worded(&self) -> PageLesson {
        let worded = self.clone().without_notes().try_map_programs(|_, p| {
            serde_json::to_string(&p).map(|json| Worded {
                en: describe(&p, false),
                zh: describe(&p, true),
                program: ProgramJson(json),
            })
        });
        worded.expect("a program always serialises")
    }
}

impl PageLesson {
    /// The lesson to run: its programs decoded, their words dropped. A
    /// program that does not decode (the page passes on what it was sent)
    /// is an error naming its step.
    pub fn decoded(self) -> Result<Lesson, LessonError> {
        let id = self.id.clone();
        self.try_map_programs(|i, w| {
            serde_json::from_str(&w.program.0).map_err(|e| LessonError::Step {
                id: id.clone(),
                step: i + 1,
                msg: format!("program: {e}"),
            })
        })
    }
}

impl<P> Lesson<P> {
    /// The same lesson with each program (at step index `i`) replaced by
    /// `f(i, program)`, or `f`'s first error.
    pub fn try_map_programs<Q, E>(self, mut f: impl FnMut(usize, P) -> Result<Q, E>) -> Result<Lesson<Q>, E> {
        let Lesson {
            id,
            theme,
            title,
            narration,
            source,
            topology,
            profile,
            actors,
            world,
            real,
            seed,
            steps,
            outcome,
            timed,
            notes,
        } = self;
        let steps = (steps.into_iter().enumerate())
            .map(|(i, s)| s.try_map_program(|p| f(i, p)))
            .collect::<Result<_, E>>()?;
        Ok(Lesson {
            id,
            theme,
            title,
            narration,
            source,
            topology,
            profile,
            actors,
            world,
            real,
            seed,
            steps,
            outcome,
            timed,
            notes,
        })
    }
}

impl<P> Step<P> {
    fn try_map_program<Q, E>(self, f: impl FnOnce(P) -> Result<Q, E>) -> Result<Step<Q>, E> {
        let Step {
            client,
            cmd,
            node,
            wait_ms,
            fault,
            program,
            background,
            write,
            hold,
            unhold,
            say,
            metrics,
            exercise,
            expect,
            explain,
            quiz,
            notes,
        } = self;
        Ok(Step {
            client,
            cmd,
            node,
            wait_ms,
            fault,
            program: program.map(f).transpose()?,
            background,
            write,
            hold,
            unhold,
            say,
            metrics,
            exercise,
            expect,
            explain,
            quiz,
            notes,
        })
    }
}

/// A program in words, in English (`zh` false) or Chinese: what the page
/// shows beside a step.
fn describe(p: &Program, zh: bool) -> String {
    let pick = |en: String, cn: String| if zh { cn } else { en };
    match p {
        Program::Commands(c) => {
            let n = c.steps.len();
            pick(format!("program: {n} step(s)"), format!("程序：{n} 步"))
        }
        Program::Lock(l) => {
            let (key, acquire, ttl, release) = (&l.key, l.acquire.name(), l.ttl_ms, &l.release);
            let mut s = pick(
                format!("program: lock {key} ({acquire} PX {ttl}, release by {release:?}"),
                format!("程序：对 {key} 加锁（{acquire} PX {ttl}，释放方式 {release:?}"),
            );
            if let Some(w) = &l.watchdog {
                let every = w.interval_ms.unwrap_or(ttl / 3);
                s.push_str(&pick(
                    format!(", watchdog every {every} ms"),
                    format!("，看门狗每 {every} ms 续期"),
                ));
                if let Some(m) = w.max_renewals {
                    s.push_str(&pick(format!(" at most {m} times"), format!("，最多 {m} 次")));
                }
            }
            if l.fencing.is_on() {
                s.push_str(if zh { "，带 fencing 令牌" } else { ", fencing token" });
            }
            s.push(if zh { '）' } else { ')' });
            s
        }
        Program::Redlock(r) => {
            let (key, ttl) = (&r.key, r.ttl_ms);
            pick(
                format!("program: Redlock on {key} (TTL {ttl} ms)"),
                format!("程序：在 {key} 上执行 Redlock（TTL {ttl} ms）"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's reading of the catalogue keeps every program byte for
    /// byte and its words, and what it sends back reads as the lesson.
    #[cfg(feature = "toml")]
    #[test]
    fn a_page_lesson_words_its_programs_and_hands_them_back_whole() {
        let lessons = super::super::builtin().unwrap();
        let with_programs = lessons.iter().filter(|l| l.steps.iter().any(|s| s.program.is_some()));
        let mut seen = 0;
        for lesson in with_programs {
            let json = serde_json::to_string(&lesson.worded()).unwrap();
            let page: PageLesson = serde_json::from_str(&json).unwrap();
            for (step, page_step) in lesson.steps.iter().zip(&page.steps) {
                let (Some(p), Some(w)) = (&step.program, &page_step.program) else {
                    assert_eq!(step.program.is_some(), page_step.program.is_some());
                    continue;
                };
                assert_eq!(w.en, describe(p, false));
                assert_eq!(w.zh, describe(p, true));
                seen += 1;
            }
            let sent = serde_json::to_string(&page).unwrap();
            let back: PageLesson = serde_json::from_str(&sent).unwrap();
            // The trainer's notes stay behind (see `notes`); all else comes back.
            assert_eq!(
                back.decoded().unwrap(),
                lesson.clone().without_notes(),
                "lesson {}",
                lesson.id
            );
        }
        assert!(seen > 10, "only {seen} program steps in the catalogue");
    }

    /// A program the page passed on that does not decode is an error that
    /// names its step, not a panic.
    #[cfg(feature = "toml")]
    #[test]
    fn a_program_that_does_not_decode_names_its_step() {
        let lessons = super::super::builtin().unwrap();
        let lesson = lessons
            .iter()
            .find(|l| l.steps.iter().any(|s| s.program.is_some()))
            .unwrap();
        let at = lesson.steps.iter().position(|s| s.program.is_some()).unwrap();
        let mut page = lesson.worded();
        page.steps[at].program.as_mut().unwrap().program = ProgramJson(r#"{"lock":{"key":7}}"#.into());
        let err = page.clone().decoded().unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("lesson {}, step {}: program: ", lesson.id, at + 1)),
            "{err}"
        );
        // A crafted one, nested as deep as a frame allows, is refused by
        // serde_json's recursion limit rather than overflowing the stack.
        let deep = format!(
            r#"{{"type":"lock","x":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        page.steps[at].program.as_mut().unwrap().program = ProgramJson(deep);
        let err = page.decoded().unwrap_err().to_string();
        assert!(err.contains("recursion limit exceeded"), "{err}");
    }
}
