//! The async lane: a session's commands on tokio, for the WebSocket.
//!
//! The blocking lane ([`Session::run`]) parks a thread per round trip, so
//! the web API had to hand every message to tokio's blocking pool; the
//! hand-off and the wake-ups cost more than the round trip itself (the
//! console ran at 0.135× the lock cycles of a direct client). This lane
//! goes through the same stages ([`phases`](super::phases): the checks,
//! the rewrite, the pre-flight on the simulator, the rate limit, the trace)
//! with [`Link`]s instead, and it pipelines what the protocol allows: the
//! lock watcher's peek is written in the same write as the command, on the
//! client's own link, and its reply read right after the command's, so a
//! watched command costs one round trip, not two.
//!
//! The peek may ride on the client's link only where Redis runs it as a
//! command of its own right after the user's: not inside `MULTI` (it would
//! be queued), not behind `MULTI` itself, and not behind a command that
//! changes what the connection accepts (the `@pubsub` ones). Otherwise it
//! goes on the node's admin link afterwards, as the blocking lane does.
//!
//! Everything else the blocking lane does is here too, on the admin link
//! (the [`NodeSlot`](super::NodeSlot)'s `reader`): making the ACL user, the
//! pre-flight's snapshot, `SCAN`, the check of a loaded library, and the
//! watchdog, which waits out the budget on a timer instead of a thread and
//! then asks and kills exactly as the blocking watchdog does. A session on
//! its own cluster (routing by slot, following `MOVED`) stays on the
//! blocking lane: [`Session::async_ready`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use locklab_core::actor::Actor;
use locklab_core::reply::Reply;
use locklab_core::server::table::{self, flags};
use locklab_core::server::Profile;
use locklab_core::trace::EventKind;

use super::link::{Dropped, Link};
use super::phases::{self, Before, Loaded, Outcome, Prepared};
use super::preflight::Verdict;
use super::{acl_rules, acl_rules_later, setuser, watchdog, Argv, Confinement, Peeked, Session, SessionError};
use crate::real::conn::RealError;
use crate::real::replies::Subscription;
use crate::real::stages::Stage;

/// What one exchange with the server brought back.
struct Exchanged {
    reply: Result<Reply, RealError>,
    killed: bool,
    /// The pipelined peek's result: `None` when none was sent; `Some(None)`
    /// when it could not be read.
    peeked: Option<Option<Vec<Peeked>>>,
    /// What of the reply the link dropped past its cap.
    dropped: Dropped,
}

impl Session {
    /// Can this session's commands take the async lane? Every session but
    /// one on its own cluster.
    pub fn async_ready(&self) -> bool {
        self.sandbox.confinement == Confinement::Prefix
    }

    /// [`Session::run`] on the async lane, and a look at `peek` (lock keys,
    /// as typed) on the node right after the command: what each holds,
    /// read in the same round trip where the protocol allows. The peek is
    /// `None` when the command did not run or the keys could not be read;
    /// `Some` of an empty list when no keys were asked for.
    pub async fn run_async(
        &mut self,
        client: &str,
        node: u32,
        argv: &[Vec<u8>],
        peek: &[String],
    ) -> Result<(Reply, Option<Vec<Peeked>>), SessionError> {
        let c = self.client_index(client)?;
        if !self.async_ready() {
            return Err(SessionError::NotAllowed {
                name: "the async lane".into(),
                why: "a session on its own cluster routes by slot on the blocking lane",
            });
        }
        let result = self.run_inner_async(c, node, argv, peek).await;
        if let Err(e) = &result {
            if !matches!(e, SessionError::Unreachable { .. }) {
                let at_ms = self.now_ms();
                self.push(at_ms, Actor::Client(c), EventKind::Note { text: e.to_string() });
            }
        }
        result
    }

