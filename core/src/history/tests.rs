//! The checker on hand-made histories, and held to the simulator's own
//! judgment on the simulator's runs.

use super::linear::Search;
use super::*;

fn op(client: &str, kind: OpKind, token: &str, ttl: u64, w: (u64, u64), ok: bool) -> Op {
    Op {
        line: 0,
        client: client.into(),
        op: kind,
        key: "lock".into(),
        token: (kind != OpKind::Write).then(|| token.to_owned()),
        ttl_ms: Some(ttl),
        fence: None,
        value: None,
        invoke_ms: w.0,
        complete_ms: Some(w.1),
        ok: Some(ok),
    }
}

fn write(client: &str, fence: Option<i64>, w: (u64, u64), accepted: bool) -> Op {
    Op {
        fence,
        ttl_ms: None,
        value: Some(format!("{client}@{}", w.0)),
        ..op(client, OpKind::Write, "", 0, w, accepted)
    }
}

fn judge(ops: Vec<Op>) -> Report {
    check(
        &History {
            ops,
            faults: Vec::new(),
        },
        &Search::default(),
    )
}

fn names(r: &Report) -> Vec<&'static str> {
    let mut n: Vec<&'static str> = r.findings.iter().map(|f| f.check.name()).collect();
    n.sort();
    n
}

fn linearizable(r: &Report) -> bool {
    r.keys.iter().all(|k| k.linearity == Linearity::Linearizable)
}

use OpKind::{Acquire, Extend, Release};

/// An acquire that raised (its outcome unknown) has no token when the
/// library picks it inside the call: it reads without one, and is taken as
/// unknown — it may explain a later refusal, or never have happened.
#[test]
fn an_unknown_acquire_without_a_token_is_unknown() {
    let text = r#"{"client":"a","op":"acquire","key":"lock","invoke_ms":0}
{"client":"b","op":"acquire","key":"lock","invoke_ms":1}
{"client":"c","op":"acquire","key":"lock","token":"none","invoke_ms":10,"complete_ms":12,"ok":false}
"#;
    let h = parse_str(text, &Limits::default()).expect("an unknown acquire needs no token");
    assert_eq!((h.ops[0].token.as_deref(), h.ops[0].ok), (None, None));
    let r = check(&h, &Search::default());
    assert!(linearizable(&r), "c's refusal is a's or b's unknown acquire: {r:?}");
    // Taken as never having happened: c is granted later.
    let mut ops = h.ops.clone();
    ops.pop();
    ops.push(op("c", Acquire, "tc", 100, (10, 12), true));
    ops.push(op("c", Release, "tc", 100, (20, 22), true));
    assert!(linearizable(&judge(ops)));
    // b's unknown acquire, if it happened, holds a lock that never
    // expires: c's refusal and c's later grant cannot both be explained.
    let two = r#"{"client":"a","op":"acquire","key":"lock","invoke_ms":0,"complete_ms":1,"ok":false,"token":"none"}
{"client":"b","op":"acquire","key":"lock","invoke_ms":2}
{"client":"c","op":"acquire","key":"lock","token":"none","invoke_ms":10,"complete_ms":12,"ok":false}
{"client":"c","op":"acquire","key":"lock","token":"tc","ttl_ms":100,"invoke_ms":20,"complete_ms":22,"ok":true}
"#;
    let r = check(&parse_str(two, &Limits::default()).expect("parses"), &Search::default());
    assert!(
        !linearizable(&r),
        "b's lock never expires and nobody released it: {r:?}"
    );
    // A release or extension still needs its token; so does a known acquire.
    let refused = r#"{"client":"a","op":"acquire","key":"lock","invoke_ms":0,"complete_ms":1,"ok":true,"ttl_ms":5}"#;
    assert!(matches!(
        parse_str(refused, &Limits::default()),
        Err(HistoryError::Invalid { line: 1, .. })
    ));
}

