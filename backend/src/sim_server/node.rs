//! The node's owner: the [`Node`](locklab_redis::server::Node) and the
//! connections' records, behind one lock, running every command and
//! script, one batch at a time, as redis-server's single thread does.
//!
//! Two places run batches, never at once (the lock), and never waiting for
//! each other where a connection is concerned:
//!
//! * **Inline, on the connection's runtime thread** ([`NodeLink::try_inline`]):
//!   a batch of plain commands runs where it was parsed, when the lock is
//!   free (`try_lock`, never a wait). That is redis-server's shape — one
//!   thread reads, runs and writes — and it spares each batch the two
//!   thread wake-ups of a hand-off (connection task → node thread → back),
//!   which cost more than `-P 16` of `SET`s themselves (issue 42, item 6).
//! * **On the node's thread**, through the job queue ([`Job`]): every
//!   script (EVAL, FCALL, an EXEC with one, and the commands that load Lua
//!   code), and whatever found the lock taken. A script that runs for
//!   seconds holds only that thread and the lock: the runtime keeps
//!   serving the connections, whose batches then go to the queue, and
//!   which answer `BUSY` themselves past the threshold (see `conn`).
//!
//! A batch's replies go back to its connection (returned inline, or on the
//! batch's own oneshot); what the node produces for other connections
//! (pub/sub messages, a served `BLPOP`) goes to their [`Outbox`].

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use locklab_redis::server::config::{ClientClass, ObufLimit};
use locklab_redis::server::script::{set_thread_limits, set_thread_pattern_depth, BusyWatch, INSTRUCTION_LIMIT};
use locklab_redis::server::ConnId;
use locklab_redis::Reply;
use tokio::sync::mpsc::error::{SendError, TrySendError};
use tokio::sync::{mpsc, oneshot};

use super::resp;
use super::wire::{self, After, ClientInfo, Outbox, Outgoing, Session};
use super::{output_limit_reached, Busy, Shared, PATTERN_DEPTH, REPLY_CHUNK, THREAD_STACK};

/// One request's arguments.
pub(super) type Argv = Vec<Vec<u8>>;

/// Write out replies once this much has piled up, even mid-batch, so a
/// pipeline of `GET`s of large values cannot make the output unbounded
/// (unless a hard output limit bounds it: see [`NodeThread::run_batch`]).
const OUT_HIGH_WATER: usize = 64 * 1024;

/// How often a paused node's thread looks whether it may go on.
const PAUSE_POLL: Duration = Duration::from_millis(2);

/// What a connection asks of the node's thread.
pub(super) enum Job {
    /// A new connection (numbered by the accept side).
    Connect {
        id: ConnId,
        info: ClientInfo,
        outbox: Outbox,
    },
    /// The connection left: drop its transaction, watches, subscriptions.
    Disconnect(ConnId),
    /// Run a batch of requests.
    Run(Batch),
    /// A blocked connection's timeout may be due: move the clock.
    Tick { id: ConnId, done: oneshot::Sender<Ran> },
}

/// A batch of requests: `argvs[from..]`, shared with the connection (which
/// keeps them to answer BUSY if it takes the batch back).
pub(super) struct Batch {
    pub(super) sess: Session,
    pub(super) argvs: Arc<Vec<Argv>>,
    pub(super) from: usize,
    /// Set by whoever takes the batch first: the node's thread to run it,
    /// or the connection to answer it BUSY because a script is running.
    pub(super) claim: Arc<AtomicBool>,
    pub(super) done: oneshot::Sender<Ran>,
    /// An empty buffer of the connection's to encode the replies into (it
    /// comes back in [`Ran::out`]), so a batch's replies are neither
    /// grown from nothing nor copied once more on the way out.
    pub(super) out: Vec<u8>,
}

/// What a connection answered by itself while a script held the node, for
/// the node to catch up on when the script ends, in the order answered:
/// redis-server runs the allow-busy commands between two of the script's
/// slices (`processEventsWhileBlocked`), and refuses the others
/// (`rejectCommand`), which dooms an open transaction. See `conn`'s busy
/// answers and [`NodeThread::catch_up`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Deferred {
    /// MULTI (allow-busy) ran: the client is in a transaction.
    Multi,
    /// A command was refused with BUSY inside MULTI (`flagTransaction`).
    Doom,
    /// EXEC was refused (`execCommandAbort`) or DISCARD ran.
    Discard,
    /// An allow-busy command that changes the connection's state (`HELLO`,
    /// `RESET`, `UNWATCH`, or `AUTH`/`HELLO` queued in a transaction): run
    /// again, its reply dropped (the connection gave it).
    Run(Argv),
    /// `WATCH`: run again; if the script changed one of its keys after it
    /// was answered (`watches`: their entries in
    /// `ScriptControl::take_watches`' list), the next EXEC fails.
    Watch { argv: Argv, watches: Range<usize> },
}

