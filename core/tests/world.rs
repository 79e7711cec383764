//! The world: every fault, every client program, every invariant, and
//! deterministic replay. Virtual time only; each test runs in milliseconds.

use locklab_core::actor::Actor;
use locklab_core::client::*;
use locklab_core::fault::*;
use locklab_core::invariants::Invariant;
use locklab_core::link::*;
use locklab_core::observe::{LockChange, Via};
use locklab_core::reply::Reply;
use locklab_core::trace::{Event, EventKind, LossReason};
use locklab_core::world::*;

// ----- helpers ---------------------------------------------------------------

fn lock(f: impl FnOnce(&mut LockProgram)) -> Program {
    let mut p = LockProgram::default();
    f(&mut p);
    Program::Lock(p)
}

fn redlock(f: impl FnOnce(&mut RedlockProgram)) -> Program {
    let mut p = RedlockProgram::default();
    f(&mut p);
    Program::Redlock(p)
}

fn cmds(lines: &[&str]) -> Program {
    Program::Commands(CommandsProgram::lines(lines))
}

fn client(name: &str, start_ms: u64, program: Program) -> ClientSpec {
    ClientSpec {
        name: name.into(),
        clock: ClockConfig::default(),
        start_ms,
        program: Some(program),
    }
}

fn scenario(topology: Topology, clients: Vec<ClientSpec>) -> Scenario {
    Scenario {
        seed: 7,
        world: WorldConfig {
            topology,
            ..WorldConfig::default()
        },
        clients,
        faults: Vec::new(),
    }
}

fn run(sc: &Scenario) -> World {
    let mut w = World::from_scenario(sc).expect("valid scenario");
    w.run();
    w
}

fn kinds(w: &World) -> Vec<&EventKind> {
    w.trace().iter().map(|e| &e.kind).collect()
}

fn first_violation(w: &World) -> Option<Invariant> {
    w.violations().first().map(|v| v.invariant)
}

/// Replies client `c` received, in order, one per request (first reply).
fn replies_of(w: &World, c: u32) -> Vec<Reply> {
    w.trace()
        .iter()
        .filter(|e| e.actor == Actor::Client(c))
        .filter_map(|e| match &e.kind {
            EventKind::Received { replies, .. } => replies.last().cloned(),
            _ => None,
        })
        .collect()
}

fn step_until(w: &mut World, pred: impl Fn(&Event) -> bool) -> Event {
    loop {
        let e = w.step().expect("the event we wait for happens").clone();
        if pred(&e) {
            return e;
        }
    }
}

fn executed(e: &Event, client: u32, cmd: &str) -> bool {
    matches!(&e.kind, EventKind::Executed { client: c, commands, .. }
        if *c == client && commands.iter().any(|a| a.first().is_some_and(|x| x.eq_ignore_ascii_case(cmd))))
}

fn pause(c: &str, ms: u64) -> Fault {
    Fault::PauseClient {
        client: c.into(),
        ms: Some(ms),
    }
}

fn dump(w: &World) -> String {
    w.trace()
        .iter()
        .map(|e| {
            format!(
                "{:4} {:6} {:9} {}",
                e.step,
                e.at_ms,
                w.names().actor(e.actor),
                e.describe(w.names())
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn two_lockers(f: impl Fn(&mut LockProgram) + Copy) -> Scenario {
    scenario(Topology::Single, vec![client("A", 0, lock(f)), client("B", 3, lock(f))])
}

// ----- determinism and replay -------------------------------------------------

fn busy_scenario() -> Scenario {
    let mut sc = two_lockers(|p| {
        p.release = Release::Del;
        p.cycles = 2;
    });
    sc.faults.push(ScheduledFault {
        at: At::Step(6),
        fault: pause("A", 1_500),
    });
    sc
}

#[test]
fn the_same_seed_gives_the_same_trace() {
    let sc = busy_scenario();
    let a = run(&sc);
    let b = run(&sc);
    assert_eq!(a.trace(), b.trace());
    assert!(a.trace().len() > 30);
    let mut other = sc.clone();
    other.seed = 8;
    assert_ne!(run(&other).trace(), a.trace(), "another seed, another schedule");
}

#[test]
fn replay_to_any_step_is_a_prefix_and_step_back_is_replay_to_n_minus_1() {
    let sc = busy_scenario();
    let full = run(&sc);
    let all = full.trace().to_vec();
    for n in [0, 1, 2, 5, 6, 7, all.len() / 2, all.len() - 1, all.len()] {
        let w = replay(&sc, n as u64).expect("replay");
        assert_eq!(w.trace(), &all[..n], "replay to {n}");
        if n > 0 {
            let back = replay(&sc, n as u64 - 1).expect("replay");
            assert_eq!(back.trace(), &all[..n - 1], "step back from {n}");
        }
    }
    // Stepping one event at a time sees the same events as running.
    let mut w = World::from_scenario(&sc).expect("valid");
    let mut stepped = Vec::new();
    while let Some(e) = w.step() {
        stepped.push(e.clone());
    }
    assert_eq!(stepped, all);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.step, i as u64);
    }
}

#[test]
fn scenarios_and_traces_round_trip_through_json() {
    let mut sc = busy_scenario();
    sc.world.topology = Topology::Replicated { replicas: 2 };
    sc.clients
        .push(client("C", 10, redlock(|p| p.extend = Some(Extend::default()))));
    sc.faults.push(ScheduledFault {
        at: At::Time(50),
        fault: Fault::Failover { node: None },
    });
    sc.faults.push(ScheduledFault {
        at: At::Time(60),
        fault: Fault::CutLink {
            a: Endpoint::Client("A".into()),
            b: Endpoint::Node(1),
        },
    });
    let json = serde_json::to_string_pretty(&sc).expect("serialize");
    let back: Scenario = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, sc);
    let w = run(&sc);
    let t = w.to_trace();
    let back: locklab_core::trace::Trace = serde_json::from_str(&serde_json::to_string(&t).expect("ser")).expect("de");
    assert_eq!(back, t);
}

#[test]
fn a_hand_written_json_scenario_runs() {
    let json = r#"{
        "seed": 3,
        "world": { "topology": { "type": "single" }, "fencing": true },
        "clients": [
            { "name": "A", "program": { "type": "lock", "release": "lua",
                                       "fencing": { "transaction": { "counter": "fence" } } } },
            { "name": "B", "start_ms": 2, "program": { "type": "commands", "steps": [
                { "type": "send", "line": "SET lock mine NX PX 500" },
                { "type": "sleep", "ms": 5 },
                { "type": "send", "line": "GET lock" } ] } }
        ],
        "faults": [ { "at": { "step": 4 }, "fault": { "type": "pause_client", "client": "A", "ms": 2000 } } ]
    }"#;
    let sc: Scenario = serde_json::from_str(json).expect("parse");
    let w = run(&sc);
    assert!(w.trace().len() > 5, "{}", dump(&w));
    assert!(World::from_scenario(&Scenario {
        clients: vec![client("A", 0, cmds(&["SET \"unbalanced"]))],
        ..Scenario::default()
    })
    .is_err());
}

