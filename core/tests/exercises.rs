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
    for part in ["acquire", "release", "extend", "fence", "validity"] {
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

/// The extend exercise of a lease lesson (lesson 47's first step).
fn renewal() -> Exercise {
    exercises()
        .into_iter()
        .map(|(_, _, e)| e)
        .find(|e| e.part.name() == "extend" && e.fencing)
        .expect("a fenced renewal exercise")
}

#[test]
fn a_bare_pexpire_renewal_fails_even_with_fencing_and_the_checked_one_passes() {
    // With fencing on, the fence refuses the paused renewer's stale write,
    // so no write is ever lost: the renewal of a lock it does not own is
    // the bug, and core's monitor names it.
    let ex = renewal();
    let g = grade(&ex, "PEXPIRE $key $ttl").expect("graded");
    assert!(!g.passed, "a bare PEXPIRE renewal passed");
    assert_eq!(broke(&g), Some(Invariant::ForeignExtend), "{}", g.result.transcript);
    let shown = g.lines(locklab_core::lesson::Lang::En).join("\n");
    assert!(shown.contains("foreign-extend"), "{shown}");
    assert!(shown.contains("renewed a lock it does not own"), "{shown}");
    let checked =
        r#"if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0"#;
    let g = grade(&ex, checked).expect("graded");
    assert!(g.passed, "{:?}\n{}", g.useless, g.result.transcript);
}

/// The Redlock validity exercise.
fn validity() -> Exercise {
    exercises()
        .into_iter()
        .map(|(_, _, e)| e)
        .find(|e| e.part.name() == "validity")
        .expect("a Redlock validity exercise")
}

#[test]
fn a_redlock_decision_without_the_elapsed_time_gets_a_counterexample() {
    let ex = validity();
    let t = std::time::Instant::now();
    let right = grade(&ex, "oks >= n / 2 + 1 and ttl - elapsed - drift > 0").expect("graded");
    assert!(
        right.passed,
        "{:?}\n{}\n{}",
        right.useless, right.story.transcript, right.result.transcript
    );
    assert!(right.result.bound.contains("clients"), "{}", right.result.bound);
    eprintln!(
        "redis.io's rule graded in {:?}: {:?}, {}",
        t.elapsed(),
        right.search,
        right.result.bound
    );
    for forgetful in ["oks >= n / 2 + 1", "oks > 2 && ttl - drift > 0"] {
        let t = std::time::Instant::now();
        let g = grade(&ex, forgetful).expect("graded");
        eprintln!("{forgetful:?} graded in {:?}", t.elapsed());
        assert!(!g.passed, "{forgetful} passed");
        assert_eq!(broke(&g), Some(Invariant::StaleWrite), "{forgetful}");
        assert!(g.story.transcript.contains("pause A"), "{}", g.story.transcript);
        assert!(
            g.story.transcript.contains("by the written rule: true"),
            "{}",
            g.story.transcript
        );
    }
    // A rule that never holds never acquires: useless, not safe.
    let never = grade(&ex, "oks > n").expect("graded");
    assert!(!never.passed);
    assert!(
        never
            .useless
            .as_deref()
            .is_some_and(|u| u.contains("without any fault")),
        "{:?}",
        never.useless
    );
    // What is not a condition is refused with the reason.
    for (bad, says) in [
        ("", "empty"),
        ("validity > 0", "unknown name"),
        ("SET $key $token NX PX $ttl", "not part of a condition"),
        ("oks >= 3 and", "ends too early"),
    ] {
        let e = grade(&ex, bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad:?}: {e}");
    }
}
