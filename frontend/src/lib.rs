//! # locklab-frontend
//!
//! The browser face of locklab: a Yew app compiled to WebAssembly. It owns
//! no semantics, and it links no simulator: a line typed into the console
//! goes through core's engine seam to the simulated Redis node in the
//! engine's own wasm module (or over the WebSocket to real redis-server) and
//! comes back rendered by core exactly as `redis-cli` prints it; the
//! timeline draws what happened.
//!
//! # Layout
//!
//! * [`state`] — the one [`State`](state::State), the [`Action`](state::Action)s
//!   (the user's intentions) and a thin `reduce`, shared with the components
//!   through a context.
//! * [`engine`] — the page's end of core's engine seam: loads the engine
//!   module and calls it (natively: core, through the same JSON).
//! * [`lab`] — the free-play lab as the page holds it ([`SimLab`](lab::SimLab)):
//!   the last view of core's lab (three redis-cli connections on one node)
//!   the engine sent.
//! * [`timeline`] — a core [`Trace`](locklab_core::trace::Trace) laid out as
//!   swimlanes (lanes, lock bars, arrows, violation bands), for the SVG view.
//! * [`editor`] — the console's input line with ↑/↓ history.
//! * [`query`] — the view in the URL (`?lang=zh&lesson=05&step=end&seed=7&driver=sim`).
//! * [`i18n`] — the UI string table, 中文 and English.
//! * [`catalog`] — the lesson files (core's `builtin()`), grouped by theme.
//! * [`driver`] — the seam: [`LessonDriver`](driver::LessonDriver), what
//!   every view reads a lesson from, and [`Driver`](driver::Driver), which
//!   of the two plays it:
//!   * [`driver::sim`] — a lesson playing on the simulator, as the page
//!     holds it: the last view of core's lesson session (replayed to step
//!     back, with the user's off-script lines, faults and clock moves) the
//!     engine sent;
//!   * [`driver::real`] — the real driver's model (sans-IO): the
//!     `/api/session` protocol, the lesson run on real redis-server,
//!     reconnect state.
//! * [`socket`] — the real driver's browser I/O: the WebSocket and the
//!   `/api/health` fetch.
//! * [`score`] — interview mode: a prediction judged against the reply, and
//!   the per-lesson score (first prediction per step), as stored in
//!   `localStorage`.
//! * [`class`] — class mode as the page holds it (sans-IO): a presenter's
//!   class or a follower's place in one, the frames to send, the rejoin
//!   backoff; its views are `view::class`, its socket `hooks::class`.
//! * [`notes`] — presenter mode's notes window: the trainer's notes
//!   (from `/api/notes`) and where the presenter is, told over a
//!   `BroadcastChannel`.
//! * [`explore`] — "break my lock": the explorer in a Web Worker, the
//!   counterexample played as a lesson, the interview drill.
//! * [`hooks`] — the page's effects (shortcuts, play timer, the simulator's
//!   module, the real driver's socket and health poll, the URL), one hook
//!   each, and interview scores in `localStorage` (recording verdicts,
//!   re-rendering when a score changes).
//! * [`view`] — the components: the loading screen, header, lesson list,
//!   lesson panel, timeline, console, clock, shortcuts overlay.
//!
//! Everything but [`view`], [`hooks`] and [`run`] is ordinary Rust with
//! native unit tests; the crate builds natively too (its binary does nothing
//! there), so `cargo test --workspace` type-checks the components and runs
//! those tests.

pub mod catalog;
pub mod class;
pub mod driver;
pub mod editor;
pub mod engine;
pub mod explore;
pub mod hooks;
pub mod i18n;
pub mod lab;
pub mod markdown;
pub mod notes;
pub mod query;
pub mod score;
pub mod socket;
pub mod state;
pub mod timeline;
pub mod view;

/// Mount the app on `<body>`: the lessons first, then the lab. Only
/// meaningful in a browser.
pub fn run() {
    yew::Renderer::<view::loading::Loading>::new().render();
}
