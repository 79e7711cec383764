//! One client connection: read, run every complete request under one lock,
//! write every reply at once, repeat.
//!
//! The loop is written so that the expensive things happen once per batch
//! (a `read`, a lock acquisition, a `write`) and the cheap things once per
//! command (parse, run, encode into a reused buffer). Memory per connection
//! is bounded: input is read only when the parser needs more, output is
//! flushed whenever it passes [`OUT_HIGH_WATER`], and buffers that grew for
//! one large request shrink back afterwards.

use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use locklab_core::server::script::set_thread_limits;
use locklab_core::server::ConnId;
use locklab_core::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::resp::{self, Parsed, Parser};
use super::wire::{self, After, ClientInfo, Session};
use super::{Busy, Shared, QUERY_BUFFER_LIMIT};

/// A fresh connection's input buffer: one `redis-benchmark -P 16` batch is
/// well under 1 KB, and an idle connection should cost little.
const INITIAL_INPUT: usize = 4 * 1024;
/// Room guaranteed for each read.
const MIN_READ: usize = 1024;
/// The most reserved at once for a large argument still arriving (the
/// buffer doubles past that as needed; a client announcing `$536870912`
/// does not get 512 MB for free).
const MAX_READ_RESERVE: usize = 1024 * 1024;
/// A buffer larger than this is released once it is empty again.
const SHRINK_ABOVE: usize = 64 * 1024;
/// Write out replies once this much has piled up, even mid-batch, so a
/// pipeline of `GET`s of large values cannot make the output unbounded.
const OUT_HIGH_WATER: usize = 64 * 1024;
/// At most this many commands per lock acquisition, so one client's huge
/// pipeline cannot starve the others.
const MAX_BATCH: usize = 1024;

/// Why [`Conn::process`] stopped.
enum Stop {
    /// The buffer holds no complete request: flush and read.
    NeedInput,
    /// The batch is full: flush, then carry on with what is buffered.
    Flush,
    /// `QUIT` or a protocol error: flush and close.
    Close,
    /// `WAIT` timed out: replies before `split` go out now, the rest after
    /// the wait.
    Delay { split: usize, ms: u64 },
    /// A blocking command is waiting: flush, then wait for its reply (no
    /// further request of this client runs meanwhile, as in redis-server).
    Blocked,
}

struct Conn {
    sess: Session,
    parser: Parser,
    input: Vec<u8>,
    /// How much of `input` has been parsed.
    pos: usize,
    out: Vec<u8>,
    /// The last command's name and first argument, for `CLIENT LIST`.
    last_argv: Vec<Vec<u8>>,
    /// What other connections' commands produced for this one (a served
    /// `BLPOP`, pub/sub messages), already encoded.
    inbox: UnboundedReceiver<Vec<u8>>,
    /// Whether the node had this connection in MULTI after its last
    /// command (or the busy answers below put it there): what the busy
    /// answers need to know without the node.
    in_multi: bool,
    /// Transaction changes made while a script held the node, applied to
    /// the node, in order, as soon as this connection gets it back.
    busy_effects: Vec<BusyEffect>,
}

/// What `processCommand` does to a client's transaction while a script is
/// busy, recorded for the node (see [`Conn::answer_while_busy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BusyEffect {
    /// MULTI (allow-busy) ran: the client is in a transaction.
    Multi,
    /// A command was refused with BUSY inside MULTI (`flagTransaction`).
    Doom,
    /// EXEC was refused (`execCommandAbort`) or DISCARD ran.
    Discard,
}

/// Takes the connection out of the node however the task ends (the client
/// left, an I/O error, or the server aborting the task on shutdown).
struct Registration {
    shared: Arc<Shared>,
    id: ConnId,
}

impl Drop for Registration {
    /// Never waits for the lock (a script may hold it for seconds): if it
    /// is taken, the next holder frees the connection.
    fn drop(&mut self) {
        match self.shared.state.try_lock() {
            Ok(mut st) => {
                st.node.disconnect(self.id);
                st.clients.remove(&self.id);
                st.outboxes.remove(&self.id);
            }
            Err(TryLockError::Poisoned(p)) => {
                let mut st = p.into_inner();
                st.node.disconnect(self.id);
                st.clients.remove(&self.id);
                st.outboxes.remove(&self.id);
            }
            Err(TryLockError::WouldBlock) => self
                .shared
                .gone
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(self.id),
        }
    }
}

