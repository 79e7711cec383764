//! # locklab-redis
//!
//! A redis-server 7.0.15 in miniature, with no I/O, no clocks and no
//! threads: one node's keyspace with millisecond expiry on a virtual clock
//! the caller moves, the command table with redis-server's exact replies and
//! errors (each command handler names the redis-server routine it
//! transcribes), transactions, EVAL and FUNCTION on a Lua 5.1 VM inside
//! Redis's sandbox, the RESP reply type, and redis-cli's line syntax.
//!
//! It knows nothing of locks: the lab (`locklab-core`) builds its worlds,
//! lessons and explorer on these nodes, and `locklab sim-server` serves one
//! over TCP to real clients with this crate alone.
//!
//! # Layout
//!
//! * [`reply`] — the RESP reply type and how `redis-cli` prints it.
//! * [`cli`] — redis-cli's line syntax, turning a typed line into an argv.
//! * [`server`] — one node: [`server::Node`] runs an argv at a time on the
//!   caller's clock; [`server::script`] is scripting; the command table is
//!   `server::table`.
//!
//! ```
//! use locklab_redis::server::{ConnId, Node, Profile};
//! use locklab_redis::Reply;
//!
//! let mut node = Node::new(Profile::V7_0);
//! let argv = |s: &str| s.split(' ').map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
//! let (a, b) = (ConnId(1), ConnId(2));
//! assert_eq!(node.execute(a, &argv("SET lock A NX PX 100")), Reply::ok());
//! assert_eq!(node.execute(b, &argv("SET lock B NX PX 100")), Reply::Nil);
//! // Past its 100 ms on the node's clock the lock has expired (a key
//! // lives while now <= its deadline, as keyIsExpired has it) and B gets it.
//! node.advance(101);
//! assert_eq!(node.execute(b, &argv("SET lock B NX PX 100")), Reply::ok());
//! ```

pub mod cli;
pub mod reply;
pub mod server;

pub use reply::Reply;
