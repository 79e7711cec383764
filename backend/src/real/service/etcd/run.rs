//! A lesson on a real etcd cluster: core's step interpreter
//! ([`Progress`](locklab_core::lesson::run::Progress)) over [`EtcdEnv`], core's `Environment` for a managed
//! etcd cluster.
//!
//! What each step does, and how it differs from the simulator:
//!
//! * **A command** goes, as the client's etcd-client request, to the member
//!   the step names or else to the leader (the simulator's "current
//!   master" is the leader too). The runner waits for its answer; a `LOCK`
//!   that blocks is waited for as long as a lease the run knows could
//!   still run out and free the lock (plus etcd's expiry check and a
//!   commit), and answers nothing after that (the step shows no reply, as
//!   in the simulator when nothing is left to happen) — its task keeps
//!   running on the driver's runtime, and its late answer goes on the
//!   timeline.
//! * **Time is compressed** by the run's factor (10× by default: etcd's
//!   TTLs are whole seconds, so a 10 s lease is 1 s, the smallest etcd
//!   grants). Waits sleep the compressed time; TTLs and the numbers of
//!   leases and revisions go through [`Translate`].
//! * **pause_client** stops the client: the next step it takes (a
//!   command, a write) waits until the pause is over, and it sends nothing
//!   meanwhile — no keep-alive either, which is the lesson.
//! * **crash_node** SIGKILLs the member's `etcd`. When it led, the others
//!   elect a new leader (a few hundred ms of wall time, not counted as
//!   lesson time: the simulator's election is instantaneous) and the
//!   runner waits until the new leader has given every lease its full TTL.
//! * **Lock bars** come from the cluster's state as in the simulator's
//!   `world/service.rs`: after each step the oldest key under each watched
//!   lock is read on the leader and shown to core's lock observer, owned
//!   by the client whose `LOCK` put it, with its lease's deadline.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use locklab_core::actor::Actor;
use locklab_core::fault::Fault;
use locklab_core::lesson::Lesson;
use locklab_core::observe::Seen;
use locklab_core::trace::EventKind;
use locklab_core::Reply;

use super::driver::{reply, EtcdDriver, Raw, RealRequest};
use super::translate::Translate;
use crate::real::lesson::{RealLessonError, RealReport};
use crate::real::service::env::{in_slices, play_on, ServiceEnv, ServiceParts};
use crate::real::service::lesson_state::{check_steps, unsupported, LessonState};

/// Wall time a blocked `LOCK` is given beyond the last lease deadline the
/// run knows: etcd checks for expired leases every 500 ms, then commits
/// the revoke.
const LOCK_GRACE: Duration = Duration::from_secs(3);
/// How long an election after a crash may take.
const ELECTION_WITHIN: Duration = Duration::from_secs(30);

/// A lesson being played on a managed etcd cluster: core's
/// [`Environment`] over [`EtcdRun`].
pub type EtcdEnv = ServiceEnv<EtcdRun>;

/// What an etcd run adds to the lesson state every service run keeps.
pub struct EtcdRun {
    driver: EtcdDriver,
    tr: Translate,
    /// Real lease → its deadline, lesson ms (grant or keep-alive + TTL).
    deadlines: BTreeMap<i64, u64>,
    /// Requests still running (blocked `LOCK`s): their answers arrive later.
    pending: Vec<Pending>,
}

struct Pending {
    cid: u32,
    req: u64,
    member: u32,
    op: RealRequest,
    shown: Vec<String>,
    handle: tokio::task::JoinHandle<Raw>,
}

impl EtcdEnv {
    /// A fresh cluster (etcd1 leading) for `lesson`, time compressed by
    /// `factor`.
    pub fn start(lesson: &Lesson, factor: u64) -> Result<EtcdEnv, RealLessonError> {
        let mut driver = EtcdDriver::start().map_err(|e| unsupported(lesson, e.to_string()))?;
        let start_rev = driver.revision().map_err(|e| unsupported(lesson, e))?;
        let nodes = (0..driver.members() as u32).map(|i| driver.member_name(i)).collect();
        let tr = Translate::new(factor, start_rev);
        Ok(ServiceEnv {
            st: LessonState::new(lesson, tr.factor() as u64, nodes),
            run: EtcdRun {
                tr,
                deadlines: BTreeMap::new(),
                pending: Vec::new(),
                driver,
            },
        })
    }
}