/// The deferred answers of one busy script, per connection.
pub(super) type AnsweredWhileBusy = Vec<(ConnId, Deferred)>;

/// Why a batch stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// It ran to its end, or to the output high-water mark.
    Done,
    /// `QUIT` or a closing error: write, then close.
    Close,
    /// A stall (`DEBUG SLEEP`, `WAIT`): replies before `split` go out now,
    /// the rest after `ms`.
    Delay { split: usize, ms: u64 },
    /// A blocking command is waiting: no further request of this client
    /// runs until it is answered (through the outbox).
    Blocked,
    /// `SHUTDOWN`: close, the server is stopping.
    Shutdown,
    /// The client's pending output passed its `client-output-buffer-limit`
    /// with this batch's last reply: it is closed without another byte,
    /// and its later requests do not run (`CLIENT_CLOSE_ASAP`, which stops
    /// `processInputBuffer`).
    OverLimit,
}

/// A batch's outcome.
pub(super) struct Ran {
    pub(super) sess: Session,
    /// How many of the batch's requests ran.
    pub(super) ran: usize,
    pub(super) out: Vec<u8>,
    pub(super) stop: Stop,
    pub(super) in_multi: bool,
    /// The client's `client-output-buffer-limit` class after the batch.
    pub(super) class: ClientClass,
    /// While blocked: the node time at which the next blocked client's
    /// timeout falls.
    pub(super) deadline: Option<u64>,
}

/// How connections reach the node: the job queue to its thread, and the
/// lock under which a batch may run inline (see the module's doc).
#[derive(Clone)]
pub(super) struct NodeLink {
    jobs: mpsc::Sender<Job>,
    owner: Arc<Mutex<NodeThread>>,
}

impl NodeLink {
    pub(super) async fn send(&self, job: Job) -> Result<(), SendError<Job>> {
        self.jobs.send(job).await
    }

    /// The owner, if nobody holds it and the node is not paused: a
    /// connection never waits for it.
    fn try_owner(&self) -> Option<std::sync::MutexGuard<'_, NodeThread>> {
        let owner = match self.owner.try_lock() {
            Ok(owner) => owner,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        // Paused (`Server::pause`): only the node's thread waits it out.
        (!owner.shared.paused.load(Ordering::Acquire)).then_some(owner)
    }

    /// Run a job here and now if the owner is free (see [`NodeLink::try_owner`]);
    /// otherwise it is handed back, for the queue.
    pub(super) fn try_job(&self, job: Job) -> Result<(), Box<Job>> {
        match self.try_owner() {
            Some(mut owner) => {
                owner.job(job);
                Ok(())
            }
            None => Err(Box::new(job)),
        }
    }

    /// Run the requests of `argvs` inline, up to the first that needs the
    /// node's thread (a script, or Lua code to load), if the owner is free.
    /// `Err` gives `out` back: nothing ran, the batch goes to the queue.
    pub(super) fn try_inline(&self, sess: Session, argvs: &[Argv], out: Vec<u8>) -> Result<Ran, Vec<u8>> {
        let Some(mut owner) = self.try_owner() else {
            return Err(out);
        };
        owner.reap();
        if argvs.first().is_none_or(|argv| owner.needs_thread(sess.id, argv)) {
            return Err(out);
        }
        Ok(owner.run_batch(sess, argvs, out, true))
    }
}

/// Takes the connection out of the node however the task ends (the client
/// left, an I/O error, or the server aborting the task on shutdown).
pub(super) struct Registration {
    pub(super) shared: Arc<Shared>,
    pub(super) jobs: NodeLink,
    pub(super) id: ConnId,
    /// A job of this connection's may still wait in the node's queue (its
    /// `Connect`, a batch): until the node's thread has answered one, its
    /// batches and its leaving go through the queue too, behind it.
    pub(super) in_queue: bool,
}

