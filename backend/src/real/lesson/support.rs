//! Which lessons a real topology can play, and what each needs: the
//! topology, the time factor, the keys to watch; the refusals say why.

use super::*;

/// The managed topology a lesson needs.
pub fn topology_kind(lesson: &Lesson) -> TopologyKind {
    match lesson.topology {
        LessonTopology::Single => TopologyKind::Single,
        LessonTopology::Replicated => TopologyKind::Replicated,
        LessonTopology::Redlock5 => TopologyKind::Redlock5,
        LessonTopology::Cluster3 => TopologyKind::Cluster3,
    }
}

/// The compression a run uses when none is given: 1× for a lesson that
/// measures lock-health figures or round trips, 100× otherwise, except for
/// the Redlock lessons. Their client programs schedule extensions and
/// releases with ~100 lesson ms to spare before the next step checks the
/// servers (lesson 19: the extension at 9.9 s, the check at 10 s), and
/// every Redlock round is ten real round trips; at 100× a single wall
/// millisecond is already 100 lesson ms, at 10× it is 10.
///
/// An etcd lesson gets 10×: etcd's TTLs are whole seconds, so a 10 s lease
/// must stay at least the 1 s etcd grants. A ZooKeeper lesson gets 5×: its
/// servers expire a session within a 100 ms tick of its timeout, half a
/// second of lesson time at 5× (lesson 44 waits a second past A's).
pub fn default_factor(lesson: &Lesson) -> u64 {
    if lesson.world.service == Some(LockService::Zk) {
        return 5;
    }
    if has_metrics(lesson) || measures_round_trips(lesson) {
        // Waits of a few lesson ms are what the figures measure; the
        // session's clock counts whole wall ms, so at 100× a wait would be
        // 0 or 100 ms.
        1
    } else if lesson.topology == LessonTopology::Redlock5 || lesson.world.service.is_some() {
        10
    } else {
        100
    }
}

/// Does the lesson slow a link by a few ms to show what round trips cost
/// (lesson 42: 7 ms, then 1 ms one way)? Compressed, such a delay would
/// be less than the loopback's own tens of microseconds.
fn measures_round_trips(lesson: &Lesson) -> bool {
    let plain = locklab_core::link::LinkConfig::default();
    lesson.steps.iter().any(|s| {
        matches!(s.kind(), Ok(StepKind::Fault(Fault::SetLink { config, .. }))
            if config.latency_ms < 100 && (config.latency_ms, config.jitter_ms) != (plain.latency_ms, plain.jitter_ms))
    })
}

/// Does the lesson measure lock-health figures (a `metrics` step)?
pub(super) fn has_metrics(lesson: &Lesson) -> bool {
    lesson
        .steps
        .iter()
        .any(|s| matches!(s.kind(), Ok(StepKind::Metrics(_))))
}

/// Can this runner play this lesson on Redis, on a managed topology of the
/// kind it names? `Err` says why not: the lesson's own text when it is
/// marked `real = no`, else which step needs what. A lesson on a lock
/// service is not this runner's ([`crate::real::play`] sends it to
/// [`crate::real::service`]).
pub fn check_supported(lesson: &Lesson) -> Result<(), String> {
    check_supported_lang(lesson, Lang::En)
}

/// Is the lesson marked `real = no`? Its own why-not text in `lang`: the
/// first refusal of every real runner, on Redis or on a lock service.
pub fn check_marked_real(lesson: &Lesson, lang: Lang) -> Result<(), String> {
    match &lesson.real {
        RealRun::No { why } => Err(why.get(lang).trim().to_owned()),
        _ => Ok(()),
    }
}

