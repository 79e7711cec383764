//! etcd-style and ZooKeeper-style members as a world's nodes: the faults
//! the Redis lessons use (a paused client, a crashed member, a partition)
//! against them, and the invariant monitor seeing two holders, wrong
//! releases and stale writes exactly as it does on Redis.
//!
//! Each test is a small lesson written inline, played on the simulator.

use locklab_core::actor::Actor;
use locklab_core::invariants::Invariant;
use locklab_core::lesson::run::LessonRun;
use locklab_core::lesson::{Lesson, RealRun};
use locklab_core::trace::EventKind;

const REAL_NO: &str =
    r#"real = { mode = "no", why = { zh = "需要真实驱动", en = "needs the real etcd/ZooKeeper driver" } }"#;

/// A lesson on `service` with `world` settings and `steps` (TOML), played
/// to its end.
fn play(service: &str, world: &str, steps: &str) -> LessonRun {
    let text = format!(
        r#"id = "99"
theme = "fencing"
title = {{ zh = "测试", en = "test" }}
narration = {{ zh = "测试", en = "test" }}
source = {{ seed = "B", file = "x.txt", section = "7" }}
actors = ["A", "B"]
world = {{ service = "{service}", {world} }}
{REAL_NO}
{steps}
[outcome]
invariant = "none"
broken = false
explain = {{ zh = "测试", en = "test" }}
"#
    );
    let lesson = Lesson::parse(&text).expect("the test lesson parses");
    let mut run = LessonRun::new(&lesson).expect("builds");
    run.run_all().expect("runs");
    run
}

/// Each command step's (actor, reply).
fn replies(run: &LessonRun) -> Vec<(String, String)> {
    run.results()
        .iter()
        .filter_map(|r| Some((r.actor.clone().unwrap_or_default(), r.reply.clone()?)))
        .collect()
}

fn notes(run: &LessonRun) -> Vec<(Actor, String)> {
    run.world()
        .trace()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Note { text } => Some((e.actor, text.clone())),
            _ => None,
        })
        .collect()
}

fn granted(run: &LessonRun) -> Vec<(Actor, u32)> {
    run.world()
        .trace()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Granted { seq, .. } => Some((e.actor, seq.to_owned())),
            _ => None,
        })
        .collect()
}

const ZK_PAUSE: &str = r#"
[[steps]]
client = "A"
cmd = "SESSION 6000"
[[steps]]
client = "A"
cmd = "CREATE /locks ''"
[[steps]]
client = "A"
cmd = "CREATE /locks/lock- '' EPHEMERAL SEQUENTIAL"
[[steps]]
client = "A"
hold = "/locks"
[[steps]]
fault = { type = "pause_client", client = "A", ms = 20000 }
[[steps]]
client = "B"
cmd = "SESSION 40000"
[[steps]]
client = "B"
cmd = "CREATE /locks/lock- '' EPHEMERAL SEQUENTIAL"
[[steps]]
client = "B"
cmd = "EXISTS /locks/lock-0000000000 WATCH"
[[steps]]
wait_ms = 7000
[[steps]]
client = "B"
cmd = "CHILDREN /locks"
[[steps]]
client = "B"
hold = "/locks"
[[steps]]
client = "B"
write = { value = { zh = "B", en = "B" }, token = 4294967299 }
[[steps]]
wait_ms = 15000
[[steps]]
client = "A"
write = { value = { zh = "A", en = "A" }, token = 4294967298 }
[[steps]]
client = "A"
cmd = "GET /locks"
"#;

