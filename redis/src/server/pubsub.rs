//! Publish/subscribe state: who listens to which channel or pattern.
//!
//! redis-server's `pubsub.c`. Subscribers of a channel are kept in the
//! order they subscribed (redis-server appends to a list per channel), and
//! patterns in subscription order too, so a message reaches its receivers
//! in the same order as on redis-server: channel subscribers first, then
//! pattern subscribers. Messages leave the node as [`Outbound`] pushes; the
//! host (sim-server) writes them to the receivers' sockets, as a RESP2 array
//! or a RESP3 push depending on each receiver's protocol.
//!
//! A connection's own channels and patterns are sets, as redis-server's
//! per-client dicts are (`c->pubsub_channels`), so subscribing to, or
//! leaving, n channels costs O(n log n), not O(n²) (issue 42, row 7: 100 k
//! channels took 23.6 s, then froze the server for 27 s on disconnect).
//! They also remember subscription order: an `UNSUBSCRIBE` without
//! arguments walks them in that order, where redis-server walks a hash
//! table (an order that is deterministic here, which core must be).

use std::collections::{BTreeMap, BTreeSet};

use super::glob::glob_match;
use super::{ConnId, Engine, Outbound};
use crate::reply::Reply;

/// A set that remembers insertion order: O(log n) insert, remove and
/// lookup, iteration in the order the members came.
#[derive(Clone, Debug)]
struct OrderedSet<T: Ord + Clone> {
    next: u64,
    by_seq: BTreeMap<u64, T>,
    seq_of: BTreeMap<T, u64>,
}

impl<T: Ord + Clone> Default for OrderedSet<T> {
    fn default() -> Self {
        OrderedSet {
            next: 0,
            by_seq: BTreeMap::new(),
            seq_of: BTreeMap::new(),
        }
    }
}

impl<T: Ord + Clone> OrderedSet<T> {
    /// False when it was there already (its place is kept).
    fn insert(&mut self, item: T) -> bool {
        if self.seq_of.contains_key(&item) {
            return false;
        }
        self.by_seq.insert(self.next, item.clone());
        self.seq_of.insert(item, self.next);
        self.next += 1;
        true
    }

    fn remove(&mut self, item: &T) -> bool {
        match self.seq_of.remove(item) {
            Some(seq) => {
                self.by_seq.remove(&seq);
                true
            }
            None => false,
        }
    }

    fn len(&self) -> usize {
        self.by_seq.len()
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.by_seq.values()
    }
}

#[derive(Clone, Debug, Default)]
struct Subs {
    channels: OrderedSet<Vec<u8>>,
    patterns: OrderedSet<Vec<u8>>,
}

/// The node's subscriptions, and which connections speak RESP3.
#[derive(Clone, Debug, Default)]
pub(crate) struct PubSub {
    channels: BTreeMap<Vec<u8>, Vec<ConnId>>,
    /// `(pattern, subscriber)` in subscription order.
    patterns: OrderedSet<(Vec<u8>, ConnId)>,
    clients: BTreeMap<ConnId, Subs>,
    resp3: BTreeSet<ConnId>,
}

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

impl PubSub {
    /// `clientSubscriptionsCount`: channels plus patterns.
    pub(crate) fn count(&self, conn: ConnId) -> usize {
        self.clients
            .get(&conn)
            .map_or(0, |s| s.channels.len() + s.patterns.len())
    }

    /// In RESP2 a subscribed connection may only run a few commands.
    pub(crate) fn restricted(&self, conn: ConnId) -> bool {
        self.count(conn) > 0 && !self.resp3.contains(&conn)
    }

    pub(crate) fn set_resp3(&mut self, conn: ConnId, on: bool) {
        if on {
            self.resp3.insert(conn);
        } else {
            self.resp3.remove(&conn);
        }
    }

    /// `pubsubSubscribeChannel`: the confirmation push.
    pub(crate) fn subscribe(&mut self, conn: ConnId, channel: &[u8]) -> Reply {
        let subs = self.clients.entry(conn).or_default();
        if subs.channels.insert(channel.to_vec()) {
            self.channels.entry(channel.to_vec()).or_default().push(conn);
        }
        self.confirm("subscribe", Some(channel), conn)
    }

