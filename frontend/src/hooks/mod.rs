//! The page's effects, as hooks: what the app does beside drawing — listen
//! for shortcuts, play on a timer, load the simulator, keep the real
//! driver's WebSocket and health check going, keep the URL in step, and
//! keep interview scores in `localStorage` ([`score`]), and keep a class's
//! WebSocket going ([`class`]). Each is one `#[hook]` named for what it does,
//! called from the component that owns the state it reads, so
//! [`App`](crate::view::app::App) reads as its state, its hooks and its
//! view.
//!
//! Like the components they only run in a browser; the logic they drive
//! (the reducer, the real driver's protocol, the score) is plain Rust and
//! tested natively.

pub mod class;
mod notes;
mod page;
mod play;
mod real;
pub mod score;

pub use class::use_class;
pub use notes::use_notes_sync;
pub use page::{use_ready_mark, use_shortcuts, use_url_sync};
pub use play::{use_autoplay, use_engine};
pub use real::{use_health_poll, use_real_socket};
pub use score::{use_record_verdicts, use_score_changes};
