//! Background client programs truly concurrent on real servers.
//!
//! On the simulator, six background programs launched by consecutive steps
//! start at the same virtual instant and their requests are on the links
//! together; the server interleaves them. A runner that sends one request,
//! waits for its reply and only then serves the next program would play a
//! different experiment: nobody's `SET … NX` could ever meet somebody
//! else's release half-way, and the Redis load a fixed 10 ms retry makes
//! would be bounded by the runner, not by the clients. So here each
//! client's connection to each node is driven by a thread of its own (a
//! *worker*): the runner takes a program's request off through the session
//! ([`Session::take_off`]: checks, rewrite, `Sent`), the worker makes the
//! round trip, and the runner books the reply when it lands
//! ([`Session::land`]) and hands it to the program. Everything else — the
//! session, core's monitor and lock observer, the programs' state — stays
//! on the runner's thread, so no lock guards them: the workers only ever
//! hold a connection and a command.
//!
//! Background programs launched by consecutive steps are enlisted, and
//! start together at the next step that is not another such launch (as on
//! the simulator, where they start when time next moves): their first
//! requests are taken off one by one and then released at one instant by a
//! start gate that every worker waits on.
//!
//! Booking replies in the order they land is not always the order the
//! server ran them: a holder's release and another client's `SET … NX`
//! can both be on the wire, and the `NX` reply be booked first. Beliefs
//! stay right regardless (a lock program stops believing before it sends
//! its release, and nobody's `NX` can succeed before that release ran), and
//! the lock observer credits what it sees to whoever did it (see
//! [`LockWatch::claim`] and [`LockWatch::set_busy`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};

use super::programs::PROGRAM_DEADLINE;
use super::*;
use crate::real::session::{Flight, TakeOff};

/// The start gate: closed while a batch of programs takes off, opened at
/// once for all their workers.
type Gate = Arc<(Mutex<bool>, Condvar)>;

fn gate_wait(gate: &Gate) {
    let (open, cv) = &**gate;
    let mut is_open = open.lock().unwrap_or_else(|e| e.into_inner());
    while !*is_open {
        is_open = cv.wait(is_open).unwrap_or_else(|e| e.into_inner());
    }
}

fn gate_open(gate: &Gate) {
    let (open, cv) = &**gate;
    *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
    cv.notify_all();
}

/// A round trip for a worker to make.
struct Job {
    id: u64,
    flight: Flight,
    gate: Option<Gate>,
}

/// A request on its way: where its reply goes and how the lesson reads it.
pub(super) struct Pending {
    slot: usize,
    tag: u32,
    cid: u32,
    node: u32,
    /// Its `Sent` event's request number.
    req: Option<u64>,
    shown: Vec<String>,
    scale: Scale,
    /// The program stopped waiting for it ([`Crew::give_up`]).
    gave_up: bool,
}

/// The most workers (so connections) one client may have to one node at
/// once. More than one only when a program sends to a node while its
/// connection still waits for a slow reply (it gave up waiting); a program
/// that keeps doing so against a node that does not answer would otherwise
/// open a thread and a connection per request.
pub const MOST_WORKERS_PER_LINK: usize = 4;

/// Counts a worker alive while it runs (a clone lives on its thread).
struct Alive(Arc<AtomicUsize>);