#[test]
fn bad_scenarios_are_errors_not_panics() {
    let bad_node = Scenario {
        faults: vec![ScheduledFault {
            at: At::Time(1),
            fault: Fault::CrashNode { node: 9 },
        }],
        ..Scenario::default()
    };
    assert!(matches!(
        World::from_scenario(&bad_node),
        Err(WorldError::UnknownNode(9, 1))
    ));
    let bad_client = Scenario {
        faults: vec![ScheduledFault {
            at: At::Time(1),
            fault: Fault::CrashClient { client: "Z".into() },
        }],
        ..Scenario::default()
    };
    assert!(matches!(
        World::from_scenario(&bad_client),
        Err(WorldError::UnknownClient(_))
    ));
    let dup = Scenario {
        clients: vec![client("A", 0, cmds(&["PING"])), client("A", 0, cmds(&["PING"]))],
        ..Scenario::default()
    };
    assert!(matches!(
        World::from_scenario(&dup),
        Err(WorldError::DuplicateClient(_))
    ));
    let big = Scenario {
        world: WorldConfig {
            topology: Topology::Redlock { masters: 40 },
            ..Default::default()
        },
        ..Scenario::default()
    };
    assert!(matches!(World::from_scenario(&big), Err(WorldError::Topology(_))));
    let bad_prog = Scenario {
        clients: vec![client("A", 0, lock(|p| p.ttl_ms = 0))],
        ..Scenario::default()
    };
    assert!(matches!(
        World::from_scenario(&bad_prog),
        Err(WorldError::Program { .. })
    ));
    let bad_step = Scenario {
        clients: vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![Step::Send {
                    line: "PING".into(),
                    node: Some(3),
                    timeout_ms: None,
                }],
            }),
        )],
        ..Scenario::default()
    };
    assert!(matches!(
        World::from_scenario(&bad_step),
        Err(WorldError::Program { .. })
    ));
    let bad_link = Scenario {
        clients: vec![client("A", 0, cmds(&["PING"]))],
        faults: vec![ScheduledFault {
            at: At::Time(1),
            fault: Fault::CutLink {
                a: Endpoint::Resource,
                b: Endpoint::Node(0),
            },
        }],
        ..Scenario::default()
    };
    assert!(matches!(World::from_scenario(&bad_link), Err(WorldError::Invalid(_))));
}

// ----- the stepping API a lesson runner uses ------------------------------------

#[test]
fn a_lesson_runner_can_type_commands_and_move_the_clock() {
    let mut w = World::new(WorldConfig::default(), 1).expect("world");
    let a = w.add_client("A").expect("A");
    let b = w.add_client("B").expect("B");
    let argv = |s: &str| locklab_core::cli::parse(s).expect("line");
    assert_eq!(
        w.request(a, 0, argv("SET lock token-A-111 NX PX 30000")).unwrap(),
        Some(Reply::ok())
    );
    assert_eq!(
        w.request(b, 0, argv("SET lock token-B-222 NX PX 30000")).unwrap(),
        Some(Reply::Nil)
    );
    assert_eq!(
        w.request(a, 0, argv("GET lock")).unwrap(),
        Some(Reply::bulk("token-A-111"))
    );
    let t0 = w.now();
    w.advance_to(t0 + 10_000);
    match w.request(a, 0, argv("PTTL lock")).unwrap() {
        Some(Reply::Integer(ms)) => assert!((19_980..=20_000).contains(&ms), "{ms}"),
        other => panic!("{other:?}"),
    }
    w.advance_to(w.now() + 20_001);
    assert!(kinds(&w)
        .iter()
        .any(|k| matches!(k, EventKind::Expired { key } if key == "lock")));
    assert_eq!(
        w.request(b, 0, argv("SET lock token-B-222 NX PX 30000")).unwrap(),
        Some(Reply::ok())
    );
    assert_eq!(w.lock_owner(0, "lock"), Some(b.0));
    assert_eq!(w.locks().len(), 1);
    assert!(w.send_line(a, 0, "SET \"x").is_err());
    assert!(w.send(a, 5, argv("PING")).is_err());
}

// ----- faults -----------------------------------------------------------------

#[test]
fn pause_client_delays_everything_it_would_do_and_the_lock_expires_meanwhile() {
    let sc = two_lockers(|p| p.release = Release::Lua);
    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| executed(e, 0, "SET"));
    let paused_at = w.now();
    w.inject(pause("A", 1_500)).expect("inject");
    w.run();
    let k = kinds(&w);
    let resumed = w
        .trace()
        .iter()
        .find(|e| e.kind == EventKind::Resumed)
        .expect("resumed");
    assert_eq!(resumed.at_ms, paused_at + 1_500);
    // A saw its acquire reply only after the pause; B got the lock in between.
    let a_belief = w
        .trace()
        .iter()
        .find(|e| e.actor == Actor::Client(0) && matches!(e.kind, EventKind::Belief { holds: true, .. }))
        .expect("A believes");
    assert_eq!(a_belief.at_ms, resumed.at_ms);
    assert!(k.iter().any(|k| matches!(k, EventKind::Granted { seq: 2, .. })));
    // Fencing off: A's late write is a lost update — even though, in this
    // schedule, B had finished before A woke up and the two never both
    // believed they held the lock.
    assert_eq!(first_violation(&w), Some(Invariant::StaleWrite), "{}", dump(&w));
}

#[test]
fn an_open_ended_pause_lasts_until_resume_client() {
    let mut sc = scenario(
        Topology::Single,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![
                    Step::Sleep { ms: 10 },
                    Step::Send {
                        line: "PING".into(),
                        node: None,
                        timeout_ms: None,
                    },
                ],
            }),
        )],
    );
    sc.faults.push(ScheduledFault {
        at: At::Time(5),
        fault: Fault::PauseClient {
            client: "A".into(),
            ms: None,
        },
    });
    sc.faults.push(ScheduledFault {
        at: At::Time(400),
        fault: Fault::ResumeClient { client: "A".into() },
    });
    let w = run(&sc);
    let sent = w
        .trace()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Sent { .. }))
        .expect("sent");
    assert_eq!(sent.at_ms, 400, "{}", dump(&w));
    assert_eq!(w.client_state(ClientId(0)).map(|s| s.paused), Some(false));
}

#[test]
fn crash_client_stops_it_for_good_and_its_lock_expires_by_ttl() {
    let sc = two_lockers(|p| p.release = Release::Lua);
    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| {
        matches!(e.kind, EventKind::Belief { holds: true, .. }) && e.actor == Actor::Client(0)
    });
    let crash_at = w.now();
    w.inject(Fault::CrashClient { client: "A".into() }).expect("inject");
    w.run();
    assert!(w.client_state(ClientId(0)).unwrap().crashed);
    let after: Vec<_> = w
        .trace()
        .iter()
        .filter(|e| e.at_ms > crash_at && e.actor == Actor::Client(0))
        .collect();
    assert!(after.is_empty(), "a crashed client does nothing: {after:?}");
    let expired = w
        .trace()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Expired { key } if key == "lock"))
        .expect("ttl");
    assert!(expired.at_ms >= 1_000 && expired.at_ms <= 1_010, "{}", expired.at_ms);
    assert!(
        kinds(&w).iter().any(|k| matches!(k, EventKind::Granted { seq: 2, .. })),
        "B gets it after the TTL"
    );
    assert!(
        w.violations().is_empty(),
        "a lock with a TTL heals a crash: {}",
        dump(&w)
    );
}

#[test]
fn crash_node_loses_requests_and_clients_time_out() {
    let mut sc = two_lockers(|p| {
        p.retry.deadline_ms = Some(500);
    });
    sc.faults.push(ScheduledFault {
        at: At::Time(0),
        fault: Fault::CrashNode { node: 0 },
    });
    let w = run(&sc);
    let k = kinds(&w);
    assert!(k.iter().any(|k| matches!(
        k,
        EventKind::Lost {
            reason: LossReason::NodeDown,
            ..
        }
    )));
    assert!(k.iter().any(|k| matches!(k, EventKind::TimedOut { .. })));
    assert!(
        k.iter()
            .any(|k| matches!(k, EventKind::Note { text } if text.starts_with("gave up"))),
        "{}",
        dump(&w)
    );
    assert!(w.node_state(0).unwrap().down);
}

