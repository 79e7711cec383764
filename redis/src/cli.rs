//! redis-cli's line syntax: one typed line to an argv.
//!
//! This is a transcription of `sdssplitargs` from Redis's `sds.c`, the
//! function redis-cli runs on every line you type. Its corners matter because
//! lessons quote lines verbatim from the articles:
//!
//! * blanks separate arguments; `"…"` and `'…'` group them;
//! * inside double quotes `\n \r \t \b \a` and `\xHH` are escapes, and any
//!   other escaped character stands for itself (`\"`, `\\`);
//! * inside single quotes only `\'` is an escape;
//! * a closing quote must be followed by a blank or the end of the line, and
//!   a quote left open is an error: redis-cli prints `Invalid argument(s)`;
//! * a quote may open in the middle of a word (`ab"c d"` is `abc d`).
//!
//! Parsing is a single pass over the bytes, so any input, however long or
//! strange, ends in an argv or an error: it cannot panic or loop.

use thiserror::Error;

/// The one way a line can fail to parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CliError {
    /// Unbalanced quotes, or a closing quote glued to the next word.
    #[error("Invalid argument(s)")]
    InvalidArguments,
    /// A repeat count of zero or less (`0 PING`).
    #[error("Invalid redis-cli repeat command option value.")]
    InvalidRepeat,
}

/// C's `isspace`, which sdssplitargs uses to skip blanks between arguments.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Split one redis-cli line into arguments. An empty or blank line gives an
/// empty argv (redis-cli ignores it).
// long: transcribes sdssplitargs's quote-and-escape state machine as one loop
pub fn parse_line(line: &[u8]) -> Result<Vec<Vec<u8>>, CliError> {
    // A NUL ends a C string, and redis-cli only ever sees C strings.
    let line = match line.iter().position(|&c| c == 0) {
        Some(end) => &line[..end],
        None => line,
    };
    let at = |i: usize| line.get(i).copied();
    let mut argv = Vec::new();
    let mut p = 0;
    loop {
        while at(p).is_some_and(is_space) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(argv);
        }
        let mut current = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let c = at(p);
            if in_double {
                match c {
                    None => return Err(CliError::InvalidArguments),
                    Some(b'\\') => {
                        let hex = (at(p + 1) == Some(b'x'))
                            .then(|| Some(hex_value(at(p + 2)?)? * 16 + hex_value(at(p + 3)?)?))
                            .flatten();
                        if let Some(byte) = hex {
                            current.push(byte);
                            p += 3;
                        } else if let Some(next) = at(p + 1) {
                            p += 1;
                            current.push(match next {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 0x08,
                                b'a' => 0x07,
                                other => other,
                            });
                        } else {
                            // A backslash at the very end of an open quote.
                            current.push(b'\\');
                        }
                    }
                    Some(b'"') => {
                        if at(p + 1).is_some_and(|n| !is_space(n)) {
                            return Err(CliError::InvalidArguments);
                        }
                        p += 1;
                        break;
                    }
                    Some(other) => current.push(other),
                }
            } else if in_single {
                match c {
                    None => return Err(CliError::InvalidArguments),
                    Some(b'\\') if at(p + 1) == Some(b'\'') => {
                        p += 1;
                        current.push(b'\'');
                    }
                    Some(b'\'') => {
                        if at(p + 1).is_some_and(|n| !is_space(n)) {
                            return Err(CliError::InvalidArguments);
                        }
                        p += 1;
                        break;
                    }
                    Some(other) => current.push(other),
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t') => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => current.push(other),
                }
            }
            p += 1;
        }
        argv.push(current);
    }
}

/// The most times a browser console (either driver) runs one line: a typo
/// like `100000 INCR n` must not freeze the tab, nor send a real server
/// through the lab more than the rate limit would refuse anyway.
pub const MAX_CONSOLE_REPEAT: u64 = 1000;

/// redis-cli's repeat prefix: in `3 INCR n` the leading number is not an
/// argument but how many times to send `INCR n`. Like redis-cli, only a
/// first argument that is an integer *and* has more arguments after it
/// counts (`INCR` alone, or a lone `3`, is a command), and zero or less is
/// refused. Takes the count off `argv` and returns it (1 without one).
pub fn take_repeat(argv: &mut Vec<Vec<u8>>) -> Result<u64, CliError> {
    if argv.len() < 2 {
        return Ok(1);
    }
    let Some(n) = std::str::from_utf8(&argv[0]).ok().and_then(|s| s.parse::<i64>().ok()) else {
        return Ok(1);
    };
    if n <= 0 {
        return Err(CliError::InvalidRepeat);
    }
    argv.remove(0);
    Ok(n as u64)
}

