//! On a server the lab does not own, a session's script runs on the
//! simulator and only its writes reach Redis (issue 35, design item 3).
//!
//! # Why not run it there
//!
//! The [pre-flight](super::preflight) runs a script on the simulator before
//! Redis runs it, and the [watchdog](super::watchdog) kills one that runs
//! past its budget. Both break where the simulator and the server differ:
//! a script that branches on `INFO server`, on `TIME`'s microseconds, on a
//! TTL read a millisecond later or on a random member takes one path here
//! and another there (issue 35, B4), and once it has written, Redis cannot
//! kill it (`UNKILLABLE`; only `SHUTDOWN NOSAVE` ends it). And the check
//! copied every key of the session through a Lua script on the owner's
//! server before each script (B10). So on a server the lab does not own no
//! user Lua runs at all, by default ([`Scripts::Simulated`](super::Scripts)).
//!
//! # What runs instead
//!
//! Redis's own answer to "a script's run may differ on a replica" is
//! effects replication: the master sends the script's *writes*, wrapped in
//! `MULTI … EXEC`, never the script. The simulator records the same stream
//! (core's `propagate`, with Redis's rewrites of non-deterministic commands:
//! relative TTLs as `PXAT`/`PEXPIREAT`, `SPOP` as `SREM`, `INCRBYFLOAT` as
//! `SET … KEEPTTL`), so for each script, on a connection of its own logged
//! in as the session's user ([`APPLIER`]):
//!
//! 1. `WATCH` the keys it declares, then read them: `TIME`, and per key
//!    `DUMP` and `PTTL` — plain commands, whose payloads the simulator
//!    `RESTORE`s (at most [`MAX_READ_BYTES`] in all);
//! 2. run it on the simulator on exactly those keys, at the server's time,
//!    fenced (core's `ScriptFence`): a call of a command the lab's table
//!    refuses, or of a key it did not declare in `KEYS`, refuses the whole
//!    script with the lab's error — the simulator would not know that key,
//!    so its run could differ from Redis's;
//! 3. send its writes, keys prefixed, as one `MULTI … EXEC`. `EXEC` failing
//!    because a watched key changed in between runs it again from 1, at most
//!    [`MAX_TRIES`] times, then gives up with an error and nothing written.
//!
//! The session sees the simulator's reply, and the trace a note saying the
//! script ran on the simulator and was applied as its writes ([`NOTE`]). A
//! script that writes nothing costs `WATCH`, the reads and `UNWATCH`.
//!
//! The applier is a connection of its own per client and node (through the
//! client's slowed link, when a lesson slows it), not the client's: the
//! applier's `EXEC` ends its own `WATCH`es, which on the client's link
//! would also end the user's; on a link of its own, a write of a key the
//! user watches fails the user's `EXEC`, as the script's write would.

use locklab_core::actor::Actor;
use locklab_core::reply::Reply;
use locklab_core::server::table;
use locklab_core::server::Profile;
use locklab_core::trace::EventKind;

use super::link::Link;
use super::phases::{Outcome, Prepared};
use super::preflight::Dumped;
use super::sandbox::Rewritten;
use super::{Argv, Peeked, Session, SessionError};
use crate::real::conn::RealConnection;
use crate::real::stages::Stage;
use std::time::Instant;

/// The bit that marks a client index as the applier of that client
/// (`APPLIER | c`): its connection lives beside the client's in the
/// session's connection maps, reaches the node through the client's link,
/// and carries no user state.
pub(super) const APPLIER: u32 = 1 << 31;

/// How many times a script is run again because a key it declared changed
/// between its read and its `EXEC`.
pub(super) const MAX_TRIES: usize = 5;

/// Most bytes of `DUMP` payloads one script may be given (its declared
/// keys, all together): the simulator holds a copy of them.
pub(super) const MAX_READ_BYTES: usize = 16 << 20;

/// The trace note of a script run this way.
pub const NOTE: &str = "ran on the simulator, applied to your Redis as its writes";