/// A failover's two holders on a millisecond clock: a's last write
/// completes in the millisecond its release is sent, inside b's hold.
#[test]
fn a_write_in_the_millisecond_of_the_release_is_inside_the_hold() {
    let r = judge(vec![
        op("a", Acquire, "ta", 1000, (0, 1), true),
        write("a", None, (1, 1), true),
        op("b", Acquire, "tb", 1000, (100, 105), true),
        write("b", None, (105, 106), true),
        write("a", None, (500, 505), true),
        op("a", Release, "ta", 1000, (505, 506), false),
    ]);
    assert!(names(&r).contains(&"overlap"), "{:?}", names(&r));
    assert!(names(&r).contains(&"stale-write"), "{:?}", names(&r));
}

/// A holds the lock, pauses past its lease, B takes it and writes, A wakes
/// and writes: the lost update — unless the resource is fenced.
fn paused_holder(fenced: bool) -> Vec<Op> {
    vec![
        op("a", Acquire, "ta", 100, (0, 5), true),
        op("b", Acquire, "tb", 1000, (150, 155), true),
        write("b", Some(2), (160, 165), true),
        write("a", Some(1), (300, 305), !fenced),
        op("b", Release, "tb", 0, (310, 312), true),
        op("a", Release, "ta", 0, (320, 322), false),
    ]
}

#[test]
fn a_paused_holders_write_is_stale_unless_fenced() {
    let r = judge(paused_holder(false));
    assert!(linearizable(&r), "the lock itself behaved: {}", r.text());
    // A believed it held the lock until its release, so the resource also
    // witnessed two holders: B's write and A's inside their overlap.
    assert_eq!(names(&r), ["overlap", "stale-write"], "{}", r.text());
    let f = r
        .findings
        .iter()
        .find(|f| f.check == Check::Invariant(crate::invariants::Invariant::StaleWrite))
        .expect("found");
    assert_eq!(f.clients, ["a", "b"]);
    assert_eq!((f.from_ms, f.to_ms), (165, 305));
    let w: Vec<(&str, OpKind)> = f.witness.iter().map(|o| (o.client.as_str(), o.op)).collect();
    assert_eq!(
        w,
        [
            ("a", Acquire),
            ("b", Acquire),
            ("b", OpKind::Write),
            ("a", OpKind::Write)
        ],
        "the minimal witness: both grants and both writes"
    );
    assert!(
        f.detail.contains("a's update") || f.detail.contains("b's update"),
        "{}",
        f.detail
    );
    let r = judge(paused_holder(true));
    assert!(r.findings.is_empty(), "{}", r.text());
}

#[test]
fn overlapping_holds_are_reported_when_the_resource_saw_both_write() {
    let mut h = vec![
        op("a", Acquire, "ta", 100, (0, 5), true),
        op("b", Acquire, "tb", 100, (150, 155), true),
        write("a", None, (160, 165), true),
        write("b", None, (170, 175), true),
    ];
    let r = judge(h.clone());
    assert_eq!(names(&r), ["overlap"], "{}", r.text());
    assert_eq!(r.findings[0].witness.len(), 4);
    // A let go before B's grant: no overlap, whatever was written.
    h.insert(1, op("a", Release, "ta", 0, (100, 101), true));
    h[3] = write("a", None, (60, 65), true);
    let r = judge(h);
    assert!(r.findings.is_empty(), "{}", r.text());
    assert!(linearizable(&r));
}

#[test]
fn an_extension_after_expiry_and_a_renewal_gap() {
    let r = judge(vec![
        op("a", Acquire, "ta", 100, (0, 5), true),
        op("a", Extend, "ta", 100, (200, 205), true),
    ]);
    assert_eq!(
        names(&r),
        ["extension-after-expiry", "not-linearizable"],
        "{}",
        r.text()
    );
    assert_eq!(r.keys[0].linearity, Linearity::NotLinearizable);
    let r = judge(vec![
        op("a", Acquire, "ta", 100, (0, 5), true),
        op("a", Extend, "ta", 100, (102, 104), true),
        op("a", Extend, "ta", 100, (150, 151), true),
    ]);
    assert_eq!(names(&r), ["renewal-gap"], "{}", r.text());
    assert_eq!((r.findings[0].from_ms, r.findings[0].to_ms), (100, 102));
    assert!(linearizable(&r));
}

