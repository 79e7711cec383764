//! Redis 8.4's compare-and-set commands on an older server: the Lua each
//! one stands for.
//!
//! The lab's real servers are redis-server 7.0.15, which knows neither
//! `DELEX key IFEQ token` nor `SET key value IFEQ token …` (a syntax error
//! on 7.0). Both are exactly what a lock's release and renewal scripts have
//! done for years, so a lesson written for 8.4 can still play on 7.0: the
//! real runner sends the script instead and says so. The rewrite is a pure
//! function of the argv, so it is written once, here, and unit-tested
//! against the simulator's own 8.4 commands (`server/cmd/delex.rs`,
//! `server/cmd/strings.rs`'s `SET … IFEQ`).
//!
//! Only the `IFEQ` forms have a stand-in: `IFNE` and the digest forms
//! (`IFDEQ`/`IFDNE`, XXH3 of the value) and `SET … IFEQ … GET` are refused
//! with a sentence rather than approximated.

use crate::client::RELEASE_LUA;

/// `SET key value IFEQ cmp [expiry]` as a script: set only when the key
/// holds `cmp` (a missing key never matches, so it never creates one),
/// with the same expiry options, answering `OK` or nil as `SET … IFEQ`
/// does. ARGV: the new value, the value compared, then SET's expiry
/// options unchanged.
pub const SET_IFEQ_LUA: &str = "if redis.call('GET', KEYS[1]) == ARGV[2] then \
     return redis.call('SET', KEYS[1], ARGV[1], unpack(ARGV, 3)) end return false";

/// What to send instead of an 8.4 command on an older server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandIn {
    /// The `EVAL` to send.
    pub argv: Vec<Vec<u8>>,
    /// The command it stands in for (`DELEX` or `SET … IFEQ`), for the note.
    pub stands_for: &'static str,
    /// What the script is, for the note ("the Lua compare-and-delete").
    pub script: &'static str,
}

/// An 8.4 command with no stand-in.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{command} needs Redis 8.4 and only its IFEQ form has a Lua equivalent")]
pub struct NoStandIn {
    pub command: &'static str,
}

/// Is `argv` a command only Redis 8.4 understands? `Ok(None)` for every
/// command 7.0 answers itself (a `SET` without a compare option too).
pub fn for_7_0(argv: &[Vec<u8>]) -> Result<Option<StandIn>, NoStandIn> {
    let Some(name) = argv.first() else { return Ok(None) };
    if name.eq_ignore_ascii_case(b"DELEX") {
        return delex(argv).map(Some);
    }
    if name.eq_ignore_ascii_case(b"SET") {
        return set_compare(argv);
    }
    Ok(None)
}

fn is(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}

/// `DELEX key IFEQ token` → the release script (1 or 0, as DELEX answers).
fn delex(argv: &[Vec<u8>]) -> Result<StandIn, NoStandIn> {
    if argv.len() != 4 || !is(&argv[2], "IFEQ") {
        return Err(NoStandIn { command: "DELEX" });
    }
    Ok(StandIn {
        argv: eval(RELEASE_LUA, &argv[1], [argv[3].clone()]),
        stands_for: "DELEX",
        script: "the Lua compare-and-delete",
    })
}

/// `SET key value IFEQ cmp [EX|PX|EXAT|PXAT n | KEEPTTL]`: `Ok(None)` when
/// the SET has no compare option.
fn set_compare(argv: &[Vec<u8>]) -> Result<Option<StandIn>, NoStandIn> {
    let options = argv.get(3..).unwrap_or_default();
    let compares = ["IFEQ", "IFNE", "IFDEQ", "IFDNE"];
    let Some(at) = options.iter().position(|o| compares.iter().any(|c| is(o, c))) else {
        return Ok(None);
    };
    let refuse = NoStandIn {
        command: "SET … IFEQ"
    };
    if !is(&options[at], "IFEQ") || options.iter().any(|o| is(o, "GET")) {
        return Err(refuse);
    }
    let Some(cmp) = options.get(at + 1) else {
        return Err(refuse);
    };
    let rest = options[..at].iter().chain(&options[at + 2..]).cloned();
    let args = [argv[2].clone(), cmp.clone()].into_iter().chain(rest);
    Ok(Some(StandIn {
        argv: eval(SET_IFEQ_LUA, &argv[1], args),
        stands_for: "SET … IFEQ",
        script: "a Lua compare-and-set",
    }))
}

fn eval(script: &str, key: &[u8], args: impl IntoIterator<Item = Vec<u8>>) -> Vec<Vec<u8>> {
    [
        b"EVAL".to_vec(),
        script.as_bytes().to_vec(),
        b"1".to_vec(),
        key.to_vec(),
    ]
    .into_iter()
    .chain(args)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{ConnId, Node, Profile};

    fn argv(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    /// The same sequence on an 8.4 node with the commands themselves and on
    /// a 7.0 node with their stand-ins gives the same replies and leaves the
    /// same value and TTL.
    #[test]
    fn a_stand_in_answers_as_the_8_4_command() {
        let lines = [
            "SET k a NX PX 10000",
            "SET k b IFEQ x PX 5000",
            "SET k b IFEQ a PX 5000",
            "PTTL k",
            "SET k c IFEQ b",
            "PTTL k",
            "SET missing v IFEQ v PX 100",
            "EXISTS missing",
            "SET k d IFEQ c KEEPTTL",
            "DELEX k IFEQ x",
            "DELEX k IFEQ d",
            "EXISTS k",
        ];
        let mut new = Node::new(Profile::V8_4);
        let mut old = Node::new(Profile::V7_0);
        for line in lines {
            let a = argv(line);
            let sent = for_7_0(&a).unwrap().map(|s| s.argv).unwrap_or_else(|| a.clone());
            let want = new.execute(ConnId(0), &a);
            let got = old.execute(ConnId(0), &sent);
            assert_eq!(got, want, "{line}");
        }
    }

    #[test]
    fn only_ifeq_has_a_stand_in() {
        assert_eq!(for_7_0(&argv("SET k v NX PX 100")), Ok(None));
        assert_eq!(for_7_0(&argv("GET k")), Ok(None));
        for line in [
            "SET k v IFNE x",
            "SET k v IFEQ x GET",
            "SET k v IFEQ",
            "DELEX k IFNE x",
            "DELEX k",
        ] {
            assert!(for_7_0(&argv(line)).is_err(), "{line}");
        }
        let s = for_7_0(&argv("SET k v PX 100 IFEQ old")).unwrap().unwrap();
        assert_eq!(s.argv[3..], argv("k v old PX 100")[..]);
    }
}