fn restart_counter(keep: Option<bool>, persistence: Persistence) -> (Vec<Reply>, World) {
    let mut sc = scenario(
        Topology::Single,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![
                    Step::Send {
                        line: "SET lock A NX PX 60000".into(),
                        node: None,
                        timeout_ms: None,
                    },
                    Step::Send {
                        line: "INCR fence".into(),
                        node: None,
                        timeout_ms: None,
                    },
                    Step::Sleep { ms: 500 },
                    Step::Send {
                        line: "GET lock".into(),
                        node: None,
                        timeout_ms: None,
                    },
                    Step::Send {
                        line: "INCR fence".into(),
                        node: None,
                        timeout_ms: None,
                    },
                ],
            }),
        )],
    );
    sc.world.persistence = persistence;
    sc.faults.push(ScheduledFault {
        at: At::Time(100),
        fault: Fault::RestartNode {
            node: 0,
            down_ms: 50,
            keep_data: keep,
        },
    });
    let w = run(&sc);
    (replies_of(&w, 0), w)
}

#[test]
fn restart_node_with_its_data_keeps_locks_and_counters() {
    let (r, w) = restart_counter(None, Persistence::Aof);
    assert_eq!(
        r,
        vec![Reply::ok(), Reply::Integer(1), Reply::bulk("A"), Reply::Integer(2)],
        "{}",
        dump(&w)
    );
    assert!(kinds(&w)
        .iter()
        .any(|k| matches!(k, EventKind::Restarted { kept_data: true })));
    let (r, _) = restart_counter(Some(true), Persistence::Off);
    assert_eq!(r[3], Reply::Integer(2), "keep_data overrides the world's setting");
}

#[test]
fn restart_node_without_persistence_forgets_the_lock_and_reuses_counter_values() {
    let (r, w) = restart_counter(None, Persistence::Off);
    assert_eq!(
        r,
        vec![Reply::ok(), Reply::Integer(1), Reply::Nil, Reply::Integer(1)],
        "{}",
        dump(&w)
    );
    assert!(kinds(&w).iter().any(|k| matches!(
        k,
        EventKind::Lock {
            via: Via::Restart,
            change: LockChange::Removed { .. },
            ..
        }
    )));
    let (r, _) = restart_counter(Some(false), Persistence::Aof);
    assert_eq!(r[2], Reply::Nil);
}

fn replicated(replicas: u32, clients: Vec<ClientSpec>) -> Scenario {
    scenario(Topology::Replicated { replicas }, clients)
}

#[test]
fn replicas_follow_the_master_after_a_lag() {
    let sc = replicated(2, vec![client("A", 0, cmds(&["SET lock A PX 60000"]))]);
    let mut w = World::from_scenario(&sc).expect("valid");
    w.advance_to(100);
    for r in 1..3 {
        assert_eq!(
            w.lock_owner(r, "lock"),
            Some(0),
            "the world tracks the owner on replicas too"
        );
    }
    w.run();
    let rep: Vec<&Event> = w
        .trace()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Replicated { commands, .. } if commands[0][0] == "SET"))
        .collect();
    assert_eq!(rep.len(), 2, "{}", dump(&w));
    let dels = w
        .trace()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Replicated { commands, .. } if commands[0][0] == "DEL"))
        .count();
    assert_eq!(dels, 2, "the master's expiry reaches the replicas as DEL");
    let expired_on = w
        .trace()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Expired { .. }))
        .map(|e| e.actor)
        .collect::<Vec<_>>();
    assert_eq!(expired_on, vec![Actor::Node(0)], "only the master expires keys itself");
    for e in &rep {
        assert!(e.at_ms >= 20, "lag: {}", e.at_ms);
        if let EventKind::Replicated { commands, .. } = &e.kind {
            assert_eq!(commands[0][0], "SET");
            assert!(
                commands[0].iter().any(|a| a.eq_ignore_ascii_case("PXAT")),
                "relative TTLs become absolute: {commands:?}"
            );
        }
    }
}

#[test]
fn promote_replica_makes_it_the_master_clients_follow() {
    let mut sc = replicated(
        1,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![
                    Step::Send {
                        line: "SET k 1".into(),
                        node: None,
                        timeout_ms: None,
                    },
                    Step::Sleep { ms: 200 },
                    Step::Send {
                        line: "SET k 2".into(),
                        node: None,
                        timeout_ms: None,
                    },
                    Step::Send {
                        line: "SET k 3".into(),
                        node: Some(0),
                        timeout_ms: None,
                    },
                ],
            }),
        )],
    );
    sc.faults.push(ScheduledFault {
        at: At::Time(100),
        fault: Fault::PromoteReplica { node: 1 },
    });
    let w = run(&sc);
    assert_eq!(w.master(), 1);
    let r = replies_of(&w, 0);
    assert_eq!(r[1], Reply::ok(), "the second SET went to the new master");
    assert!(
        matches!(&r[2], Reply::Error(e) if e.starts_with("READONLY")),
        "the old master follows now: {r:?}"
    );
    assert_eq!(w.node_state(0).unwrap().master_of, Some(1));
}

#[test]
fn failover_before_replication_loses_the_lock_after_replication_keeps_it() {
    let run_with = |at: At| {
        let mut sc = replicated(1, vec![client("A", 0, cmds(&["SET lock A NX PX 60000"]))]);
        sc.faults.push(ScheduledFault {
            at,
            fault: Fault::Failover { node: None },
        });
        run(&sc)
    };
    let early = run_with(At::Step(3));
    assert_eq!(early.master(), 1);
    assert!(early.node(1).unwrap().peek(0, b"lock").is_none(), "{}", dump(&early));
    assert!(kinds(&early)
        .iter()
        .any(|k| matches!(k, EventKind::ReplicationLost { .. })));
    let mut sc = replicated(1, vec![client("A", 0, cmds(&["SET lock A NX PX 60000"]))]);
    sc.faults.push(ScheduledFault {
        at: At::Time(500),
        fault: Fault::Failover { node: None },
    });
    let mut late = World::from_scenario(&sc).expect("valid");
    late.advance_to(600);
    assert_eq!(late.master(), 1);
    assert!(late.node(1).unwrap().peek(0, b"lock").is_some(), "{}", dump(&late));
    assert_eq!(
        late.lock_owner(1, "lock"),
        Some(0),
        "the promoted replica knows it is A's"
    );
    assert!(late.node_state(0).unwrap().down);
}

