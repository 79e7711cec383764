//! Every lesson in `lessons/` plays on the simulator with all its
//! expectations met and the outcome it teaches.

use locklab_core::lesson::render::{swimlane, transcript};
use locklab_core::lesson::run::LessonRun;
use locklab_core::lesson::{catalogue, Lang};

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