/// Serve one client until it leaves.
pub(super) async fn serve(shared: Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) {
    let laddr = stream.local_addr().unwrap_or(shared.env.local_addr);
    let (outbox, inbox) = unbounded_channel();
    let id = {
        let mut st = shared.lock();
        let id = st.node.connect();
        st.outboxes.insert(id, outbox);
        let now = Instant::now();
        st.clients.insert(
            id,
            ClientInfo {
                addr: peer,
                laddr,
                fd: raw_fd(&stream),
                since: now,
                last: now,
                last_cmd: "NULL".into(),
                resp: 2,
                lib_name: None,
                lib_ver: None,
            },
        );
        id
    };
    let _registration = Registration {
        shared: Arc::clone(&shared),
        id,
    };
    let mut conn = Conn {
        sess: Session { id, resp3: false },
        parser: Parser::new(),
        input: Vec::with_capacity(INITIAL_INPUT),
        pos: 0,
        out: Vec::new(),
        last_argv: Vec::new(),
        inbox,
        in_multi: false,
        busy_effects: Vec::new(),
    };
    // An I/O error means the client is gone; there is nobody to tell.
    let _ = conn.run(&shared, &mut stream).await;
}

#[cfg(unix)]
fn raw_fd(stream: &TcpStream) -> i64 {
    use std::os::fd::AsRawFd;
    i64::from(stream.as_raw_fd())
}

#[cfg(not(unix))]
fn raw_fd(_stream: &TcpStream) -> i64 {
    -1
}

impl Conn {
    async fn run(&mut self, shared: &Shared, stream: &mut TcpStream) -> io::Result<()> {
        loop {
            match self.execute_buffered(shared).await {
                Stop::NeedInput => {
                    self.flush(stream).await?;
                    self.compact();
                    self.reserve_for_read();
                    tokio::select! {
                        n = stream.read_buf(&mut self.input) => if n? == 0 {
                            return Ok(());
                        },
                        Some(bytes) = self.inbox.recv() => stream.write_all(&bytes).await?,
                    }
                    let pending = self.input.len() - self.pos + self.parser.partial_bytes();
                    if pending > QUERY_BUFFER_LIMIT {
                        // redis-server: "closing client that reached max
                        // query buffer length", without a reply.
                        return Ok(());
                    }
                }
                Stop::Flush => self.flush(stream).await?,
                Stop::Close => {
                    self.flush(stream).await?;
                    let _ = stream.shutdown().await;
                    return Ok(());
                }
                Stop::Blocked => {
                    self.flush(stream).await?;
                    if !self.wait_unblocked(shared, stream).await? {
                        return Ok(());
                    }
                }
                Stop::Delay { split, ms } => {
                    stream.write_all(&self.out[..split]).await?;
                    // Wait, but notice a client that leaves: redis-server
                    // frees a blocked client at once, whatever its timeout.
                    let timeout = tokio::time::sleep(Duration::from_millis(ms));
                    tokio::pin!(timeout);
                    loop {
                        tokio::select! {
                            _ = &mut timeout => break,
                            read = stream.read_buf(&mut self.input) => {
                                if read? == 0 {
                                    return Ok(());
                                }
                                let pending = self.input.len() - self.pos + self.parser.partial_bytes();
                                if pending > QUERY_BUFFER_LIMIT {
                                    return Ok(());
                                }
                            }
                        }
                    }
                    stream.write_all(&self.out[split..]).await?;
                    self.out.clear();
                }
            }
        }
    }