/// Convenience for tests and lessons: parse a `&str` line.
pub fn parse(line: &str) -> Result<Vec<Vec<u8>>, CliError> {
    parse_line(line.as_bytes())
}

/// Commands whose string reply redis-cli prints raw even in its standard
/// output mode (`cliSendCommand` sets `output_raw` for them): their text is
/// meant to be read as lines, not as a quoted string.
fn prints_raw(argv: &[Vec<u8>]) -> bool {
    let Some(name) = argv.first() else { return false };
    let sub = |s: &str| argv.len() >= 2 && argv[1].eq_ignore_ascii_case(s.as_bytes());
    name.eq_ignore_ascii_case(b"info")
        || name.eq_ignore_ascii_case(b"lolwut")
        || (name.eq_ignore_ascii_case(b"client") && argv.len() == 2 && sub("list"))
        || (name.eq_ignore_ascii_case(b"cluster") && argv.len() == 2 && (sub("nodes") || sub("info")))
        || (name.eq_ignore_ascii_case(b"memory") && (sub("doctor") || sub("malloc-stats")))
        || (name.eq_ignore_ascii_case(b"latency") && sub("doctor"))
}

/// Exactly what `redis-cli --no-raw` writes for `reply` to the command
/// `argv`, trailing newline included.
pub fn render(argv: &[Vec<u8>], reply: &crate::Reply) -> String {
    use crate::Reply;
    if prints_raw(argv) {
        if let Reply::Bulk(b) = reply {
            return String::from_utf8_lossy(b).into_owned();
        }
    }
    let mut s = reply.to_cli();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        parse(line)
            .unwrap()
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .collect()
    }

    #[test]
    fn words_and_quotes() {
        assert_eq!(args("SET lock:order:1 token-A-111 NX PX 30000").len(), 6);
        assert_eq!(args(r#"SET k "hello world""#), ["SET", "k", "hello world"]);
        assert_eq!(args(r#"ECHO "a\"b\\c\n\x41""#), ["ECHO", "a\"b\\c\nA"]);
        assert_eq!(args(r"ECHO 'don\'t'"), ["ECHO", "don't"]);
        assert_eq!(args(r#"ECHO ab"c d""#), ["ECHO", "abc d"]);
        assert_eq!(args("   "), Vec::<String>::new());
        assert_eq!(args(r#"ECHO """#), ["ECHO", ""]);
    }

    #[test]
    fn unbalanced_quotes_are_invalid() {
        assert_eq!(parse(r#"SET k "open"#), Err(CliError::InvalidArguments));
        assert_eq!(parse("SET k 'open"), Err(CliError::InvalidArguments));
        assert_eq!(parse(r#"SET k "a"b"#), Err(CliError::InvalidArguments));
        assert_eq!(parse("SET k 'it''s'"), Err(CliError::InvalidArguments));
        assert_eq!(CliError::InvalidArguments.to_string(), "Invalid argument(s)");
    }

    #[test]
    fn bad_hex_escape_keeps_the_letter() {
        // `\xZZ` is not a hex escape, so `\x` is the escaped letter x.
        assert_eq!(args(r#"ECHO "\xZZ""#), ["ECHO", "xZZ"]);
    }

    #[test]
    fn repeat_prefix() {
        let mut argv = parse("3 INCR n").unwrap();
        assert_eq!(take_repeat(&mut argv), Ok(3));
        assert_eq!(argv, parse("INCR n").unwrap());
        for line in ["INCR n", "3", "x 3"] {
            let mut argv = parse(line).unwrap();
            let before = argv.clone();
            assert_eq!(take_repeat(&mut argv), Ok(1), "{line}");
            assert_eq!(argv, before);
        }
        let mut argv = parse("0 PING").unwrap();
        assert_eq!(take_repeat(&mut argv), Err(CliError::InvalidRepeat));
        assert_eq!(
            CliError::InvalidRepeat.to_string(),
            "Invalid redis-cli repeat command option value."
        );
    }
}