/// The trace note of a script run this way, in Chinese.
pub const NOTE_ZH: &str = "在模拟器上运行，仅把它的写入应用到你的 Redis";

/// The error when a declared key kept changing.
pub(super) fn busy_keys() -> String {
    format!(
        "the script's keys changed on your Redis between the lab's read and its writes {MAX_TRIES} times in a row; \
         nothing was written, try again"
    )
}

/// The commands that read a script's declared keys (`sent`: as sent, under
/// the prefix): `WATCH` them, the server's `TIME`, and `DUMP` and `PTTL` of
/// each.
pub(super) fn read_commands(sent: &[Vec<u8>]) -> Vec<Argv> {
    let mut out = Vec::with_capacity(2 + 2 * sent.len());
    if !sent.is_empty() {
        let mut watch = vec![b"WATCH".to_vec()];
        watch.extend(sent.iter().cloned());
        out.push(watch);
    }
    out.push(vec![b"TIME".to_vec()]);
    for k in sent {
        out.push(vec![b"DUMP".to_vec(), k.clone()]);
        out.push(vec![b"PTTL".to_vec(), k.clone()]);
    }
    out
}

/// What [`read_commands`]' replies say: the server's time (Unix ms) and
/// each key (`typed`: as the script names them). `Err`: why it cannot be
/// simulated.
pub(super) fn parse_read(typed: &[Vec<u8>], replies: &[Reply]) -> Result<(u64, Vec<Dumped>), String> {
    let unreadable = |r: &Reply| format!("the lab could not read the script's keys: {}", r.to_cli().trim_end());
    let skip = usize::from(!typed.is_empty());
    if replies.len() != skip + 1 + 2 * typed.len() {
        return Err("the lab could not read the script's keys".into());
    }
    if let Some(e) = replies.iter().find(|r| r.is_error()) {
        return Err(unreadable(e));
    }
    let now_ms = match &replies[skip] {
        Reply::Array(t) => match (t.first(), t.get(1)) {
            (Some(Reply::Bulk(s)), Some(Reply::Bulk(us))) => {
                let num = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|x| x.parse::<u64>().ok());
                match (num(s), num(us)) {
                    (Some(s), Some(us)) => s * 1000 + us / 1000,
                    _ => return Err(unreadable(&replies[skip])),
                }
            }
            _ => return Err(unreadable(&replies[skip])),
        },
        other => return Err(unreadable(other)),
    };
    let mut total = 0usize;
    let mut out = Vec::with_capacity(typed.len());
    for (key, pair) in typed.iter().zip(replies[skip + 1..].chunks(2)) {
        let payload = match &pair[0] {
            Reply::Bulk(p) => Some(p.clone()),
            _ => None,
        };
        total += payload.as_ref().map_or(0, Vec::len);
        if total > MAX_READ_BYTES {
            return Err(format!(
                "the keys the script declares hold more than {} MiB, more than the lab copies to run a script on its \
                 simulator",
                MAX_READ_BYTES >> 20
            ));
        }
        let pttl = match &pair[1] {
            Reply::Integer(p) => *p,
            other => return Err(unreadable(other)),
        };
        // Gone between DUMP and PTTL (it expired): absent, as WATCH will say.
        let payload = payload.filter(|_| pttl != -2);
        out.push(Dumped {
            key: key.clone(),
            payload,
            pttl,
        });
    }
    Ok((now_ms, out))
}

/// The commands that apply `writes` (as sent): `MULTI`, each write, `EXEC`;
/// or `UNWATCH` alone when there is nothing to write.
pub(super) fn apply_commands(writes: Vec<Argv>) -> Vec<Argv> {
    if writes.is_empty() {
        return vec![vec![b"UNWATCH".to_vec()]];
    }
    let mut out = Vec::with_capacity(writes.len() + 2);
    out.push(vec![b"MULTI".to_vec()]);
    out.extend(writes);
    out.push(vec![b"EXEC".to_vec()]);
    out
}

