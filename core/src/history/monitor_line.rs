//! One line of what `redis-cli MONITOR` prints, read back.
//!
//! redis-server writes each command it runs to its monitors in
//! `replicationFeedMonitors` (replication.c):
//!
//! ```text
//! 1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v" "NX" "PX" "30000"
//! ```
//!
//! the time (`%ld.%06ld`), the database and the client's peer id (`[%d lua]`
//! for a command a script ran, `[%d unix:%s]` for a Unix-socket client),
//! then every argument through `sdscatrepr` (sds.c) separated by one space:
//! quoted, `\\` and `\"` escaped, `\n \r \t \a \b` by name, any other byte
//! that is not `isprint` as `\xNN`, and an integer-encoded argument printed
//! as `"%ld"`, which reads back the same. [`parse_line`] is the exact
//! inverse of that: anything `sdscatrepr` cannot have written (an unknown
//! escape, a raw control or non-ASCII byte, a quote left open) is refused,
//! with a reason, so a truncated or corrupted capture is reported instead
//! of being replayed as something else. `redis-cli` prints the `OK` that
//! answered `MONITOR` first; that line is not a command and is passed over.

/// Whose command a line is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A client connection, by its peer id (`127.0.0.1:5555`, `[::1]:5555`,
    /// `unix:/run/redis.sock`).
    Client(String),
    /// A command a script ran (`[0 lua]`): its caller is the client whose
    /// `EVAL`/`EVALSHA`/`FCALL` line came just before.
    Script,
}

/// One command as MONITOR printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorLine {
    /// Unix time in microseconds.
    pub at_us: u64,
    pub db: u32,
    pub source: Source,
    pub argv: Vec<Vec<u8>>,
}

/// Read one line (without its end of line). `Ok(None)`: not a command — a
/// blank line or the `OK` redis-cli prints first. `Err`: why it is not
/// what MONITOR prints.
pub fn parse_line(line: &[u8]) -> Result<Option<MonitorLine>, String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) || line == b"OK" {
        return Ok(None);
    }
    // The time first: a line that does not start with one is not what
    // MONITOR prints at all (binary garbage, another file).
    let sp = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
    let at_us = timestamp(&line[..sp])?;
    let rest = line.get(sp + 1..).ok_or("no \"[db client]\" after the time")?;
    let rest = rest
        .strip_prefix(b"[")
        .ok_or("expected \"[db client]\" after the time")?;
    let dsp = rest
        .iter()
        .position(|&b| b == b' ')
        .ok_or("expected \"[db client]\" after the time")?;
    let db = std::str::from_utf8(&rest[..dsp])
        .ok()
        .and_then(|d| d.parse::<u32>().ok())
        .ok_or("the database number is not a number")?;
    let rest = &rest[dsp + 1..];
    // The peer id may hold brackets itself (`[::1]:5555`): it ends at the
    // first `] "`, where the arguments begin.
    let end = rest
        .windows(3)
        .position(|w| w == b"] \"")
        .ok_or("no quoted command after \"[db client]\"")?;
    let who = std::str::from_utf8(&rest[..end]).map_err(|_| "the client's address is not text")?;
    let source = if who == "lua" {
        Source::Script
    } else if who.is_empty() {
        return Err("no client address".into());
    } else {
        Source::Client(who.to_owned())
    };
    let argv = arguments(&rest[end + 2..])?;
    Ok(Some(MonitorLine {
        at_us,
        db,
        source,
        argv,
    }))
}

/// `%ld.%06ld` → microseconds.
fn timestamp(t: &[u8]) -> Result<u64, String> {
    let bad = || {
        let shown: String = String::from_utf8_lossy(t).chars().take(40).collect();
        format!("{shown:?} is not a time (seconds.microseconds): not a MONITOR line")
    };
    let dot = t.iter().position(|&b| b == b'.').ok_or_else(bad)?;
    let (secs, micros) = (&t[..dot], &t[dot + 1..]);
    if secs.is_empty() || micros.len() != 6 || !secs.iter().chain(micros).all(u8::is_ascii_digit) || secs.len() > 12 {
        return Err(bad());
    }
    let num = |d: &[u8]| d.iter().fold(0u64, |n, &b| n * 10 + u64::from(b - b'0'));
    Ok(num(secs) * 1_000_000 + num(micros))
}

/// `isprint` in the C locale redis-server runs in.
fn printable(b: u8) -> bool {
    (0x20..0x7f).contains(&b)
}