impl Drop for Registration {
    /// Never waits: inline if the node is free, else the job queue has room
    /// for every connection's leaving; should it not, the node frees it
    /// before its next job.
    fn drop(&mut self) {
        let mut job = Job::Disconnect(self.id);
        if !self.in_queue {
            match self.jobs.try_job(job) {
                Ok(()) => return,
                Err(back) => job = *back,
            }
        }
        if let Err(TrySendError::Full(_)) = self.jobs.jobs.try_send(job) {
            self.shared
                .gone
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(self.id);
        }
    }
}

/// Start the node's thread. It ends when every sender of the queue is gone.
pub(super) fn spawn(st: wire::State, shared: Arc<Shared>, capacity: usize, work_limit: u64) -> io::Result<NodeLink> {
    let (jobs, queue) = mpsc::channel(capacity);
    let owner = Arc::new(Mutex::new(NodeThread {
        st,
        shared,
        work_limit,
        blocked: BTreeSet::new(),
        early: BTreeMap::new(),
    }));
    let link = NodeLink {
        jobs,
        owner: Arc::clone(&owner),
    };
    std::thread::Builder::new()
        .name("sim-server-node".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            set_thread_pattern_depth(PATTERN_DEPTH);
            serve(&owner, queue);
        })?;
    Ok(link)
}

/// The node's thread: take the jobs in order, each under the owner's lock.
fn serve(owner: &Mutex<NodeThread>, mut queue: mpsc::Receiver<Job>) {
    while let Some(job) = queue.blocking_recv() {
        let mut owner = owner.lock().unwrap_or_else(PoisonError::into_inner);
        // Paused (`Server::pause`): as if the process were stopped.
        while owner.shared.paused.load(Ordering::Acquire) {
            std::thread::sleep(PAUSE_POLL);
        }
        owner.reap();
        owner.job(job);
    }
}

/// The node and the connections' records, with what running batches and
/// scripts needs; behind [`NodeLink`]'s lock.
pub(super) struct NodeThread {
    st: wire::State,
    shared: Arc<Shared>,
    work_limit: u64,
    /// Connections waiting in a blocking command: told [`Outgoing::Unblocked`]
    /// after the reply that ends the wait.
    blocked: BTreeSet<ConnId>,
    /// What connections opened during a busy script answered before the
    /// node saw them connect (applied at their `Connect`).
    early: BTreeMap<ConnId, Vec<(Deferred, bool)>>,
}

impl NodeThread {
    /// Free the connections that left when the queue was full.
    fn reap(&mut self) {
        for id in self.shared.take_gone() {
            self.forget(id);
        }
    }

    fn job(&mut self, job: Job) {
        match job {
            Job::Connect { id, info, outbox } => {
                self.st.node.connect_as(id);
                self.st.clients.insert(id, info);
                self.st.outboxes.insert(id, outbox);
                for (deferred, touched) in self.early.remove(&id).unwrap_or_default() {
                    self.apply_deferred(id, deferred, touched);
                }
            }
            Job::Disconnect(id) => self.forget(id),
            Job::Run(batch) => {
                // Taken back by a connection answering BUSY: not ours.
                if batch.claim.swap(true, Ordering::AcqRel) {
                    return;
                }
                let ran = self.run_batch(batch.sess, &batch.argvs[batch.from..], batch.out, false);
                drop(batch.argvs);
                let _ = batch.done.send(ran);
            }
            Job::Tick { id, done } => {
                self.st.node.set_time(self.shared.clock.now_ms());
                self.route(None, &mut Vec::new());
                let blocked = self.st.node.is_blocked(id);
                let _ = done.send(Ran {
                    sess: Session::new(id),
                    ran: 0,
                    out: Vec::new(),
                    stop: if blocked { Stop::Blocked } else { Stop::Done },
                    in_multi: false,
                    class: self.st.node.client_class(id),
                    deadline: self.st.node.next_block_deadline(),
                });
            }
        }
    }

    /// Must this request run on the node's thread? Scripts (their budget,
    /// kill and BUSY are set up there, on its deep stack), an EXEC whose
    /// transaction queued anything of the kind, and the commands that
    /// compile or load Lua code (`SCRIPT LOAD`, `FUNCTION LOAD|RESTORE`,
    /// `DEBUG RELOAD`): the VM lives on that thread.
    fn needs_thread(&self, id: ConnId, argv: &[Vec<u8>]) -> bool {
        if lua_command(argv) {
            return true;
        }
        argv.len() == 1
            && argv[0].eq_ignore_ascii_case(b"exec")
            && self.st.node.queued(id).iter().any(|q| lua_command(q))
    }

