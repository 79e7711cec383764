//! Every lesson in `lessons/` plays on the simulator with all its
//! expectations met and the outcome it teaches.

use locklab_core::lesson::render::{swimlane, transcript};
use locklab_core::lesson::run::LessonRun;
use locklab_core::invariants::Invariant;
use locklab_core::lesson::{catalogue, Lang};
use locklab_core::trace::Actor;

fn lesson_files() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../lessons");
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("lessons/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("readable")))
        .collect();
    files.sort();
    files
}

#[test]
fn every_lesson_passes_on_the_simulator() {
    let files = lesson_files();
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let lessons = catalogue(&refs).expect("all lesson files are valid");
    let mut failures = Vec::new();
    for lesson in &lessons {
        let mut run = LessonRun::new(lesson).expect("lesson builds");
        run.run_all().expect("lesson runs");
        if !run.passed() {
            failures.push(format!("{}\n{}", transcript(&run, Lang::En), swimlane(&run, 60)));
        }
    }
    assert!(failures.is_empty(), "{} lesson(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn replay_to_a_step_is_deterministic() {
    let files = lesson_files();
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    for lesson in catalogue(&refs).unwrap() {
        let n = lesson.len() / 2;
        let a = LessonRun::at_step(&lesson, 7, n).unwrap();
        let b = LessonRun::at_step(&lesson, 7, n).unwrap();
        assert_eq!(a.world().trace(), b.world().trace(), "lesson {}", lesson.id);
        assert_eq!(a.results(), b.results());
    }
}

#[test]
fn the_catalogue_has_all_36_lessons_built_in() {
    let lessons = locklab_core::lesson::builtin().expect("built-in lessons parse");
    let ids: Vec<String> = lessons.iter().map(|l| l.id.clone()).collect();
    let want: Vec<String> = (1..=36).map(|i| format!("{i:02}")).collect();
    assert_eq!(ids, want);
    for l in &lessons {
        assert!(l.source.file.ends_with(".txt") && ["A", "B", "C"].contains(&l.source.seed.as_str()), "lesson {}", l.id);
    }
}

/// The browser app gets the catalogue as JSON: it must come back exactly as
/// the TOML files read, every field and every enum shape (untagged expects,
/// tagged faults and programs, defaults) included.
#[test]
fn the_catalogue_survives_its_json_form() {
    let lessons = locklab_core::lesson::builtin().unwrap();
    let json = locklab_core::lesson::to_json(&lessons);
    assert_eq!(locklab_core::lesson::from_json(&json).unwrap(), lessons);
    let err = locklab_core::lesson::from_json("[{\"id\": \"01\"}]").unwrap_err();
    assert!(err.to_string().starts_with("lesson file: missing field"), "{err}");
}

fn played(id: &str) -> LessonRun {
    let lesson = locklab_core::lesson::builtin().unwrap().into_iter().find(|l| l.id == id).expect("lesson exists");
    let mut run = LessonRun::new(&lesson).expect("lesson builds");
    run.run_all().expect("lesson runs");
    run
}

/// The overlap violations of a run, as (clients, from, to).
fn overlaps(run: &LessonRun) -> Vec<(Vec<String>, u64, u64)> {
    let names = run.world().names();
    run.world()
        .violations()
        .iter()
        .filter(|v| v.invariant == Invariant::Overlap)
        .map(|v| {
            let mut who: Vec<String> = v
                .actors
                .iter()
                .filter_map(|a| match a {
                    Actor::Client(c) => Some(names.client(*c).to_owned()),
                    _ => None,
                })
                .collect();
            who.sort();
            (who, v.from_ms, v.to_ms)
        })
        .collect()
}

/// Issue 17 (5): lesson 05 goes on until B and C both act inside the
/// critical section, so their overlap is a violation with a duration.
#[test]
fn lesson_05_b_and_c_hold_together_for_two_seconds() {
    let run = played("05");
    assert!(run.passed(), "{}", transcript(&run, Lang::En));
    let bc: Vec<_> = overlaps(&run).into_iter().filter(|(who, ..)| who == &["B", "C"]).collect();
    assert_eq!(bc.len(), 1, "{:?}", run.world().violations());
    let (_, from, to) = bc[0];
    assert!(to - from >= 2_000, "B and C overlap {from}..{to}");
    assert!(run.world().violations().iter().any(|v| v.invariant == Invariant::WrongRelease));
}

/// Issue 17 (5): the outcomes of 13, 15 and 16 say "two holders"; the run's
/// violations must hold that overlap, and it must last.
#[test]
fn two_holder_outcomes_are_overlap_violations_with_a_duration() {
    for (id, pair, at_least) in [("13", ["A", "B"], 14_000), ("15", ["A", "B"], 1), ("16", ["B", "C"], 1_000)] {
        let run = played(id);
        assert!(run.passed(), "{}", transcript(&run, Lang::En));
        let found = overlaps(&run).into_iter().find(|(who, ..)| who == &pair);
        let (_, from, to) = found.unwrap_or_else(|| panic!("lesson {id}: no {pair:?} overlap in {:?}", run.world().violations()));
        assert!(to - from >= at_least, "lesson {id}: {pair:?} overlap {from}..{to}");
    }
}

/// Issue 17 (5): lesson 14's deadlock starts at the 60 s bound (the first
/// 60 s were a legitimate hold) and lasts to the end of the run.
#[test]
fn lesson_14_deadlock_covers_the_time_after_the_cap() {
    let run = played("14");
    assert!(run.passed(), "{}", transcript(&run, Lang::En));
    let d: Vec<_> = run.world().violations().iter().filter(|v| v.invariant == Invariant::Deadlock).collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].from_ms, 60_000 + 3, "A took the lock at 3 ms; the bound passed 60 s later");
    assert!(d[0].to_ms >= 70_000, "{:?}", d[0]);
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../lessons/14-unbounded-watchdog.toml")).unwrap();
    assert!(!text.contains("永远是新鲜") && text.contains("剩余时间总被重置为 30 s"));
    assert!(!text.contains("took it at once"));
}
