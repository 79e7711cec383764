//! `locklab lesson list | show ID | run ID`: the catalogue in a terminal.

use std::path::PathBuf;

use locklab_core::lesson::render::{swimlane, transcript};
use locklab_core::lesson::run::LessonRun;
use locklab_core::lesson::{builtin, catalogue, Lang, Lesson, LessonError};

/// Where lessons come from: the files built into the binary, or a directory
/// (to try a lesson being written without rebuilding).
pub fn load(dir: Option<&PathBuf>) -> Result<Vec<Lesson>, LessonError> {
    let Some(dir) = dir else { return builtin() };
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| LessonError::Parse(format!("{}: {e}", dir.display())))?;
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text = std::fs::read_to_string(&p).map_err(|e| LessonError::Parse(format!("{}: {e}", p.display())))?;
            files.push((p.display().to_string(), text));
        }
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    catalogue(&refs)
}

pub fn find<'a>(lessons: &'a [Lesson], id: &str) -> Result<&'a Lesson, LessonError> {
    let id = if id.len() == 1 { format!("0{id}") } else { id.to_owned() };
    lessons.iter().find(|l| l.id == id).ok_or(LessonError::NotFound(id))
}

/// One lesson a line: id, theme, title, source.
pub fn list(lessons: &[Lesson], lang: Lang) -> String {
    lessons
        .iter()
        .map(|l| {
            format!(
                "{}  {:<11} {}  [{} §{}]\n",
                l.id,
                format!("{:?}", l.theme).to_lowercase(),
                l.title.get(lang),
                l.source.seed,
                l.source.section
            )
        })
        .collect()
}

/// The lesson's narration and steps, without running it.
pub fn show(lesson: &Lesson, lang: Lang) -> String {
    let mut out = format!("lesson {} — {}\n\n{}\n", lesson.id, lesson.title.get(lang), lesson.narration.get(lang).trim());
    out.push_str(&format!("\nactors: {}   topology: {:?}\n\n", lesson.actors.join(", "), lesson.topology));
    for (i, s) in lesson.steps.iter().enumerate() {
        let what = match s.kind() {
            Ok(k) => format!("{k:?}"),
            Err(e) => e,
        };
        out.push_str(&format!("{:>3}. {what}\n", i + 1));
        if let Some(e) = &s.expect {
            out.push_str(&format!("     expect: {}\n", e.describe()));
        }
    }
    out
}

/// Run a lesson to the end (or to step `upto`); the transcript and the
/// swimlane, and whether every expectation and the outcome held.
pub fn run(lesson: &Lesson, lang: Lang, upto: Option<usize>, seed: Option<u64>) -> Result<(String, bool), LessonError> {
    let seed = seed.unwrap_or(lesson.seed);
    let n = upto.unwrap_or(lesson.len()).min(lesson.len());
    let run = LessonRun::at_step(lesson, seed, n)?;
    let mut out = transcript(&run, lang);
    out.push('\n');
    out.push_str(&swimlane(&run, 72));
    let ok = run.results().iter().all(|r| r.ok) && (n < lesson.len() || run.outcome().ok);
    Ok((out, ok))
}
