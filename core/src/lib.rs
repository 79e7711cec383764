//! # locklab-core
//!
//! Everything locklab knows about Redis and about locks lives here, once,
//! with no I/O, no clocks and no threads: time and randomness come in as
//! arguments. That is what lets the same code run natively (the `locklab`
//! CLI, the test suites, `sim-server`) and inside the browser as WebAssembly,
//! and what makes every run replayable from its seed.
//!
//! # Layout
//!
//! The simulated Redis is a crate of its own, `locklab-redis` (a
//! redis-server in miniature that knows nothing of locks; `sim-server`
//! serves it alone), re-exported here so the lab reads it as its own:
//! * [`reply`] — the RESP reply type and how `redis-cli` prints it.
//! * [`cli`] — redis-cli's line syntax, turning a typed line into an argv.
//! * [`server`] — one simulated Redis node: keyspace with millisecond expiry
//!   on a virtual clock, the command table with redis-server 7.0's exact
//!   replies and errors, transactions, and a version profile (7.0 or 8.4).
//!   [`server::script`] is EVAL and FUNCTION: a real Lua 5.1 VM with Redis's
//!   sandbox and its Lua ↔ RESP conversion rules.
//!
//! The lock lab, built on it:
//! * [`rng`] — a tiny seeded SplitMix64, identical on native and wasm32:
//!   every "random" choice in a world comes from it.
//! * [`actor`] — who is in a run (clients, nodes, the resource, the world)
//!   and the names their indexes stand for.
//! * [`link`] — a network link's latency, jitter and loss, and a
//!   replication link's lag.
//! * [`fault`] — what can go wrong on purpose (pauses, crashes, cut links,
//!   clock jumps) and when, as data every driver shares.
//! * [`world`] — the scenario world: nodes (single, replicated with lag,
//!   independent Redlock masters), links, clocks with offset and drift,
//!   faults carried out, and the discrete-event loop that steps them on one
//!   virtual clock.
//! * [`client`] — client programs as state machines: plain commands,
//!   acquire/work/release with retry, fencing and watchdog, and Redlock.
//! * [`resource`] — the protected resource, plain or fenced.
//! * [`invariants`] — stale write, wrong release, deadlock, overlap.
//! * [`observe`] — the one lock observer: what a lock key on a node did,
//!   from what was seen of it (the world, the free lab and the real driver).
//! * [`trace`] — the serde event types every view renders.
//! * [`history`] — a lock library's history (JSON lines) checked: the
//!   invariants above, leases, and the lock key's linearizability.
//! * [`lesson`] — lessons as data (TOML in `lessons/`), their runner on the
//!   world, and text transcripts and swimlanes.
//! * [`explore`] — the schedule and fault explorer behind `locklab explore`.
//! * [`service`] — the simulated etcd and ZooKeeper, for the lessons that
//!   compare Redis locks with leases and ephemeral znodes.
//! * [`lab`] — the free-play lab: three redis-cli sessions on one node.
//! * [`console`] — the one console path: a typed line to redis-cli's output.
//! * [`protocol`] — the WebSocket messages between the page, the CLI and
//!   the backend, as types; [`class`] — class mode's messages and rules.
//! * [`engine`] — the seam the page plays the simulator through (a lesson
//!   session, [`lesson::session`], or the lab), from the engine's own wasm
//!   module: moves in, views out, as serde types.
//!
//! # A world in four lines
//!
//! Two clients take the same lock with the default lock program (`SET NX
//! PX`, work, write the resource, release), B three milliseconds after A,
//! on one simulated node; nothing goes wrong, so no invariant breaks:
//!
//! ```
//! use locklab_core::client::{LockProgram, Program};
//! use locklab_core::world::{ClientSpec, Scenario, World};
//!
//! let a = ClientSpec { name: "A".into(), clock: Default::default(), start_ms: 0, program: Some(Program::Lock(LockProgram::default())) };
//! let b = ClientSpec { name: "B".into(), start_ms: 3, ..a.clone() };
//! let mut world = World::from_scenario(&Scenario { seed: 7, clients: vec![a, b], ..Scenario::default() }).unwrap();
//! world.run();
//! assert!(world.violations().is_empty(), "{:?}", world.violations());
//! assert_eq!(world.resource().writes().len(), 2, "each wrote once, in turn");
//! ```
//!
//! The modules import each other in one direction only (`cargo xtask layout`
//! checks it): `actor`, `link` and `observe` need nothing above them;
//! `invariants` and `fault` build on those; `trace` records all of them;
//! `world` produces traces; `lesson` and `explore` drive worlds.

pub mod actor;
pub mod class;
pub mod client;
pub mod console;
pub mod engine;
pub mod explore;
pub mod fault;
pub mod history;
pub mod invariants;
pub mod lab;
pub mod lang;
pub mod lesson;
pub mod link;
pub mod observe;
pub mod protocol;
pub mod resource;
pub mod rng;
pub mod service;
pub mod trace;
pub mod world;

pub use locklab_redis::{cli, reply, server, Reply};