#[test]
fn the_failover_story_two_holders_on_the_new_master() {
    let mut sc = replicated(
        1,
        vec![
            client("A", 0, lock(|p| p.work.min_ms = 300)),
            client("B", 3, lock(|_| {})),
        ],
    );
    sc.faults.push(ScheduledFault {
        at: At::Step(4),
        fault: Fault::Failover { node: None },
    });
    let w = run(&sc);
    let grants: Vec<u32> = w
        .trace()
        .iter()
        .filter_map(|e| match (&e.kind, e.actor) {
            (EventKind::Granted { .. }, Actor::Client(c)) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(grants, vec![0, 1], "{}", dump(&w));
    assert!(kinds(&w)
        .iter()
        .any(|k| matches!(k, EventKind::Overlap { begin: true, .. })));
}

#[test]
fn cut_and_heal_a_client_link() {
    let mut sc = scenario(
        Topology::Single,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![
                    Step::Send {
                        line: "PING".into(),
                        node: None,
                        timeout_ms: Some(100),
                    },
                    Step::Sleep { ms: 200 },
                    Step::Send {
                        line: "PING".into(),
                        node: None,
                        timeout_ms: Some(100),
                    },
                ],
            }),
        )],
    );
    let ends = || (Endpoint::Client("A".into()), Endpoint::Node(0));
    sc.faults.push(ScheduledFault {
        at: At::Time(0),
        fault: Fault::CutLink {
            a: ends().0,
            b: ends().1,
        },
    });
    sc.faults.push(ScheduledFault {
        at: At::Time(150),
        fault: Fault::HealLink {
            a: ends().1,
            b: ends().0,
        },
    });
    let w = run(&sc);
    let k = kinds(&w);
    assert!(k.iter().any(|k| matches!(
        k,
        EventKind::Lost {
            reason: LossReason::LinkCut,
            ..
        }
    )));
    assert!(k.iter().any(|k| matches!(k, EventKind::TimedOut { .. })));
    assert_eq!(replies_of(&w, 0), vec![Reply::status("PONG")], "{}", dump(&w));
}

#[test]
fn cut_replication_then_wait_times_out_and_heal_delivers_the_backlog() {
    let mut sc = replicated(
        1,
        vec![client(
            "A",
            0,
            cmds(&["SET lock A PX 60000", "WAIT 1 300", "SET x 1", "WAIT 1 0"]),
        )],
    );
    sc.faults.push(ScheduledFault {
        at: At::Time(0),
        fault: Fault::CutLink {
            a: Endpoint::Node(0),
            b: Endpoint::Node(1),
        },
    });
    sc.faults.push(ScheduledFault {
        at: At::Time(600),
        fault: Fault::HealLink {
            a: Endpoint::Node(0),
            b: Endpoint::Node(1),
        },
    });
    let w = run(&sc);
    let r = replies_of(&w, 0);
    assert_eq!(
        r,
        vec![Reply::ok(), Reply::Integer(0), Reply::ok(), Reply::Integer(1)],
        "{}",
        dump(&w)
    );
    let wait_reply = w
        .trace()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Executed { commands, .. } if commands[0][0] == "WAIT"))
        .map(|e| e.at_ms)
        .collect::<Vec<_>>();
    assert!(
        wait_reply[0] >= 300,
        "WAIT 1 300 answers at its timeout: {wait_reply:?}"
    );
    assert!(
        wait_reply[1] >= 600,
        "WAIT 1 0 answers once the backlog arrives: {wait_reply:?}"
    );
    assert!(w.node(1).unwrap().peek(0, b"x").is_some());
}

#[test]
fn wait_counts_real_acknowledgements() {
    let sc = replicated(
        2,
        vec![client(
            "A",
            0,
            cmds(&["SET lock A PX 60000", "WAIT 2 1000", "WAIT 0 0"]),
        )],
    );
    let w = run(&sc);
    assert_eq!(
        replies_of(&w, 0),
        vec![Reply::ok(), Reply::Integer(2), Reply::Integer(2)]
    );
    // A lone node has nobody to wait for, and WAIT does not move its clock.
    let single = run(&scenario(
        Topology::Single,
        vec![client("A", 0, cmds(&["WAIT 1 250", "WAIT 0 0"]))],
    ));
    assert_eq!(replies_of(&single, 0), vec![Reply::Integer(0), Reply::Integer(0)]);
    let node_clock = single.node_state(0).unwrap().clock_ms;
    assert!(node_clock <= locklab_core::server::EPOCH_MS + single.now() + 1);
    // On a replica the node answers with its own error.
    let on_replica = run(&replicated(
        1,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![Step::Send {
                    line: "WAIT 1 10".into(),
                    node: Some(1),
                    timeout_ms: None,
                }],
            }),
        )],
    ));
    assert!(matches!(&replies_of(&on_replica, 0)[0], Reply::Error(e) if e.contains("replica")));
}

#[test]
fn cut_link_to_the_resource_loses_writes() {
    let mut sc = scenario(Topology::Single, vec![client("A", 0, lock(|_| {}))]);
    sc.faults.push(ScheduledFault {
        at: At::Time(0),
        fault: Fault::CutLink {
            a: Endpoint::Client("A".into()),
            b: Endpoint::Resource,
        },
    });
    let w = run(&sc);
    assert!(w.resource().writes().is_empty());
    assert!(kinds(&w)
        .iter()
        .any(|k| matches!(k, EventKind::Note { text } if text.contains("lost"))));
}

#[test]
fn a_dropped_reply_is_not_a_failed_command() {
    let mut sc = scenario(
        Topology::Single,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![Step::Send {
                    line: "INCR n".into(),
                    node: None,
                    timeout_ms: Some(50),
                }],
            }),
        )],
    );
    sc.faults.push(ScheduledFault {
        at: At::Time(0),
        fault: Fault::SetLink {
            a: Endpoint::Client("A".into()),
            b: Endpoint::Node(0),
            config: LinkConfig {
                latency_ms: 1,
                jitter_ms: 0,
                drop_reply_permille: 1000,
            },
        },
    });
    let w = run(&sc);
    let k = kinds(&w);
    assert!(
        k.iter().any(|k| matches!(k, EventKind::Executed { .. })),
        "the command ran"
    );
    assert!(k.iter().any(|k| matches!(
        k,
        EventKind::Lost {
            reason: LossReason::Dropped,
            ..
        }
    )));
    assert!(
        k.iter().any(|k| matches!(k, EventKind::TimedOut { .. })),
        "the client only knows it timed out"
    );
    assert!(matches!(w.node(0).unwrap().peek(0, b"n").map(|e| e.value.clone()),
        Some(locklab_core::server::db::Value::Str(v)) if v == b"1"));
}

fn expiry_time(clock: Option<Fault>, node_clock: ClockConfig) -> u64 {
    let mut sc = scenario(Topology::Single, vec![client("A", 0, cmds(&["SET lock A PX 1000"]))]);
    sc.world.node_clocks.push(NodeClock {
        node: 0,
        clock: node_clock,
    });
    if let Some(f) = clock {
        sc.faults.push(ScheduledFault {
            at: At::Time(100),
            fault: f,
        });
    }
    let w = run(&sc);
    w.trace()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Expired { .. }))
        .map(|e| e.at_ms)
        .expect("expires")
}

#[test]
fn a_node_expires_keys_by_its_own_clock() {
    let normal = expiry_time(None, ClockConfig::default());
    assert!((1_000..=1_005).contains(&normal), "{normal}");
    let jumped = expiry_time(
        Some(Fault::JumpClock {
            of: ClockOf::Node(0),
            delta_ms: 800,
        }),
        ClockConfig::default(),
    );
    assert!((200..=210).contains(&jumped), "a forward jump expires early: {jumped}");
    let fast = expiry_time(
        None,
        ClockConfig {
            offset_ms: 0,
            drift_ppm: 1_000_000,
        },
    );
    assert!((500..=505).contains(&fast), "a clock running twice as fast: {fast}");
    let slowed = expiry_time(
        Some(Fault::SetDrift {
            of: ClockOf::Node(0),
            ppm: -500_000,
        }),
        ClockConfig::default(),
    );
    assert!((1_900..=1_915).contains(&slowed), "half speed after 100 ms: {slowed}");
    let back = expiry_time(
        Some(Fault::JumpClock {
            of: ClockOf::Node(0),
            delta_ms: -5_000,
        }),
        ClockConfig::default(),
    );
    assert!(back > 5_900, "a backward jump keeps the key alive: {back}");
}

