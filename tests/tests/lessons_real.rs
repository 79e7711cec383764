//! The lessons the catalogue marks single-node play on a real
//! redis-server 7.0 with the replies the simulator gives, time-compressed.

use locklab_backend::lesson_real;
use locklab_core::lesson::builtin;
use locklab_core::lesson::run::LessonRun;
use locklab_tests::server::RedisServer;

/// LESSONS.md: "Lessons 01–14, 22–24, 28–30 and 32–34 can run on a single
/// real redis-server".
const SINGLE_NODE: &[&str] = &[
    "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "22", "23", "24", "28", "29",
    "30", "32", "33", "34",
];

#[test]
fn single_node_lessons_give_the_same_replies_on_real_redis() {
    let server = RedisServer::start();
    let lessons = builtin().expect("lessons parse");
    let mut failures = Vec::new();
    let mut ran = 0;
    for lesson in &lessons {
        let must = SINGLE_NODE.contains(&lesson.id.as_str());
        match lesson_real::check_supported(lesson) {
            Err(why) if must => failures.push(format!("lesson {} must run on a real server: {why}", lesson.id)),
            Err(_) => continue,
            Ok(()) => {}
        }
        let report = match lesson_real::run(lesson, &server.url(), 100, true) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("lesson {}: {e}", lesson.id));
                continue;
            }
        };
        ran += 1;
        // Every expectation holds, and every reply the simulator gives for
        // a command step is the real server's (TTL remainders aside).
        let mut sim = LessonRun::new(lesson).expect("sim run");
        sim.run_all().expect("sim runs");
        let mismatched: Vec<String> = report
            .results
            .iter()
            .zip(sim.results())
            .filter(|(real, sim)| {
                let ttl_like = lesson.steps[real.index]
                    .cmd
                    .as_deref()
                    .is_some_and(|c| c.to_ascii_uppercase().starts_with("PTTL") || c.to_ascii_uppercase().starts_with("TTL"));
                !ttl_like && real.reply != sim.reply
            })
            .map(|(r, s)| format!("step {}: real {:?} vs sim {:?}", r.index + 1, r.reply, s.reply))
            .collect();
        if !report.passed() || !mismatched.is_empty() {
            failures.push(format!(
                "{}\n{}",
                report.transcript(lesson, locklab_core::lesson::Lang::En),
                mismatched.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n\n{}", failures.len(), failures.join("\n\n"));
    assert!(ran >= 2, "only {ran} lessons ran on the real server");
}
