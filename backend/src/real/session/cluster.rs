//! A session on its own managed cluster behaves like `redis-cli -c`: a
//! command with keys goes to the node that owns their slot (read from
//! `CLUSTER SLOTS`), and a `MOVED` or `ASK` that still comes back is
//! followed, a bounded number of times. Apart from the blocking lane
//! because only [`Confinement::OwnCluster`](super::Confinement) sessions
//! route.

use locklab_core::actor::Actor;
use locklab_core::reply::Reply;
use locklab_core::server::cluster::key_slot;
use locklab_core::server::{table, Profile};
use locklab_core::trace::EventKind;

use super::{Confinement, Session, SessionError};
use crate::real::conn::display_addr;

impl Session {
    /// [`run`](Session::run), and the node whose reply it is: on the
    /// session's own cluster, after routing by slot and following any
    /// redirect, that is where the command ran, so it is where a lock
    /// watcher must look.
    pub fn run_routed(&mut self, client: &str, node: u32, argv: &[Vec<u8>]) -> Result<(u32, Reply), SessionError> {
        let c = self.client_index(client)?;
        let routed = self.route(node, argv);
        if routed != node {
            let text = format!(
                "routed to {} by the slot of its first key, as a cluster client routes it",
                self.nodes[routed as usize].target.name
            );
            let at_ms = self.now_ms();
            self.push(at_ms, Actor::Client(c), EventKind::Note { text });
        }
        let mut at = routed;
        let mut result = self.run_inner(c, routed, argv);
        for _ in 0..MAX_REDIRECTS {
            let Ok(Reply::Error(e)) = &result else { break };
            let Some((to, ask, text)) = self.redirect(e) else { break };
            let at_ms = self.now_ms();
            self.push(at_ms, Actor::Client(c), EventKind::Note { text });
            if ask {
                // ASK: this one command, on the importing node, after ASKING.
                let asking = self
                    .conn(c, to as usize)
                    .and_then(|conn| conn.execute(&[b"ASKING".to_vec()]));
                if let Err(source) = asking {
                    return Err(self.unreachable(to as usize, source));
                }
            } else {
                // MOVED: the slot has a new owner for good; re-read them all.
                self.slots.clear();
            }
            at = to;
            result = self.run_inner(c, to, argv);
        }
        if let Err(e) = &result {
            if !matches!(e, SessionError::Unreachable { .. }) {
                let at_ms = self.now_ms();
                self.push(at_ms, Actor::Client(c), EventKind::Note { text: e.to_string() });
            }
        }
        result.map(|reply| (at, reply))
    }

    /// The node `argv` goes to: `node`, except that on the session's own
    /// cluster a command with keys goes to the node serving its first
    /// key's slot (Redis answers `CROSSSLOT` there if the others differ).
    /// A lesson runner asks first, to know which client–node link the
    /// command takes.
    pub fn route(&mut self, node: u32, argv: &[Vec<u8>]) -> u32 {
        if self.sandbox.confinement != Confinement::OwnCluster {
            return node;
        }
        let Some(cmd) = argv.first().and_then(|name| table::find(name, Profile::V8_4)) else {
            return node;
        };
        let Some(&first) = cmd.key_indexes(argv).first() else {
            return node;
        };
        let slot = key_slot(&argv[first]);
        if self.slots.is_empty() {
            self.load_slots();
        }
        self.slots
            .iter()
            .find(|&&(lo, hi, _)| (lo..=hi).contains(&slot))
            .map_or(node, |&(_, _, n)| n)
    }

    /// Read the slot map with `CLUSTER SLOTS` from the first node that
    /// answers. Best effort: without a map, commands go where they are
    /// sent and a `MOVED` brings them to the right node.
    pub(super) fn load_slots(&mut self) {
        for n in 0..self.nodes.len() {
            if self.ensure_user(n).is_err() {
                continue;
            }
            let Some(admin) = self.nodes[n].admin.as_mut() else {
                continue;
            };
            let Ok(Reply::Array(ranges)) = admin.execute(&[b"CLUSTER".to_vec(), b"SLOTS".to_vec()]) else {
                continue;
            };
            let mut slots = Vec::new();
            for range in &ranges {
                // [start, end, [ip, port, id], replicas…]
                let Reply::Array(parts) = range else { continue };
                let (Some(Reply::Integer(lo)), Some(Reply::Integer(hi)), Some(Reply::Array(master))) =
                    (parts.first(), parts.get(1), parts.get(2))
                else {
                    continue;
                };
                let (Some(Reply::Bulk(ip)), Some(Reply::Integer(port))) = (master.first(), master.get(1)) else {
                    continue;
                };
                let addr = format!("{}:{port}", String::from_utf8_lossy(ip));
                if let (Some(node), Ok(lo), Ok(hi)) = (self.node_at(&addr), u16::try_from(*lo), u16::try_from(*hi)) {
                    slots.push((lo, hi, node));
                }
            }
            self.slots = slots;
            return;
        }
    }

    /// The node whose address is `host:port`.
    pub(super) fn node_at(&self, addr: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| display_addr(&n.target.url) == addr)
            .map(|i| i as u32)
    }

    /// For a `MOVED <slot> <host:port>` or `ASK …` error on the session's
    /// own cluster: the node to follow to, whether it is an `ASK`, and the
    /// line `redis-cli -c` prints for it.
    pub(super) fn redirect(&self, error: &str) -> Option<(u32, bool, String)> {
        if self.sandbox.confinement != Confinement::OwnCluster {
            return None;
        }
        let mut words = error.split(' ');
        let ask = match words.next()? {
            "MOVED" => false,
            "ASK" => true,
            _ => return None,
        };
        let slot = words.next()?;
        let addr = words.next()?;
        let to = self.node_at(addr)?;
        Some((to, ask, format!("-> Redirected to slot [{slot}] located at {addr}")))
    }
}

/// How many `MOVED`/`ASK` redirects one command may follow (`redis-cli -c`
/// follows without a bound; a loop between two confused nodes must not
/// hang a session).
const MAX_REDIRECTS: usize = 5;