impl EtcdRun {
    pub fn factor(&self) -> u64 {
        self.tr.factor() as u64
    }

    pub fn driver(&self) -> &EtcdDriver {
        &self.driver
    }

    /// The member that leads now, as the live members say.
    pub fn leader(&mut self) -> Option<u32> {
        self.driver.leader()
    }

    /// Record the answers blocked requests got by `until` (sleeping until
    /// then if none comes).
    fn collect(&mut self, st: &mut LessonState, until: Instant) {
        if self.pending.is_empty() {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        for mut p in pending {
            match self.driver.wait(&mut p.handle, until) {
                Some(raw) => {
                    let r = reply(&p.op, raw, &mut self.tr);
                    answered(st, &p, r);
                }
                None => self.pending.push(p),
            }
        }
        self.observe(st, None);
    }
}

/// Put a request's answer on the timeline.
fn answered(st: &mut LessonState, p: &Pending, r: Option<Reply>) {
    let Some(r) = r else { return };
    let executed = EventKind::Executed {
        req: p.req,
        client: p.cid,
        commands: vec![p.shown.clone()],
        replies: vec![r.clone()],
    };
    st.record(Actor::Node(p.member), executed);
    let received = EventKind::Received {
        req: p.req,
        node: p.member,
        replies: vec![r],
    };
    st.record(Actor::Client(p.cid), received);
}

impl EtcdRun {
    /// How long to wait for `op`: a `LOCK` until the last lease deadline the
    /// run knows has passed (plus [`LOCK_GRACE`]), anything else at once
    /// (the driver times it out).
    fn patience(&self, st: &LessonState, op: &RealRequest) -> Duration {
        if !matches!(op, RealRequest::Lock { .. }) {
            return Duration::from_secs(3600);
        }
        let now = st.now_ms();
        let last = self.deadlines.values().max().copied().unwrap_or(now);
        st.wall(last.saturating_sub(now)) + LOCK_GRACE
    }

    /// What an answer tells the run about leases: a grant or keep-alive
    /// sets the lease's deadline; a revoke ends it.
    fn after(&mut self, st: &mut LessonState, p: &mut Pending, raw: &Raw) {
        let now = st.now_ms();
        match (&p.op, raw) {
            (RealRequest::Grant { lesson_ttl, .. }, Raw::Lease(id)) => {
                self.deadlines.insert(*id, now + *lesson_ttl as u64 * 1000);
            }
            (RealRequest::KeepAlive { shown, real }, Raw::Ttl(t)) if *t > 0 => {
                let ttl = self.tr.keepalive_shown(*shown, *t);
                self.deadlines.insert(*real, now + ttl as u64 * 1000);
            }
            (RealRequest::KeepAlive { real, .. }, Raw::Ttl(_)) | (RealRequest::Revoke { real }, _) => {
                self.deadlines.remove(real);
            }
            (RealRequest::Put { key, .. }, Raw::Ok) => {
                st.owners.entry(key.clone()).or_insert(p.cid);
            }
            _ => {}
        }
    }

    /// SIGKILL a member; when it led, wait for the new leader (not lesson
    /// time) and give the leases their full TTL again, as it does.
    fn crash(&mut self, st: &mut LessonState, node: u32) -> Result<Option<String>, String> {
        let was_leader = node == st.leader;
        let text = self.driver.crash(node)?;
        st.observer.set_down(node, true);
        let mut note = text;
        if was_leader {
            let started = Instant::now();
            let l = self.driver.await_new_leader(ELECTION_WITHIN)?;
            let spent = started.elapsed();
            st.origin += spent;
            st.leader = l;
            st.observer.set_master(l);
            let now = st.now_ms();
            for (real, d) in self.deadlines.iter_mut() {
                if let Some(ttl) = self.tr.shown_lease(*real).and_then(|s| self.tr.lesson_ttl(s)) {
                    *d = now + ttl as u64 * 1000;
                }
            }
            let name = self.driver.member_name(l);
            st.record(
                Actor::Node(l),
                EventKind::Note {
                    text: "elected leader".into(),
                },
            );
            note = format!(
                "{note}; {name} was elected after {} ms of wall time (not counted as lesson time: the simulator's election is instantaneous)",
                spent.as_millis()
            );
        }
        Ok(Some(note))
    }
}

impl ServiceParts for EtcdRun {
    const LESSON: &'static str = "an etcd lesson";
    const CHECK: &'static str = "check_supported";