#[test]
fn a_release_of_anothers_lock() {
    let r = judge(vec![
        op("a", Acquire, "ta", 100, (0, 5), true),
        op("b", Acquire, "tb", 1000, (150, 155), true),
        op("a", Release, "ta", 0, (200, 205), true),
    ]);
    assert_eq!(names(&r), ["not-linearizable", "wrong-release"], "{}", r.text());
    let f = r
        .findings
        .iter()
        .find(|f| f.check == Check::Invariant(crate::invariants::Invariant::WrongRelease))
        .expect("found");
    assert_eq!(f.clients, ["a", "b"]);
    assert!(
        f.detail.contains("a's command removed the lock lock that b acquired"),
        "{}",
        f.detail
    );
    assert_eq!(f.witness.len(), 2);
    let nl = r
        .findings
        .iter()
        .find(|f| f.check == Check::NotLinearizable)
        .expect("found");
    assert_eq!(
        nl.witness.len(),
        2,
        "b's grant and a's release are all it takes: {}",
        r.text()
    );
}

#[test]
fn a_clean_handover_has_nothing_to_report() {
    let r = judge(vec![
        op("a", Acquire, "ta", 100, (0, 5), true),
        op("b", Acquire, "tb", 100, (2, 8), false),
        write("a", Some(1), (10, 12), true),
        op("a", Extend, "ta", 100, (50, 52), true),
        op("a", Release, "ta", 0, (60, 62), true),
        op("b", Acquire, "tb", 100, (61, 70), true),
        write("b", Some(2), (71, 72), true),
        op("b", Release, "tb", 0, (80, 81), true),
    ]);
    assert!(r.findings.is_empty(), "{}", r.text());
    assert!(linearizable(&r));
    assert_eq!(r.clients, ["a", "b"]);
}

/// Every builtin lesson, from seeds proptest picks, converted to the
/// history its clients would have recorded: the checker finds a stale write
/// or a wrong release exactly when the simulator's own invariants did.
#[cfg(feature = "toml")]
mod simulated {
    use proptest::prelude::*;

    use super::super::{check, from_trace, Check};
    use crate::history::linear::Search;
    use crate::invariants::Invariant;
    use crate::lesson::run::LessonRun;
    use crate::lesson::{builtin, LessonTopology};

    /// The lessons whose lock a history of calls can describe: one key on
    /// one master. Redlock's acquisition is five calls on five masters
    /// (granted by majority), and a multi-service comparison has locks
    /// that are not Redis keys.
    fn describable(l: &crate::lesson::Lesson) -> bool {
        l.topology != LessonTopology::Redlock5 && l.world.locks.len() <= 1
    }

    fn judged_alike(index: usize, seed: u64) -> Result<(), TestCaseError> {
        let lessons = builtin().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let candidates: Vec<_> = lessons.iter().filter(|l| describable(l)).collect();
        let lesson = candidates[index % candidates.len()];
        let mut run = LessonRun::with_seed(lesson, seed).map_err(|e| TestCaseError::fail(e.to_string()))?;
        run.run_all().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let world = run.world();
        let history = from_trace(&world.to_trace());
        let report = check(&history, &Search { limit: 200_000 });
        for inv in [Invariant::StaleWrite, Invariant::WrongRelease] {
            let sim = world.violations().iter().any(|v| v.invariant == inv);
            prop_assert_eq!(
                report.found(Check::Invariant(inv)),
                sim,
                "lesson {} seed {}: {} — simulator {:?}\n{}",
                lesson.id,
                seed,
                inv,
                world.violations(),
                report.text()
            );
        }
        Ok(())
    }

    #[test]
    fn every_lesson_at_its_own_seed() {
        let lessons = builtin().expect("lessons");
        let n = lessons.iter().filter(|l| describable(l)).count();
        assert!(n >= 20, "most lessons are describable: {n}");
        for i in 0..n {
            let seed = lessons.iter().filter(|l| describable(l)).nth(i).map_or(0, |l| l.seed);
            if let Err(e) = judged_alike(i, seed) {
                panic!("{e}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn any_lesson_at_any_seed(index in 0usize..64, seed in any::<u64>()) {
            judged_alike(index, seed)?;
        }
    }
}