    /// Free a connection: it left, or was closed for its output.
    fn forget(&mut self, id: ConnId) {
        self.early.remove(&id);
        self.st.node.disconnect(id);
        self.st.clients.remove(&id);
        self.st.outboxes.remove(&id);
        self.blocked.remove(&id);
    }

    /// What the connections answered while the script that just ended held
    /// the node, given to it in their order: the transaction commands and
    /// their refusals, the allow-busy commands run again (their replies
    /// were given), and a `WATCH`'s keys that the script changed after it
    /// failing that client's next EXEC (`touchWatchedKey`).
    fn catch_up(&mut self, answered: AnsweredWhileBusy, watches: &[BusyWatch]) {
        for (id, deferred) in answered {
            let touched = match &deferred {
                Deferred::Watch { watches: keys, .. } => {
                    watches.get(keys.clone()).is_some_and(|w| w.iter().any(|w| w.touched))
                }
                _ => false,
            };
            if self.st.clients.contains_key(&id) {
                self.apply_deferred(id, deferred, touched);
            } else {
                // Opened during the script: its `Connect` is still queued.
                self.early.entry(id).or_default().push((deferred, touched));
            }
        }
    }

    /// One thing a connection answered while a script was busy (see
    /// [`NodeThread::catch_up`]); `touched`: a `WATCH`'s key changed since.
    fn apply_deferred(&mut self, id: ConnId, deferred: Deferred, touched: bool) {
        match deferred {
            Deferred::Multi => {
                let _ = self.st.node.execute(id, &[b"MULTI".to_vec()]);
            }
            Deferred::Discard => {
                let _ = self.st.node.execute(id, &[b"DISCARD".to_vec()]);
            }
            Deferred::Doom => self.st.node.flag_transaction(id),
            Deferred::Run(argv) => self.replay(id, &argv),
            Deferred::Watch { argv, .. } => {
                self.replay(id, &argv);
                if touched {
                    self.st.node.flag_dirty_cas(id);
                }
            }
        }
    }

    /// Run a request the connection already answered, for its effect.
    fn replay(&mut self, id: ConnId, argv: &[Vec<u8>]) {
        let mut sess = Session {
            id,
            resp3: self.st.clients.get(&id).is_some_and(|c| c.resp == 3),
            db: self.st.node.selected_db(id),
        };
        let now_ms = self.shared.clock.now_ms();
        let _ = run_guarded(&mut self.st, &mut sess, &self.shared.env, now_ms, argv);
    }

    /// Run the requests in order until one stops the batch (`inline`: or
    /// until one needs the node's thread, see [`NodeThread::needs_thread`]).
    fn run_batch(&mut self, mut sess: Session, argvs: &[Argv], mut out: Vec<u8>, inline: bool) -> Ran {
        out.clear();
        // Output of this client's not yet written (the connection waits for
        // this batch, so only the batch adds to it).
        let pending = self.st.outboxes.get(&sess.id).map_or(0, |o| {
            o.queued.load(Ordering::Acquire) + o.unsent.load(Ordering::Relaxed)
        });
        let mut ran = 0;
        let mut stop = Stop::Done;
        for argv in argvs {
            // The class a command's replies count in is the client's before
            // it: SUBSCRIBE marks it pub/sub after adding its replies.
            let class = self.st.node.client_class(sess.id);
            // Under a hard output limit, the whole batch runs before its
            // replies are written, as redis-server runs every command of a
            // read before it writes: the limit bounds what piles up.
            if out.len() >= OUT_HIGH_WATER && self.output_limit(class).hard == 0 {
                break;
            }
            if inline && self.needs_thread(sess.id, argv) {
                break;
            }
            ran += 1;
            let now_ms = self.shared.clock.now_ms();
            let (reply, after) = match self.script_in(sess.id, argv) {
                Some((eval, shown)) => self.run_script(&mut sess, now_ms, argv, eval, shown),
                None => run_guarded(&mut self.st, &mut sess, &self.shared.env, now_ms, argv),
            };
            self.route(Some(sess.id), &mut out);
            let resp3 = sess.resp3;
            match after {
                After::Continue => put_reply(&mut out, self.st.node.take_encoded(), &reply, resp3),
                After::Block => {
                    self.blocked.insert(sess.id);
                    stop = Stop::Blocked;
                }
                After::Close => {
                    resp::encode(&mut out, &reply, resp3);
                    stop = Stop::Close;
                }
                After::DelayReply(ms) => {
                    let split = out.len();
                    resp::encode(&mut out, &reply, resp3);
                    stop = Stop::Delay { split, ms };
                }
                After::Shutdown => {
                    self.shared.shut_down();
                    stop = Stop::Shutdown;
                }
                After::Silent => {}
            }
            // `_addReplyToBufferOrList` checks the limit after each reply
            // (skipped while everything pending fits the static buffer).
            if stop != Stop::Shutdown
                && pending + out.len() > REPLY_CHUNK
                && self.over_output_limit(sess.id, class, out.len())
            {
                stop = Stop::OverLimit;
            }
            if stop != Stop::Done {
                break;
            }
        }
        sess.db = self.st.node.selected_db(sess.id);
        if let (Some(last), Some(info)) = (argvs[..ran].last(), self.st.clients.get_mut(&sess.id)) {
            info.last = Instant::now();
            info.last_cmd = wire::fullname(last, self.shared.env.profile);
        }
        Ran {
            sess,
            ran,
            out,
            stop,
            in_multi: self.st.node.in_multi(sess.id),
            class: self.st.node.client_class(sess.id),
            deadline: (stop == Stop::Blocked)
                .then(|| self.st.node.next_block_deadline())
                .flatten(),
        }
    }