#[test]
fn zk_a_paused_client_loses_its_session_and_the_watch_hands_the_lock_on() {
    let run = play("zk", r#"locks = ["/locks"]"#, ZK_PAUSE);
    let r = replies(&run);
    assert_eq!(
        r[2].1, "1) \"/locks/lock-0000000000\"\n2) (integer) 4294967298",
        "{r:?}"
    );
    assert_eq!(r[4].1, "1) \"/locks/lock-0000000001\"\n2) (integer) 4294967299");
    assert_eq!(r[5].1, "(integer) 4294967298", "the predecessor exists: B watches it");
    assert_eq!(
        r[6].1, "1) \"lock-0000000001\"",
        "A's session expired and took its znode"
    );
    assert_eq!(
        r.last().unwrap().1,
        "(error) KeeperErrorCode = Session expired for /locks"
    );
    let b = run.client("B").unwrap().0;
    let n = notes(&run);
    assert!(
        n.iter().any(|(a, t)| *a == Actor::Client(b)
            && t == "WatchedEvent state:SyncConnected type:NodeDeleted path:/locks/lock-0000000000"),
        "{n:?}"
    );
    assert_eq!(granted(&run), vec![(Actor::Client(0), 1), (Actor::Client(b), 2)]);
    let seen = run.observed();
    assert!(seen.contains(&Invariant::Overlap), "{seen:?}");
    assert!(
        seen.contains(&Invariant::StaleWrite),
        "unfenced, A's write after B's grant is stale: {seen:?}"
    );
}

#[test]
fn zk_the_zxid_fence_rejects_the_stale_holder() {
    let run = play("zk", r#"locks = ["/locks"], fencing = true"#, ZK_PAUSE);
    let r = replies(&run);
    assert_eq!(r[7].1, "accepted");
    assert_eq!(r[8].1, "rejected", "{r:?}");
    assert!(!run.observed().contains(&Invariant::StaleWrite));
}

#[test]
fn etcd_unlocking_someone_elses_key_is_a_wrong_release() {
    let steps = r#"
[[steps]]
client = "A"
cmd = "LEASE GRANT 30"
[[steps]]
client = "A"
cmd = "LOCK job 7001"
[[steps]]
client = "B"
cmd = "UNLOCK job/1b59"
"#;
    let run = play("etcd", r#"locks = ["job"]"#, steps);
    assert_eq!(replies(&run)[2].1, "OK");
    assert!(
        run.observed().contains(&Invariant::WrongRelease),
        "{:?}",
        run.observed()
    );
}

#[test]
fn etcd_a_partitioned_leader_serves_nothing_and_the_majority_elects_a_new_one() {
    let steps = r#"
[[steps]]
client = "A"
cmd = "LEASE GRANT 5"
[[steps]]
client = "A"
cmd = "LOCK job 7001"
[[steps]]
fault = { type = "cut_link", a = { node = 0 }, b = { node = 1 } }
[[steps]]
client = "A"
cmd = "LEASE KEEPALIVE 7001"
node = 0
[[steps]]
fault = { type = "cut_link", a = { node = 0 }, b = { node = 2 } }
[[steps]]
client = "A"
cmd = "LEASE KEEPALIVE 7001"
node = 0
[[steps]]
client = "A"
cmd = "LEASE KEEPALIVE 7001"
node = 2
[[steps]]
wait_ms = 6000
[[steps]]
client = "B"
cmd = "LEASE GRANT 5"
node = 2
[[steps]]
client = "B"
cmd = "LOCK job 7002"
node = 1
"#;
    let run = play("etcd", r#"locks = ["job"]"#, steps);
    let r: Vec<String> = replies(&run).into_iter().map(|(_, r)| r).collect();
    assert_eq!(r[2], "(integer) 5", "etcd1 still reaches etcd3: a majority");
    assert_eq!(r[3], "(error) etcdserver: no leader", "{r:?}");
    assert_eq!(r[4], "(integer) 5", "the majority side has a leader");
    assert_eq!(
        r[6], "1) \"job/1b5a\"\n2) (integer) 4",
        "A's lease ran out on the new leader; B's revision is larger"
    );
    let elected: Vec<(Actor, u64, u64)> = (run.world().trace().iter())
        .filter_map(|e| match e.kind {
            EventKind::Elected { term } => Some((e.actor, term, e.at_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(elected[0], (Actor::Node(0), 1, 0), "etcd1 leads term 1 from the start");
    assert_eq!(elected[1].0, Actor::Node(1), "{elected:?}");
    assert_eq!(elected[1].1, 2, "etcd2 leads term 2 once etcd1 is cut off: {elected:?}");
}

/// Both lock services have a real driver (the backend's managed etcd
/// cluster and ZooKeeper ensemble), so real = yes is fine for either; four
/// services in one world have none and must say so.
#[test]
fn a_lock_service_lesson_may_be_real_but_four_services_may_not() {
    let text = |service: &str, cmd: &str| {
        format!(
            r#"id = "99"
theme = "fencing"
title = {{ zh = "测试", en = "test" }}
narration = {{ zh = "测试", en = "test" }}
source = {{ seed = "B", file = "x.txt", section = "7" }}
actors = ["A"]
world = {{ service = "{service}" }}
[[steps]]
client = "A"
cmd = "{cmd}"
[outcome]
invariant = "none"
broken = false
explain = {{ zh = "测试", en = "test" }}
"#
        )
    };
    Lesson::parse(&text("zk", "SESSION 5000")).expect("ZooKeeper has a real driver");
    Lesson::parse(&text("etcd", "LEASE GRANT 5")).expect("etcd has a real driver");
    let real = |id: &str| {
        let lessons = locklab_core::lesson::builtin().expect("built in");
        locklab_core::lesson::find(&lessons, id).expect("a lesson").real.clone()
    };
    assert_eq!(real("44"), RealRun::Yes, "44 plays on a real ensemble");
    assert_eq!(real("45"), RealRun::Yes, "45 plays on four real services side by side");
}

/// The commands `client` sent before it first believed it held a lock.
fn sent_before_hold(run: &LessonRun, client: &str) -> Vec<String> {
    let c = run.client(client).expect("an actor").0;
    let mut out = Vec::new();
    for e in run.world().trace() {
        match &e.kind {
            EventKind::Belief { holds: true, .. } if e.actor == Actor::Client(c) => return out,
            EventKind::Sent { commands, .. } if e.actor == Actor::Client(c) => {
                out.extend(commands.iter().map(|a| a.join(" ")));
            }
            _ => {}
        }
    }
    panic!("{client} never held the lock");
}

fn builtin(id: &str) -> LessonRun {
    let lesson = locklab_core::lesson::builtin()
        .unwrap()
        .into_iter()
        .find(|l| l.id == id)
        .unwrap_or_else(|| panic!("lesson {id} is built in"));
    let mut run = LessonRun::new(&lesson).expect("builds");
    run.run_all().expect("runs");
    run
}

/// Issue 21: lesson 36's rows state the round trips per acquire that
/// lessons 43 (etcd) and 44 (ZooKeeper) measure; a change to either
/// breaks this, not the lesson's credibility. Since issue 39 the table is
/// the trainer's handout, a step's note, rather than a step the room reads.
#[test]
fn lesson_36_states_the_round_trips_lessons_43_and_44_measure() {
    let l36 = locklab_core::lesson::builtin()
        .unwrap()
        .into_iter()
        .find(|l| l.id == "36")
        .unwrap();
    let text: String = (l36.steps.iter())
        .flat_map(|s| s.say.iter().chain(&s.notes))
        .chain(&l36.notes)
        .map(|t| t.en.clone())
        .collect();

    let etcd = sent_before_hold(&builtin("43"), "A");
    assert_eq!(etcd, ["LEASE GRANT 10", "LOCK lock/order/1001 7001"]);
    assert!(
        text.contains(&format!("etcd: {} round trips for the first lock", etcd.len())),
        "{text}"
    );

    let zk = builtin("44");
    // The parents are set-up, not the recipe.
    let recipe: Vec<String> = sent_before_hold(&zk, "A")
        .into_iter()
        .filter(|c| !c.ends_with(" ") && (!c.starts_with("CREATE") || c.contains("EPHEMERAL")))
        .collect();
    assert_eq!(recipe.len(), 3, "{recipe:?}");
    assert!(text.contains("ZooKeeper: 3 round trips for the first lock"), "{text}");
    let waiter: Vec<String> = sent_before_hold(&zk, "B")
        .into_iter()
        .filter(|c| !c.starts_with("SESSION"))
        .collect();
    let words: Vec<&str> = waiter.iter().map(|c| c.split(' ').next().unwrap()).collect();
    assert_eq!(
        words,
        ["CREATE", "CHILDREN", "EXISTS", "CHILDREN"],
        "2 + a watch + a second listing"
    );
    assert!(text.contains("2 once the session is open; a waiter adds an EXISTS WATCH and lists the children again"));
}

/// A follower that crashes and restarts serves the committed state again
/// (caught up from the leader), and the lock never moved.
#[test]
fn etcd_a_restarted_member_catches_up_with_the_holder() {
    let steps = r#"
[[steps]]
client = "A"
cmd = "LEASE GRANT 60"
[[steps]]
client = "A"
cmd = "LOCK job 7001"
[[steps]]
fault = { type = "restart_node", node = 2, down_ms = 1000 }
[[steps]]
wait_ms = 2000
[[steps]]
client = "B"
cmd = "GET job/1b59"
node = 2
"#;
    let run = play("etcd", r#"locks = ["job"]"#, steps);
    assert_eq!(replies(&run)[2].1, "\"\"", "the member serves the committed key again");
    assert!(run
        .world()
        .trace()
        .iter()
        .any(|e| e.actor == Actor::Node(2) && matches!(e.kind, EventKind::Restarted { .. })));
    assert_eq!(
        granted(&run).len(),
        1,
        "one grant: a member's restart is not a new holder"
    );
}

/// Lesson 45 to its end.
fn lesson_45() -> LessonRun {
    let lessons = locklab_core::lesson::builtin().expect("lessons");
    let lesson = lessons.iter().find(|l| l.id == "45").expect("lesson 45");
    let mut run = LessonRun::new(lesson).expect("builds");
    run.run_all().expect("runs");
    run
}

#[test]
fn one_pause_gives_every_service_two_holders_and_only_redlock_a_stale_write() {
    let run = lesson_45();
    assert!(
        run.passed(),
        "{:?}",
        run.results().iter().filter(|r| !r.ok).collect::<Vec<_>>()
    );
    let v = run.world().violations();
    let overlaps: Vec<&str> = (v.iter())
        .filter(|v| v.invariant == Invariant::Overlap)
        .map(|v| v.detail.as_str())
        .collect();
    for key in [
        "lock:order:1001",
        "redlock:order:1001",
        "lock/order/1001",
        "/lock-order-1001",
    ] {
        assert_eq!(
            overlaps.iter().filter(|d| d.ends_with(&format!("hold {key}"))).count(),
            1,
            "two holders of {key}, once: {overlaps:?}"
        );
    }
    assert_eq!(overlaps.len(), 4);
    let stale: Vec<_> = v.iter().filter(|v| v.invariant == Invariant::StaleWrite).collect();
    assert_eq!(stale.len(), 1, "only the Redlock store took a stale write: {stale:?}");
    assert!(stale[0].detail.contains("no token"), "{}", stale[0].detail);
    // Every service granted the lock twice: A first, B second.
    let grants: Vec<(String, u32)> = (run.world().trace().iter())
        .filter_map(|e| match (&e.kind, e.actor) {
            (EventKind::Granted { key, seq }, Actor::Client(c)) => Some((format!("{key}:{c}"), *seq)),
            _ => None,
        })
        .collect();
    assert_eq!(grants.len(), 8, "{grants:?}");
    assert!(grants
        .iter()
        .all(|(k, seq)| (k.ends_with(":0") && *seq == 1) || (k.ends_with(":1") && *seq == 2)));
    let verdicts: Vec<bool> = (run.world().trace().iter())
        .filter_map(|e| match &e.kind {
            EventKind::Write {
                client: 0, accepted, ..
            } => Some(*accepted),
            _ => None,
        })
        .collect();
    assert_eq!(verdicts, [false, true, false, false], "Redis, Redlock, etcd, ZooKeeper");
}

#[test]
fn a_compare_world_elects_and_partitions_each_group_alone() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../lessons/45-same-pause-four-services.toml"
    ))
    .expect("lesson 45");
    let head = text.split("[[steps]]").next().expect("the head");
    let steps = r#"
[[steps]]
fault = { type = "crash_node", node = 4 }
[[steps]]
fault = { type = "cut_link", a = { node = 7 }, b = { node = 4 } }
[[steps]]
client = "A"
cmd = "SET lock:order:1001 A NX PX 10000"
expect = "OK"
[[steps]]
client = "A"
cmd = "LEASE GRANT 10"
node = 6
expect = "(integer) 7001"
[[steps]]
client = "A"
cmd = "SESSION 10000"
node = 7
expect = "(integer) 4097"
[[steps]]
fault = { type = "crash_node", node = 1 }
[[steps]]
client = "A"
cmd = "SET redlock:order:1001 A NX PX 10000"
node = 2
expect = "OK"
[[steps]]
client = "A"
cmd = "SET redlock:order:1001 A NX PX 10000"
node = 3
expect = "OK"
[outcome]
invariant = "none"
broken = false
explain = { zh = "测试", en = "test" }
"#;
    let lesson = Lesson::parse(&format!("{head}{steps}")).expect("parses");
    let mut run = LessonRun::new(&lesson).expect("builds");
    run.run_all().expect("runs");
    assert!(run.passed(), "{:?}", run.results());
    let elected: Vec<(Actor, u64)> = (run.world().trace().iter())
        .filter_map(|e| match e.kind {
            EventKind::Elected { term } => Some((e.actor, term)),
            _ => None,
        })
        .collect();
    assert_eq!(
        elected,
        [(Actor::Node(4), 1), (Actor::Node(7), 1), (Actor::Node(5), 2)],
        "etcd1's crash elects etcd2; a cut between zk1 and an etcd member partitions nobody"
    );
    let grants: Vec<String> = (run.world().trace().iter())
        .filter_map(|e| match &e.kind {
            EventKind::Granted { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        grants,
        ["lock:order:1001", "redlock:order:1001"],
        "the Redis node grants alone; 2 of the 3 Redlock masters are a majority with r1 down"
    );
}
