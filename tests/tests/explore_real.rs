//! Issue 19, item 4: a counterexample the explorer found on the simulator
//! is replayed on real redis-server (the lesson it becomes, on the managed
//! topology of its kind, faults as real faults, time compressed) and real
//! redis-server shows the same broken invariant.

use std::path::PathBuf;

use locklab_backend::real::lesson as real_lesson;
use locklab_core::explore::lesson::counterexample_lesson;
use locklab_core::explore::{designs, explore};

fn design(file: &str) -> locklab_core::explore::Spec {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../explore/designs")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    designs::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn replay(file: &str) {
    let spec = design(file);
    let report = explore(&spec).expect("the search runs");
    let lesson = counterexample_lesson(&spec, &report).unwrap_or_else(|e| panic!("{file}: {e}"));
    // Real time (1×): the schedule the explorer found is milliseconds
    // apart, and a counterexample lasts seconds.
    let factor = 1;
    let real = real_lesson::run_managed(&lesson, factor).unwrap_or_else(|e| panic!("{file} on real redis-server: {e}"));
    let transcript = real.transcript(&lesson, locklab_core::lesson::Lang::En);
    assert_eq!(
        real.outcome,
        Some(true),
        "{file}: real redis-server shows {:?} as the simulator did:\n{transcript}",
        lesson.outcome.invariant
    );
}

#[test]
fn the_gc_pause_counterexample_breaks_real_redis_on_one_node() {
    replay("04-no-fencing.toml");
}

#[test]
fn the_gc_pause_counterexample_breaks_real_redis_on_five_masters() {
    replay("07-redlock5-gc-pause.toml");
}
