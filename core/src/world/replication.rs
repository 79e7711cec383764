//! Replication: shipping a master's stream to its replicas, and `WAIT`.
//!
//! A master's propagated batches travel to each live replica over a
//! replication link with a lag; a cut link keeps them in a backlog sent on
//! healing (a partial resync), a replica coming back or re-pointed resyncs
//! in full. `WAIT` is answered by the world from the replicas' real
//! acknowledgements, as redis-server's `waitCommand` answers from
//! `REPLCONF ACK` offsets.

use super::queue::Item;
use super::{text, Waiter, World};
use crate::actor::Actor;
use crate::client::Argv;
use crate::observe::Cause;
use crate::reply::Reply;
use crate::server::db::Value;
use crate::trace::EventKind;

fn parse_u64(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

impl World {
    pub(super) fn ship(&mut self, master: u32, batches: Vec<Vec<Argv>>, origin: Option<u32>) {
        let lag = self.cfg.replication;
        // A follower that is down resyncs in full when it comes back.
        let followers: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&r| self.nodes[r as usize].master_of == Some(master) && !self.nodes[r as usize].down)
            .collect();
        for batch in batches {
            let m = &mut self.nodes[master as usize];
            m.offset += 1;
            let offset = m.offset;
            let inc = m.inc;
            for &r in &followers {
                let link = self.repl.entry((master, r)).or_default();
                if link.cut {
                    link.backlog.push((offset, batch.clone(), origin));
                    continue;
                }
                let t = link.lane.transit(self.now, lag.lag_ms, lag.jitter_ms, &mut self.net);
                self.push(
                    t,
                    Item::AtReplica {
                        from: master,
                        to: r,
                        inc,
                        offset,
                        batch: batch.clone(),
                        origin,
                    },
                );
            }
        }
    }

    pub(super) fn at_replica(
        &mut self,
        from: u32,
        to: u32,
        inc: u32,
        offset: u64,
        batch: Vec<Argv>,
        origin: Option<u32>,
    ) {
        let ok = !self.nodes[to as usize].down
            && self.nodes[to as usize].master_of == Some(from)
            && self.nodes[from as usize].inc == inc;
        if !ok {
            self.emit(Actor::Node(to), EventKind::ReplicationLost { from, offset });
            return;
        }
        self.sync_node(to);
        let r = &mut self.nodes[to as usize];
        r.node.apply_replicated(&batch);
        let _ = r.node.take_propagated();
        r.applied = offset;
        self.emit(
            Actor::Node(to),
            EventKind::Replicated {
                from,
                offset,
                commands: text(&batch),
            },
        );
        self.node_effects(to, Cause::Replication(origin));
        self.check_waiters(from);
    }

    /// Replace `dst`'s data with `src`'s (a replica's full resync).
    pub(super) fn full_sync(&mut self, src: u32, dst: u32) {
        let (s, d) = (src as usize, dst as usize);
        if self.nodes[s].down || self.nodes[d].down {
            return;
        }
        self.sync_node(src);
        self.sync_node(dst);
        let conn = match self.nodes[s].internal {
            Some(c) => c,
            None => {
                let c = self.nodes[s].node.connect();
                self.nodes[s].internal = Some(c);
                c
            }
        };
        let keys = match self.nodes[s].node.execute(conn, &[b"KEYS".to_vec(), b"*".to_vec()]) {
            Reply::Array(items) => items
                .into_iter()
                .filter_map(|r| match r {
                    Reply::Bulk(b) => Some(b),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        self.node_effects(src, Cause::Expiry);
        let mut batch: Vec<Argv> = Vec::new();
        for k in keys {
            let Some(e) = self.nodes[s].node.peek(0, &k) else {
                continue;
            };
            match &e.value {
                Value::Str(v) => {
                    let mut a = vec![b"SET".to_vec(), k.clone(), v.clone()];
                    if let Some(at) = e.expires_at {
                        a.push(b"PXAT".to_vec());
                        a.push(at.to_string().into_bytes());
                    }
                    batch.push(a);
                }
                other => {
                    batch.extend(other.restore_argvs(&k));
                    if let Some(at) = e.expires_at {
                        batch.push(vec![b"PEXPIREAT".to_vec(), k.clone(), at.to_string().into_bytes()]);
                    }
                }
            }
        }
        let offset = self.nodes[s].offset;
        let r = &mut self.nodes[d];
        r.node.wipe();
        if !batch.is_empty() {
            r.node.apply_replicated(&batch);
        }
        let _ = r.node.take_propagated();
        r.applied = offset;
        self.node_effects(dst, Cause::Sync(src));
    }

    pub(super) fn flush_backlog(&mut self, master: u32, replica: u32) {
        let lag = self.cfg.replication;
        let inc = self.nodes[master as usize].inc;
        let Some(link) = self.repl.get_mut(&(master, replica)) else {
            return;
        };
        let backlog = std::mem::take(&mut link.backlog);
        let mut items = Vec::new();
        for (offset, batch, origin) in backlog {
            let t = link.lane.transit(self.now, lag.lag_ms, lag.jitter_ms, &mut self.net);
            items.push((
                t,
                Item::AtReplica {
                    from: master,
                    to: replica,
                    inc,
                    offset,
                    batch,
                    origin,
                },
            ));
        }
        for (t, item) in items {
            self.push(t, item);
        }
    }

    pub(super) fn acked(&self, master: u32, target: u64) -> u64 {
        self.nodes
            .iter()
            .filter(|r| r.master_of == Some(master) && !r.down && r.applied >= target)
            .count() as u64
    }

    /// `WAIT numreplicas timeout` on a master, answered from real
    /// acknowledgements. Returns false when the node should answer itself
    /// (a replica, inside MULTI, or arguments it will reject).
    pub(super) fn try_wait(&mut self, c: u32, node: u32, req: u64, argv: &Argv) -> bool {
        if argv.len() != 3 || !argv[0].eq_ignore_ascii_case(b"WAIT") {
            return false;
        }
        if self.nodes[node as usize].master_of.is_some() {
            return false;
        }
        let conn = self.conn(c, node);
        if self.nodes[node as usize].node.in_multi(conn) {
            return false;
        }
        let (Some(need), Some(timeout)) = (parse_u64(&argv[1]), parse_u64(&argv[2])) else {
            return false;
        };
        let target = self.nodes[node as usize].offset;
        let id = self.next_wait;
        self.next_wait += 1;
        let w = Waiter {
            id,
            node,
            client: c,
            req,
            target,
            need,
            argv: argv.clone(),
        };
        let acked = self.acked(node, target);
        if need == 0 || acked >= need {
            self.finish_wait(w, acked);
            return true;
        }
        if timeout > 0 {
            self.push(self.now.saturating_add(timeout), Item::WaitTimeout { id });
        }
        self.waiters.push(w);
        true
    }

    pub(super) fn finish_wait(&mut self, w: Waiter, acked: u64) {
        let replies = vec![Reply::Integer(acked as i64)];
        self.emit(
            Actor::Node(w.node),
            EventKind::Executed {
                req: w.req,
                client: w.client,
                commands: text(&[w.argv]),
                replies: replies.clone(),
            },
        );
        self.reply_to(w.client, w.node, w.req, replies);
    }

    fn check_waiters(&mut self, master: u32) {
        let mut i = 0;
        while i < self.waiters.len() {
            let w = &self.waiters[i];
            if w.node == master {
                let acked = self.acked(master, w.target);
                if acked >= w.need {
                    let w = self.waiters.remove(i);
                    self.finish_wait(w, acked);
                    continue;
                }
            }
            i += 1;
        }
    }
}
