//! One client connection: read, parse every complete request, run them as
//! one batch (inline when the node is free, else on the node's thread: see
//! `node`), write every reply at once, repeat.
//!
//! The loop is written so that the expensive things happen once per batch
//! (a `read`, a job, a `write`) and the cheap things once per command
//! (parse, encode into a reused buffer). Memory per connection is bounded:
//! input is read only when the parser needs more, what the client sent
//! that has not run yet is held to `client-query-buffer-limit` on every
//! read (also while it is blocked or delayed), output is flushed whenever
//! it passes [`OUT_HIGH_WATER`] (and, under a `client-output-buffer-limit
//! normal`, held to it: see [`Conn::write_out`]), and buffers that grew for
//! one large request shrink back afterwards.
//!
//! While a script holds the node past `busy-reply-threshold`, the
//! connection answers by itself, without waiting: it takes back a batch the
//! node has not started and answers it as redis-server's `processCommand`
//! does while `scriptIsTimedout` (see [`Conn::answer_while_busy`]). The
//! parser is the connection's own, so a request split across reads is
//! answered once whatever happens between the reads.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_redis::server::ConnId;
use locklab_redis::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::{oneshot, watch, Notify};

use super::node::{Argv, Batch, Deferred, Job, NodeLink, Ran, Registration, Stop};
use super::resp::{self, Parsed, Parser};
use super::wire::{self, ClientInfo, Outbox, Outgoing, Session};
use super::{output_limit_reached, Busy, Shared};
use locklab_redis::server::config::ClientClass;

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
/// Write out replies once this much has piled up.
const OUT_HIGH_WATER: usize = 64 * 1024;
/// At most this many commands per batch, so one client's huge pipeline
/// cannot starve the others.
const MAX_BATCH: usize = 1024;

const SLOW_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const SLOW_SCRIPT: &str = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. \
     You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

/// What the connection does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Carry on.
    Go,
    /// Write what is pending, then close (`QUIT`, a protocol error,
    /// `SHUTDOWN`).
    Close,
    /// Close without a word (the client left, or went over a limit).
    Gone,
}

/// What the connection did with its pending requests while a script is busy.
enum Local {
    NotBusy,
    /// They were answered.
    Answered(Flow),
}

/// One request answered without the node.
enum Answer {
    Reply(Reply),
    /// Refused before running (`rejectCommand`): an open transaction is
    /// doomed (`flagTransaction`).
    Refused(Reply),
    /// `QUIT`.
    Close(Reply),
    /// `SHUTDOWN NOSAVE`.
    Shutdown,
}

struct Conn {
    shared: Arc<Shared>,
    jobs: NodeLink,
    /// Frees the connection in the node when the task ends.
    reg: Registration,
    sess: Session,
    parser: Parser,
    input: Vec<u8>,
    /// How much of `input` has been parsed.
    pos: usize,
    out: Vec<u8>,
    /// An empty buffer lent to the node's thread for a batch's replies
    /// (it swaps with `out` when that is empty, so replies are not copied).
    spare: Vec<u8>,
    /// Parsed requests; those from `next` on have not been answered.
    pending: Arc<Vec<Argv>>,
    next: usize,
    /// A protocol error's reply, sent (then the connection closes) once the
    /// requests before it are answered.
    closing: Option<Vec<u8>>,
    /// What other connections' commands produced for this one.
    inbox: UnboundedReceiver<Outgoing>,
    /// Bytes in `inbox` not yet written (the output buffer limit's count).
    queued: Arc<AtomicUsize>,
    /// `out`'s length as the node last saw it (see [`Outbox::unsent`]).
    unsent: Arc<AtomicUsize>,
    /// The client's class after its last batch (`getClientType`): a
    /// replica's output, or a subscriber's, counts against its own limit.
    class: ClientClass,
    /// The running script, as the node's thread announces it.
    busy: watch::Receiver<Option<Busy>>,
    /// Whether the node had this connection in MULTI after its last batch
    /// (or the busy answers put it there).
    in_multi: bool,
    /// What the busy answers being given did, for the node to catch up on
    /// at the script's end (see [`Deferred`]).
    busy_effects: Vec<Deferred>,
    /// Since when the unsent replies have been over the normal class's
    /// soft output limit.
    soft_since: Option<Instant>,
}

