//! # locklab-backend
//!
//! Everything locklab does that touches the outside world: terminals,
//! sockets, real redis-server processes. The semantics all live in
//! `locklab-core`; this crate only moves bytes and time in and out.
//!
//! * [`repl`] — `locklab cli`: redis-cli's front end over the simulator, a
//!   real server, or a lab backend's session.
//! * [`via`] — `locklab cli --via URL`: a running `locklab serve`'s
//!   `/api/session` WebSocket as the REPL's target.
//! * [`real`] — one connection to a real redis-server through the `redis`
//!   crate, answering in core's [`Reply`](locklab_core::Reply) type.
//! * [`sim_server`] — `locklab sim-server`: the simulated node behind the
//!   Redis wire protocol.
//! * [`explore`] — `locklab explore`: the schedule and fault explorer.
//! * [`lessons`] — `locklab lesson`: list, show and run the lessons.
//! * [`real_env`] — real redis-server sessions as the lesson runner's environment
//!   (core's step interpreter, lock observer and monitor; real faults and
//!   time compression).
//! * [`redis_server`] — a real redis-server process on a free loopback port.
//! * [`web`] — `locklab serve`: the browser app (`dist/`) and its API.
//! * [`session`] — a sandboxed lab session on real servers: key prefix,
//!   ACL user, refused commands, limits, and the same trace events.
//! * [`topology`] — managed redis-server topologies and real faults.
//! * [`faults`] — the faults behind them that need more than a signal: a
//!   delaying link proxy, a clock shift, failover by Redis Sentinel.
//! * [`reaper`] — pid files, so no managed redis-server outlives its backend.
//! * [`observe`] — lock keys watched on real servers, turned into the
//!   simulator's `Lock` events.
//! * [`api`] — `/api/real/health` and the `/api/session` WebSocket.
//! * [`origin`] — which pages may open a lab session (`Origin` vs `Host`).
//! * [`bench`] — `locklab bench`: lock cycles per second, simulator vs real.

pub mod api;
pub mod bench;
pub mod explore;
pub mod faults;
pub mod lessons;
pub mod observe;
pub mod origin;
pub mod real;
pub mod real_env;
pub mod reaper;
pub mod redis_server;
pub mod repl;
pub mod session;
pub mod sim_server;
pub mod topology;
pub mod via;
pub mod web;
