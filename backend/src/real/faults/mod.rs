//! Real faults that used to be the simulator's alone, for managed nodes.
//!
//! * [`proxy`] — a slow or lossy link: a delaying TCP proxy between a client
//!   and a node (latency, jitter, lost requests or replies), changed while
//!   it runs — the toxiproxy idea, in the backend.
//! * [`clock`] — a node's clock jumped or drifting: an `LD_PRELOAD` library
//!   that offsets `CLOCK_REALTIME` inside one redis-server, by an amount the
//!   backend rewrites in a shared file — Jepsen's clock nemesis, per process.
//! * [`sentinel`] — failover by Redis Sentinel itself: three
//!   `redis-sentinel` processes watching a master and its replica, their
//!   events read from their pub/sub.
//!
//! [`crate::real::topology`] owns one of each per node (or per client and node,
//! for links) and exposes them as `Servers::set_link`,
//! `Servers::shift_clock`, `Servers::drift_clock` and the sentinel
//! methods.

pub mod clock;
pub mod proxy;
pub mod sentinel;