    /// Does this request run a script: EVAL's family (true) or FCALL's, and
    /// the queued command `FUNCTION STATS` shows, if not this one? An EXEC
    /// does when its transaction queued one (its first): redis-server's
    /// scripts inside EXEC go busy and can be killed as any other (issue 43).
    fn script_in(&self, id: ConnId, argv: &[Vec<u8>]) -> Option<(bool, Option<Argv>)> {
        if let Some(eval) = script_kind(argv) {
            return Some((eval, None));
        }
        if !argv.first()?.eq_ignore_ascii_case(b"exec") || argv.len() != 1 {
            return None;
        }
        let queued = self.st.node.queued(id);
        queued
            .iter()
            .find_map(|q| script_kind(q).map(|eval| (eval, Some(q.clone()))))
    }

    /// Run a script (or a transaction with one): announce it to the
    /// connections (they answer BUSY past the threshold), and let it be
    /// killed.
    fn run_script(
        &mut self,
        sess: &mut Session,
        now_ms: u64,
        argv: &[Vec<u8>],
        eval: bool,
        shown: Option<Argv>,
    ) -> (Reply, After) {
        let control = &self.shared.control;
        control.reset();
        // What FUNCTION STATS shows while a function is busy (an EVAL's
        // is refused, so it needs neither).
        let since = Instant::now();
        let busy = Busy {
            since,
            eval,
            argv: match (eval, shown) {
                (true, _) => Vec::new(),
                (false, Some(queued)) => queued,
                (false, None) => argv.to_vec(),
            },
            stats: if eval {
                Reply::Nil
            } else {
                self.st.node.function_stats()
            },
        };
        *self.shared.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(busy);
        *self.shared.answered_while_busy() = Some(Vec::new());
        set_thread_limits(Some(Arc::clone(control)), self.work_limit);
        let out = run_guarded(&mut self.st, sess, &self.shared.env, now_ms, argv);
        set_thread_limits(None, INSTRUCTION_LIMIT);
        // Closed before the watches are taken: a connection answers (and
        // registers a WATCH) only while it is open.
        let answered = self.shared.answered_while_busy().take().unwrap_or_default();
        let watches = self.shared.control.take_watches();
        self.catch_up(answered, &watches);
        let control = &self.shared.control;
        *self.shared.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
        // Told only if it went busy (see `busy_watch`).
        if self.shared.busy.borrow().is_some() {
            self.shared.busy.send_replace(None);
        }
        // A SHUTDOWN's kill stays: the server is stopping anyway.
        if !*self.shared.stop.borrow() {
            control.reset();
        }
        out
    }

