//! Time compression for real runs: a pure rewrite of the argv sent, and of
//! the reply back.
//!
//! Waiting 31 real seconds for a lock to expire makes a dull demo and a slow
//! test, so a lesson on real redis-server divides its time by a factor
//! (100× by default): `PX 15000` is sent as `PX 150`, `EX 30` as `PX 300`,
//! `EXPIRE k 10` as `PEXPIRE k 100`, `WAIT 1 5000` as `WAIT 1 50`, and a
//! `PTTL`/`TTL` reply is multiplied back (a `TTL` goes as `PTTL` so the
//! seconds it answers are not rounded to zero first). A script's integer
//! arguments of at least 100 are divided when the script sets a TTL (it
//! mentions `px`, `pexpire` or `expire`; a function is assumed to). It is a
//! function of the argv alone — no clock, no server — so it is unit-tested
//! here and the real environment only calls it.

use crate::reply::Reply;

/// Does a script set a TTL? Then its large integer arguments are TTLs.
pub fn script_sets_ttl(body: &[u8]) -> bool {
    let lower = String::from_utf8_lossy(body).to_lowercase();
    lower.contains("pexpire") || lower.contains("expire") || lower.contains("'px'") || lower.contains("\"px\"")
}

fn int(a: &[u8]) -> Option<i64> {
    std::str::from_utf8(a).ok()?.parse().ok()
}

/// What a command's reply needs done to it after compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    None,
    /// A PTTL: multiply back.
    Ms,
    /// A TTL sent as PTTL: multiply back and round to seconds as TTL does.
    SecondsFromMs,
}

/// Rewrite one argv for time compression by `f`: the argv to send and how
/// to scale its reply back ([`rescale`]).
pub fn compress(argv: &[Vec<u8>], f: i64) -> (Vec<Vec<u8>>, Scale) {
    let mut out = argv.to_vec();
    let name = argv.first().map(|n| n.to_ascii_uppercase()).unwrap_or_default();
    let div = |n: i64| ((n / f).max(1)).to_string().into_bytes();
    match name.as_slice() {
        b"SET" => {
            let mut i = 3;
            while i + 1 < out.len() {
                let opt = out[i].to_ascii_uppercase();
                if let (b"PX" | b"EX", Some(n)) = (opt.as_slice(), int(&out[i + 1])) {
                    let ms = if opt == b"EX" { n.saturating_mul(1000) } else { n };
                    out[i] = b"PX".to_vec();
                    out[i + 1] = div(ms);
                    i += 1;
                }
                i += 1;
            }
            (out, Scale::None)
        }
        b"PEXPIRE" | b"EXPIRE" if out.len() >= 3 => {
            if let Some(n) = int(&out[2]) {
                let ms = if name == b"EXPIRE" { n.saturating_mul(1000) } else { n };
                out[0] = b"PEXPIRE".to_vec();
                out[2] = div(ms);
            }
            (out, Scale::None)
        }
        // `WAIT numreplicas timeout`: the timeout is lesson time too (0
        // means "block forever" and stays 0).
        b"WAIT" if out.len() >= 3 => {
            if let Some(n) = int(&out[2]).filter(|n| *n > 0) {
                out[2] = div(n);
            }
            (out, Scale::None)
        }
        b"PTTL" => (out, Scale::Ms),
        b"TTL" => {
            out[0] = b"PTTL".to_vec();
            (out, Scale::SecondsFromMs)
        }
        b"EVAL" | b"EVALSHA" | b"FCALL" if out.len() >= 3 => {
            let sets_ttl = name != b"EVAL" || script_sets_ttl(&out[1]);
            if let (true, Some(numkeys)) = (sets_ttl, int(&out[2])) {
                let first_arg = 3 + numkeys.max(0) as usize;
                for a in out.iter_mut().skip(first_arg) {
                    if let Some(n) = int(a).filter(|n| *n >= 100) {
                        *a = div(n);
                    }
                }
            }
            (out, Scale::None)
        }
        _ => (out, Scale::None),
    }
}

/// A reply to a compressed command, in lesson time again.
pub fn rescale(reply: Reply, scale: Scale, f: i64) -> Reply {
    match (scale, reply) {
        (Scale::Ms, Reply::Integer(n)) if n >= 0 => Reply::Integer(n * f),
        (Scale::SecondsFromMs, Reply::Integer(n)) if n >= 0 => Reply::Integer((n * f + 500) / 1000),
        (_, r) => r,
    }
}

/// An argv as one line, quoting what redis-cli would need quoted: what a
/// transcript note shows was sent.
pub fn words(argv: &[Vec<u8>]) -> String {
    argv.iter()
        .map(|a| {
            let s = String::from_utf8_lossy(a);
            if s.contains([' ', '"', '\'', '\n']) || s.is_empty() {
                format!("{s:?}")
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Vec<u8>> {
        crate::cli::parse(s).unwrap()
    }

    #[test]
    fn ttls_are_compressed_and_replies_scaled_back() {
        let (sent, _) = compress(&argv("SET lock:order:1001 token-A-111 NX PX 15000"), 100);
        assert_eq!(words(&sent), "SET lock:order:1001 token-A-111 NX PX 150");
        let (sent, _) = compress(&argv("SET k v EX 30 NX"), 100);
        assert_eq!(words(&sent), "SET k v PX 300 NX");
        let (sent, _) = compress(&argv("EXPIRE k 10"), 100);
        assert_eq!(words(&sent), "PEXPIRE k 100");
        let (sent, scale) = compress(&argv("TTL k"), 100);
        assert_eq!(words(&sent), "PTTL k");
        assert_eq!(rescale(Reply::Integer(150), scale, 100), Reply::Integer(15));
        assert_eq!(rescale(Reply::Integer(-2), scale, 100), Reply::Integer(-2));
        let renew = r#"EVAL 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end' 1 lock:job:9 token-C 20000"#;
        let (sent, _) = compress(&argv(renew), 100);
        assert_eq!(sent.last().unwrap(), b"200");
        let release = r#"EVAL 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end' 1 k 12345"#;
        let (sent, _) = compress(&argv(release), 100);
        assert_eq!(
            sent.last().unwrap(),
            b"12345",
            "a script that sets no TTL keeps its arguments"
        );
    }

    #[test]
    fn wait_timeouts_are_compressed_but_forever_stays_forever() {
        let (sent, _) = compress(&argv("WAIT 1 5000"), 100);
        assert_eq!(words(&sent), "WAIT 1 50");
        let (sent, _) = compress(&argv("WAIT 1 0"), 100);
        assert_eq!(words(&sent), "WAIT 1 0");
    }

    #[test]
    fn functions_and_small_numbers() {
        let (sent, _) = compress(&argv("FCALL renew 1 k tok 30000"), 100);
        assert_eq!(words(&sent), "FCALL renew 1 k tok 300");
        let (sent, _) = compress(&argv("SET k v PX 50"), 100);
        assert_eq!(words(&sent), "SET k v PX 1", "never below 1 ms");
        let (_, scale) = compress(&argv("PTTL k"), 100);
        assert_eq!(rescale(Reply::Integer(42), scale, 100), Reply::Integer(4200));
        assert_eq!(words(&argv("SET k 'a b'")), "SET k \"a b\"");
    }
}
