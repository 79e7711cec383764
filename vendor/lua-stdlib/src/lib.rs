//! Lua standard library — runtime stdlib crate, covering Lua 5.1–5.5 from
//! one source per module.

pub mod auxlib;
pub mod base;
#[cfg(feature = "bit32")]
pub mod bit32_lib;
#[cfg(feature = "coroutine")]
pub mod coro_lib;
#[cfg(feature = "debug")]
pub mod debug_lib;
pub mod init;
#[cfg(feature = "io")]
pub mod io_lib;
#[cfg(feature = "package")]
pub mod loadlib;
pub mod lua51;
pub mod math_lib;
#[cfg(feature = "os")]
pub mod os_lib;
pub mod sandbox;
pub mod state_stub;
pub mod string_lib;
pub mod table_lib;
#[cfg(feature = "utf8")]
pub mod utf8_lib;
