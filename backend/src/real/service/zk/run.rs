//! A lesson on a real ZooKeeper ensemble: core's step interpreter
//! ([`Progress`](locklab_core::lesson::run::Progress)) over [`ZkEnv`], core's `Environment` for a managed
//! three-server ensemble.
//!
//! What each step does, and how it differs from the simulator:
//!
//! * **A command** goes, as the client's zookeeper-client request, to the
//!   server the step names or else to the leader, on the client's one
//!   session (see [`super::driver`]). Every ZooKeeper request is answered at
//!   once (a blocked lock is the client's own `EXISTS … WATCH`, not a
//!   blocked request); a server that answers nothing within 1.5 s — a
//!   stopped one — gives `ConnectionLoss`, as the Java client does when
//!   its connection times out.
//! * **Time is compressed** by the run's factor (5× by default): a
//!   session's timeout is sent divided by it, and the servers negotiate
//!   timeouts into the simulator's 4–40 s divided by it. The servers tick
//!   every 100 ms and expire a session within a tick of its timeout, which
//!   at 5× is 0.5 s of lesson time: lesson 44 waits a whole second past A's
//!   timeout.
//! * **pause_client** drops the client's connection (its session stays):
//!   it sends nothing, heartbeats included, until the pause is over, so
//!   the ensemble expires its session as it would a stopped JVM's.
//! * **crash_node** SIGKILLs the server's JVM. **cut_link** between two
//!   servers is remembered; once a server is cut from every other one, it
//!   is SIGSTOPped — the others see exactly a partitioned server (no
//!   pings), and it answers no client, as a minority server does not
//!   serve. `heal_link` SIGCONTs it. When the leader goes either way, the
//!   runner waits until the others have elected a new one (about a second
//!   of wall time, not counted as lesson time: the simulator's election is
//!   instantaneous), and every session's timeout starts over, as the new
//!   leader's session tracker does.
//! * **Lock bars** come from the ensemble as in the simulator's world:
//!   after each step the lowest-numbered child of each watched lock znode
//!   is read by the lab's observer session, owned by the client whose
//!   `CREATE` made it; its deadline is its session's timeout after the
//!   client was last heard (a connected client heartbeats, so that is now).
//! * **Watches** that fire go on the client's lane with the simulator's
//!   text (`WatchedEvent state:SyncConnected type:NodeDeleted path:…`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use locklab_core::actor::Actor;
use locklab_core::fault::{Endpoint, Fault};
use locklab_core::lesson::Lesson;
use locklab_core::observe::Seen;
use locklab_core::service::zk::negotiated_timeout;
use locklab_core::trace::EventKind;
use locklab_core::Reply;

use super::driver::{parse, reply, Raw, RealRequest, ZkDriver};
use crate::real::lesson::{RealLessonError, RealReport};
use crate::real::service::env::{in_slices, play_on, ServiceEnv, ServiceParts};
use crate::real::service::lesson_state::{check_steps, unsupported, LessonState};

/// How long an election after the leader went may take.
const ELECTION_WITHIN: Duration = Duration::from_secs(30);
/// Lock bars are refreshed this often during a wait.
const OBSERVE_EVERY: Duration = Duration::from_millis(100);

/// A lesson being played on a managed ZooKeeper ensemble: core's
/// [`Environment`] over [`ZkRun`].
pub type ZkEnv = ServiceEnv<ZkRun>;

/// What a ZooKeeper run adds to the lesson state every service run keeps.
pub struct ZkRun {
    driver: ZkDriver,
    /// Cut server-to-server links, (low, high).
    cuts: BTreeSet<(u32, u32)>,
    /// Servers the lab SIGSTOPped because they were cut off from all.
    isolated: BTreeSet<u32>,
    /// Real session → (its client, its timeout in lesson ms, when its
    /// client was last heard, lesson ms).
    sessions: BTreeMap<i64, (u32, u64, u64)>,
}

impl ZkEnv {
    /// A fresh ensemble (zk1 leading) for `lesson`, time compressed by
    /// `factor`.
    pub fn start(lesson: &Lesson, factor: u64) -> Result<ZkEnv, RealLessonError> {
        let factor = factor.clamp(1, 1000);
        let min = negotiated_timeout(0) / factor;
        let max = negotiated_timeout(u64::MAX) / factor;
        let driver = ZkDriver::start(min, max).map_err(|e| unsupported(lesson, e.to_string()))?;
        let nodes = (0..driver.members() as u32).map(|i| driver.member_name(i)).collect();
        Ok(ServiceEnv {
            st: LessonState::new(lesson, factor, nodes),
            run: ZkRun {
                cuts: BTreeSet::new(),
                isolated: BTreeSet::new(),
                sessions: BTreeMap::new(),
                driver,
            },
        })
    }
}

impl ZkRun {
    pub fn driver(&self) -> &ZkDriver {
        &self.driver
    }