    async fn run_inner_async(
        &mut self,
        c: u32,
        node: u32,
        argv: &[Vec<u8>],
        peek: &[String],
    ) -> Result<(Reply, Option<Vec<Peeked>>), SessionError> {
        let n = node as usize;
        let t = Instant::now();
        let before = self.prepare(c, node, argv);
        self.stage(Stage::Checks, t);
        let prep = match before? {
            Before::Answer(reply) => return Ok((reply, self.peek_async(n, peek).await)),
            Before::Send(p) => p,
        };
        let t = Instant::now();
        let (early, fresh) = self.preflight_async(n, &prep).await?;
        if let Some(reply) = early {
            return Ok((reply, self.peek_async(n, peek).await));
        }
        if let Some(wait) = self.take_token()? {
            // Backpressure: the token will be there after `wait`.
            tokio::time::sleep(wait).await;
        }
        self.stage(Stage::Checks, t);
        if prep.simulate {
            let sent_at = self.now_ms();
            // The look rides behind the script's writes, on the applier's
            // link: one round trip fewer than a look of its own.
            let (reply, peeked) = self.simulate_async(c, n, argv, &prep, peek).await?;
            let t = Instant::now();
            let reply = self.finish_simulated((c, node), argv, &prep, (sent_at, reply));
            self.stage(Stage::Trace, t);
            let reply = reply?;
            let peeked = match peeked {
                Some(p) => p,
                None => self.peek_async(n, peek).await,
            };
            return Ok((reply, peeked));
        }
        let t = Instant::now();
        let begun = self.begin(c, node, argv);
        self.stage(Stage::Trace, t);
        let t = Instant::now();
        let ride = !peek.is_empty() && !prep.scan && self.peek_may_ride(&prep, argv);
        let ex = self.exchange(n, &prep, fresh, ride.then_some(peek)).await?;
        let loaded = match self.loaded_library(argv, &ex.reply) {
            Some(lib) => self.check_loaded_async(n, &lib).await,
            None => Ok(()),
        };
        self.stage(Stage::Send, t);
        let outcome = Outcome {
            reply: ex.reply,
            killed: ex.killed,
            loaded,
            dropped: ex.dropped,
        };
        let t = Instant::now();
        let reply = self.finish((c, node), argv, &prep, begun, outcome);
        self.stage(Stage::Trace, t);
        let reply = reply?;
        let peeked = match ex.peeked {
            Some(p) => p,
            None => self.peek_async(n, peek).await,
        };
        Ok((reply, peeked))
    }

    /// What `keys` (lock keys, as typed) hold on node `node`, read on its
    /// admin link: free play's look when a watched lock is due to expire
    /// and nobody typed. `None` when they could not be read.
    pub async fn peek_async_on(&mut self, node: u32, keys: &[String]) -> Option<Vec<Peeked>> {
        if node as usize >= self.nodes.len() {
            return None;
        }
        self.peek_async(node as usize, keys).await
    }

    /// May the peek be written behind `argv` on the client's link? Only
    /// where Redis runs it right after, as a command of its own.
    fn peek_may_ride(&self, prep: &Prepared, argv: &[Vec<u8>]) -> bool {
        let name = &argv[0];
        let leaves_multi = name.eq_ignore_ascii_case(b"exec") || name.eq_ignore_ascii_case(b"discard");
        if self.multi.contains_key(&prep.link) && !leaves_multi {
            return false;
        }
        let pubsub = table::find(name, Profile::V8_4).is_some_and(|cmd| cmd.flags & flags::PUBSUB != 0);
        !pubsub && !name.eq_ignore_ascii_case(b"multi")
    }

    /// Send the prepared command (and the peek, when it rides along) and
    /// read what comes back, with the watchdog on a script.
    async fn exchange(
        &mut self,
        n: usize,
        prep: &Prepared,
        fresh: bool,
        peek: Option<&[String]>,
    ) -> Result<Exchanged, SessionError> {
        let plain = |reply| Exchanged {
            reply,
            killed: false,
            peeked: None,
            dropped: Dropped::default(),
        };
        if prep.scan {
            // The session's SCAN: the ACL user may not SCAN (its results
            // are not confined by key patterns), so the admin link runs
            // it, confined by MATCH to the session's prefix.
            return Ok(plain(self.admin_async(n, &prep.rewritten).await));
        }
        let mut link = match self.take_link(prep.link).await {
            Ok(l) => l,
            Err(e) => return Ok(plain(Err(e))),
        };
        let mut admin = match &prep.checked {
            Some(_) => match self.killer_async(n, fresh).await {
                Ok(a) => Some(a),
                Err(e) => {
                    self.links.insert(prep.link, link);
                    return Err(e);
                }
            },
            None => None,
        };
        let queued = self.queued_for_exec(prep);
        let peek_commands = peek.map(|keys| self.peek_commands(keys)).unwrap_or_default();
        let mut commands: Vec<&[Vec<u8>]> = vec![&prep.rewritten];
        commands.extend(peek_commands.iter().map(Vec::as_slice));
        let (reply, killed) = match link.send(&commands).await {
            Err(e) => (Err(e), false),
            Ok(()) => {
                let watch = admin.as_mut().zip(prep.checked.as_ref());
                let budget = self.sandbox.limits.script_budget;
                read_watched(
                    &mut link,
                    prep.is_exec,
                    watch.map(|(a, (_, sent))| (a, sent.as_slice(), budget)),
                )
                .await
            }
        };
        // Every reply the command wrote is read before the next is sent.
        let reply = match reply {
            Ok(first) => link.read_rest(&prep.rewritten, &queued, first).await,
            Err(e) => Err(e),
        };
        let dropped = link.take_dropped();
        let peeked = match (peek, &reply) {
            (Some(keys), Ok(_)) => Some(match link.read_many(peek_commands.len()).await {
                Ok(replies) => self.parse_peek(n, keys, replies).ok(),
                Err(_) => None,
            }),
            _ => None,
        };
        self.put_reader(n, admin);
        if link.usable() {
            self.links.insert(prep.link, link);
        }
        Ok(Exchanged {
            reply,
            killed,
            peeked,
            dropped,
        })
    }

