//! Every "write the fix" exercise in `lessons/` grades its own answers as
//! it says: the model answer passes (without faults, in the story, and
//! under the explorer), and each known-wrong answer fails with a
//! counterexample breaking the invariant the lesson names. Hostile answers
//! get a clear verdict.

use locklab_core::explore::exercise::{grade, Grade};
use locklab_core::explore::ExploreError;
use locklab_core::invariants::Invariant;
use locklab_core::lesson::exercise::Exercise;
use locklab_core::lesson::{builtin, StepKind};

/// Every exercise of the catalogue, as `(lesson id, step number, exercise)`.
fn exercises() -> Vec<(String, usize, Exercise)> {
    let mut out = Vec::new();
    for lesson in builtin().expect("the catalogue parses") {
        for (i, step) in lesson.steps.iter().enumerate() {
            if let Ok(StepKind::Exercise(e)) = step.kind() {
                out.push((lesson.id.clone(), i + 1, e.clone()));
            }
        }
    }
    out
}

/// What broke, from the story or the search, with its counterexample.
fn broke(g: &Grade) -> Option<Invariant> {
    g.story.broken.or(g.result.broken.map(|b| b.invariant))
}

fn exercise(lesson: &str, step: usize) -> Exercise {
    exercises()
        .into_iter()
        .find(|(l, s, _)| l == lesson && *s == step)
        .map(|(_, _, e)| e)
        .expect("the exercise exists")
}

#[test]
fn at_least_eight_exercises_cover_each_part() {
    let all = exercises();
    assert!(all.len() >= 8, "{} exercises", all.len());
    for part in ["acquire", "release", "extend", "fence"] {
        assert!(all.iter().any(|(_, _, e)| e.part.name() == part), "no {part} exercise");
    }
}

#[test]
fn model_answers_pass_and_wrong_answers_fail_with_a_counterexample() {
    let mut failures = Vec::new();
    for (lesson, step, ex) in exercises() {
        match grade(&ex, &ex.model) {
            Ok(g) if g.passed => {}
            Ok(g) => failures.push(format!(
                "{lesson} step {step}: the model answer fails: {:?}\n{}\n{}",
                g.useless, g.story.transcript, g.result.transcript
            )),
            Err(e) => failures.push(format!("{lesson} step {step}: the model answer is refused: {e}")),
        }
        assert!(!ex.wrong.is_empty(), "{lesson} step {step} names no wrong answer");
        for w in &ex.wrong {
            match grade(&ex, &w.answer) {
                Ok(g) if !g.passed && broke(&g) == Some(w.breaks) => {
                    // The counterexample is there to be shown: its steps, and
                    // (from the search) the lesson the timeline plays.
                    if g.result.broken.is_some() {
                        // The timeline plays it, or the page says why not.
                        assert!(g.result.lesson.is_some() || g.result.lesson_error.is_some());
                        assert!(g.result.transcript.contains(w.breaks.name()));
                    } else {
                        assert!(g.story.transcript.contains(w.breaks.name()));
                    }
                }
                Ok(g) => failures.push(format!(
                    "{lesson} step {step}: {:?} should break {} but: passed {}, useless {:?}, story {:?}, search {:?}\n{}",
                    w.answer,
                    w.breaks.name(),
                    g.passed,
                    g.useless,
                    g.story.broken,
                    g.result.broken,
                    g.result.result_line
                )),
                Err(e) => failures.push(format!("{lesson} step {step}: {:?} is refused: {e}", w.answer)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_release_that_removes_nothing_is_useless_not_safe() {
    let ex = exercise("46", 2);
    let g = grade(&ex, "return 0").expect("graded");
    assert!(!g.passed);
    assert!(
        g.useless
            .as_deref()
            .is_some_and(|u| u.contains("release removed the lock 0 time")),
        "{:?}",
        g.useless
    );
}

#[test]
fn an_acquire_that_never_acquires_is_useless() {
    let ex = exercise("46", 1);
    let g = grade(&ex, "GET $key").expect("graded");
    assert!(!g.passed);
    assert!(
        g.useless.as_deref().is_some_and(|u| u.contains("does not acquire")),
        "{:?}",
        g.useless
    );
}

#[test]
fn hostile_answers_get_a_clear_verdict() {
    let ex = exercise("46", 2);
    let empty = grade(&ex, "  \n ").unwrap_err();
    assert!(empty.to_string().contains("empty"), "{empty}");
    let huge = grade(&ex, &"DEL $key ".repeat(120_000)).unwrap_err();
    assert!(huge.to_string().contains("at most"), "{huge}");
    let syntax = grade(
        &ex,
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1])",
    )
    .unwrap_err();
    assert!(
        matches!(&syntax, ExploreError::Script { role: "release", reply } if reply.starts_with("(error) ERR Error compiling script")),
        "{syntax}"
    );
    let looping = grade(&ex, "while true do end").unwrap_err();
    assert!(
        matches!(looping, ExploreError::ScriptStopped { role: "release", .. }),
        "{looping}"
    );
    let unknown = grade(&ex, "FROB $key").expect("graded");
    assert!(!unknown.passed);
    let quotes = grade(&ex, "DEL \"unterminated").unwrap_err();
    assert!(quotes.to_string().contains("Invalid argument(s)"), "{quotes}");
}

#[test]
fn a_passing_answer_says_what_was_checked() {
    let ex = exercise("46", 2);
    let g = grade(&ex, &ex.model).expect("graded");
    assert!(g.passed);
    assert!(g.result.bound.contains("clients"), "{}", g.result.bound);
    assert!(g.story.transcript.contains("ends safely"), "{}", g.story.transcript);
}