    pub fn driver_mut(&mut self) -> &mut ZkDriver {
        &mut self.driver
    }

    /// The server that leads now, as `srvr` says.
    pub fn leader(&mut self) -> Option<u32> {
        self.driver.leader()
    }

    /// Watches that fired, on their clients' lanes.
    fn fired(&mut self, st: &mut LessonState) {
        for f in self.driver.take_fired() {
            if let Ok(cid) = st.cid(&f.client) {
                st.record(Actor::Client(cid), EventKind::Note { text: f.text });
            }
        }
    }
}

impl ZkRun {
    /// What an answer tells the run: a new session and its timeout, a
    /// client heard (its session's timer restarts), a znode's creator.
    fn after(&mut self, st: &mut LessonState, cid: u32, client: &str, op: &RealRequest, raw: &Raw) {
        let now = st.now_ms();
        match (op, raw) {
            (RealRequest::Session { asked_ms, .. }, Raw::Session(id)) => {
                self.sessions.insert(*id, (cid, negotiated_timeout(*asked_ms), now));
            }
            (RealRequest::Create { .. }, Raw::Created { path, .. }) => {
                st.owners.insert(path.clone(), cid);
            }
            _ => {}
        }
        let heard = !matches!(raw, Raw::Keeper(c) if c == "ConnectionLoss" || c == "Session expired");
        if let (true, Some(s)) = (heard, self.driver.session_of(client)) {
            if let Some(e) = self.sessions.get_mut(&s) {
                e.2 = now;
            }
        }
    }
}

impl ZkRun {
    /// The leader went (SIGKILL or SIGSTOP): wait for the others to elect
    /// one (not lesson time), and start every session's timeout over, as
    /// the new leader does.
    fn reelect(&mut self, st: &mut LessonState, gone: u32) -> Result<String, String> {
        let started = Instant::now();
        let l = self.driver.await_leader(ELECTION_WITHIN, Some(gone))?;
        let spent = started.elapsed();
        st.origin += spent;
        st.leader = l;
        st.observer.set_master(l);
        self.driver.observer_to_live();
        let now = st.now_ms();
        for s in self.sessions.values_mut() {
            s.2 = now;
        }
        let epoch = self
            .driver
            .leader_zxid()
            .map_or(0, |z| (self.driver.numbers.zxid_shown(z) >> 32) as u64);
        st.record(Actor::Node(l), EventKind::Elected { term: epoch });
        Ok(format!(
            "{} was elected (epoch {epoch}) after {} ms of wall time (not counted as lesson time: the simulator's election is instantaneous)",
            self.driver.member_name(l),
            spent.as_millis()
        ))
    }

    /// SIGKILL a server; when it led, wait for the new leader.
    fn crash(&mut self, st: &mut LessonState, node: u32) -> Result<String, String> {
        let text = self.driver.crash(node)?;
        st.observer.set_down(node, true);
        if node == st.leader {
            let elected = self.reelect(st, node)?;
            return Ok(format!("{text}; {elected}"));
        }
        Ok(text)
    }

    /// Is server `m` cut from every other server?
    fn cut_off(&self, m: u32) -> bool {
        (0..self.driver.members() as u32)
            .filter(|&o| o != m)
            .all(|o| self.cuts.contains(&(m.min(o), m.max(o))))
    }

    /// A link between two servers is cut or healed: SIGSTOP a server cut
    /// from all the others, SIGCONT one that is not any more.
    fn relink(&mut self, st: &mut LessonState, a: u32, b: u32, cut: bool) -> Result<String, String> {
        let pair = (a.min(b), a.max(b));
        if cut {
            self.cuts.insert(pair);
        } else {
            self.cuts.remove(&pair);
        }
        let mut said = Vec::new();
        for m in [a, b] {
            let off = self.cut_off(m);
            if off && !self.isolated.contains(&m) && self.driver.is_up(m) {
                said.push(format!(
                    "{} is cut off from every other server: {}",
                    self.driver.member_name(m),
                    self.driver.stop(m, true)?
                ));
                self.isolated.insert(m);
                if m == st.leader {
                    said.push(self.reelect(st, m)?);
                }
            } else if !off && self.isolated.remove(&m) {
                said.push(self.driver.stop(m, false)?);
            }
        }
        if said.is_empty() {
            said.push("both servers still reach a majority: nothing to do on the real ensemble".into());
        }
        Ok(said.join("; "))
    }
}

impl ServiceParts for ZkRun {
    const LESSON: &'static str = "a ZooKeeper lesson";
    const CHECK: &'static str = "check_zk";

    /// Sleep until `until`, putting fired watches and lock changes on the
    /// timeline as they happen.
    fn sleep_until(&mut self, st: &mut LessonState, until: Instant) {
        in_slices(until, OBSERVE_EVERY, |step| {
            std::thread::sleep(step.saturating_duration_since(Instant::now()));
            self.observe(st, None);
        });
    }

