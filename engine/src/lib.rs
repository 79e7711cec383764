//! # locklab-engine
//!
//! locklab's simulator as a wasm module of its own, next to the page's.
//! The world, the nodes, the clients and the Lua VM are most of locklab's
//! wasm; the page links none of them, so it loads and draws quickly, and a
//! page on the real driver never fetches them at all. The page imports
//! this module the first time it plays on the simulator (a lesson, or the
//! free lab) and calls it synchronously through core's engine seam
//! (`locklab_core::engine`): a move in, a view out, both JSON ([`play`]).
//! The explorer is not here: it is a module of its own, in the explore
//! screen's Web Worker (`explore-worker`).
//!
//! Thin, like every adapter: every semantic is core's.

pub mod play;