    /// `pubsubUnsubscribeChannel`: the confirmation push (sent even when
    /// the connection was not subscribed).
    pub(crate) fn unsubscribe(&mut self, conn: ConnId, channel: &[u8]) -> Reply {
        let was = self
            .clients
            .get_mut(&conn)
            .is_some_and(|subs| subs.channels.remove(&channel.to_vec()));
        // The channel's own list is searched only when the connection was
        // in it (`listSearchKey`, linear in that channel's subscribers).
        if was {
            if let Some(list) = self.channels.get_mut(channel) {
                list.retain(|c| *c != conn);
                if list.is_empty() {
                    self.channels.remove(channel);
                }
            }
        }
        self.confirm("unsubscribe", Some(channel), conn)
    }

    pub(crate) fn psubscribe(&mut self, conn: ConnId, pattern: &[u8]) -> Reply {
        let subs = self.clients.entry(conn).or_default();
        if subs.patterns.insert(pattern.to_vec()) {
            self.patterns.insert((pattern.to_vec(), conn));
        }
        self.confirm("psubscribe", Some(pattern), conn)
    }

    pub(crate) fn punsubscribe(&mut self, conn: ConnId, pattern: &[u8]) -> Reply {
        if let Some(subs) = self.clients.get_mut(&conn) {
            subs.patterns.remove(&pattern.to_vec());
        }
        self.patterns.remove(&(pattern.to_vec(), conn));
        self.confirm("punsubscribe", Some(pattern), conn)
    }

    /// The connection's channels (or patterns), in subscription order.
    pub(crate) fn channels_of(&self, conn: ConnId, patterns: bool) -> Vec<Vec<u8>> {
        self.clients
            .get(&conn)
            .map(|s| {
                let set = if patterns { &s.patterns } else { &s.channels };
                set.iter().cloned().collect()
            })
            .unwrap_or_default()
    }

    /// `[kind, name, count]` as a push.
    pub(crate) fn confirm(&mut self, kind: &str, name: Option<&[u8]>, conn: ConnId) -> Reply {
        let count = self.count(conn);
        if count == 0 {
            self.clients.remove(&conn);
        }
        Reply::Push(vec![
            bulk(kind.as_bytes()),
            name.map_or(Reply::Nil, bulk),
            Reply::Integer(count as i64),
        ])
    }

    /// Forget a connection entirely (it left, or `RESET`).
    pub(crate) fn drop_conn(&mut self, conn: ConnId) {
        for ch in self.channels_of(conn, false) {
            self.unsubscribe(conn, &ch);
        }
        for p in self.channels_of(conn, true) {
            self.punsubscribe(conn, &p);
        }
        self.clients.remove(&conn);
    }

    /// `pubsubPublishMessage`: the pushes, and how many receivers.
    pub(crate) fn publish(&self, channel: &[u8], message: &[u8], out: &mut Vec<Outbound>) -> i64 {
        let mut n = 0;
        if let Some(list) = self.channels.get(channel) {
            for &conn in list {
                out.push(Outbound {
                    conn,
                    reply: Reply::Push(vec![bulk(b"message"), bulk(channel), bulk(message)]),
                });
                n += 1;
            }
        }
        for (pattern, conn) in self.patterns.iter() {
            if glob_match(pattern, channel, false) {
                out.push(Outbound {
                    conn: *conn,
                    reply: Reply::Push(vec![bulk(b"pmessage"), bulk(pattern), bulk(channel), bulk(message)]),
                });
                n += 1;
            }
        }
        n
    }

    /// Channels with at least one subscriber, matching `pattern` if given.
    pub(crate) fn active_channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.channels
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    pub(crate) fn numsub(&self, channel: &[u8]) -> usize {
        self.channels.get(channel).map_or(0, Vec::len)
    }

    /// `PUBSUB NUMPAT`: patterns subscribed by anyone, counted once each.
    pub(crate) fn numpat(&self) -> usize {
        self.patterns.iter().map(|(p, _)| p).collect::<BTreeSet<_>>().len()
    }
}

impl Engine {
    /// The connection running the current command, if any (not during
    /// replication).
    pub(crate) fn conn(&self) -> Option<ConnId> {
        self.conn
    }
}
