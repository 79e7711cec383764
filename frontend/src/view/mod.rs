//! The components. Each reads what it shows from the shared
//! [`AppContext`](crate::state::AppContext) and reports what the user did
//! through `on<verb>` callbacks; only [`app::App`] dispatches actions.

pub mod app;
pub mod class;
pub mod clock;
pub mod console;
pub mod exercise;
pub mod faults;
pub mod header;
pub mod help;
pub mod lesson_list;
pub mod lesson_panel;
pub mod loading;
pub mod mock_interview;
pub mod notes;
pub mod open_file;
pub mod presenter;
pub mod timed;
pub mod timeline;