fn sleeper(clock: ClockConfig, fault: Option<Fault>) -> u64 {
    let mut sc = scenario(
        Topology::Single,
        vec![ClientSpec {
            name: "A".into(),
            clock,
            start_ms: 0,
            program: Some(Program::Commands(CommandsProgram {
                steps: vec![
                    Step::Sleep { ms: 1_000 },
                    Step::Send {
                        line: "PING".into(),
                        node: None,
                        timeout_ms: None,
                    },
                ],
            })),
        }],
    );
    if let Some(f) = fault {
        sc.faults.push(ScheduledFault {
            at: At::Time(100),
            fault: f,
        });
    }
    let w = run(&sc);
    w.trace()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Sent { .. }))
        .expect("sent")
        .at_ms
}

#[test]
fn a_client_measures_time_by_its_own_clock() {
    assert_eq!(sleeper(ClockConfig::default(), None), 1_000);
    assert_eq!(
        sleeper(
            ClockConfig {
                offset_ms: -50,
                drift_ppm: -500_000
            },
            None
        ),
        2_000,
        "slow clock, long sleep"
    );
    let jump = Fault::JumpClock {
        of: ClockOf::Client("A".into()),
        delta_ms: 600,
    };
    assert_eq!(
        sleeper(ClockConfig::default(), Some(jump)),
        400,
        "a jump forward ends the sleep early"
    );
    let drift = Fault::SetDrift {
        of: ClockOf::Client("A".into()),
        ppm: 1_000_000,
    };
    assert_eq!(sleeper(ClockConfig::default(), Some(drift)), 550);
}

// ----- client programs ---------------------------------------------------------

#[test]
fn a_commands_program_reproduces_experiment_6_1() {
    let sc = scenario(
        Topology::Single,
        vec![
            client(
                "A",
                0,
                cmds(&["SET lock:order:1001 token-A-111 NX PX 30000", "GET lock:order:1001"]),
            ),
            client(
                "B",
                50,
                cmds(&["SET lock:order:1001 token-B-222 NX PX 30000", "PTTL lock:order:1001"]),
            ),
        ],
    );
    let w = run(&sc);
    assert_eq!(replies_of(&w, 0), vec![Reply::ok(), Reply::bulk("token-A-111")]);
    let b = replies_of(&w, 1);
    assert_eq!(b[0], Reply::Nil);
    assert!(matches!(b[1], Reply::Integer(ms) if ms > 29_900 && ms <= 30_000));
    assert!(kinds(&w).iter().filter(|k| matches!(k, EventKind::Done)).count() == 2);
}

#[test]
fn commands_can_hold_write_with_the_last_integer_and_unhold() {
    let sc = scenario(
        Topology::Single,
        vec![client(
            "A",
            0,
            Program::Commands(CommandsProgram {
                steps: vec![
                    Step::Hold { key: "lock".into() },
                    Step::Send {
                        line: "INCR fence".into(),
                        node: None,
                        timeout_ms: None,
                    },
                    Step::Write {
                        token: None,
                        token_from_last_reply: true,
                        value: "v".into(),
                    },
                    Step::Unhold { key: "lock".into() },
                ],
            }),
        )],
    );
    let w = run(&sc);
    assert_eq!(w.resource().writes()[0].token, Some(1));
    let beliefs = kinds(&w)
        .iter()
        .filter(|k| matches!(k, EventKind::Belief { .. }))
        .count();
    assert_eq!(beliefs, 2);
}

#[test]
fn two_lockers_take_turns_safely() {
    let w = run(&two_lockers(|p| {
        p.fencing = Fencing::Transaction {
            counter: "fence".into(),
        };
        p.cycles = 2;
    }));
    assert!(w.violations().is_empty(), "{}", dump(&w));
    let writes = w.resource().writes();
    assert_eq!(writes.len(), 4);
    let tokens: Vec<i64> = writes.iter().filter_map(|x| x.token).collect();
    assert!(
        tokens.windows(2).all(|p| p[0] < p[1]),
        "fencing tokens grow: {tokens:?}"
    );
    assert_eq!(
        kinds(&w)
            .iter()
            .filter(|k| matches!(k, EventKind::Granted { .. }))
            .count(),
        4
    );
    assert!(!kinds(&w).iter().any(|k| matches!(k, EventKind::Overlap { .. })));
    assert!(w.node(0).unwrap().peek(0, b"lock").is_none(), "released");
}

#[test]
fn setnx_then_expire_has_a_window_without_ttl_and_a_crash_in_it_deadlocks() {
    let sc = two_lockers(|p| p.acquire = Acquire::SetnxExpire);
    let ok = run(&sc);
    let k = kinds(&ok);
    assert!(k.iter().any(|k| matches!(
        k,
        EventKind::Lock {
            change: LockChange::Acquired { ttl_ms: None, .. },
            ..
        }
    )));
    assert!(
        k.iter().any(|k| matches!(
            k,
            EventKind::Lock {
                change: LockChange::Renewed { ttl_ms: Some(_) },
                ..
            }
        )),
        "EXPIRE arrives"
    );
    assert!(ok.violations().is_empty(), "{}", dump(&ok));

    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| executed(e, 0, "SETNX"));
    w.inject(Fault::CrashClient { client: "A".into() }).expect("inject");
    w.run();
    assert_eq!(first_violation(&w), Some(Invariant::Deadlock), "{}", dump(&w));
    let v = &w.violations()[0];
    assert!(v.actors.contains(&Actor::Client(0)));
    assert!(
        !kinds(&w).iter().any(|k| matches!(k, EventKind::Granted { seq: 2, .. })),
        "nobody else ever gets it"
    );
}

#[test]
fn backoff_shapes() {
    let mut rng = locklab_core::rng::Rng::new(1);
    assert_eq!(Backoff::Fixed { ms: 40 }.delay(5, &mut rng), 40);
    let exp = Backoff::Exponential {
        base_ms: 10,
        max_ms: 100,
    };
    let d: Vec<u64> = (1..=6).map(|a| exp.delay(a, &mut rng)).collect();
    assert_eq!(d, vec![10, 20, 40, 80, 100, 100]);
    let jit = Backoff::Jittered {
        base_ms: 10,
        max_ms: 100,
    };
    for a in 1..10 {
        assert!(jit.delay(a, &mut rng) <= 100);
    }
}

fn retry_gaps(backoff: Backoff) -> Vec<u64> {
    let holder = lock(|p| {
        p.work = Work {
            min_ms: 600,
            max_ms: 600,
            hang: false,
        };
        p.ttl_ms = 5_000;
    });
    let waiter = lock(move |p| {
        p.retry = Retry {
            max_attempts: Some(5),
            backoff,
            deadline_ms: None,
        };
    });
    let mut sc = scenario(Topology::Single, vec![client("A", 0, holder), client("B", 3, waiter)]);
    sc.world.link = LinkConfig {
        latency_ms: 1,
        jitter_ms: 0,
        drop_reply_permille: 0,
    };
    let w = run(&sc);
    let sends: Vec<u64> = w
        .trace()
        .iter()
        .filter(|e| e.actor == Actor::Client(1) && matches!(e.kind, EventKind::Sent { .. }))
        .map(|e| e.at_ms)
        .collect();
    assert!(
        kinds(&w)
            .iter()
            .any(|k| matches!(k, EventKind::Note { text } if text == "gave up after 5 attempts")),
        "{}",
        dump(&w)
    );
    sends.windows(2).map(|p| p[1] - p[0]).collect()
}