    /// Hand out what the node produced besides the running command's reply:
    /// entries for `me` go into its output now (before the reply, as
    /// redis-server writes them during the command), the others are
    /// encoded in their receiver's protocol and sent to its outbox, under
    /// the receiver's `client-output-buffer-limit`.
    fn route(&mut self, me: Option<ConnId>, out: &mut Vec<u8>) {
        for o in self.st.node.take_outbound() {
            let resp3 = self.st.clients.get(&o.conn).is_some_and(|c| c.resp == 3);
            if Some(o.conn) == me {
                resp::encode(out, &o.reply, resp3);
                continue;
            }
            let Some(outbox) = self.st.outboxes.get(&o.conn) else {
                // A receiver that just left has nobody to tell.
                continue;
            };
            let mut bytes = Vec::new();
            resp::encode(&mut bytes, &o.reply, resp3);
            outbox.queued.fetch_add(bytes.len(), Ordering::AcqRel);
            let _ = outbox.tx.send(Outgoing::Bytes(bytes));
            if self.blocked.contains(&o.conn) && !self.st.node.is_blocked(o.conn) {
                self.blocked.remove(&o.conn);
                let _ = outbox.tx.send(Outgoing::Unblocked);
            }
            self.check_output_limit(o.conn);
        }
    }

    /// networking.c's `checkClientOutputBufferLimits` after a message for
    /// another client: one whose pending output is over its class's hard
    /// limit, or over the soft limit for longer than its seconds, is closed
    /// (`freeClientAsync`).
    fn check_output_limit(&mut self, id: ConnId) {
        let class = self.st.node.client_class(id);
        if self.over_output_limit(id, class, 0) {
            if let Some(outbox) = self.st.outboxes.get(&id) {
                outbox.kill.notify_one();
            }
            self.forget(id);
        }
    }

    /// `client-output-buffer-limit` of one client class.
    fn output_limit(&self, class: ClientClass) -> ObufLimit {
        self.st.node.config().client_output_buffer_limit(class)
    }

    /// Is client `id`'s pending output — what was queued for it, its
    /// replies not yet written, and `extra` bytes of its batch's replies —
    /// over `client-output-buffer-limit` of its class (pub/sub while it
    /// has subscriptions, `CLIENT_PUBSUB`; normal otherwise)?
    fn over_output_limit(&mut self, id: ConnId, class: ClientClass, extra: usize) -> bool {
        let limit = self.output_limit(class);
        let Some(outbox) = self.st.outboxes.get_mut(&id) else {
            return false;
        };
        if limit.hard == 0 && limit.soft == 0 {
            return false;
        }
        let pending = outbox.queued.load(Ordering::Acquire) + outbox.unsent.load(Ordering::Relaxed) + extra;
        output_limit_reached(limit, pending, &mut outbox.soft_since, id, class)
    }
}

/// A command's reply: the bytes it wrote itself (see `Node::encode_replies`),
/// or its tree, encoded.
fn put_reply(out: &mut Vec<u8>, encoded: Option<&[u8]>, reply: &Reply, resp3: bool) {
    match encoded {
        Some(bytes) => out.extend_from_slice(bytes),
        None => resp::encode(out, reply, resp3),
    }
}

/// Does this command run or load Lua code (see [`NodeThread::needs_thread`])?
fn lua_command(argv: &[Vec<u8>]) -> bool {
    let Some(name) = argv.first() else {
        return false;
    };
    // Asked of every request inline: most leave at their first letter.
    if !matches!(
        name.first(),
        Some(b'e' | b'E' | b'f' | b'F' | b's' | b'S' | b'd' | b'D')
    ) {
        return false;
    }
    script_kind(argv).is_some()
        || [&b"script"[..], b"function", b"debug"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
}

/// Is this a script (EVAL family: true, FCALL family: false)?
fn script_kind(argv: &[Vec<u8>]) -> Option<bool> {
    let name = argv.first()?;
    // Asked of every request: most leave at their first letter.
    if !matches!(name.first(), Some(b'e' | b'E' | b'f' | b'F')) {
        return None;
    }
    for (n, eval) in [
        (&b"eval"[..], true),
        (b"evalsha", true),
        (b"eval_ro", true),
        (b"evalsha_ro", true),
        (b"fcall", false),
        (b"fcall_ro", false),
    ] {
        if name.eq_ignore_ascii_case(n) {
            return Some(eval);
        }
    }
    None
}

/// Run one request; a panic inside the simulator becomes an error reply
/// for this request instead of a dead server.
fn run_guarded(
    st: &mut wire::State,
    sess: &mut Session,
    env: &wire::Env,
    now_ms: u64,
    argv: &[Vec<u8>],
) -> (Reply, After) {
    match catch_unwind(AssertUnwindSafe(|| wire::dispatch(st, sess, env, now_ms, argv))) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            (
                Reply::error(format!("ERR locklab simulator internal error: {msg}")),
                After::Continue,
            )
        }
    }
}
