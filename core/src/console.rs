//! One console path: what a person types, the commands it runs, and what
//! redis-cli would print.
//!
//! Four consoles type at the lab — `locklab cli` (the REPL, on the
//! simulator or `--via` a backend), the real driver's WebSocket console,
//! the browser's free lab and the browser's lesson console. They differ
//! only in *where* a command runs. Everything between the line and the text
//! is here, once: redis-cli's argument splitting ([`cli::parse_line`], a
//! transcription of `sdssplitargs`), its repeat prefix (`3 INCR n`,
//! [`cli::take_repeat`]), the lab's limits on both, and the rendering
//! ([`cli::render`]). When these lived in each console they drifted: the
//! lesson console sent `3 INCR n` as a command named `3` while the free
//! console repeated it.

use std::fmt;

use crate::cli::{self, CliError};
use crate::reply::Reply;

/// What a console shows for a command whose request or reply was lost
/// (a cut link, a dead node): redis-cli would wait, the lab says so.
pub const NO_REPLY: &str = "(no reply: the request or its answer was lost)";

/// The longest line a console takes (1 MiB, a generous script): longer
/// ones are refused before they are split, so pasting a huge file cannot
/// make the split itself the problem.
pub const MAX_LINE: usize = 1 << 20;

/// How much a console accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest line, in bytes.
    pub max_line: usize,
    /// Most times one line runs (`100000 INCR n` must not freeze a browser
    /// tab); `None` for a console that streams and can be interrupted, as
    /// redis-cli itself is.
    pub max_repeat: Option<u64>,
}

impl Limits {
    /// A browser console (either driver): a repeat is capped at
    /// [`cli::MAX_CONSOLE_REPEAT`].
    pub const BROWSER: Limits = Limits {
        max_line: MAX_LINE,
        max_repeat: Some(cli::MAX_CONSOLE_REPEAT),
    };

    /// `locklab cli`: redis-cli's own behaviour, a repeat as long as asked
    /// (the REPL streams each reply and Ctrl-C stops it).
    pub const REPL: Limits = Limits {
        max_line: MAX_LINE,
        max_repeat: None,
    };
}

/// Why a line runs nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsoleRefusal {
    /// Longer than [`Limits::max_line`].
    TooLong { len: usize, limit: usize },
    /// Unbalanced quotes, or a repeat count of zero or less: redis-cli's
    /// own messages.
    Cli(CliError),
}

impl fmt::Display for ConsoleRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsoleRefusal::TooLong { len, limit } => {
                write!(f, "(error) ERR line too long: {len} bytes, the limit is {limit}")
            }
            ConsoleRefusal::Cli(e) => write!(f, "{e}"),
        }
    }
}

/// A line, read as redis-cli reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Typed {
    /// Blank: redis-cli prints nothing and sends nothing.
    Empty,
    Refused(ConsoleRefusal),
    /// `argv`, `repeat` times.
    Run {
        argv: Vec<Vec<u8>>,
        repeat: u64,
    },
}

/// Read `line` as redis-cli does, within `limits`.
pub fn read(line: &[u8], limits: Limits) -> Typed {
    if line.len() > limits.max_line {
        return Typed::Refused(ConsoleRefusal::TooLong {
            len: line.len(),
            limit: limits.max_line,
        });
    }
    let mut argv = match cli::parse_line(line) {
        Ok(argv) if argv.is_empty() => return Typed::Empty,
        Ok(argv) => argv,
        Err(e) => return Typed::Refused(ConsoleRefusal::Cli(e)),
    };
    match cli::take_repeat(&mut argv) {
        Ok(n) => Typed::Run {
            argv,
            repeat: limits.max_repeat.map_or(n, |max| n.min(max)),
        },
        Err(e) => Typed::Refused(ConsoleRefusal::Cli(e)),
    }
}

/// Run `line` within `limits`: each command through `exec` (`None`: no
/// reply came, see [`NO_REPLY`]), and the output as redis-cli prints it,
/// one reply per line, trailing newline included (empty for a blank line).
pub fn run(line: &[u8], limits: Limits, exec: impl FnMut(&[Vec<u8>]) -> Option<Reply>) -> String {
    read(line, limits).run(exec)
}

impl Typed {
    /// [`run`] for a line already [`read`]: a caller that looked at the
    /// line first does not split it twice.
    pub fn run(self, mut exec: impl FnMut(&[Vec<u8>]) -> Option<Reply>) -> String {
        match self {
            Typed::Empty => String::new(),
            Typed::Refused(why) => format!("{why}\n"),
            Typed::Run { argv, repeat } => {
                let mut out = String::new();
                for _ in 0..repeat {
                    match exec(&argv) {
                        Some(reply) => out.push_str(&cli::render(&argv, &reply)),
                        None => {
                            out.push_str(NO_REPLY);
                            out.push('\n');
                        }
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> impl FnMut(&[Vec<u8>]) -> Option<Reply> {
        let mut n = 0;
        move |argv| {
            if argv[0].eq_ignore_ascii_case(b"INCR") {
                n += 1;
                Some(Reply::Integer(n))
            } else if argv[0].eq_ignore_ascii_case(b"LOST") {
                None
            } else {
                Some(Reply::Bulk(b"x\ny".to_vec()))
            }
        }
    }

    #[test]
    fn a_repeat_prefix_runs_the_command_that_many_times() {
        assert_eq!(
            run(b"3 INCR n", Limits::BROWSER, counter()),
            "(integer) 1\n(integer) 2\n(integer) 3\n"
        );
        // A lone number, or a number alone, is a command.
        assert_eq!(run(b"INCR", Limits::BROWSER, counter()), "(integer) 1\n");
    }

    #[test]
    fn the_browser_caps_a_repeat_and_the_repl_does_not() {
        let many = format!("{} INCR n", cli::MAX_CONSOLE_REPEAT * 10);
        let Typed::Run { repeat, .. } = read(many.as_bytes(), Limits::BROWSER) else {
            panic!()
        };
        assert_eq!(repeat, cli::MAX_CONSOLE_REPEAT);
        let Typed::Run { repeat, .. } = read(many.as_bytes(), Limits::REPL) else {
            panic!()
        };
        assert_eq!(repeat, cli::MAX_CONSOLE_REPEAT * 10);
    }

    #[test]
    fn refusals_are_redis_clis_words() {
        assert_eq!(
            run(b"0 PING", Limits::BROWSER, counter()),
            "Invalid redis-cli repeat command option value.\n"
        );
        assert_eq!(
            run(b"SET k \"open", Limits::BROWSER, counter()),
            "Invalid argument(s)\n"
        );
        let tight = Limits {
            max_line: 4,
            max_repeat: None,
        };
        assert_eq!(
            run(b"PING x", tight, counter()),
            "(error) ERR line too long: 6 bytes, the limit is 4\n"
        );
        assert_eq!(run(b"   ", Limits::BROWSER, counter()), "");
    }

    #[test]
    fn rendering_is_redis_clis_and_a_lost_reply_says_so() {
        assert_eq!(run(b"GET k", Limits::BROWSER, counter()), "\"x\\ny\"\n");
        assert_eq!(run(b"INFO", Limits::BROWSER, counter()), "x\ny");
        assert_eq!(
            run(b"2 LOST", Limits::BROWSER, counter()),
            format!("{NO_REPLY}\n{NO_REPLY}\n")
        );
    }
}