    /// Sleep until `until`, collecting the answers of blocked requests.
    fn sleep_until(&mut self, st: &mut LessonState, until: Instant) {
        in_slices(until, Duration::from_millis(50), |step| self.collect(st, step));
        self.collect(st, Instant::now());
    }

    /// Send `argv` as `client` to `member` and wait for the answer (a
    /// blocked `LOCK` as long as a lease could free it).
    fn send(
        &mut self,
        st: &mut LessonState,
        index: usize,
        client: &str,
        member: u32,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        let cid = st.cid(client)?;
        let shown: Vec<String> = argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let req = st.next_req;
        st.next_req += 1;
        let op = match RealRequest::parse(argv, &self.tr) {
            Ok(op) => op,
            // Refused before it was sent, as etcdctl refuses it.
            Err(r) => return Ok(Some(r)),
        };
        if let Some(sent) = op.compressed(argv) {
            st.add_note(index, format!("sent as {sent} at {}×", self.tr.factor()));
        }
        st.record(
            Actor::Client(cid),
            EventKind::Sent {
                req,
                node: member,
                commands: vec![shown.clone()],
            },
        );
        if let RealRequest::Lock { name, lease } = &op {
            let key = locklab_core::service::etcd::lock_key(name, *lease);
            st.owners.entry(key).or_insert(cid);
        }
        let until = Instant::now() + self.patience(st, &op);
        let mut handle = self.driver.spawn(client, member, op.clone())?;
        let raw = self.driver.wait(&mut handle, until);
        let mut p = Pending {
            cid,
            req,
            member,
            op,
            shown,
            handle,
        };
        let Some(raw) = raw else {
            st.add_note(
                index,
                "still blocked when no lease the run knows could free the lock any more: no reply (its answer, if one comes, goes on the timeline)".into(),
            );
            self.pending.push(p);
            return Ok(None);
        };
        self.after(st, &mut p, &raw);
        let r = reply(&p.op, raw, &mut self.tr);
        answered(st, &p, r.clone());
        self.observe(st, Some(cid));
        Ok(r)
    }

    /// Show every watched lock's holder (the oldest key under it, read on
    /// the leader) to core's lock observer, as the simulator's world does:
    /// a change of holder is the old one's removal, then the new one's
    /// grant, owned by the client whose request put its key.
    fn observe(&mut self, st: &mut LessonState, by: Option<u32>) {
        let now = st.now_ms();
        for lock in st.observer.keys().to_vec() {
            let Ok(holder) = self.driver.holder(&lock) else {
                continue;
            };
            let seen = holder.map(|h| {
                let deadline = self.deadlines.get(&h.lease).copied();
                let owner = st.owners.get(&h.key).copied();
                let value = self.tr.key_shown(&h.key).into_bytes();
                (
                    Seen {
                        value,
                        deadline,
                        ttl_ms: deadline.map(|d| d.saturating_sub(now)),
                    },
                    owner,
                )
            });
            st.show_holder(st.leader, &lock, seen, by, now);
        }
        st.stretch();
    }

    fn inject(&mut self, st: &mut LessonState, fault: &Fault) -> Result<Option<String>, String> {
        Ok(match fault {
            // A paused client's keep-alives stop with it.
            f if st.client_fault(f) => None,
            Fault::CrashNode { node } => self.crash(st, *node)?,
            other => return Err(format!("a real etcd run cannot inject {other:?}")),
        })
    }

    fn begin(&mut self, st: &mut LessonState) {
        self.collect(st, Instant::now());
    }

    fn version(&self) -> String {
        format!("etcd {}", self.driver.version())
    }
}

/// Can a real etcd run play this lesson? The faults a real cluster takes
/// here, besides the clients' own: a member crashed.
pub fn check_etcd(lesson: &Lesson) -> Result<(), String> {
    check_steps(lesson, "etcd", |f| matches!(f, Fault::CrashNode { .. }))
}

/// Start a fresh three-member etcd cluster, play `lesson` on it, stop it.
pub fn run_etcd(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_etcd(lesson).map_err(|why| unsupported(lesson, why))?;
    play_on(EtcdEnv::start(lesson, factor)?, lesson)
}
