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
//! * [`reply`] — the RESP reply type and how `redis-cli` prints it.
//! * [`cli`] — redis-cli's line syntax, turning a typed line into an argv.
//! * [`server`] — one simulated Redis node: keyspace with millisecond expiry
//!   on a virtual clock, the command table with redis-server 7.0's exact
//!   replies and errors, transactions, and a version profile (7.0 or 8.4).
//! * [`script`] — EVAL and FUNCTION: a real Lua 5.1 VM with Redis's sandbox
//!   and its Lua ↔ RESP conversion rules.

pub mod cli;
pub mod reply;
pub mod script;
pub mod server;

pub use reply::Reply;
