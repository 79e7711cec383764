//! The `locklab` subcommands that run in a terminal.
//!
//! * [`repl`] — `locklab cli`: redis-cli's front end over the simulator, a
//!   real server, or a lab backend's session.
//! * [`via`] — `locklab cli --via URL`: a running `locklab serve`'s
//!   `/api/session` WebSocket as the REPL's target.
//! * [`lessons`] — `locklab lesson`: list, show and run the lessons.
//! * [`explore`] — `locklab explore`: the schedule and fault explorer.
//! * [`bench`] — `locklab bench`: lock cycles per second, simulator vs real.
//! * [`check`] — `locklab check`: a lock library's history, checked;
//!   [`check_run`] runs a real lock library under a nemesis to make one
//!   (the faults are in `check_nemesis`),
//!   [`check_card`] is the report card, [`check_libs`] installs the
//!   libraries at pinned versions.
//! * [`import`] — `locklab trace import`: a MONITOR capture as a lock timeline.

pub mod bench;
pub mod check;
pub mod check_card;
pub mod check_libs;
mod check_nemesis;
mod check_resource;
pub mod check_run;
pub mod explore;
pub mod explore_bench;
pub mod import;
pub mod lessons;
pub mod repl;
pub mod via;
