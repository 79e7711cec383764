//! What an ended session leaves on a server is removed, even when the
//! server could not be reached at the time.
//!
//! A session ends (its WebSocket closed, its idle time ran out, the
//! backend stops) while its server may be answering `BUSY` to everybody (a
//! script the lab could not kill because it had written) or be down. Its
//! ACL user, keys and function libraries must still go: so the cleanup that
//! fails on a node is handed to the pool's janitor, a thread that tries
//! again every [`RETRY`] for up to [`ATTEMPTS`] times.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use locklab_core::reply::Reply;

use super::NodeTarget;
use crate::real::conn::RealConnection;

/// How often the janitor tries again.
const RETRY: Duration = Duration::from_secs(2);
/// How many times (ten minutes' worth) before it gives up on a node.
const ATTEMPTS: u32 = 300;

/// What one session leaves behind on its nodes.
#[derive(Clone, Debug)]
pub(crate) struct Cleanup {
    pub(crate) nodes: Vec<NodeTarget>,
    pub(crate) user: String,
    /// `lab:<id>:`, empty on the session's own cluster.
    pub(crate) prefix: String,
    /// `lab_<id>_`, empty on the session's own cluster.
    pub(crate) ns: String,
    pub(crate) own_cluster: bool,
}

impl Cleanup {
    /// Clean every node, through its admin connection when there is one.
    /// Returns the nodes where it did not finish.
    pub(crate) fn run(&self, admins: Vec<Option<RealConnection>>) -> Cleanup {
        let mut left = Cleanup {
            nodes: Vec::new(),
            ..self.clone()
        };
        let mut admins = admins.into_iter();
        for target in &self.nodes {
            let admin = admins
                .next()
                .flatten()
                .or_else(|| RealConnection::open(&target.url).ok());
            let done = admin.is_some_and(|mut a| {
                let _ = a.set_read_timeout(Some(Duration::from_secs(2)));
                self.clean(&mut a)
            });
            if !done {
                left.nodes.push(target.clone());
            }
        }
        left
    }

    /// One node: the user, the libraries, the keys. `false` when the node
    /// did not answer (or answered `BUSY`) to any of it.
    fn clean(&self, admin: &mut RealConnection) -> bool {
        let ok = |r: Result<Reply, crate::real::conn::RealError>| match r {
            Ok(Reply::Error(e)) => !e.starts_with("BUSY") && !e.starts_with("LOADING"),
            Ok(_) => true,
            Err(_) => false,
        };
        let bytes = |s: &str| s.as_bytes().to_vec();
        if !ok(admin.execute(&[bytes("ACL"), bytes("DELUSER"), bytes(&self.user)])) {
            return false;
        }
        if self.own_cluster {
            // Every key and library on the session's own cluster is its own.
            return ok(admin.execute(&[bytes("FLUSHALL")])) && ok(admin.execute(&[bytes("FUNCTION"), bytes("FLUSH")]));
        }
        // The libraries in the session's namespace, whoever listed them.
        let list = admin.execute(&[
            bytes("FUNCTION"),
            bytes("LIST"),
            bytes("LIBRARYNAME"),
            bytes(&format!("{}*", self.ns)),
        ]);
        let Ok(Reply::Array(libs)) = list else { return false };
        for lib in libs {
            let Reply::Array(pairs) = lib else { continue };
            let name = pairs.chunks(2).find_map(|p| match p {
                [Reply::Bulk(k), Reply::Bulk(v)] if k == b"library_name" => Some(v.clone()),
                _ => None,
            });
            if let Some(name) = name.filter(|n| n.starts_with(self.ns.as_bytes())) {
                if !ok(admin.execute(&[bytes("FUNCTION"), bytes("DELETE"), name])) {
                    return false;
                }
            }
        }
        // The keys: SCAN under the prefix, UNLINK what it finds.
        let mut cursor = b"0".to_vec();
        for _ in 0..10_000 {
            let scan = [
                bytes("SCAN"),
                cursor.clone(),
                bytes("MATCH"),
                bytes(&format!("{}*", self.prefix)),
                bytes("COUNT"),
                bytes("1000"),
            ];
            let Ok(Reply::Array(parts)) = admin.execute(&scan) else {
                return false;
            };
            let (Some(Reply::Bulk(next)), Some(Reply::Array(keys))) = (parts.first(), parts.get(1)) else {
                return false;
            };
            let mut unlink = vec![bytes("UNLINK")];
            unlink.extend(keys.iter().filter_map(|k| match k {
                Reply::Bulk(b) => Some(b.clone()),
                _ => None,
            }));
            if unlink.len() > 1 && !ok(admin.execute(&unlink)) {
                return false;
            }
            if next.as_slice() == b"0" {
                return true;
            }
            cursor = next.clone();
        }
        true
    }
}

/// Cleanups waiting for their nodes, and the thread that retries them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Janitor {
    pending: Arc<Mutex<Vec<(Cleanup, u32)>>>,
}

impl Janitor {
    /// Try `left` again later, starting the janitor's thread if it is not
    /// running.
    pub(crate) fn hand_over(&self, left: Cleanup) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let start = pending.is_empty();
        pending.push((left, 0));
        drop(pending);
        if start {
            let me = self.clone();
            let _ = std::thread::Builder::new()
                .name("locklab-janitor".into())
                .spawn(move || me.work());
        }
    }

    /// How many cleanups are waiting.
    pub(crate) fn pending(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn work(&self) {
        loop {
            std::thread::sleep(RETRY);
            let jobs = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
            let mut again = Vec::new();
            for (job, tries) in jobs {
                let left = job.run(Vec::new());
                if !left.nodes.is_empty() && tries + 1 < ATTEMPTS {
                    again.push((left, tries + 1));
                }
            }
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.extend(again);
            if pending.is_empty() {
                // A later hand-over starts a new thread.
                return;
            }
        }
    }
}