#[test]
fn acquire_with_retry_fixed_exponential_and_jittered() {
    assert_eq!(
        retry_gaps(Backoff::Fixed { ms: 50 }),
        vec![52, 52, 52, 52],
        "RTT 2 ms + 50 ms"
    );
    assert_eq!(
        retry_gaps(Backoff::Exponential {
            base_ms: 10,
            max_ms: 1_000
        }),
        vec![12, 22, 42, 82]
    );
    let j = retry_gaps(Backoff::Jittered {
        base_ms: 10,
        max_ms: 1_000,
    });
    assert_eq!(j.len(), 4);
    for (i, g) in j.iter().enumerate() {
        assert!(*g >= 2 && *g <= 2 + (10 << i), "{j:?}");
    }
}

#[test]
fn acquire_gives_up_at_its_deadline() {
    let sc = scenario(
        Topology::Single,
        vec![
            client(
                "A",
                0,
                lock(|p| {
                    p.work = Work {
                        min_ms: 2_000,
                        max_ms: 2_000,
                        hang: false,
                    };
                    p.ttl_ms = 10_000;
                }),
            ),
            client(
                "B",
                3,
                lock(|p| {
                    p.retry = Retry {
                        max_attempts: None,
                        backoff: Backoff::Fixed { ms: 100 },
                        deadline_ms: Some(450),
                    }
                }),
            ),
        ],
    );
    let w = run(&sc);
    let gave_up = w
        .trace()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Note { text } if text.starts_with("gave up")))
        .expect("gave up");
    assert!(gave_up.at_ms >= 450 && gave_up.at_ms < 700, "{}", gave_up.at_ms);
    assert_eq!(w.resource().writes().len(), 1, "only A worked");
}

/// A holds the lock, stalls past its TTL (paused right after its acquire
/// executed), B acquires; what does A's release do to B's lock?
fn stale_release(release: Release, fenced: bool) -> World {
    let mut sc = scenario(
        Topology::Single,
        vec![
            client(
                "A",
                0,
                lock(move |p| {
                    p.release = release;
                    p.work = Work {
                        min_ms: 100,
                        max_ms: 100,
                        hang: false,
                    };
                    if fenced {
                        p.fencing = Fencing::Transaction {
                            counter: "fence".into(),
                        };
                    }
                }),
            ),
            client(
                "B",
                3,
                lock(move |p| {
                    p.release = release;
                    p.work = Work {
                        min_ms: 800,
                        max_ms: 800,
                        hang: false,
                    };
                    if fenced {
                        p.fencing = Fencing::Transaction {
                            counter: "fence".into(),
                        };
                    }
                }),
            ),
        ],
    );
    sc.world.fencing = fenced;
    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| executed(e, 0, "SET") || executed(e, 0, "MULTI"));
    w.inject(pause("A", 1_100)).expect("inject");
    w.run();
    w
}

#[test]
fn bare_del_removes_the_next_holders_lock() {
    let w = stale_release(Release::Del, true);
    assert_eq!(first_violation(&w), Some(Invariant::WrongRelease), "{}", dump(&w));
    let v = &w.violations()[0];
    assert_eq!(
        v.actors[..2],
        [Actor::Client(0), Actor::Client(1)],
        "A removed B's lock"
    );
}

#[test]
fn getdel_is_no_safer_and_says_so_too_late() {
    let w = stale_release(Release::Getdel, true);
    assert_eq!(first_violation(&w), Some(Invariant::WrongRelease));
    assert!(
        kinds(&w)
            .iter()
            .any(|k| matches!(k, EventKind::Note { text } if text.contains("someone else's"))),
        "{}",
        dump(&w)
    );
}

#[test]
fn lua_and_delex_releases_leave_the_next_holders_lock_alone() {
    for release in [Release::Lua, Release::Delex] {
        let w = stale_release(release, true);
        assert!(w.violations().is_empty(), "{release:?}: {}", dump(&w));
        // A's conditional delete answered 0; B's lock stayed until B released it.
        let zero = w.trace().iter().any(|e| {
            matches!(&e.kind, EventKind::Executed { client: 0, replies, commands, .. }
                if (commands[0][0] == "EVAL" || commands[0][0] == "DELEX") && replies == &vec![Reply::Integer(0)])
        });
        assert!(zero, "{release:?}: {}", dump(&w));
        let removed_by: Vec<Option<u32>> = w
            .trace()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Lock {
                    change: LockChange::Removed { by },
                    ..
                } => Some(*by),
                _ => None,
            })
            .collect();
        assert_eq!(removed_by, vec![None, Some(1)], "A's lock expired, B released its own");
    }
}

#[test]
fn get_then_del_loses_the_race_between_its_two_commands() {
    let sc = scenario(
        Topology::Single,
        vec![
            client(
                "A",
                0,
                lock(|p| {
                    p.release = Release::GetThenDel;
                    p.work = Work {
                        min_ms: 300,
                        max_ms: 300,
                        hang: false,
                    };
                }),
            ),
            client(
                "B",
                3,
                lock(|p| {
                    p.release = Release::GetThenDel;
                    p.work = Work {
                        min_ms: 500,
                        max_ms: 500,
                        hang: false,
                    };
                }),
            ),
        ],
    );
    let mut w = World::from_scenario(&sc).expect("valid");
    // A's GET has run and its answer ("still mine") is on the wire …
    step_until(&mut w, |e| executed(e, 0, "GET"));
    // … when A stalls long enough for the lock to expire and B to take it.
    w.inject(pause("A", 900)).expect("inject");
    w.run();
    assert_eq!(first_violation(&w), Some(Invariant::WrongRelease), "{}", dump(&w));
}

#[test]
fn keep_release_lets_the_ttl_free_the_lock() {
    let w = run(&two_lockers(|p| {
        p.release = Release::Keep;
        p.ttl_ms = 500;
    }));
    assert!(w.violations().is_empty());
    let expired = kinds(&w)
        .iter()
        .filter(|k| matches!(k, EventKind::Lock { via: Via::Expiry, .. }))
        .count();
    assert_eq!(expired, 2, "{}", dump(&w));
}

#[test]
fn a_fixed_token_cannot_tell_owners_apart_but_the_world_can() {
    let fixed = |release: Release| {
        move |p: &mut LockProgram| {
            p.token = Token::Fixed("1".into());
            p.release = release;
            p.work = Work {
                min_ms: 100,
                max_ms: 100,
                hang: false,
            };
        }
    };
    let mut sc = scenario(
        Topology::Single,
        vec![
            client("A", 0, lock(fixed(Release::Lua))),
            client(
                "B",
                3,
                lock(|p| {
                    fixed(Release::Lua)(p);
                    p.work = Work {
                        min_ms: 800,
                        max_ms: 800,
                        hang: false,
                    };
                }),
            ),
        ],
    );
    sc.faults.push(ScheduledFault {
        at: At::Step(3),
        fault: pause("A", 1_100),
    });
    let w = run(&sc);
    assert_eq!(
        first_violation(&w),
        Some(Invariant::WrongRelease),
        "the safe script deletes B's \"1\": {}",
        dump(&w)
    );
}