/// What came of [`apply_commands`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Applied {
    /// Written (or nothing to write).
    Done,
    /// A watched key changed: nothing was written; run it again.
    Changed,
    /// Redis refused (part of) the writes: why, as Redis said it.
    Refused(String),
}

/// Judge the replies of [`apply_commands`].
pub(super) fn parse_apply(replies: &[Reply]) -> Applied {
    let Some(last) = replies.last() else {
        return Applied::Refused("no reply".into());
    };
    if replies.len() == 1 {
        return match last {
            Reply::Error(e) => Applied::Refused(e.clone()),
            _ => Applied::Done,
        };
    }
    // A write refused while queuing (ACL, OOM) makes EXEC answer EXECABORT.
    if let Some(Reply::Error(e)) = replies[1..replies.len() - 1].iter().find(|r| r.is_error()) {
        return Applied::Refused(e.clone());
    }
    match last {
        Reply::Nil | Reply::NilArray => Applied::Changed,
        Reply::Array(results) => match results.iter().find(|r| r.is_error()) {
            Some(Reply::Error(e)) => Applied::Refused(e.clone()),
            _ => Applied::Done,
        },
        Reply::Error(e) => Applied::Refused(e.clone()),
        other => Applied::Refused(other.to_cli().trim_end().to_owned()),
    }
}

/// The keys `argv` declares (the table's key positions: `EVAL`'s and
/// `FCALL`'s `numkeys` keys), as typed and as `sent` (prefixed).
fn declared(argv: &[Vec<u8>], sent: &[Vec<u8>]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let at = argv
        .first()
        .and_then(|name| table::find(name, Profile::V8_4))
        .map(|cmd| cmd.key_indexes(argv))
        .unwrap_or_default();
    at.into_iter()
        .filter_map(|i| Some((argv[i].clone(), sent.get(i)?.clone())))
        .unzip()
}

impl Session {
    /// The simulator's run of `argv` on the keys `replies` (to
    /// [`read_commands`]) read: its reply and its writes as sent (keys
    /// prefixed). `Err`: why it is refused.
    fn simulated(
        &mut self,
        argv: &[Vec<u8>],
        typed: &[Vec<u8>],
        replies: &[Reply],
    ) -> Result<(Reply, Vec<Argv>), String> {
        let (now_ms, dumped) = parse_read(typed, replies)?;
        let run = self.preflight.simulate(now_ms, &dumped, argv)?;
        let mut writes = Vec::with_capacity(run.writes.len());
        for w in &run.writes {
            // Each write passes the first wall and is charged to the
            // session's quota as a typed one would be, before anything is
            // sent: a script cannot grow your Redis past what typed lines
            // may (a re-run after a failed EXEC is charged again: the
            // account is an upper bound).
            let shown = |e: SessionError| e.to_string().trim_start_matches("ERR ").to_owned();
            match self.sandbox.check_and_rewrite(w).map_err(shown)? {
                Rewritten::Send(sent, checked) => {
                    self.quota.charge(&self.sandbox.limits, checked, w).map_err(shown)?;
                    writes.push(sent);
                }
                Rewritten::Answer => {
                    return Err(format!(
                        "the lab cannot send the script's write {} to your Redis",
                        String::from_utf8_lossy(&w[0])
                    ))
                }
            }
        }
        Ok((run.reply, writes))
    }

    /// What [`parse_apply`] says, as the session answers: the reply, `None`
    /// to run it again, or the error.
    fn applied(&self, replies: &[Reply], reply: Reply) -> Result<Option<Reply>, SessionError> {
        match parse_apply(replies) {
            Applied::Done => Ok(Some(reply)),
            Applied::Changed => Ok(None),
            Applied::Refused(e) => Err(SessionError::WritesRefused(self.sandbox.unscope_text(&e))),
        }
    }