/// The quoted arguments, one space apart: the inverse of `sdscatrepr`.
fn arguments(mut s: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut argv = Vec::new();
    loop {
        s = s
            .strip_prefix(b"\"")
            .ok_or_else(|| format!("argument {} does not start with a quote", argv.len() + 1))?;
        let mut arg = Vec::new();
        loop {
            let (&b, tail) = s
                .split_first()
                .ok_or_else(|| format!("unbalanced quotes: argument {} is never closed", argv.len() + 1))?;
            s = tail;
            match b {
                b'"' => break,
                b'\\' => {
                    let (&e, tail) = s.split_first().ok_or("the line ends inside an escape")?;
                    s = tail;
                    arg.push(match e {
                        b'\\' | b'"' => e,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'a' => 0x07,
                        b'b' => 0x08,
                        b'x' => {
                            let hex = s.get(..2).ok_or("the line ends inside a \\x escape")?;
                            s = &s[2..];
                            std::str::from_utf8(hex)
                                .ok()
                                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                                .and_then(|h| u8::from_str_radix(h, 16).ok())
                                .ok_or("\\x is not followed by two hex digits")?
                        }
                        other => return Err(format!("unknown escape \\{} (not what MONITOR writes)", other as char)),
                    });
                }
                b if printable(b) => arg.push(b),
                b => {
                    return Err(format!(
                        "raw byte 0x{b:02x} inside an argument (MONITOR escapes it): binary garbage?"
                    ))
                }
            }
        }
        argv.push(arg);
        match s.split_first() {
            None => return Ok(argv),
            Some((b' ', tail)) => s = tail,
            Some(_) => return Err(format!("argument {} is not followed by a space", argv.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> MonitorLine {
        parse_line(line.as_bytes()).expect("parses").expect("a command")
    }

    #[test]
    fn what_redis_7_0_15_printed_reads_back() {
        // Lines captured from redis-server 7.0.15 with `redis-cli MONITOR`.
        let l = ok(r#"1796567186.633481 [0 127.0.0.1:50142] "SET" "k" "a\"b\\c\nd" "NX" "PX" "30000""#);
        assert_eq!(l.at_us, 1_796_567_186_633_481);
        assert_eq!(l.db, 0);
        assert_eq!(l.source, Source::Client("127.0.0.1:50142".into()));
        let argv: Vec<&[u8]> = l.argv.iter().map(Vec::as_slice).collect();
        assert_eq!(argv, [&b"SET"[..], b"k", b"a\"b\\c\nd", b"NX", b"PX", b"30000"]);
        let l = ok(r#"1796567186.640925 [0 lua] "set" "lk" "\x01\xff\t""#);
        assert_eq!(l.source, Source::Script);
        assert_eq!(l.argv[2], [1, 0xff, b'\t']);
        let l = ok(r#"1796567186.656606 [3 127.0.0.1:50174] "INCR" "n""#);
        assert_eq!(l.db, 3);
        assert_eq!(ok(r#"1796567186.668286 [0 127.0.0.1:50182] "SET" "e" """#).argv[2], b"");
        let l = ok(r#"1.000001 [0 [::1]:6000] "PING""#);
        assert_eq!((l.at_us, l.source), (1_000_001, Source::Client("[::1]:6000".into())));
        let l = ok(r#"1.000001 [0 unix:/run/redis.sock] "PING""#);
        assert_eq!(l.source, Source::Client("unix:/run/redis.sock".into()));
        assert_eq!(parse_line(b"OK"), Ok(None));
        assert_eq!(parse_line(b"  \r"), Ok(None));
    }

    #[test]
    fn what_monitor_cannot_have_written_is_refused_with_a_reason() {
        let err = |l: &[u8]| parse_line(l).expect_err("refused");
        assert!(err(br#"1.000001 [0 1.2.3.4:5] "SET" "k"#).contains("unbalanced quotes"));
        assert!(err(br#"1.000001 [0 1.2.3.4:5] "SET" "k\q""#).contains("unknown escape"));
        assert!(err(b"1.000001 [0 1.2.3.4:5] \"SET\" \"k\xff\"").contains("binary garbage"));
        assert!(err(b"\x7fELF\x02\x01\x01").contains("not a MONITOR line"));
        assert!(err(b"1.000001").contains("no \"[db client]\""));
        assert!(err(br#"1.5 [0 1.2.3.4:5] "PING""#).contains("not a time"));
        assert!(err(br#"1.000001 [x 1.2.3.4:5] "PING""#).contains("database"));
        assert!(err(br#"1.000001 [0 1.2.3.4:5] PING"#).contains("no quoted command"));
        assert!(err(br#"1.000001 [0 1.2.3.4:5] "A""B""#).contains("not followed by a space"));
        assert!(err(br#"1.000001 [0 1.2.3.4:5] "A" "\x4""#).contains("hex"));
    }
}
