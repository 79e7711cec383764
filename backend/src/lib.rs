//! # locklab-backend
//!
//! Everything locklab does that touches the outside world: terminals,
//! sockets, real redis-server processes. The semantics all live in
//! `locklab-core`; this crate only moves bytes and time in and out.
//!
//! * [`repl`] — `locklab cli`: redis-cli's front end over the simulator or a
//!   real server.
//! * [`real`] — one connection to a real redis-server through the `redis`
//!   crate, answering in core's [`Reply`](locklab_core::Reply) type.
//! * [`bench`] — `locklab bench`: lock cycles per second, simulator vs real.

pub mod bench;
pub mod real;
pub mod repl;