    /// A script of client `c` on node `n`, run on the simulator and applied
    /// as its writes, on blocking connections (the module doc).
    pub(super) fn simulate_blocking(
        &mut self,
        c: u32,
        n: usize,
        argv: &[Vec<u8>],
        prep: &Prepared,
    ) -> Result<Reply, SessionError> {
        let key = (APPLIER | c, n as u32);
        let (typed, sent) = declared(argv, &prep.rewritten);
        let reads = read_commands(&sent);
        for _ in 0..MAX_TRIES {
            let mut conn = match self.conns.remove(&key) {
                Some(conn) => conn,
                None => {
                    self.links.remove(&key);
                    self.opener(key.0, n)
                        .and_then(|o| o.open())
                        .map_err(|source| self.unreachable(n, source))?
                }
            };
            let step = self.apply_once_blocking(&mut conn, n, argv, &typed, &reads);
            if !matches!(step, Err(SessionError::Unreachable { .. })) {
                self.conns.insert(key, conn);
            }
            if let Some(reply) = step? {
                return Ok(reply);
            }
        }
        Err(SessionError::ScriptRefused(busy_keys()))
    }

    fn apply_once_blocking(
        &mut self,
        conn: &mut RealConnection,
        n: usize,
        argv: &[Vec<u8>],
        typed: &[Vec<u8>],
        reads: &[Argv],
    ) -> Result<Option<Reply>, SessionError> {
        let t = Instant::now();
        let replies = conn.pipeline(reads);
        self.stage(Stage::Send, t);
        let replies = replies.map_err(|source| self.unreachable(n, source))?;
        let t = Instant::now();
        let run = self.simulated(argv, typed, &replies);
        self.stage(Stage::Checks, t);
        let (reply, writes) = match run {
            Ok(run) => run,
            Err(why) => {
                let _ = conn.execute(&[b"UNWATCH".to_vec()]);
                return Err(SessionError::ScriptRefused(why));
            }
        };
        let t = Instant::now();
        let replies = conn.pipeline(&apply_commands(writes));
        self.stage(Stage::Send, t);
        let replies = replies.map_err(|source| self.unreachable(n, source))?;
        self.applied(&replies, reply)
    }

    /// [`Session::simulate_blocking`] on the async lane.
    pub(super) async fn simulate_async(
        &mut self,
        c: u32,
        n: usize,
        argv: &[Vec<u8>],
        prep: &Prepared,
        peek: &[String],
    ) -> Result<(Reply, Option<Option<Vec<Peeked>>>), SessionError> {
        let key = (APPLIER | c, n as u32);
        let (typed, sent) = declared(argv, &prep.rewritten);
        let reads = read_commands(&sent);
        let peek_commands = self.peek_commands(peek);
        for _ in 0..MAX_TRIES {
            let t = Instant::now();
            let mut link = self
                .take_link(key)
                .await
                .map_err(|source| self.unreachable(n, source))?;
            self.stage(Stage::Send, t);
            let step = self
                .apply_once_async(&mut link, n, (argv, &typed), &reads, &peek_commands)
                .await;
            if link.usable() {
                self.links.insert(key, link);
            }
            if let Some((reply, peeked)) = step? {
                let peeked = (!peek.is_empty()).then(|| peeked.and_then(|r| self.parse_peek(n, peek, r).ok()));
                return Ok((reply, peeked));
            }
        }
        Err(SessionError::ScriptRefused(busy_keys()))
    }

