//! Designs as data (`explore/designs/*.toml`) and "bring your own lock":
//! the classic designs keep the verdicts the built-in flags give, a user's
//! release script that forgets the token check is broken within the
//! default budget, a correct compare-and-delete with fencing holds, and a
//! script that does not compile is reported as redis-server reports it.

use locklab_core::explore::{designs, explore, ExploreError, Explorer, Outcome, Spec};
use locklab_core::invariants::Invariant;

fn design(file: &str) -> Spec {
    let (_, text) = designs::FILES
        .iter()
        .find(|(f, _)| *f == file)
        .unwrap_or_else(|| panic!("no design {file}"));
    designs::parse(text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn verdict(spec: &Spec) -> Option<Invariant> {
    match explore(spec).expect("explores").outcome {
        Outcome::Violated { invariant, .. } => Some(invariant),
        Outcome::Held => None,
    }
}

#[test]
fn every_builtin_design_parses() {
    let all = designs::builtin().expect("designs");
    assert!(all.len() >= 9, "{}", all.len());
    for d in &all {
        assert!(d.spec.name.is_some(), "{} has a name", d.file);
    }
}

#[test]
fn the_six_classic_designs_give_todays_verdicts() {
    let cases = [
        ("01-bare-del.toml", Some(Invariant::WrongRelease)),
        ("02-get-then-del.toml", Some(Invariant::WrongRelease)),
        ("03-setnx-then-expire.toml", Some(Invariant::Deadlock)),
        ("04-no-fencing.toml", Some(Invariant::StaleWrite)),
        ("05-replicated-failover.toml", Some(Invariant::StaleWrite)),
        ("06-fenced-single.toml", None),
    ];
    for (file, want) in cases {
        let spec = design(file);
        // The file and the shorthand flags it spells are the same search.
        let mut flags = Spec {
            acquire: spec.acquire,
            release: spec.release,
            fencing: spec.fencing,
            topology: spec.topology,
            fault_kinds: spec.fault_kinds.clone(),
            ..Spec::default()
        };
        assert_eq!(verdict(&spec), want, "{file}");
        flags.name = spec.name.clone();
        assert_eq!(
            explore(&flags).expect("flags").transcript(),
            explore(&spec).expect("file").transcript(),
            "{file}"
        );
    }
}

#[test]
fn own_release_that_forgets_the_token_is_broken_within_the_default_budget() {
    let spec = design("08-own-lua-forgot-token.toml");
    assert_eq!(spec.random_walks, Spec::default().random_walks, "the default budget");
    let report = explore(&spec).expect("explores");
    let t = report.transcript();
    assert!(
        matches!(
            report.outcome,
            Outcome::Violated {
                invariant: Invariant::WrongRelease,
                ..
            }
        ),
        "{t}"
    );
    assert!(t.contains("EVAL"), "the user's script is what ran:\n{t}");
    assert!(t.contains("own Lua: acquire, release"), "{t}");
}

#[test]
fn own_compare_and_delete_with_fencing_holds() {
    let spec = design("09-own-lua-compare-and-delete.toml");
    let ex = Explorer::new(&spec).expect("explorer");
    let report = explore(&spec).expect("explores");
    assert_eq!(report.outcome, Outcome::Held, "{}", report.transcript());
    assert_eq!(report.explored, ex.total());
    assert!(ex.total() >= 5_000, "a real bound: {}", ex.total());
}

#[test]
fn the_same_scripts_without_the_compare_break() {
    // The check is what makes 09 hold: drop it from the release and the
    // same search finds the wrong release again.
    let mut spec = design("09-own-lua-compare-and-delete.toml");
    if let Some(s) = &mut spec.scripts {
        s.release = Some("return redis.call('DEL', KEYS[1])".into());
    }
    assert_eq!(verdict(&spec), Some(Invariant::WrongRelease));
}

#[test]
fn a_script_that_does_not_compile_is_reported_as_redis_does() {
    let text =
        "fencing = true\n[scripts]\nrelease = '''\nif redis.call('GET', KEYS[1]) = ARGV[1] then return 1 end\n'''\n";
    let err = designs::parse(text).expect_err("does not compile");
    let ExploreError::Script { role, reply } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*role, "release");
    // redis-server 7.0.15: SCRIPT LOAD of this text.
    assert!(
        reply.starts_with("(error) ERR Error compiling script (new function): user_script:1: "),
        "{reply}"
    );
    assert!(
        err.to_string()
            .starts_with("the release script does not compile: (error) ERR"),
        "{err}"
    );
}

#[test]
fn a_runtime_error_in_a_script_is_a_redis_error_reply_in_the_trace() {
    // Compiles, but calls a command with the wrong arity: every acquire is
    // refused with Redis's error, nobody ever holds the lock, nothing breaks.
    let text = "[scripts]\nacquire = '''\nreturn redis.call('SET', KEYS[1])\n'''\n";
    let mut spec = designs::parse(text).expect("compiles");
    spec.random_walks = 20;
    spec.faults = 0;
    let report = explore(&spec).expect("explores");
    assert_eq!(report.outcome, Outcome::Held);
    let ex = Explorer::new(&spec).expect("explorer");
    let sc = ex.schedule(0);
    let mut w = locklab_core::world::World::from_scenario(&sc).expect("world");
    w.run();
    let trace = w.to_trace();
    let text: Vec<String> = trace.events.iter().map(|e| e.describe(&trace.names)).collect();
    assert!(
        text.iter()
            .any(|l| l.contains("Wrong number of args calling Redis command from script")),
        "{}",
        text.join("\n")
    );
}

#[test]
fn bad_design_files_are_errors() {
    assert!(designs::parse("release = \"sometimes\"").is_err());
    assert!(designs::parse("bogus = 1").is_err());
    assert!(designs::parse("topology = \"redlock5\"\n[scripts]\nrelease = 'return 1'\n").is_err());
    assert!(
        designs::parse("[scripts]\nextend = 'return 1'\n").is_err(),
        "extend needs a watchdog"
    );
    let long = format!("[scripts]\nrelease = '''\n{}'''\n", "-- x\n".repeat(5000));
    assert!(designs::parse(&long).is_err());
}

/// The counterexample becomes a lesson the lesson runner plays: the same
/// invariant breaks, the fault is one of its steps, and it survives JSON
/// (the page carries it to the timeline that way).
#[test]
fn the_counterexample_plays_as_a_lesson() {
    use locklab_core::explore::lesson::{counterexample_lesson, ToLessonError};
    use locklab_core::lesson::run::LessonRun;
    for file in [
        "01-bare-del.toml",
        "02-get-then-del.toml",
        "03-setnx-then-expire.toml",
        "04-no-fencing.toml",
        "05-replicated-failover.toml",
        "08-own-lua-forgot-token.toml",
    ] {
        let spec = design(file);
        let report = explore(&spec).expect("explores");
        let Outcome::Violated {
            invariant, scenario, ..
        } = &report.outcome
        else {
            panic!("{file} held");
        };
        let lesson = counterexample_lesson(&spec, &report).unwrap_or_else(|e| panic!("{file}: {e}"));
        lesson.validate().expect("a valid lesson");
        assert_eq!(lesson.seed, scenario.seed);
        assert_eq!(
            lesson.steps.iter().filter(|s| s.fault.is_some()).count(),
            scenario.faults.len(),
            "{file}: every fault is a step"
        );
        let json = locklab_core::lesson::to_json(std::slice::from_ref(&lesson));
        let back = locklab_core::lesson::from_json(&json).expect("round trip");
        let back = back[0].clone().decoded().expect("its programs decode");
        let mut run = LessonRun::new(&back).expect("runs");
        run.run_all().expect("plays");
        assert!(run.observed().contains(invariant), "{file}");
        assert!(run.outcome().ok && run.passed(), "{file}: the lesson's outcome holds");
    }
    let held = design("06-fenced-single.toml");
    let report = explore(&held).expect("explores");
    assert_eq!(counterexample_lesson(&held, &report), Err(ToLessonError::Held));
}

#[test]
fn kleppmanns_redlock_counterexample_plays_as_a_lesson() {
    let spec = design("07-redlock5-gc-pause.toml");
    let report = explore(&spec).expect("explores");
    assert!(
        matches!(
            report.outcome,
            Outcome::Violated {
                invariant: Invariant::StaleWrite,
                ..
            }
        ),
        "{}",
        report.transcript()
    );
    let lesson = locklab_core::explore::lesson::counterexample_lesson(&spec, &report).expect("a lesson");
    assert_eq!(lesson.topology, locklab_core::lesson::LessonTopology::Redlock5);
    assert!(lesson
        .steps
        .iter()
        .any(|s| matches!(s.fault, Some(locklab_core::fault::Fault::PauseClient { .. }))));
}

/// The worker's sliced search reports exactly what the one-call search
/// (and so the CLI, whose threads merge to the same answer) reports.
#[test]
fn a_sliced_job_gives_the_same_report() {
    use locklab_core::explore::job::Job;
    for file in [
        "01-bare-del.toml",
        "06-fenced-single.toml",
        "08-own-lua-forgot-token.toml",
    ] {
        let spec = design(file);
        let mut job = Job::new(&spec).expect("job");
        let mut slices = 0;
        while !job.step(97) {
            slices += 1;
            let p = job.progress();
            assert!(p.explored <= p.total);
        }
        assert!(slices > 10, "{file}: sliced");
        let r = job.result();
        assert_eq!(r.transcript, explore(&spec).expect("explores").transcript(), "{file}");
        match r.broken {
            None => {
                assert!(r.bound.starts_with(&format!(
                    "sampled {} schedules, no violation found, within this bound",
                    r.explored
                )));
                assert!(r.lesson.is_none());
            }
            Some(_) => assert!(r.lesson.is_some(), "{file}: {:?}", r.lesson_error),
        }
    }
}

/// A script the simulator has to stop (redis-server would run it until
/// `SCRIPT KILL`, answering everyone else `BUSY`) ends the exploration
/// before the search, with the stopped `EVAL`'s reply: one instruction
/// budget spent, not one per schedule.
#[test]
fn a_runaway_or_memory_hungry_script_is_reported_before_the_search() {
    let cases = [
        (
            "[scripts]\nrelease = '''\nwhile true do end\n'''\n",
            "release",
            "after 10000000 instructions (runaway script; Redis would reply BUSY and need SCRIPT KILL)",
        ),
        (
            "[scripts]\nacquire = '''\nlocal big = string.rep('x', 1e9)\nreturn redis.call('SET', KEYS[1], big, 'NX')\n'''\n",
            "acquire",
            "when its Lua memory passed 32 MiB",
        ),
    ];
    for (text, want_role, want) in cases {
        let spec = designs::parse(text).expect("compiles");
        let err = Explorer::new(&spec).expect_err("stopped");
        let ExploreError::ScriptStopped { role, reply } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*role, want_role, "{err}");
        assert!(
            reply.starts_with("(error) ERR Error running script: the simulator stopped it ") && reply.contains(want),
            "{reply}"
        );
        assert!(
            err.to_string().starts_with(&format!(
                "the {want_role} script was stopped on its first run: (error) ERR"
            )),
            "{err}"
        );
    }
}

/// The page's seed box and the CLI's `--seed` are one setter.
#[test]
fn a_seed_as_typed() {
    use locklab_core::explore::spec::parse_seed;
    assert_eq!(parse_seed(" 42 "), Ok(Some(42)));
    assert_eq!(parse_seed(""), Ok(None));
    assert_eq!(parse_seed("18446744073709551615"), Ok(Some(u64::MAX)));
    for bad in ["-1", "1e3", "18446744073709551616", "seven"] {
        let e = parse_seed(bad).expect_err(bad).to_string();
        assert!(
            e.starts_with("the seed must be a whole number from 0 to 18446744073709551615"),
            "{e}"
        );
    }
    let mut spec = design("01-bare-del.toml");
    spec.set_seed(7);
    assert_eq!(spec.seed, 7);
    assert_ne!(
        explore(&spec).expect("7").result_line(),
        explore(&design("01-bare-del.toml")).expect("1").result_line(),
        "another seed, another schedule"
    );
}