#[test]
fn watchdog_renews_while_working_and_stops_at_its_cap() {
    let worker = |cap: Option<u32>| {
        lock(move |p| {
            p.ttl_ms = 300;
            p.work = Work {
                min_ms: 1_000,
                max_ms: 1_000,
                hang: false,
            };
            p.watchdog = Some(Watchdog {
                interval_ms: None,
                max_renewals: cap,
                renew: Renew::SetIfeq,
            });
        })
    };
    let w = run(&scenario(
        Topology::Single,
        vec![client("A", 0, worker(None)), client("B", 3, lock(|_| {}))],
    ));
    let renewals = kinds(&w)
        .iter()
        .filter(|k| {
            matches!(
                k,
                EventKind::Lock {
                    change: LockChange::Renewed { .. },
                    ..
                }
            )
        })
        .count();
    assert!(renewals >= 9, "every ttl/3 for 1000 ms: {renewals}");
    assert!(
        w.violations().is_empty() && !kinds(&w).iter().any(|k| matches!(k, EventKind::Overlap { .. })),
        "{}",
        dump(&w)
    );

    let capped = run(&scenario(
        Topology::Single,
        vec![client("A", 0, worker(Some(2))), client("B", 3, lock(|_| {}))],
    ));
    assert!(kinds(&capped)
        .iter()
        .any(|k| matches!(k, EventKind::Note { text } if text.contains("stops after 2"))));
    assert!(
        kinds(&capped)
            .iter()
            .any(|k| matches!(k, EventKind::Overlap { begin: true, .. })),
        "{}",
        dump(&capped)
    );
}

#[test]
fn lua_watchdog_renews_too() {
    let w = run(&scenario(
        Topology::Single,
        vec![client(
            "A",
            0,
            lock(|p| {
                p.ttl_ms = 300;
                p.work = Work {
                    min_ms: 700,
                    max_ms: 700,
                    hang: false,
                };
                p.watchdog = Some(Watchdog {
                    interval_ms: Some(100),
                    max_renewals: None,
                    renew: Renew::Lua,
                });
            }),
        )],
    ));
    let renewed = kinds(&w)
        .iter()
        .filter(|k| {
            matches!(
                k,
                EventKind::Lock {
                    change: LockChange::Renewed { .. },
                    ..
                }
            )
        })
        .count();
    assert!(renewed >= 6, "{}", dump(&w));
}

#[test]
fn a_paused_watchdog_cannot_renew_and_learns_it_lost_the_lock() {
    let mut sc = scenario(
        Topology::Single,
        vec![
            client(
                "A",
                0,
                lock(|p| {
                    p.ttl_ms = 300;
                    p.work = Work {
                        min_ms: 2_000,
                        max_ms: 2_000,
                        hang: false,
                    };
                    p.watchdog = Some(Watchdog {
                        interval_ms: None,
                        max_renewals: None,
                        renew: Renew::SetIfeq,
                    });
                }),
            ),
            client(
                "B",
                3,
                lock(|p| {
                    p.work = Work {
                        min_ms: 1_000,
                        max_ms: 1_000,
                        hang: false,
                    }
                }),
            ),
        ],
    );
    sc.faults.push(ScheduledFault {
        at: At::Time(150),
        fault: pause("A", 600),
    });
    let w = run(&sc);
    assert!(
        kinds(&w)
            .iter()
            .any(|k| matches!(k, EventKind::Note { text } if text.contains("renewal refused"))),
        "{}",
        dump(&w)
    );
    assert!(
        w.resource().writes().iter().all(|x| x.client == 1),
        "A knows it lost the lock and does not write"
    );
}

#[test]
fn an_unbounded_watchdog_on_a_hung_worker_holds_the_lock_forever() {
    let mut sc = scenario(
        Topology::Single,
        vec![
            client(
                "A",
                0,
                lock(|p| {
                    p.ttl_ms = 300;
                    p.work = Work {
                        min_ms: 0,
                        max_ms: 0,
                        hang: true,
                    };
                    p.watchdog = Some(Watchdog {
                        interval_ms: None,
                        max_renewals: None,
                        renew: Renew::SetIfeq,
                    });
                }),
            ),
            client("B", 3, lock(|_| {})),
        ],
    );
    sc.world.invariants.max_hold_ms = Some(3_000);
    sc.world.horizon_ms = 10_000;
    let w = run(&sc);
    assert_eq!(first_violation(&w), Some(Invariant::Deadlock), "{}", dump(&w));
    assert!(w.violations()[0].detail.contains("beyond"));
}

/// Lesson 22: A pauses (GC) right after acquiring, its lease expires, B
/// acquires and writes; A wakes up and writes.
fn gc_pause(fenced: bool) -> World {
    let p = |work: u64| {
        lock(move |p| {
            p.work = Work {
                min_ms: work,
                max_ms: work,
                hang: false,
            };
            if fenced {
                p.fencing = Fencing::Transaction {
                    counter: "fence".into(),
                };
            }
        })
    };
    let mut sc = scenario(Topology::Single, vec![client("A", 0, p(300)), client("B", 3, p(50))]);
    sc.world.fencing = fenced;
    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| executed(e, 0, "SET") || executed(e, 0, "MULTI"));
    w.inject(pause("A", 1_100)).expect("inject");
    w.run();
    w
}

#[test]
fn fencing_in_the_transaction_turns_a_pause_into_a_rejected_write() {
    let fenced = gc_pause(true);
    assert!(fenced.violations().is_empty(), "{}", dump(&fenced));
    let writes = fenced.resource().writes();
    assert_eq!(writes.len(), 2);
    assert_eq!((writes[0].client, writes[0].accepted), (1, true), "B writes first");
    assert_eq!(
        (writes[1].client, writes[1].accepted),
        (0, false),
        "A's lower token is rejected"
    );
    assert!(writes[0].token > writes[1].token);
    let plain = gc_pause(false);
    assert_eq!(first_violation(&plain), Some(Invariant::StaleWrite), "{}", dump(&plain));
    let v = &plain.violations()[0];
    assert!(v.from_ms < v.to_ms);
    assert_eq!(v.actors[..2], [Actor::Client(0), Actor::Client(1)]);
}

#[test]
fn a_token_taken_after_the_lock_can_be_larger_than_the_next_holders() {
    let p = |work: u64| {
        lock(move |p| {
            p.fencing = Fencing::IncrAfter {
                counter: "fence".into(),
            };
            p.work = Work {
                min_ms: work,
                max_ms: work,
                hang: false,
            };
        })
    };
    let mut sc = scenario(Topology::Single, vec![client("A", 0, p(100)), client("B", 3, p(50))]);
    sc.world.fencing = true;
    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| executed(e, 0, "SET"));
    w.inject(pause("A", 1_200)).expect("inject");
    w.run();
    assert_eq!(
        first_violation(&w),
        Some(Invariant::StaleWrite),
        "fencing that does not fence: {}",
        dump(&w)
    );
}

#[test]
fn a_lock_program_can_wait_for_its_replica() {
    let sc = replicated(
        1,
        vec![client(
            "A",
            0,
            lock(|p| {
                p.wait = Some(WaitReplicas {
                    replicas: 1,
                    timeout_ms: 500,
                })
            }),
        )],
    );
    let w = run(&sc);
    let wait = w
        .trace()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Executed { commands, replies, .. } if commands[0][0] == "WAIT" => Some(replies[0].clone()),
            _ => None,
        })
        .expect("WAIT ran");
    assert_eq!(wait, Reply::Integer(1));
}

// ----- Redlock ------------------------------------------------------------------

fn redlock_world(clients: Vec<ClientSpec>) -> Scenario {
    scenario(Topology::Redlock { masters: 5 }, clients)
}