    /// One try: read the declared keys under `WATCH`, run the script on
    /// the simulator, and send its writes with `peek` (the lock watch's
    /// look, [`Session::peek_commands`]) behind them in the same write: the
    /// look reads what the writes left, as it would on a round trip of its
    /// own afterwards. `Some` with the reply and the look's replies (`None`
    /// when they could not be read); `None` to try again.
    async fn apply_once_async(
        &mut self,
        link: &mut Link,
        n: usize,
        (argv, typed): (&[Vec<u8>], &[Vec<u8>]),
        reads: &[Argv],
        peek: &[Argv],
    ) -> Result<Option<(Reply, Option<Vec<Reply>>)>, SessionError> {
        let t = Instant::now();
        let replies = link.pipeline(reads).await;
        self.stage(Stage::Send, t);
        let replies = replies.map_err(|source| self.unreachable(n, source))?;
        let t = Instant::now();
        let run = self.simulated(argv, typed, &replies);
        self.stage(Stage::Checks, t);
        let (reply, writes) = match run {
            Ok(run) => run,
            Err(why) => {
                let _ = link.execute(&[b"UNWATCH".to_vec()]).await;
                return Err(SessionError::ScriptRefused(why));
            }
        };
        let t = Instant::now();
        let mut commands = apply_commands(writes);
        let applying = commands.len();
        commands.extend(peek.iter().cloned());
        let replies = link.pipeline(&commands).await;
        self.stage(Stage::Send, t);
        let mut replies = replies.map_err(|source| self.unreachable(n, source))?;
        let looked = replies.split_off(applying.min(replies.len()));
        Ok(self
            .applied(&replies, reply)?
            .map(|r| (r, (!peek.is_empty()).then_some(looked))))
    }

    /// Book a simulated script's reply as any command's (`Sent`,
    /// `Executed`, `Received`), and say on the client's lane how it ran.
    pub(super) fn finish_simulated(
        &mut self,
        (c, node): (u32, u32),
        argv: &[Vec<u8>],
        prep: &Prepared,
        (sent_at, reply): (u64, Reply),
    ) -> Result<Reply, SessionError> {
        // Nothing was booked while it ran, so the request can start when
        // its reads went out: the timeline shows the whole round trip
        // (lesson 42 measures a slowed link by it).
        let begun = self.begin_at(c, node, argv, sent_at);
        let outcome = Outcome {
            reply: Ok(reply),
            killed: false,
            loaded: Ok(()),
            // The simulator's reply was never read off a socket.
            dropped: Default::default(),
        };
        let reply = self.finish((c, node), argv, prep, begun, outcome)?;
        let at_ms = self.now_ms();
        let text = format!("{NOTE} · {NOTE_ZH}");
        self.push(at_ms, Actor::Client(c), EventKind::Note { text });
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn reads_watch_then_dump_each_key() {
        let cmds = read_commands(&[b("lab:x:k")]);
        assert_eq!(cmds[0], vec![b("WATCH"), b("lab:x:k")]);
        assert_eq!(cmds[1], vec![b("TIME")]);
        assert_eq!(cmds[2], vec![b("DUMP"), b("lab:x:k")]);
        assert_eq!(cmds[3], vec![b("PTTL"), b("lab:x:k")]);
        assert_eq!(read_commands(&[]), vec![vec![b("TIME")]]);
        let replies = [
            Reply::ok(),
            Reply::Array(vec![Reply::Bulk(b("1700000000")), Reply::Bulk(b("123456"))]),
            Reply::Bulk(b("payload")),
            Reply::Integer(5000),
        ];
        let (now, keys) = parse_read(&[b("k")], &replies).unwrap();
        assert_eq!(now, 1_700_000_000_123);
        assert_eq!(keys[0].payload.as_deref(), Some(&b"payload"[..]));
        assert_eq!(keys[0].pttl, 5000);
    }

    #[test]
    fn exec_null_means_run_again() {
        let ok = [Reply::ok(), Reply::Status("QUEUED".into()), Reply::NilArray];
        assert_eq!(parse_apply(&ok), Applied::Changed);
        let done = [
            Reply::ok(),
            Reply::Status("QUEUED".into()),
            Reply::Array(vec![Reply::Integer(1)]),
        ];
        assert_eq!(parse_apply(&done), Applied::Done);
        let refused = [
            Reply::ok(),
            Reply::Error("NOPERM no".into()),
            Reply::Error("EXECABORT Transaction discarded".into()),
        ];
        assert_eq!(parse_apply(&refused), Applied::Refused("NOPERM no".into()));
        assert_eq!(parse_apply(&[Reply::ok()]), Applied::Done);
    }
}