/// [`check_supported`], with the lesson's own why-not text in `lang`.
// long: one refusal per kind of step a real topology cannot play, each with its reason
pub fn check_supported_lang(lesson: &Lesson, lang: Lang) -> Result<(), String> {
    check_marked_real(lesson, lang)?;
    if let Some(service) = lesson.world.service {
        return Err(format!(
            "it plays on {}, which the Redis runner does not play",
            service_started(service)
        ));
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        match step.kind() {
            Ok(StepKind::Fault(Fault::SetLink { config, .. })) if !matches!(config.drop_reply_permille, 0 | 1000) => {
                return Err(format!(
                    "step {} drops replies at random, which a real run cannot reproduce",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::SetLink { a, b, .. }))
                if !matches!(
                    (a, b),
                    (Endpoint::Client(_), Endpoint::Node(_)) | (Endpoint::Node(_), Endpoint::Client(_))
                ) =>
            {
                return Err(format!("step {} changes a link the lab has no handle on", i + 1))
            }
            Ok(StepKind::Fault(Fault::RestartNode {
                keep_data: Some(true), ..
            })) => {
                return Err(format!(
                    "step {} restarts a node with its data, and managed nodes have no persistence",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::RestartNode { keep_data: None, .. }))
                if lesson.world.persistence != Default::default() =>
            {
                return Err(format!(
                    "step {} restarts a node with persistence, and managed nodes have none",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(f))
                if !matches!(
                    f,
                    Fault::PauseClient { .. }
                        | Fault::ResumeClient { .. }
                        | Fault::CrashClient { .. }
                        | Fault::SetLink { .. }
                        | Fault::CrashNode { .. }
                        | Fault::RestartNode { .. }
                        | Fault::PromoteReplica { .. }
                        | Fault::Failover { .. }
                        | Fault::CutLink { .. }
                        | Fault::HealLink { .. }
                        | Fault::JumpClock { .. }
                        | Fault::SetDrift { .. }
                ) =>
            {
                return Err(format!(
                    "step {} injects a fault a real server cannot take: {f:?}",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::JumpClock {
                of: ClockOf::Client(_), ..
            }))
            | Ok(StepKind::Fault(Fault::SetDrift {
                of: ClockOf::Client(_), ..
            })) => {
                return Err(format!(
                    "step {} moves a client's clock, and clients run in the lab, not on a server",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::CutLink { a, b } | Fault::HealLink { a, b }))
                if matches!(a, Endpoint::Resource) || matches!(b, Endpoint::Resource) =>
            {
                return Err(format!(
                    "step {} partitions the resource, which is simulated even on a real run",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::Failover { .. } | Fault::PromoteReplica { .. }))
                if lesson.topology != LessonTopology::Replicated =>
            {
                return Err(format!(
                    "step {} fails over, which needs the replicated topology",
                    i + 1
                ))
            }
            Err(e) => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// [`check_supported`] on this particular topology: the user's own server
/// (`External`) takes single-node lessons only (the lab never faults it),
/// a managed one must be the lesson's kind.
pub fn check_target(lesson: &Lesson, topology: &Servers, lang: Lang) -> Result<(), String> {
    check_supported_lang(lesson, lang)?;
    check_topology(lesson, topology)
}

/// What a lesson on `service` plays on, as a refusal words it.
fn service_started(service: LockService) -> &'static str {
    match service {
        LockService::Zk => "a ZooKeeper ensemble",
        LockService::Etcd => "an etcd cluster",
        LockService::All => "four lock services (a Redis, three Redlock masters, etcd and ZooKeeper)",
    }
}

/// Can `topology` host `lesson` (whose steps are supported)? The user's own
/// server (`External`) takes single-node lessons only and no lesson on a
/// lock service (the lab starts nothing there); a managed one must be the
/// lesson's kind.
pub fn check_topology(lesson: &Lesson, topology: &Servers) -> Result<(), String> {
    if let (None, Some(service)) = (topology.kind(), lesson.world.service) {
        return Err(format!(
            "it plays on {} the lab starts, and this backend uses your own server (--redis), where the lab \
             starts nothing: run it with `locklab lesson run {} --real`, or serve without --redis",
            service_started(service),
            lesson.id
        ));
    }
    match topology.kind() {
        None if lesson.topology != LessonTopology::Single => Err(format!(
            "it needs the {} topology, and this backend uses your own server (--redis), where the lab starts nothing and injects no faults",
            topology_kind(lesson).as_str()
        )),
        None => match faults_a_node(lesson) {
            Some(i) => Err(format!(
                "step {} faults the server itself (a crash, a restart or its clock), and the lab never faults your own \
                 server (--redis): run it with `locklab lesson run {} --real`, or serve without --redis",
                i + 1,
                lesson.id
            )),
            None => Ok(()),
        },
        // A master and a replica, failed over by Sentinel itself.
        Some(TopologyKind::Sentinel) if lesson.topology == LessonTopology::Replicated => Ok(()),
        Some(k) if k != topology_kind(lesson) => {
            Err(format!("it needs the {} topology, not {}", topology_kind(lesson).as_str(), k.as_str()))
        }
        Some(_) => Ok(()),
    }
}

/// The first step that faults a node (kills, restarts, promotes it or
/// moves its clock): what a managed server takes and the user's own never
/// does.
fn faults_a_node(lesson: &Lesson) -> Option<usize> {
    lesson.steps.iter().position(|s| {
        matches!(
            s.fault,
            Some(
                Fault::CrashNode { .. }
                    | Fault::RestartNode { .. }
                    | Fault::PromoteReplica { .. }
                    | Fault::Failover { .. }
                    | Fault::JumpClock {
                        of: ClockOf::Node(_),
                        ..
                    }
                    | Fault::SetDrift {
                        of: ClockOf::Node(_),
                        ..
                    }
            )
        )
    })
}

/// Every lock key a lesson's invariants watch: `world.locks` and the keys
/// of its programs, as core's world watches them.
pub(super) fn watched_keys(lesson: &Lesson) -> Vec<String> {
    let mut keys = lesson.world.locks.clone();
    for step in &lesson.steps {
        if let Some(p) = &step.program {
            for k in p.lock_keys() {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    keys
}

/// Adds to step `index`'s note in a real run's transcript: a step can
/// collect several (replication held back, and a compressed TTL), joined
/// by `; `.
pub(crate) fn add_note(notes: &mut BTreeMap<usize, String>, index: usize, note: String) {
    notes
        .entry(index)
        .and_modify(|n| {
            n.push_str("; ");
            n.push_str(&note);
        })
        .or_insert(note);
}