    /// Take the lock and run what is buffered. The lock is only ever
    /// tried: while a script holds it, this task waits without holding a
    /// thread, and past `busy-reply-threshold` answers as redis-server's
    /// `processEventsWhileBlocked` does (BUSY, or a KILL).
    async fn execute_buffered(&mut self, shared: &Shared) -> Stop {
        if self.pos >= self.input.len() {
            // Nothing new to parse: no need to touch the lock.
            return Stop::NeedInput;
        }
        let mut tries = 0u32;
        loop {
            match shared.state.try_lock() {
                Ok(mut st) => return self.process(&mut st, shared),
                Err(TryLockError::Poisoned(p)) => return self.process(&mut p.into_inner(), shared),
                Err(TryLockError::WouldBlock) => {}
            }
            if let Some(stop) = self.answer_while_busy(shared) {
                return stop;
            }
            // Another batch is short: yield a few times, then poll gently.
            tries += 1;
            if tries < 64 {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }

    /// While a script has held the node past the threshold: answer the
    /// buffered requests without the node. `None` when not busy (or not
    /// yet), or when the next request must wait for the node after all.
    fn answer_while_busy(&mut self, shared: &Shared) -> Option<Stop> {
        let eval = {
            let busy = shared.busy();
            let b = busy.as_ref()?;
            let threshold = shared.env.busy_threshold_ms.load(std::sync::atomic::Ordering::Relaxed);
            if b.since.elapsed() < Duration::from_millis(threshold) {
                return None;
            }
            b.eval
        };
        let mut answered = 0;
        loop {
            if self.out.len() >= OUT_HIGH_WATER {
                return Some(Stop::Flush);
            }
            let before = self.pos;
            match self.parser.parse(&self.input, &mut self.pos) {
                Ok(Parsed::Incomplete) => return Some(Stop::NeedInput),
                Ok(Parsed::Empty) => continue,
                Err(e) => {
                    self.out.extend_from_slice(&e.reply_bytes());
                    return Some(Stop::Close);
                }
                Ok(Parsed::Command) => {
                    let reply = match self.transaction_while_busy(eval) {
                        Some(r) => Some(r),
                        None => busy_reply(self.parser.argv(), eval, shared),
                    };
                    // Refused inside MULTI: the transaction is doomed.
                    if self.in_multi && matches!(&reply, Some(Reply::Error(e)) if e.starts_with("BUSY ")) {
                        self.busy_effects.push(BusyEffect::Doom);
                    }
                    let reply = match reply {
                        Some(r) => r,
                        None => {
                            // An allow-busy command that needs the node
                            // (AUTH, HELLO, MULTI...): it waits for it.
                            self.pos = before;
                            self.parser = Parser::new();
                            return if answered > 0 { Some(Stop::Flush) } else { None };
                        }
                    };
                    answered += 1;
                    resp::encode(&mut self.out, &reply, self.sess.resp3);
                }
            }
        }
    }

    /// `processCommand` while a script is busy, for the transaction
    /// commands: MULTI and DISCARD are allow-busy and run; EXEC is refused
    /// and ends the transaction (`execCommandAbort`). (Any other command
    /// refused with BUSY dooms an open transaction, `flagTransaction`.)
    /// The node learns of it when this connection next gets it. `None`:
    /// not a transaction matter, answer as [`busy_reply`] says.
    fn transaction_while_busy(&mut self, eval: bool) -> Option<Reply> {
        let argv = self.parser.argv();
        let name = argv.first()?;
        let is = |n: &[u8]| name.eq_ignore_ascii_case(n);
        if is(b"multi") && argv.len() == 1 {
            if self.in_multi {
                return Some(Reply::error("ERR MULTI calls can not be nested"));
            }
            self.in_multi = true;
            self.busy_effects.push(BusyEffect::Multi);
            return Some(Reply::ok());
        }
        if is(b"discard") && argv.len() == 1 {
            if !self.in_multi {
                return Some(Reply::error("ERR DISCARD without MULTI"));
            }
            self.in_multi = false;
            self.busy_effects.push(BusyEffect::Discard);
            return Some(Reply::ok());
        }
        if is(b"exec") {
            if self.in_multi {
                self.in_multi = false;
                self.busy_effects.push(BusyEffect::Discard);
            }
            let busy = if eval { SLOW_EVAL } else { SLOW_SCRIPT };
            return Some(Reply::error(format!(
                "EXECABORT Transaction discarded because of: {busy}"
            )));
        }
        None
    }

    /// Give the node what happened to this connection's transaction while
    /// a script held it.
    fn apply_busy_effects(&mut self, st: &mut wire::State) {
        for effect in self.busy_effects.drain(..) {
            match effect {
                BusyEffect::Multi => {
                    let _ = st.node.execute(self.sess.id, &[b"MULTI".to_vec()]);
                }
                BusyEffect::Discard => {
                    let _ = st.node.execute(self.sess.id, &[b"DISCARD".to_vec()]);
                }
                BusyEffect::Doom => st.node.flag_transaction(self.sess.id),
            }
        }
    }

    /// Parse and run every complete request in the buffer (up to the batch
    /// limits). Runs under the lock, never awaits.
    fn process(&mut self, st: &mut wire::State, shared: &Shared) -> Stop {
        shared.reap(st);
        self.apply_busy_effects(st);
        let mut ran = 0;
        let stop = loop {
            if ran >= MAX_BATCH || self.out.len() >= OUT_HIGH_WATER {
                break Stop::Flush;
            }
            match self.parser.parse(&self.input, &mut self.pos) {
                Ok(Parsed::Incomplete) => break Stop::NeedInput,
                Ok(Parsed::Empty) => continue,
                Err(e) => {
                    self.out.extend_from_slice(&e.reply_bytes());
                    break Stop::Close;
                }
                Ok(Parsed::Command) => {
                    ran += 1;
                    let argv = self.parser.argv();
                    remember(&mut self.last_argv, argv);
                    let now_ms = shared.clock.now_ms();
                    let (reply, after) = match script_kind(argv) {
                        Some(eval) => run_script(st, &mut self.sess, shared, now_ms, argv, eval),
                        None => run_guarded(st, &mut self.sess, &shared.env, now_ms, argv),
                    };
                    let resp3 = self.sess.resp3;
                    self.in_multi = st.node.in_multi(self.sess.id);
                    route(st, self.sess.id, &mut self.out);
                    match after {
                        After::Block => break Stop::Blocked,
                        After::Continue => resp::encode(&mut self.out, &reply, resp3),
                        After::Close => {
                            resp::encode(&mut self.out, &reply, resp3);
                            break Stop::Close;
                        }
                        After::DelayReply(ms) => {
                            let split = self.out.len();
                            resp::encode(&mut self.out, &reply, resp3);
                            break Stop::Delay { split, ms };
                        }
                    }
                }
            }
        };
        if ran > 0 {
            if let Some(info) = st.clients.get_mut(&self.sess.id) {
                info.last = Instant::now();
                info.last_cmd = wire::fullname(&self.last_argv, shared.env.profile);
            }
        }
        stop
    }

    /// Wait while this connection is blocked (`BLPOP` …): until another
    /// client's command serves it (its reply arrives in the inbox) or its
    /// timeout passes on the node's clock. Input that arrives meanwhile is
    /// buffered, not run. `false` if the client left.
    async fn wait_unblocked(&mut self, shared: &Shared, stream: &mut TcpStream) -> io::Result<bool> {
        loop {
            let deadline = {
                let st = lock_soon(shared).await;
                if !st.node.is_blocked(self.sess.id) {
                    return Ok(true);
                }
                // Timeouts are due once the clock is past the deadline.
                st.node
                    .next_block_deadline()
                    .map(|ms| shared.clock.instant_at(ms.saturating_add(1)))
            };
            let timer = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            self.reserve_for_read();
            tokio::select! {
                Some(bytes) = self.inbox.recv() => stream.write_all(&bytes).await?,
                n = stream.read_buf(&mut self.input) => if n? == 0 {
                    return Ok(false);
                },
                () = timer => {
                    {
                        let mut st = lock_soon(shared).await;
                        st.node.set_time(shared.clock.now_ms());
                        route(&mut st, self.sess.id, &mut self.out);
                    }
                    self.flush(stream).await?;
                }
            }
        }
    }

    async fn flush(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        if !self.out.is_empty() {
            stream.write_all(&self.out).await?;
            self.out.clear();
            if self.out.capacity() > SHRINK_ABOVE {
                self.out = Vec::new();
            }
        }
        Ok(())
    }

    /// Drop the parsed prefix of the input (only the unparsed tail moves),
    /// and give back a buffer that grew for one large request.
    fn compact(&mut self) {
        if self.pos > 0 {
            self.input.drain(..self.pos);
            self.pos = 0;
        }
        if self.input.is_empty() && self.input.capacity() > SHRINK_ABOVE {
            self.input = Vec::with_capacity(INITIAL_INPUT);
        }
    }

    /// Make room for the next read: at least [`MIN_READ`], more while a
    /// large argument is arriving (bounded per step, so the client pays in
    /// bytes sent for the memory it gets).
    fn reserve_for_read(&mut self) {
        let pending = self.input.len() - self.pos;
        let want = self.parser.bulk_remaining(pending).clamp(MIN_READ, MAX_READ_RESERVE);
        if self.input.capacity() - self.input.len() < want {
            self.input.reserve(want);
        }
    }
}

/// The node's lock, waited for without holding a runtime thread: a busy
/// script may hold it for seconds (see `execute_buffered`).
async fn lock_soon(shared: &Shared) -> std::sync::MutexGuard<'_, wire::State> {
    loop {
        match shared.state.try_lock() {
            Ok(st) => return st,
            Err(TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(TryLockError::WouldBlock) => {}
        }
        // Outside the match: its guard-typed temporary must not live
        // across the await (the future would not be `Send`).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Hand out what the node produced for connections besides the running
/// command's reply: entries for `me` go into its output now (before the
/// reply, as redis-server writes them during the command), the others are
/// encoded in their receiver's protocol and sent to its inbox.
fn route(st: &mut wire::State, me: ConnId, out: &mut Vec<u8>) {
    for o in st.node.take_outbound() {
        let resp3 = st.clients.get(&o.conn).is_some_and(|c| c.resp == 3);
        if o.conn == me {
            resp::encode(out, &o.reply, resp3);
        } else if let Some(tx) = st.outboxes.get(&o.conn) {
            let mut bytes = Vec::new();
            resp::encode(&mut bytes, &o.reply, resp3);
            // A receiver that just left has nobody to tell.
            let _ = tx.send(bytes);
        }
    }
}

/// Keep the command name and its first argument (enough for `cmd=` in
/// `CLIENT LIST`), reusing the buffers.
fn remember(slot: &mut Vec<Vec<u8>>, argv: &[Vec<u8>]) {
    let n = argv.len().min(2);
    slot.resize_with(n, Vec::new);
    for (dst, src) in slot.iter_mut().zip(argv) {
        dst.clear();
        dst.extend_from_slice(&src[..src.len().min(64)]);
    }
}

/// Is this a script (EVAL family: true, FCALL family: false)?
fn script_kind(argv: &[Vec<u8>]) -> Option<bool> {
    let name = argv.first()?;
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

/// Run a script: announce it to the other connections, let it be killed,
/// and keep the runtime's other tasks moving while it holds this thread.
fn run_script(
    st: &mut wire::State,
    sess: &mut Session,
    shared: &Shared,
    now_ms: u64,
    argv: &[Vec<u8>],
    eval: bool,
) -> (Reply, After) {
    shared.control.reset();
    *shared.busy() = Some(Busy {
        since: Instant::now(),
        eval,
    });
    set_thread_limits(Some(Arc::clone(&shared.control)), shared.script_work_limit);
    let mut run = || run_guarded(st, sess, &shared.env, now_ms, argv);
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let out = if multi_thread {
        tokio::task::block_in_place(run)
    } else {
        run()
    };
    *shared.busy() = None;
    set_thread_limits(None, locklab_core::server::script::INSTRUCTION_LIMIT);
    shared.control.reset();
    out
}

/// The reply to a request that arrives while a script is busy
/// (`processCommand`'s `isInsideYieldingLongCommand` check and
/// `scriptKill`), or `None` for an allow-busy command that needs the node.
const SLOW_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const SLOW_SCRIPT: &str = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

fn busy_reply(argv: &[Vec<u8>], eval: bool, shared: &Shared) -> Option<Reply> {
    let busy = || Reply::error(if eval { SLOW_EVAL } else { SLOW_SCRIPT });
    let name = String::from_utf8_lossy(argv.first()?).to_ascii_lowercase();
    let kill_of = |container: &str| name == container && argv.len() == 2 && argv[1].eq_ignore_ascii_case(b"kill");
    let kill_eval = kill_of("script");
    if kill_eval || kill_of("function") {
        let reply = if shared.control.wrote() {
            Reply::error(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. \
                 You can either wait the script termination or kill the server in a hard way using \
                 the SHUTDOWN NOSAVE command.",
            )
        } else if kill_eval && !eval {
            Reply::error(SLOW_SCRIPT)
        } else if !kill_eval && eval {
            Reply::error(SLOW_EVAL)
        } else {
            shared.control.kill();
            Reply::ok()
        };
        return Some(reply);
    }
    // CMD_ALLOW_BUSY commands wait for the node (the simulator has no
    // event loop to serve them from inside the script).
    let allow_busy = matches!(
        name.as_str(),
        "auth" | "hello" | "quit" | "reset" | "multi" | "discard" | "watch" | "unwatch" | "shutdown"
    ) || (name == "function" && argv.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"stats")));
    if allow_busy {
        return None;
    }
    Some(busy())
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