impl Alive {
    fn new(count: &Arc<AtomicUsize>) -> Alive {
        count.fetch_add(1, Ordering::SeqCst);
        Alive(count.clone())
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The workers and what is on the wire.
pub(super) struct Crew {
    /// The worker of each (client, node) connection.
    workers: HashMap<(u32, u32), Sender<Job>>,
    /// How many workers of each (client, node) are alive: the current one,
    /// and those replaced while busy that have not finished yet.
    alive: HashMap<(u32, u32), Arc<AtomicUsize>>,
    /// The most workers of one (client, node) alive at once in this run.
    pub(super) most_per_link: usize,
    landed_tx: Sender<(u64, Flight)>,
    landed_rx: Receiver<(u64, Flight)>,
    pending: BTreeMap<u64, Pending>,
    next: u64,
    /// Closed while enlisted programs take off.
    gate: Option<Gate>,
    /// Background programs launched but not started yet (their slots).
    pub(super) enlisted: Vec<usize>,
    /// The most requests that were on the wire at once.
    pub(super) most_in_flight: usize,
}

impl Crew {
    pub(super) fn new() -> Crew {
        let (landed_tx, landed_rx) = mpsc::channel();
        Crew {
            workers: HashMap::new(),
            alive: HashMap::new(),
            most_per_link: 0,
            landed_tx,
            landed_rx,
            pending: BTreeMap::new(),
            next: 0,
            gate: None,
            enlisted: Vec::new(),
            most_in_flight: 0,
        }
    }

    /// Is any request on the wire?
    pub(super) fn busy(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The clients with a request on its way to `node`.
    fn busy_on(&self, node: u32) -> Vec<u32> {
        self.pending
            .values()
            .filter(|p| p.node == node)
            .map(|p| p.cid)
            .collect()
    }

    /// Hand `flight` to its connection's worker: a new worker for a flight
    /// that opens a new connection (the client's first request to the node,
    /// or one sent while its connection is still waiting for a slow
    /// reply — that worker is busy; it ends once it has flown what it has),
    /// else the worker of the connection the client has.
    fn dispatch(&mut self, id: u64, cid: u32, node: u32, flight: Flight) {
        let key = (cid, node);
        let alive = self.alive.entry(key).or_default().clone();
        if flight.opens() {
            self.workers.remove(&key);
        }
        let job = Job {
            id,
            flight,
            gate: self.gate.clone(),
        };
        let landed = self.landed_tx.clone();
        let tx = self.workers.entry(key).or_insert_with(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let me = Alive::new(&alive);
            let spawned = std::thread::Builder::new()
                .name(format!("locklab-client-{cid}-node-{node}"))
                .spawn(move || {
                    let _alive = me;
                    for mut job in rx {
                        // Connected before the gate, so programs that start
                        // together send together, handshakes done.
                        job.flight.connect();
                        if let Some(g) = &job.gate {
                            gate_wait(g);
                        }
                        job.flight.fly();
                        if landed.send((job.id, job.flight)).is_err() {
                            return;
                        }
                    }
                });
            if spawned.is_err() {
                // No thread: the job fails to send and is flown inline below.
            }
            tx
        });
        if let Err(mpsc::SendError(mut job)) = tx.send(job) {
            self.workers.remove(&key);
            job.flight.fly();
            let _ = self.landed_tx.send((job.id, job.flight));
        }
        self.most_in_flight = self.most_in_flight.max(self.pending.len());
        self.most_per_link = self.most_per_link.max(alive.load(Ordering::SeqCst));
    }

    /// Are [`MOST_WORKERS_PER_LINK`] workers of client `cid` to `node`
    /// alive (so a request that needs a new connection gets none)?
    fn link_full(&self, cid: u32, node: u32) -> bool {
        self.alive
            .get(&(cid, node))
            .is_some_and(|a| a.load(Ordering::SeqCst) >= MOST_WORKERS_PER_LINK)
    }

    /// The client program in `slot` gave up waiting for its request `tag`
    /// (its per-node timeout): the request is still on the wire, and its
    /// reply, when it lands, is booked but not handed to the program (as
    /// on the simulator, whose client drops a reply it stopped waiting
    /// for). The request's number and node, for the trace.
    pub(super) fn give_up(&mut self, slot: usize, tag: u32) -> Option<(Option<u64>, u32)> {
        let p = self
            .pending
            .values_mut()
            .find(|p| p.slot == slot && p.tag == tag && !p.gave_up)?;
        p.gave_up = true;
        Some((p.req, p.node))
    }
}

impl RealLessonRun {
    /// A program's one-command request, taken off and handed to its
    /// connection's worker; the reply is booked when it lands
    /// ([`RealLessonRun::land_ready`]). `timeout`: the program's own
    /// timeout for it, as a wall instant (`Failed` then, unless the reply
    /// came first).
    pub(super) fn take_off(
        &mut self,
        env: &mut RealEnv<'_>,
        p: &mut Running,
        tag: u32,
        node: u32,
        argv: &[Vec<u8>],
        timeout: Option<Instant>,
    ) -> Result<(), String> {
        let OnWire { argv: sent, scale, .. } = self.as_sent(argv)?;
        let shown: Vec<String> = argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if self.crew.link_full(p.cid, node) && !env.session.has_conn(p.cid, node) {
            // As a client library whose pool is exhausted: the request
            // fails at once and is never sent (no connection, no `Sent`).
            let text = format!(
                "refused: the lab opens at most {MOST_WORKERS_PER_LINK} connections from one client to one node at \
                 once (the program keeps sending to a node that has not answered)"
            );
            self.record(env, None, Actor::Client(p.cid), EventKind::Note { text });
            p.inbox.push_back(Input::Failed { tag });
            return Ok(());
        }
        if let Some(value) = acquire_value(argv) {
            self.locks.claim(value, p.cid);
        }
        let reply = match env.session.take_off(&p.client, node, &sent) {
            Ok(TakeOff::Flying(flight)) => {
                let id = self.crew.next;
                self.crew.next += 1;
                let mut events = env.session.take_events();
                as_the_lesson_reads_it(&mut events, &shown, None);
                let events = self.restamp(events);
                let req = events.iter().find_map(|e| match e.kind {
                    EventKind::Sent { req, .. } => Some(req),
                    _ => None,
                });
                self.keep(events);
                let pending = Pending {
                    slot: p.slot,
                    tag,
                    cid: p.cid,
                    node,
                    req,
                    shown: shown.clone(),
                    scale,
                    gave_up: false,
                };
                self.crew.pending.insert(id, pending);
                if let Some(t) = timeout {
                    p.fails.push((tag, t));
                }
                self.crew.dispatch(id, p.cid, node, *flight);
                return Ok(());
            }
            Ok(TakeOff::Answered(r)) => Some(rescale(r, scale, self.factor as i64)),
            Err(SessionError::Unreachable { .. }) => None,
            Err(e) => Some(e.to_reply()),
        };
        p.inbox.push_back(self.book(env, tag, (p.cid, node), &shown, reply));
        Ok(())
    }

    /// The trace of a reply the lesson reads as `reply` (`None`: the node
    /// did not answer), the lock keys it may have changed, and the input
    /// the program gets.
    fn book(
        &mut self,
        env: &mut RealEnv<'_>,
        tag: u32,
        (cid, node): (u32, u32),
        shown: &[String],
        reply: Option<Reply>,
    ) -> Input {
        let mut events = env.session.take_events();
        as_the_lesson_reads_it(&mut events, shown, reply.as_ref());
        let events = self.restamp(events);
        self.keep(events);
        match reply {
            Some(r) => {
                self.observe(env, Some(node), Look::Cmd { client: cid, node });
                Input::Reply { tag, replies: vec![r] }
            }
            None => Input::Failed { tag },
        }
    }

    /// Book one landed request and let its program go on.
    fn land(&mut self, env: &mut RealEnv<'_>, id: u64, flight: Flight) -> Result<(), String> {
        let Some(pend) = self.crew.pending.remove(&id) else {
            return Ok(());
        };
        let reply = match env.session.land(flight) {
            Ok((_, r)) => Some(rescale(r, pend.scale, self.factor as i64)),
            Err(SessionError::Unreachable { .. }) => None,
            Err(e) => Some(e.to_reply()),
        };
        let input = self.book(env, pend.tag, (pend.cid, pend.node), &pend.shown, reply);
        let Some(p) = self.programs.get_mut(pend.slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if p.done || pend.gave_up {
            return Ok(());
        }
        // In time: its timeout will not fire.
        if let Some(i) = p.fails.iter().position(|&(tag, _)| tag == pend.tag) {
            p.fails.remove(i);
        }
        p.inbox.push_back(input);
        if p.paused_until.is_some_and(|t| t > Instant::now()) {
            // Paused: it handles the reply when it runs again.
            return Ok(());
        }
        self.feed(env, pend.slot)
    }

    /// Book every request that has landed, without waiting.
    pub(super) fn land_ready(&mut self, env: &mut RealEnv<'_>) -> Result<(), String> {
        while let Ok((id, flight)) = self.crew.landed_rx.try_recv() {
            self.land(env, id, flight)?;
        }
        Ok(())
    }

    /// Wait until `wake` for a request to land (sleep, when none is on the
    /// wire), and book what landed.
    pub(super) fn await_landing(&mut self, env: &mut RealEnv<'_>, wake: Instant) -> Result<(), String> {
        let now = Instant::now();
        if wake <= now {
            return self.land_ready(env);
        }
        if !self.crew.busy() {
            std::thread::sleep(wake - now);
            return Ok(());
        }
        match self.crew.landed_rx.recv_timeout(wake - now) {
            Ok((id, flight)) => {
                self.land(env, id, flight)?;
                self.land_ready(env)
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => Ok(()),
        }
    }

    /// Book every request on the wire (a fault strikes when nothing is in
    /// flight, as every fault did when requests ran one at a time).
    pub(super) fn settle(&mut self, env: &mut RealEnv<'_>) -> Result<(), String> {
        let deadline = Instant::now() + PROGRAM_DEADLINE;
        while self.crew.busy() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "a request got no reply within {} s",
                    PROGRAM_DEADLINE.as_secs()
                ));
            }
            self.await_landing(env, deadline)?;
        }
        Ok(())
    }

