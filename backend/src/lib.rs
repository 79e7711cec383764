//! # locklab-backend
//!
//! Everything locklab does that touches the outside world: terminals,
//! sockets, real redis-server processes. The semantics all live in
//! `locklab-core`; this crate only moves bytes and time in and out. The
//! folders are its four concerns:
//!
//! * [`cli`] — the `locklab` subcommands that run in a terminal: the REPL
//!   (`locklab cli`, on the simulator, a real server or `--via` a lab
//!   backend), `locklab lesson`, `locklab explore`, `locklab bench`.
//! * [`web`] — `locklab serve`: the browser app (`dist/`), `/api/health`
//!   and the `/api/session` WebSocket, and which pages may open a session.
//! * [`real`] — real redis-server: connections, processes and their pid
//!   files, managed topologies and real faults, the sandboxed lab session,
//!   lock observation, and lessons played on real servers.
//! * [`sim_server`] — `locklab sim-server`: the simulated node behind the
//!   Redis wire protocol.
//! * [`userfile`] — the one guarded read of a file a user names (lessons,
//!   designs, a password): regular files only, bounded, checked first.

pub mod class;
pub mod cli;
pub mod real;
pub mod sim_server;
pub mod userfile;
pub mod web;