    /// Send `argv` as `client` to `member` and translate the answer.
    fn send(
        &mut self,
        st: &mut LessonState,
        index: usize,
        client: &str,
        member: u32,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        let cid = st.cid(client)?;
        let op = match parse(argv, st.factor, self.driver.has_session(client)) {
            Ok(op) => op,
            // Refused before it was sent, as the simulator refuses it.
            Err(r) => return Ok(Some(r)),
        };
        let shown: Vec<String> = argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let req = st.next_req;
        st.next_req += 1;
        if let RealRequest::Session { asked_ms, real_ms } = op {
            if asked_ms != real_ms {
                st.add_note(index, format!("sent as SESSION {real_ms} at {}×", st.factor));
            }
        }
        st.record(
            Actor::Client(cid),
            EventKind::Sent {
                req,
                node: member,
                commands: vec![shown.clone()],
            },
        );
        let raw = self.driver.send(client, member, op.clone());
        self.after(st, cid, client, &op, &raw);
        let r = reply(&op, raw, &mut self.driver.numbers);
        st.record(
            Actor::Node(member),
            EventKind::Executed {
                req,
                client: cid,
                commands: vec![shown],
                replies: vec![r.clone()],
            },
        );
        st.record(
            Actor::Client(cid),
            EventKind::Received {
                req,
                node: member,
                replies: vec![r.clone()],
            },
        );
        self.observe(st, Some(cid));
        Ok(Some(r))
    }

    /// Show every watched lock's holder (the lowest-numbered child, read
    /// by the observer) to core's lock observer, as the simulator's world
    /// does; connected clients count as heard now (they heartbeat).
    fn observe(&mut self, st: &mut LessonState, by: Option<u32>) {
        self.fired(st);
        let now = st.now_ms();
        let live: Vec<i64> = st
            .names
            .clients
            .iter()
            .filter(|c| self.driver.connected(c))
            .filter_map(|c| self.driver.session_of(c))
            .collect();
        for s in live {
            if let Some(e) = self.sessions.get_mut(&s) {
                e.2 = now;
            }
        }
        for lock in st.observer.keys().to_vec() {
            let Ok(holder) = self.driver.holder(&lock) else {
                continue;
            };
            let seen = holder.map(|h| {
                let session = self.sessions.get(&h.session).copied();
                let deadline = session.map(|(_, timeout, heard)| heard + timeout);
                let owner = st.owners.get(&h.path).copied().or(session.map(|s| s.0));
                let seen = Seen {
                    value: h.path.into_bytes(),
                    deadline,
                    ttl_ms: deadline.map(|d| d.saturating_sub(now)),
                };
                (seen, owner)
            });
            st.show_holder(st.leader, &lock, seen, by, now);
        }
        st.stretch();
    }

    fn inject(&mut self, st: &mut LessonState, fault: &Fault) -> Result<Option<String>, String> {
        Ok(match fault {
            Fault::PauseClient { client, .. } => {
                st.client_fault(fault);
                self.driver.silence(client);
                Some(format!(
                    "{client}'s connection is dropped (its session stays): no requests, no heartbeats"
                ))
            }
            Fault::CrashClient { client } => {
                st.client_fault(fault);
                self.driver.silence(client);
                None
            }
            f if st.client_fault(f) => None,
            Fault::CrashNode { node } => Some(self.crash(st, *node)?),
            Fault::CutLink {
                a: Endpoint::Node(a),
                b: Endpoint::Node(b),
            } => Some(self.relink(st, *a, *b, true)?),
            Fault::HealLink {
                a: Endpoint::Node(a),
                b: Endpoint::Node(b),
            } => Some(self.relink(st, *a, *b, false)?),
            other => return Err(format!("a real ZooKeeper run cannot inject {other:?}")),
        })
    }

    fn begin(&mut self, st: &mut LessonState) {
        self.fired(st);
    }

    fn version(&self) -> String {
        format!("ZooKeeper {}", self.driver.version())
    }
}

/// Can a real ZooKeeper run play this lesson? The faults a real ensemble
/// takes here, besides the clients' own: a server crashed, a link between
/// two servers cut or healed.
pub fn check_zk(lesson: &Lesson) -> Result<(), String> {
    check_steps(lesson, "ZooKeeper", |f| {
        matches!(
            f,
            Fault::CrashNode { .. }
                | Fault::CutLink {
                    a: Endpoint::Node(_),
                    b: Endpoint::Node(_),
                }
                | Fault::HealLink {
                    a: Endpoint::Node(_),
                    b: Endpoint::Node(_),
                }
        )
    })
}

/// Start a fresh three-server ensemble, play `lesson` on it, stop it.
pub fn run_zk(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_zk(lesson).map_err(|why| unsupported(lesson, why))?;
    play_on(ZkEnv::start(lesson, factor)?, lesson)
}
