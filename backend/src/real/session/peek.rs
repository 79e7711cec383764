//! How the lock watch reads a key without disturbing it: the value (or its
//! type) and `PTTL` of each key, read on the node's administrative
//! connection (blocking lane) or pipelined behind a command (`fast.rs`).
//! Both lanes build and parse the same commands here.

use locklab_core::reply::Reply;

use super::{Argv, Session, SessionError};
use crate::real::conn::RealError;

impl Session {
    /// Look at a key of this session on node `n` without going through the
    /// session user (no rate limit, no trace): its value (`GET`, or the
    /// type's name for a non-string) and `PTTL`. `None` when the key does
    /// not exist. A lesson runner calls this after every step to turn what
    /// the server now holds into lock events.
    pub fn peek(&mut self, node: u32, key: &str) -> Result<Option<(String, i64)>, SessionError> {
        Ok(self.peek_many(node, &[key.to_owned()])?.pop().flatten())
    }

    /// [`peek`](Session::peek) for several keys in one round trip (one
    /// write of [`peek_commands`](Session::peek_commands)), whatever their
    /// number: a watcher looks at every lock key after a command, and one
    /// round trip per key made free play cost quadratically many as locks
    /// piled up.
    pub fn peek_many(&mut self, node: u32, keys: &[String]) -> Result<Vec<Peeked>, SessionError> {
        let n = node as usize;
        if n >= self.nodes.len() {
            return Err(SessionError::NoNode(node));
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.ensure_user(n)?;
        let commands = self.peek_commands(keys);
        let result = self.nodes[n]
            .admin
            .as_mut()
            .ok_or(RealError::EmptyCommand)
            .and_then(|a| a.pipeline(&commands));
        let replies = result.map_err(|source| {
            self.nodes[n].admin = None;
            self.nodes[n].user_ready = false;
            self.unreachable(n, source)
        })?;
        self.parse_peek(n, keys, replies)
    }

    /// The commands that peek at `keys` (as typed; prefixed here), to go
    /// in one write: for each key `MGET` (a one-key `MGET`, which reads a
    /// non-string as nil where `GET` would fail), `PTTL` and `TYPE`.
    ///
    /// Plain reads rather than a script: Redis runs the commands of one
    /// write back to back (`processInputBuffer` goes through what one read
    /// brought, 16 KB, before it serves another client), so a key's three
    /// answers agree as a script's would (past 16 KB, hundreds of keys, a
    /// key may change between two of its reads; the next look sees it
    /// whole), and they cost Redis about what three `GET`s do. The Lua
    /// script this replaced cost a command's worth more per look
    /// (measured with one client: 9.5 µs of redis-server's CPU per look
    /// against 1.5, and 15 µs against 4 on the round trip), and every
    /// watched command carries a look.
    pub(super) fn peek_commands(&self, keys: &[String]) -> Vec<Argv> {
        let mut out = Vec::with_capacity(keys.len() * PEEK_PER_KEY);
        for k in keys {
            let key = format!("{}{k}", self.sandbox.prefix).into_bytes();
            for name in [&b"MGET"[..], b"PTTL", b"TYPE"] {
                out.push(vec![name.to_vec(), key.clone()]);
            }
        }
        out
    }

    /// What a peek's `replies` (one per [`peek_commands`](Session::peek_commands)
    /// command, in order) say of each of `keys`. A key that expired
    /// between its reads (`PTTL` -2, or its value gone) is absent. An
    /// error reply (`BUSY`, `LOADING`) makes the look unreadable.
    pub(super) fn parse_peek(
        &self,
        n: usize,
        keys: &[String],
        replies: Vec<Reply>,
    ) -> Result<Vec<Peeked>, SessionError> {
        let refused = |text: String| SessionError::Setup {
            node: self.nodes[n].target.name.clone(),
            text,
        };
        if replies.len() != keys.len() * PEEK_PER_KEY {
            return Err(refused(format!(
                "{} replies to a look at {} keys",
                replies.len(),
                keys.len()
            )));
        }
        if let Some(Reply::Error(text)) = replies.iter().find(|r| r.is_error()) {
            return Err(refused(text.clone()));
        }
        Ok(replies
            .chunks(PEEK_PER_KEY)
            .map(|read| match read {
                [_, Reply::Integer(-2), _] => None,
                [Reply::Array(value), Reply::Integer(pttl), kind] => match (value.as_slice(), kind) {
                    ([Reply::Bulk(v)], _) => Some((String::from_utf8_lossy(v).into_owned(), *pttl)),
                    (_, Reply::Status(t)) if t != "string" && t != "none" => Some((format!("({t})"), *pttl)),
                    _ => None,
                },
                _ => None,
            })
            .collect())
    }
}

/// What a peek saw of one key: its value (or `(type)`) and `PTTL`; `None`
/// when it does not exist.
pub type Peeked = Option<(String, i64)>;

/// The commands [`Session::peek_commands`] sends for each key.
const PEEK_PER_KEY: usize = 3;