fn notes(w: &World, c: u32) -> Vec<String> {
    w.trace()
        .iter()
        .filter(|e| e.actor == Actor::Client(c))
        .filter_map(|e| match &e.kind {
            EventKind::Note { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn redlock_acquires_on_all_five_with_the_documented_validity() {
    let mut sc = redlock_world(vec![client("A", 0, redlock(|p| p.ttl_ms = 10_000))]);
    sc.world.link = LinkConfig {
        latency_ms: 2,
        jitter_ms: 0,
        drop_reply_permille: 0,
    };
    let w = run(&sc);
    let n = notes(&w, 0);
    // elapsed = 4 ms (one round trip), drift = 10000 × 0.01 + 2 = 102.
    assert_eq!(
        n[0],
        "5/5 nodes in 4 ms, validity 9894 ms: lock acquired",
        "{}",
        dump(&w)
    );
    assert_eq!(
        kinds(&w)
            .iter()
            .filter(|k| matches!(k, EventKind::Granted { .. }))
            .count(),
        1
    );
    for i in 0..5 {
        assert!(w.node(i).unwrap().peek(0, b"lock").is_none(), "released on every node");
    }
}

#[test]
fn redlock_fails_with_two_of_five_releases_everywhere_and_retries() {
    let mut sc = redlock_world(vec![client(
        "A",
        0,
        redlock(|p| {
            p.retry_count = 2;
            p.release = Release::Delex;
        }),
    )]);
    for node in 0..3 {
        sc.faults.push(ScheduledFault {
            at: At::Time(0),
            fault: Fault::CrashNode { node },
        });
    }
    let w = run(&sc);
    let n = notes(&w, 0);
    assert!(n[0].starts_with("2/5 nodes") && n[0].ends_with("not acquired"), "{n:?}");
    assert_eq!(n.last().map(String::as_str), Some("gave up after 3 attempts"));
    let releases = w
        .trace()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Sent { commands, .. } if commands[0][0] == "DELEX"))
        .count();
    assert_eq!(releases, 15, "release on all five after each of three failed attempts");
    assert!(w.resource().writes().is_empty());
}

#[test]
fn a_slow_node_costs_one_per_node_timeout_not_the_lease() {
    let mut sc = redlock_world(vec![client("A", 0, redlock(|p| p.per_node_timeout_ms = 30))]);
    sc.world.links.push(LinkOverride {
        client: "A".into(),
        node: Some(4),
        config: LinkConfig {
            latency_ms: 500,
            jitter_ms: 0,
            drop_reply_permille: 0,
        },
    });
    let w = run(&sc);
    let n = notes(&w, 0);
    assert!(n[0].starts_with("4/5 nodes in 30 ms"), "{n:?}");
    assert!(n[0].ends_with("lock acquired"));
}

#[test]
fn redlock_extends_on_a_majority() {
    let sc = redlock_world(vec![client(
        "A",
        0,
        redlock(|p| {
            p.ttl_ms = 300;
            p.work = Work {
                min_ms: 800,
                max_ms: 800,
                hang: false,
            };
            p.extend = Some(Extend {
                every_ms: Some(100),
                max_extensions: None,
                renew: Renew::SetIfeq,
            });
        }),
    )]);
    let w = run(&sc);
    let ext = notes(&w, 0).iter().filter(|t| t.starts_with("extended on 5/5")).count();
    assert!(ext >= 6, "{}", dump(&w));
    assert!(w.violations().is_empty());
}

#[test]
fn redlock_extension_without_a_majority_loses_the_lock() {
    let mut sc = redlock_world(vec![client(
        "A",
        0,
        redlock(|p| {
            p.ttl_ms = 300;
            p.work = Work {
                min_ms: 800,
                max_ms: 800,
                hang: false,
            };
            p.extend = Some(Extend {
                every_ms: Some(100),
                max_extensions: None,
                renew: Renew::Lua,
            });
        }),
    )]);
    for node in 0..3 {
        sc.faults.push(ScheduledFault {
            at: At::Time(50),
            fault: Fault::RestartNode {
                node,
                down_ms: 1,
                keep_data: Some(false),
            },
        });
    }
    let w = run(&sc);
    let n = notes(&w, 0);
    assert!(n.iter().any(|t| t.starts_with("extension failed (2/5")), "{n:?}");
    assert!(w.resource().writes().is_empty());
}

#[test]
fn restarting_a_redlock_node_without_persistence_hands_out_a_second_majority() {
    let mut sc = redlock_world(vec![
        client(
            "A",
            0,
            redlock(|p| {
                p.nodes = vec![0, 1, 2];
                p.work = Work {
                    min_ms: 400,
                    max_ms: 400,
                    hang: false,
                };
            }),
        ),
        client("B", 5, redlock(|p| p.retry_delay_ms = 50)),
    ]);
    sc.world.persistence = Persistence::Off;
    sc.faults.push(ScheduledFault {
        at: At::Time(30),
        fault: Fault::RestartNode {
            node: 2,
            down_ms: 10,
            keep_data: None,
        },
    });
    let w = run(&sc);
    // A took r1..r3 (3 of its 3, and a majority of 5); r3 forgets; B gets r3, r4, r5.
    let grants = kinds(&w)
        .iter()
        .filter(|k| matches!(k, EventKind::Granted { .. }))
        .count();
    assert_eq!(grants, 2, "{}", dump(&w));
    assert!(kinds(&w)
        .iter()
        .any(|k| matches!(k, EventKind::Overlap { begin: true, .. })));
}

// ----- invariants ------------------------------------------------------------

#[test]
fn overlap_is_recorded_but_only_a_violation_when_asked() {
    let paused = |strict: bool| {
        let mut sc = two_lockers(|p| {
            p.fencing = Fencing::Transaction {
                counter: "fence".into(),
            };
            p.work = Work {
                min_ms: 100,
                max_ms: 100,
                hang: false,
            };
        });
        sc.world.fencing = true;
        sc.world.invariants.overlap_is_violation = strict;
        sc.faults.push(ScheduledFault {
            at: At::Step(5),
            fault: pause("A", 1_100),
        });
        run(&sc)
    };
    let relaxed = paused(false);
    assert!(
        kinds(&relaxed)
            .iter()
            .any(|k| matches!(k, EventKind::Overlap { begin: true, .. })),
        "{}",
        dump(&relaxed)
    );
    assert!(relaxed.violations().is_empty(), "fencing makes the overlap harmless");
    let strict = paused(true);
    assert_eq!(first_violation(&strict), Some(Invariant::Overlap));
}

#[test]
fn stop_on_violation_halts_the_world_at_the_violation() {
    let mut sc = busy_scenario();
    sc.world.stop_on_violation = true;
    let w = run(&sc);
    assert!(w.is_halted());
    let last = w.trace().last().expect("events");
    assert!(matches!(last.kind, EventKind::Violation { .. }), "{}", dump(&w));
    assert_eq!(w.first_violation_step(), Some(last.step));
}

#[test]
fn the_world_knows_holders_and_beliefs() {
    let sc = two_lockers(|p| {
        p.work = Work {
            min_ms: 200,
            max_ms: 200,
            hang: false,
        }
    });
    let mut w = World::from_scenario(&sc).expect("valid");
    step_until(&mut w, |e| matches!(e.kind, EventKind::Belief { holds: true, .. }));
    assert_eq!(w.believers("lock"), vec![0]);
    assert_eq!(w.lock_owner(0, "lock"), Some(0));
    assert_eq!(w.monitor().latest_grant(0), (Some("lock"), 1));
    let view = &w.locks()[0];
    assert_eq!((view.node, view.owner), (0, Some(0)));
    assert!(view.ttl_ms.is_some_and(|t| t <= 1_000));
    assert_eq!(w.client_state(ClientId(0)).map(|s| s.running), Some(true));
    assert!(w.client_clock(ClientId(0)).is_some());
}