    /// What an `EXEC`'s transaction queued (as sent), when one of its
    /// commands may write more than one reply, so the `EXEC` is read back
    /// in step ([`Link::read_rest`], [`RealConnection::read_rest`](crate::real::conn::RealConnection::read_rest));
    /// empty otherwise.
    pub(super) fn queued_for_exec(&self, prep: &Prepared) -> Vec<Argv> {
        match self.multi.get(&prep.link) {
            Some(q) if prep.is_exec && q.iter().any(|(_, sent)| Subscription::of(&sent[0]).is_some()) => {
                q.iter().map(|(_, sent)| sent.clone()).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The pre-flight of a command that runs Lua, on the admin link:
    /// `Some(reply)` when the simulator's answer is the reply; `Err` when
    /// the script is refused (a refused `EXEC` discards its transaction).
    /// The flag says the admin link was just answered (the snapshot).
    async fn preflight_async(&mut self, n: usize, prep: &Prepared) -> Result<(Option<Reply>, bool), SessionError> {
        let Some((batch, _)) = prep.checked.as_ref().filter(|_| prep.preflight) else {
            return Ok((None, false));
        };
        let mut fresh = false;
        let verdict = match (self.verdict_unread(prep), self.snapshot_request()) {
            (Some(verdict), _) => verdict,
            (None, Err(why)) => Verdict::Refuse(why),
            (None, Ok(None)) => self.judge(&[], None, batch),
            (None, Ok(Some((keys, argv)))) => {
                let mut admin = self.take_reader(n).await?;
                match admin.execute(&argv).await {
                    Ok(reply) => {
                        self.put_reader(n, Some(admin));
                        fresh = true;
                        self.judge(&keys, Some(&reply), batch)
                    }
                    Err(source) => return Err(self.unreachable(n, source)),
                }
            }
        };
        match verdict {
            Verdict::Send => Ok((None, fresh)),
            Verdict::Answer(reply) => Ok((Some(reply), fresh)),
            Verdict::Refuse(why) => {
                if prep.is_exec {
                    // The transaction is over either way: discard it.
                    self.multi.remove(&prep.link);
                    if let Some(link) = self.links.get_mut(&prep.link) {
                        let _ = link.execute(&[b"DISCARD".to_vec()]).await;
                    }
                }
                Err(SessionError::ScriptRefused(why))
            }
        }
    }

    /// The admin link a script's watchdog asks and kills through, seen to
    /// answer right before the script goes out (`fresh`: the snapshot just
    /// was), so a script running when it times out is taken for the
    /// session's own, as the blocking watchdog takes it.
    async fn killer_async(&mut self, n: usize, fresh: bool) -> Result<Link, SessionError> {
        let mut admin = self.take_reader(n).await?;
        if !fresh {
            if let Err(source) = admin.execute(&[b"PING".to_vec()]).await {
                return Err(self.unreachable(n, source));
            }
        }
        Ok(admin)
    }

    /// `argv` on node `n`'s admin link.
    async fn admin_async(&mut self, n: usize, argv: &[Vec<u8>]) -> Result<Reply, RealError> {
        let mut admin = self.take_reader(n).await.map_err(as_real)?;
        let reply = admin.execute(argv).await;
        self.put_reader(n, Some(admin));
        reply
    }

    /// What `keys` hold on node `n`, read on its admin link (`None`: could
    /// not be read). No keys, no round trip.
    async fn peek_async(&mut self, n: usize, keys: &[String]) -> Option<Vec<Peeked>> {
        if keys.is_empty() {
            return Some(Vec::new());
        }
        let t = Instant::now();
        let commands = self.peek_commands(keys);
        let mut admin = self.take_reader(n).await.ok()?;
        let replies = admin.pipeline(&commands).await;
        self.put_reader(n, Some(admin));
        self.stage(Stage::Send, t);
        self.parse_peek(n, keys, replies.ok()?).ok()
    }

    /// [`Session::loaded_library`]'s check on the admin link.
    async fn check_loaded_async(&mut self, n: usize, lib: &[u8]) -> Result<(), SessionError> {
        let Ok(mut admin) = self.take_reader(n).await else {
            return Err(SessionError::NoNode(n as u32));
        };
        let list = admin.execute(&phases::function_list(lib)).await;
        let verdict = self.judge_loaded(lib, list.as_ref().ok());
        if verdict == Loaded::Delete {
            let _ = admin.execute(&phases::function_delete(lib)).await;
        }
        self.put_reader(n, Some(admin));
        match verdict {
            Loaded::Fine => Ok(()),
            Loaded::Delete | Loaded::Refuse => Err(phases::library_refused()),
        }
    }

    /// Node `n`'s admin link, taken out of the session (give it back with
    /// [`Session::put_reader`]); opened on first use, and the ACL user made
    /// through it, since a new admin connection may follow a restart that
    /// forgot the user (`ACL SETUSER` is idempotent).
    async fn take_reader(&mut self, n: usize) -> Result<Link, SessionError> {
        if let Some(r) = self.nodes[n].reader.take().filter(Link::usable) {
            return Ok(r);
        }
        let url = self.nodes[n].target.url.clone();
        let timeout = self.sandbox.limits.reply_timeout;
        let mut admin = Link::open(&url, timeout)
            .await
            .map_err(|source| self.unreachable(n, source))?;
        let argvs = [
            setuser(acl_rules(&self.user, &self.password, &self.sandbox.prefix)),
            setuser(acl_rules_later(&self.user)),
        ];
        match admin.pipeline(&argvs).await {
            // The second may fail: a 7.0 server knows no `DELEX`.
            Ok(replies) => match replies.into_iter().next() {
                Some(Reply::Error(text)) => Err(SessionError::Setup {
                    node: self.nodes[n].target.name.clone(),
                    text,
                }),
                _ => Ok(admin),
            },
            Err(source) => Err(self.unreachable(n, source)),
        }
    }

    /// Give node `n`'s admin link back, unless it is out of step.
    fn put_reader(&mut self, n: usize, admin: Option<Link>) {
        if let Some(a) = admin.filter(Link::usable) {
            self.nodes[n].reader = Some(a);
        }
    }

    /// Client `link.0`'s link to node `link.1`, taken out of the session:
    /// the one it has, or a new one logged in as the session user (after
    /// the ACL user is made on that node). A blocking connection the
    /// client had there is closed, and with it any transaction it had open.
    pub(super) async fn take_link(&mut self, key: (u32, u32)) -> Result<Link, RealError> {
        if let Some(l) = self.links.remove(&key).filter(Link::usable) {
            return Ok(l);
        }
        let n = key.1 as usize;
        let admin = self.take_reader(n).await.map_err(as_real)?;
        self.put_reader(n, Some(admin));
        let url = self.client_url(key.0, n);
        let mut link = Link::open(&url, self.sandbox.limits.reply_timeout).await?;
        let auth = [
            b"AUTH".to_vec(),
            self.user.clone().into_bytes(),
            self.password.clone().into_bytes(),
        ];
        if let Reply::Error(text) = link.execute(&auth).await? {
            return Err(RealError::Unsupported(format!(
                "AUTH as the session user failed: {text}"
            )));
        }
        if self.conns.remove(&key).is_some() {
            self.multi.remove(&key);
        }
        link.keep_at_most(self.sandbox.limits.max_reply_bytes);
        Ok(link)
    }
}

/// A session error where a transport error is expected (the connection
/// could not be made ready).
fn as_real(e: SessionError) -> RealError {
    match e {
        SessionError::Unreachable { source, .. } => source,
        other => RealError::Unsupported(other.to_string()),
    }
}

/// Read a command's reply; for a script (`watch`: the admin link, the
/// argvs as sent, the budget), with the watchdog: past the budget it asks
/// and kills through the admin link while the reply is still awaited.
/// Whether it killed.
async fn read_watched(
    link: &mut Link,
    exec: bool,
    watch: Option<(&mut Link, &[Argv], Duration)>,
) -> (Result<Reply, RealError>, bool) {
    let Some((admin, sent, budget)) = watch else {
        return (link.read(exec).await, false);
    };
    let reply = link.read(exec);
    tokio::pin!(reply);
    tokio::select! {
        r = &mut reply => return (r, false),
        () = tokio::time::sleep(budget) => {}
    }
    let killed = AtomicBool::new(false);
    let kill = watchdog::watch_async(admin, sent, &killed);
    tokio::pin!(kill);
    let r = tokio::select! {
        r = &mut reply => r,
        () = &mut kill => reply.await,
    };
    (r, killed.load(Ordering::SeqCst))
}