/// Serve one client until it leaves.
pub(super) async fn serve(shared: Arc<Shared>, jobs: NodeLink, mut stream: TcpStream, peer: SocketAddr) {
    let laddr = stream.local_addr().unwrap_or(shared.env.local_addr);
    let id = ConnId(shared.next_id.fetch_add(1, Ordering::Relaxed));
    let (tx, inbox) = unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let unsent = Arc::new(AtomicUsize::new(0));
    let kill = Arc::new(Notify::new());
    let now = Instant::now();
    let info = ClientInfo {
        addr: peer,
        laddr,
        fd: raw_fd(&stream),
        since: now,
        last: now,
        last_cmd: "NULL".into(),
        resp: 2,
        lib_name: None,
        lib_ver: None,
    };
    let outbox = Outbox {
        tx,
        queued: Arc::clone(&queued),
        unsent: Arc::clone(&unsent),
        kill: Arc::clone(&kill),
        soft_since: None,
    };
    let in_queue = match jobs.try_job(Job::Connect { id, info, outbox }) {
        Ok(()) => false,
        Err(job) => {
            if jobs.send(*job).await.is_err() {
                return;
            }
            true
        }
    };
    let reg = Registration {
        shared: Arc::clone(&shared),
        jobs: jobs.clone(),
        id,
        in_queue,
    };
    let mut conn = Conn {
        reg,
        busy: shared.busy.subscribe(),
        shared,
        jobs,
        sess: Session::new(id),
        parser: Parser::new(),
        input: Vec::with_capacity(INITIAL_INPUT),
        pos: 0,
        out: Vec::new(),
        spare: Vec::new(),
        pending: Arc::new(Vec::new()),
        next: 0,
        closing: None,
        inbox,
        queued,
        unsent,
        class: ClientClass::Normal,
        in_multi: false,
        busy_effects: Vec::new(),
        soft_since: None,
    };
    // An I/O error means the client is gone; there is nobody to tell. A
    // client closed for its output may be stuck in a write: the kill ends
    // the task wherever it is.
    tokio::select! {
        _ = conn.run(&mut stream) => {}
        () = kill.notified() => {}
    }
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
    async fn run(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        loop {
            if self.next >= self.pending.len() {
                if let Some(error) = self.closing.take() {
                    self.out.extend_from_slice(&error);
                    return self.close(stream).await;
                }
                self.parse_batch();
            }
            if self.next < self.pending.len() {
                match self.execute(stream).await? {
                    Flow::Go => {}
                    Flow::Close => return self.close(stream).await,
                    Flow::Gone => return Ok(()),
                }
                if self.out.len() >= OUT_HIGH_WATER && !self.write_out(stream).await? {
                    return Ok(());
                }
                continue;
            }
            if self.closing.is_some() {
                continue;
            }
            if !self.write_out(stream).await? {
                return Ok(());
            }
            self.compact();
            self.reserve_for_read();
            // Replies still pending (only under a normal output limit):
            // the socket taking more is news too.
            let unsent = !self.out.is_empty();
            let (mut rd, wr) = stream.split();
            tokio::select! {
                n = rd.read_buf(&mut self.input) => if n? == 0 {
                    return Ok(());
                },
                msg = self.inbox.recv() => if !self.deliver(msg, stream).await? {
                    return Ok(());
                },
                w = wr.writable(), if unsent => w?,
            }
            if self.over_query_limit() {
                return Ok(());
            }
        }
    }

    async fn close(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        self.flush(stream).await?;
        let _ = stream.shutdown().await;
        Ok(())
    }

    /// Parse the complete requests in the buffer (at most [`MAX_BATCH`]).
    fn parse_batch(&mut self) {
        // The last batch has been answered and the node's thread has let
        // go of it: its buffers serve the next one.
        let mut batch = match Arc::get_mut(&mut self.pending) {
            Some(done) => {
                let mut batch = std::mem::take(done);
                self.parser.give_back(batch.drain(..));
                batch
            }
            None => Vec::new(),
        };
        while batch.len() < MAX_BATCH {
            match self.parser.parse(&self.input, &mut self.pos) {
                Ok(Parsed::Incomplete) => break,
                Ok(Parsed::Empty) => {}
                Ok(Parsed::Command) => batch.push(self.parser.take_argv()),
                Err(e) => {
                    self.closing = Some(e.reply_bytes());
                    break;
                }
            }
        }
        self.pending = Arc::new(batch);
        self.next = 0;
    }

    /// redis-server's "closing client that reached max query buffer
    /// length" (without a reply): what the client sent that has not run —
    /// unparsed bytes, a request still arriving, parsed requests waiting —
    /// is over `client-query-buffer-limit`.
    fn over_query_limit(&self) -> bool {
        let waiting: usize = self.pending[self.next..].iter().flatten().map(Vec::len).sum();
        self.input.len() - self.pos + self.parser.partial_bytes() + waiting > self.shared.query_limit()
    }

    /// Answer the pending requests: by the node, or (a script being busy)
    /// by the connection itself.
    async fn execute(&mut self, stream: &mut TcpStream) -> io::Result<Flow> {
        if let Local::Answered(flow) = self.answer_while_busy() {
            return Ok(flow);
        }
        // The node counts what is still unwritten against the output limit.
        self.unsent.store(self.out.len(), Ordering::Relaxed);
        if !self.reg.in_queue {
            let out = std::mem::take(&mut self.spare);
            match self.jobs.try_inline(self.sess, &self.pending[self.next..], out) {
                Ok(ran) => return self.apply(ran, stream).await,
                Err(out) => self.spare = out,
            }
        }
        let claim = Arc::new(AtomicBool::new(false));
        let (done, ran) = oneshot::channel();
        let batch = Batch {
            sess: self.sess,
            argvs: Arc::clone(&self.pending),
            from: self.next,
            claim: Arc::clone(&claim),
            done,
            out: std::mem::take(&mut self.spare),
        };
        self.reg.in_queue = true;
        if self.jobs.send(Job::Run(batch)).await.is_err() {
            return Ok(Flow::Gone);
        }
        match self.await_ran(ran, &claim).await {
            Some(Some(ran)) => {
                // The queue is in order: what this connection sent before is done.
                self.reg.in_queue = false;
                self.apply(ran, stream).await
            }
            // Taken back: the next turn answers it BUSY.
            Some(None) => Ok(Flow::Go),
            None => Ok(Flow::Gone),
        }
    }

    /// Wait for the node's answer to a batch; once a script has been busy
    /// past the threshold, take the batch back if the node has not started
    /// it (`Some(None)`). `None`: the node's thread is gone.
    async fn await_ran(&mut self, mut ran: oneshot::Receiver<Ran>, claim: &AtomicBool) -> Option<Option<Ran>> {
        let mut may_take_back = true;
        loop {
            let due = if may_take_back {
                let threshold = self.shared.busy_threshold();
                self.busy.borrow_and_update().as_ref().map(|b| b.since + threshold)
            } else {
                None
            };
            let timer = async move {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = &mut ran => return r.ok().map(Some),
                changed = self.busy.changed(), if may_take_back => {
                    if changed.is_err() {
                        may_take_back = false;
                    }
                }
                () = timer => {
                    if !claim.swap(true, Ordering::AcqRel) {
                        return Some(None);
                    }
                    // The node has it (it may be this very script).
                    may_take_back = false;
                }
            }
        }
    }

    /// Take in a batch's outcome.
    async fn apply(&mut self, ran: Ran, stream: &mut TcpStream) -> io::Result<Flow> {
        self.sess = ran.sess;
        self.in_multi = ran.in_multi;
        self.class = ran.class;
        self.next += ran.ran;
        let base = self.out.len();
        let mut replies = ran.out;
        if self.out.is_empty() {
            std::mem::swap(&mut self.out, &mut replies);
        } else {
            self.out.extend_from_slice(&replies);
        }
        replies.clear();
        if replies.capacity() <= SHRINK_ABOVE {
            self.spare = replies;
        }
        match ran.stop {
            Stop::Done => Ok(Flow::Go),
            Stop::Close | Stop::Shutdown => Ok(Flow::Close),
            // Closed by the node for its output: nothing more is written.
            Stop::OverLimit => Ok(Flow::Gone),
            Stop::Delay { split, ms } => self.delay(stream, base + split, ms).await,
            Stop::Blocked => {
                self.flush(stream).await?;
                self.wait_unblocked(stream, ran.deadline).await
            }
        }
    }

    /// A stall (`DEBUG SLEEP`, a `WAIT` that times out): the replies before
    /// `split` go out now, the rest after `ms` of wall time. Input that
    /// arrives meanwhile is kept (under the query-buffer limit), and a
    /// client that leaves is freed at once, whatever the timeout.
    async fn delay(&mut self, stream: &mut TcpStream, split: usize, ms: u64) -> io::Result<Flow> {
        stream.write_all(&self.out[..split]).await?;
        self.out.drain(..split);
        let timeout = tokio::time::sleep(Duration::from_millis(ms));
        tokio::pin!(timeout);
        loop {
            self.reserve_for_read();
            tokio::select! {
                () = &mut timeout => return Ok(Flow::Go),
                read = stream.read_buf(&mut self.input) => {
                    if read? == 0 || self.over_query_limit() {
                        return Ok(Flow::Gone);
                    }
                }
            }
        }
    }

    /// Wait while this connection is blocked (`BLPOP` …): until another
    /// client's command serves it or its timeout passes on the node's clock
    /// (its reply then arrives in the inbox, followed by
    /// [`Outgoing::Unblocked`]). Input that arrives meanwhile is kept, not
    /// run, under the query-buffer limit.
    async fn wait_unblocked(&mut self, stream: &mut TcpStream, mut deadline: Option<u64>) -> io::Result<Flow> {
        loop {
            // Timeouts are due once the clock is past the deadline.
            let at = deadline.map(|ms| self.shared.clock.instant_at(ms.saturating_add(1)));
            let timer = async move {
                match at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            self.reserve_for_read();
            tokio::select! {
                msg = self.inbox.recv() => match msg {
                    Some(Outgoing::Unblocked) => return Ok(Flow::Go),
                    other => if !self.deliver(other, stream).await? {
                        return Ok(Flow::Gone);
                    },
                },
                n = stream.read_buf(&mut self.input) => {
                    if n? == 0 || self.over_query_limit() {
                        return Ok(Flow::Gone);
                    }
                }
                () = timer => {
                    let (done, ran) = oneshot::channel();
                    if self.jobs.send(Job::Tick { id: self.sess.id, done }).await.is_err() {
                        return Ok(Flow::Gone);
                    }
                    let Ok(ran) = ran.await else {
                        return Ok(Flow::Gone);
                    };
                    deadline = ran.deadline;
                }
            }
        }
    }

    /// Write what the node sent outside this connection's batches. `false`
    /// when the node has closed the connection.
    async fn deliver(&mut self, msg: Option<Outgoing>, stream: &mut TcpStream) -> io::Result<bool> {
        match msg {
            None => Ok(false),
            Some(Outgoing::Bytes(bytes)) => {
                stream.write_all(&bytes).await?;
                self.queued.fetch_sub(bytes.len(), Ordering::AcqRel);
                Ok(true)
            }
            Some(Outgoing::Unblocked) => Ok(true),
        }
    }

    /// While a script has held the node past the threshold: answer the
    /// pending requests without the node, as redis-server's
    /// `processCommand` does while `scriptIsTimedout`. What the answers did
    /// is left for the node in the script's log, which stays locked while
    /// they are given: either the node catches up on all of them at the
    /// script's end, or the script had ended and none is answered here.
    fn answer_while_busy(&mut self) -> Local {
        let busy = match self.busy.borrow().as_ref() {
            Some(b) if b.since.elapsed() >= self.shared.busy_threshold() => b.clone(),
            _ => return Local::NotBusy,
        };
        let shared = Arc::clone(&self.shared);
        let mut log = shared.answered_while_busy();
        let Some(log) = log.as_mut() else {
            return Local::NotBusy;
        };
        let flow = self.answer_pending(&busy);
        let id = self.sess.id;
        log.extend(self.busy_effects.drain(..).map(|d| (id, d)));
        Local::Answered(flow)
    }

    /// The pending requests, answered while a script is busy.
    fn answer_pending(&mut self, busy: &Busy) -> Flow {
        let pending = Arc::clone(&self.pending);
        while let Some(argv) = pending.get(self.next) {
            let reply = match self.answer(argv, busy) {
                Answer::Reply(r) => r,
                Answer::Refused(r) => {
                    if self.in_multi {
                        self.busy_effects.push(Deferred::Doom);
                    }
                    r
                }
                Answer::Close(r) => {
                    resp::encode(&mut self.out, &r, self.sess.resp3);
                    self.next = pending.len();
                    return Flow::Close;
                }
                Answer::Shutdown => {
                    self.shared.shut_down();
                    self.next = pending.len();
                    return Flow::Close;
                }
            };
            // Refused with BUSY inside MULTI: the transaction is doomed.
            if self.in_multi && matches!(&reply, Reply::Error(e) if e.starts_with("BUSY ")) {
                self.busy_effects.push(Deferred::Doom);
            }
            resp::encode(&mut self.out, &reply, self.sess.resp3);
            self.next += 1;
        }
        Flow::Go
    }

    /// One request while a script is busy: the allow-busy commands
    /// (`CMD_ALLOW_BUSY` in 7.0.15's table: AUTH, HELLO, MULTI, DISCARD,
    /// WATCH, UNWATCH, RESET, QUIT, SHUTDOWN, SCRIPT KILL, FUNCTION KILL,
    /// FUNCTION STATS) are answered here as they would run; the rest get
    /// `-BUSY`.
    fn answer(&mut self, argv: &[Vec<u8>], busy: &Busy) -> Answer {
        // An unknown command or a wrong number of arguments is refused
        // before BUSY; a malformed EXEC also ends the transaction.
        if let Some(refused) = wire::refusal(argv, self.shared.env.profile) {
            if !argv[0].eq_ignore_ascii_case(b"exec") {
                return Answer::Refused(refused);
            }
            if std::mem::take(&mut self.in_multi) {
                self.busy_effects.push(Deferred::Discard);
            }
            let Reply::Error(e) = refused else {
                return Answer::Reply(refused);
            };
            let why = e.strip_prefix("ERR ").unwrap_or(&e);
            return Answer::Reply(Reply::error(format!(
                "EXECABORT Transaction discarded because of: {why}"
            )));
        }
        if let Some(reply) = self.transaction_while_busy(argv, busy.eval) {
            return Answer::Reply(reply);
        }
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let sub_is = |s: &[u8]| argv.len() == 2 && argv[1].eq_ignore_ascii_case(s);
        match name.as_str() {
            "script" if sub_is(b"kill") => Answer::Reply(self.kill(true, busy.eval)),
            "function" if sub_is(b"kill") => Answer::Reply(self.kill(false, busy.eval)),
            "function" if sub_is(b"stats") => Answer::Reply(function_stats(busy)),
            "shutdown" => match wire::shutdown_flags(argv) {
                Ok(true) => Answer::Shutdown,
                // shutdownCommand: only NOSAVE may stop a busy server.
                Ok(false) => Answer::Reply(busy_error(busy.eval)),
                Err(e) => Answer::Reply(e),
            },
            "quit" => Answer::Close(Reply::ok()),
            "auth" | "hello" | "watch" | "unwatch" | "reset" => Answer::Reply(self.connection_while_busy(argv, &name)),
            _ => Answer::Reply(busy_error(busy.eval)),
        }
    }

    /// The allow-busy commands that change the connection, answered as they
    /// run (`authCommand`, `helloCommand`, `watchCommand`, `unwatchCommand`,
    /// `resetCommand`; inside MULTI, `processCommand` queues all but WATCH
    /// and RESET), and left for the node to run again at the script's end.
    fn connection_while_busy(&mut self, argv: &[Vec<u8>], name: &str) -> Reply {
        let reply = match name {
            "reset" => {
                self.in_multi = false;
                self.sess.resp3 = false;
                self.sess.db = 0;
                Reply::status("RESET")
            }
            "watch" if self.in_multi => return Reply::error("ERR WATCH inside MULTI is not allowed"),
            "watch" => {
                let watches = self.shared.control.watch_while_busy(self.sess.db, &argv[1..]);
                self.busy_effects.push(Deferred::Watch {
                    argv: argv.to_vec(),
                    watches,
                });
                return Reply::ok();
            }
            "unwatch" if self.in_multi => Reply::status("QUEUED"),
            "unwatch" => Reply::ok(),
            // The wire layer's commands inside MULTI, as the node answers
            // them when not busy.
            _ if self.in_multi => wire::unsupported_in_multi(name),
            // Nothing to run again: a server without `requirepass`.
            "auth" => return wire::auth_reply(argv),
            _ => match wire::hello_options(argv) {
                Err(e) => return e,
                Ok(opts) => {
                    if let Some(v) = opts.proto {
                        self.sess.resp3 = v == 3;
                    }
                    wire::hello_reply(self.sess.id, self.sess.resp3, self.shared.env.profile)
                }
            },
        };
        self.busy_effects.push(Deferred::Run(argv.to_vec()));
        reply
    }

    /// `scriptKill`: `SCRIPT KILL` (`eval_kill`) or `FUNCTION KILL`.
    fn kill(&self, eval_kill: bool, eval: bool) -> Reply {
        let control = &self.shared.control;
        if control.wrote() {
            Reply::error(UNKILLABLE)
        } else if eval_kill != eval {
            busy_error(eval)
        } else {
            control.kill();
            Reply::ok()
        }
    }

    /// `processCommand` while a script is busy, for the transaction
    /// commands: MULTI and DISCARD are allow-busy and run; EXEC is refused
    /// and ends the transaction (`execCommandAbort`). (Any other command
    /// refused with BUSY dooms an open transaction, `flagTransaction`.)
    /// The node learns of it with this connection's next batch. `None`:
    /// not a transaction matter.
    fn transaction_while_busy(&mut self, argv: &[Vec<u8>], eval: bool) -> Option<Reply> {
        let name = argv.first()?;
        let is = |n: &[u8]| name.eq_ignore_ascii_case(n);
        if is(b"multi") && argv.len() == 1 {
            if self.in_multi {
                return Some(Reply::error("ERR MULTI calls can not be nested"));
            }
            self.in_multi = true;
            self.busy_effects.push(Deferred::Multi);
            return Some(Reply::ok());
        }
        if is(b"discard") && argv.len() == 1 {
            if !self.in_multi {
                return Some(Reply::error("ERR DISCARD without MULTI"));
            }
            self.in_multi = false;
            self.busy_effects.push(Deferred::Discard);
            return Some(Reply::ok());
        }
        if is(b"exec") {
            if self.in_multi {
                self.in_multi = false;
                self.busy_effects.push(Deferred::Discard);
            }
            let busy = if eval { SLOW_EVAL } else { SLOW_SCRIPT };
            return Some(Reply::error(format!(
                "EXECABORT Transaction discarded because of: {busy}"
            )));
        }
        None
    }

    /// Write out the replies. With no `client-output-buffer-limit` for the
    /// client's class (normal's default is `0 0 0`) this waits until the
    /// socket took them all: the client's next requests wait in its
    /// socket, and memory stays bounded where redis-server's would grow.
    /// With a limit, only what the socket takes now is written; the rest
    /// stays pending while the connection goes on reading and running the
    /// client's requests, as redis-server does, and a client whose pending
    /// output (its replies and what the node queued for it) passes the
    /// limit is closed (`false`), as `closeClientOnOutputBufferLimitReached`
    /// closes it. A subscriber's replies count in the pub/sub class, as
    /// `getClientType` classes it.
    async fn write_out(&mut self, stream: &mut TcpStream) -> io::Result<bool> {
        let limit = self.shared.output_limit(self.class);
        if limit.hard == 0 && limit.soft == 0 {
            self.flush(stream).await?;
            return Ok(true);
        }
        let mut sent = 0;
        while sent < self.out.len() {
            match stream.try_write(&self.out[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        self.out.drain(..sent);
        self.unsent.store(self.out.len(), Ordering::Relaxed);
        if self.out.is_empty() {
            self.soft_since = None;
            self.flush(stream).await?;
            return Ok(true);
        }
        let pending = self.out.len() + self.queued.load(Ordering::Acquire);
        let (id, class) = (self.sess.id, self.class);
        Ok(!output_limit_reached(limit, pending, &mut self.soft_since, id, class))
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

/// The BUSY error of the running script's kind.
fn busy_error(eval: bool) -> Reply {
    Reply::error(if eval { SLOW_EVAL } else { SLOW_SCRIPT })
}

/// `functionStatsCommand` while a script runs: refused for an EVAL,
/// otherwise the running function's name, command and duration, with the
/// engines' counts as they were when it started.
fn function_stats(busy: &Busy) -> Reply {
    if busy.eval {
        return busy_error(true);
    }
    let bulk = |s: &str| Reply::bulk(s.as_bytes().to_vec());
    let running = Reply::Map(vec![
        (bulk("name"), Reply::Bulk(busy.argv.get(1).cloned().unwrap_or_default())),
        (
            bulk("command"),
            Reply::Array(busy.argv.iter().cloned().map(Reply::Bulk).collect()),
        ),
        (
            bulk("duration_ms"),
            Reply::Integer(i64::try_from(busy.since.elapsed().as_millis()).unwrap_or(i64::MAX)),
        ),
    ]);
    let mut stats = busy.stats.clone();
    if let Reply::Map(fields) = &mut stats {
        if let Some((_, value)) = fields.first_mut() {
            *value = running;
        }
    }
    stats
}