    /// Start the enlisted background programs together: their first
    /// requests taken off behind a closed gate, then released at once.
    pub(super) fn start_enlisted(&mut self, env: &mut RealEnv<'_>) -> Result<(), String> {
        let slots = std::mem::take(&mut self.crew.enlisted);
        if slots.is_empty() {
            return Ok(());
        }
        let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
        self.crew.gate = Some(gate.clone());
        let mut result = Ok(());
        for slot in slots {
            if let Err(e) = self.feed(env, slot) {
                result = Err(e);
            }
        }
        self.crew.gate = None;
        gate_open(&gate);
        result
    }

    /// The clients with a request on its way to the node `cause` looks at.
    pub(super) fn busy_for(&self, cause: Look) -> Vec<u32> {
        match cause {
            Look::Cmd { node, .. } => self.crew.busy_on(node),
            _ => Vec::new(),
        }
    }

    /// The most requests that were on the wire at once in this run (1 when
    /// programs never overlapped).
    pub fn most_in_flight(&self) -> usize {
        self.crew.most_in_flight
    }

    /// The most connections (and worker threads) one client had to one
    /// node at once in this run: at most [`MOST_WORKERS_PER_LINK`].
    pub fn most_connections_per_link(&self) -> usize {
        self.crew.most_per_link
    }
}

/// The value an acquire (`SET key value … NX`, `SETNX key value`) asks a
/// lock key to take.
fn acquire_value(argv: &[Vec<u8>]) -> Option<&[u8]> {
    let name = argv.first()?;
    let nx = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"nx"));
    let is = name.eq_ignore_ascii_case(b"setnx") || (name.eq_ignore_ascii_case(b"set") && nx);
    is.then(|| argv.get(2).map(Vec::as_slice)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn acquire_values_are_those_of_nx_sets() {
        assert_eq!(
            acquire_value(&argv(&["SET", "k", "t1", "NX", "PX", "10"])),
            Some(&b"t1"[..])
        );
        assert_eq!(acquire_value(&argv(&["setnx", "k", "t2"])), Some(&b"t2"[..]));
        assert_eq!(acquire_value(&argv(&["SET", "k", "t3"])), None);
        assert_eq!(acquire_value(&argv(&["GET", "k"])), None);
    }
}
