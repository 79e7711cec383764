//! Random command sequences on a fresh simulated node and on a real
//! redis-server must print identically.
//!
//! The generator stays inside what is deterministic on a real server: a
//! small key space (`k1 k2 h1`), expiries far enough away that none fires
//! during a case and whose `TTL` cannot land on a rounding boundary (whole
//! seconds, or milliseconds that are multiples of 1000), no two equal
//! expiry amounts in a case (see [`unique_amount`]), absolute expiries only
//! in the past, no `PTTL`. Everything else is fair game: conflicting
//! options, integers at the edges of i64, wrong types, wrong arities,
//! transactions with queued errors, `WATCH` that fires, and the two lock
//! scripts (compare-and-delete, compare-and-PEXPIRE) on any key and token.

use locklab_backend::real::conn::RealConnection;
use locklab_core::server::Profile;
use locklab_tests::diff::{self, Script};
use locklab_tests::RedisServer;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Quote a token for a redis-cli line when it needs it.
fn quote(t: &str) -> String {
    if t.is_empty() || t.contains([' ', '"', '\'', '\\']) {
        format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        t.to_owned()
    }
}

fn line(tokens: Vec<String>) -> String {
    tokens.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" ")
}

fn s(x: &str) -> String {
    x.to_owned()
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![Just(s("k1")), Just(s("k2")), Just(s("h1"))]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(s("a")),
        Just(s("token-A-111")),
        Just(s("")),
        Just(s("x y")),
        Just(s("0")),
        Just(s("1")),
        Just(s("-1")),
        Just(s("42")),
        Just(s("1.5")),
        Just(s("9223372036854775807")),
        Just(s("-9223372036854775808")),
        Just(s("9223372036854775806")),
        Just(s("-9223372036854775807")),
    ]
}

/// Increments: the i64 edges, small numbers and some that do not parse.
fn increment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(s("1")),
        Just(s("-1")),
        Just(s("0")),
        Just(s("100")),
        Just(s("9223372036854775807")),
        Just(s("-9223372036854775808")),
        Just(s("9223372036854775806")),
        Just(s("-9223372036854775807")),
        Just(s("9223372036854775808")),
        Just(s("abc")),
        Just(s("1.5")),
        Just(s("")),
        (-5i64..5).prop_map(|i| i.to_string()),
    ]
}

/// `SET` options in any order, conflicting ones included.
fn set_option() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        Just(vec![s("NX")]),
        Just(vec![s("XX")]),
        Just(vec![s("GET")]),
        Just(vec![s("KEEPTTL")]),
        Just(vec![s("nx")]),
        prop_oneof![
            Just(s("@S100")),
            Just(s("@S200")),
            Just(s("0")),
            Just(s("-1")),
            Just(s("x"))
        ]
        .prop_map(|n| vec![s("EX"), n]),
        prop_oneof![Just(s("@M300")), Just(s("@M400")), Just(s("0"))].prop_map(|n| vec![s("PX"), n]),
        prop_oneof![Just(s("1")), Just(s("0"))].prop_map(|n| vec![s("EXAT"), n]),
        Just(vec![s("PXAT"), s("1")]),
        Just(vec![s("EX")]),
        Just(vec![s("BOGUS")]),
    ]
}

fn expire_option() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(s("NX")),
        Just(s("XX")),
        Just(s("GT")),
        Just(s("LT")),
        Just(s("FOO"))
    ]
}

const UNLOCK: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
    return redis.call('DEL', KEYS[1]) else return 0 end";
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
    return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";

/// One plain command (no transaction control).
fn command() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        4 => (key(), value(), prop::collection::vec(set_option(), 0..3)).prop_map(|(k, v, opts)| {
            let mut t = vec![s("SET"), k, v];
            t.extend(opts.into_iter().flatten());
            t
        }),
        3 => (key(), prop_oneof![Just(s("@S100")), Just(s("@S200")), Just(s("@S500")), Just(s("0")),
                Just(s("-1")), Just(s("x")), Just(s("9223372036854775807"))],
              prop::collection::vec(expire_option(), 0..3))
            .prop_map(|(k, n, opts)| {
                let mut t = vec![s("EXPIRE"), k, n];
                t.extend(opts);
                t
            }),
        1 => (key(), prop_oneof![Just(s("@M300")), Just(s("@M600"))],
              prop::collection::vec(expire_option(), 0..2))
            .prop_map(|(k, n, opts)| {
                let mut t = vec![s("PEXPIRE"), k, n];
                t.extend(opts);
                t
            }),
        3 => (key(), prop::collection::vec((prop_oneof![Just(s("f1")), Just(s("f2"))], value()), 1..3))
            .prop_map(|(k, pairs)| {
                let mut t = vec![s("HSET"), k];
                for (f, v) in pairs {
                    t.push(f);
                    t.push(v);
                }
                t
            }),
        1 => key().prop_map(|k| vec![s("HSET"), k, s("f1")]),
        1 => (key(), prop_oneof![Just(s("f1")), Just(s("f2"))]).prop_map(|(k, f)| vec![s("HGET"), k, f]),
        1 => (key(), prop_oneof![Just(s("f1")), Just(s("f2"))], increment())
            .prop_map(|(k, f, n)| vec![s("HINCRBY"), k, f, n]),
        1 => key().prop_map(|k| vec![s("HGETALL"), k]),
        3 => (key(), increment()).prop_map(|(k, n)| vec![s("INCRBY"), k, n]),
        1 => (key(), increment()).prop_map(|(k, n)| vec![s("DECRBY"), k, n]),
        1 => key().prop_map(|k| vec![s("INCR"), k]),
        1 => key().prop_map(|k| vec![s("DECR"), k]),
        2 => prop::collection::vec(key(), 1..3).prop_map(|ks| {
            let mut t = vec![s("DEL")];
            t.extend(ks);
            t
        }),
        2 => key().prop_map(|k| vec![s("GETDEL"), k]),
        2 => prop::collection::vec(key(), 1..4).prop_map(|ks| {
            let mut t = vec![s("EXISTS")];
            t.extend(ks);
            t
        }),
        2 => key().prop_map(|k| vec![s("TYPE"), k]),
        3 => key().prop_map(|k| vec![s("TTL"), k]),
        2 => key().prop_map(|k| vec![s("GET"), k]),
        1 => key().prop_map(|k| vec![s("PERSIST"), k]),
        1 => (key(), value()).prop_map(|(k, v)| vec![s("SETNX"), k, v]),
        1 => key().prop_map(|k| vec![s("STRLEN"), k]),
        // the lock scripts: compare-and-delete, compare-and-PEXPIRE
        2 => (key(), value()).prop_map(|(k, v)| vec![s("EVAL"), s(UNLOCK), s("1"), k, v]),
        1 => (key(), value(), prop_oneof![Just(s("@M300")), Just(s("0")), Just(s("x"))])
            .prop_map(|(k, v, ms)| vec![s("EVAL"), s(RENEW), s("1"), k, v, ms]),
        // wrong arities
        2 => prop_oneof![
            Just(vec![s("GET")]),
            Just(vec![s("GET"), s("k1"), s("k2")]),
            Just(vec![s("SET"), s("k1")]),
            Just(vec![s("DEL")]),
            Just(vec![s("EXISTS")]),
            Just(vec![s("INCRBY"), s("k1")]),
            Just(vec![s("EXPIRE"), s("k1")]),
            Just(vec![s("HSET"), s("h1")]),
            Just(vec![s("TTL")]),
            Just(vec![s("TYPE"), s("k1"), s("k2")]),
            Just(vec![s("GETDEL")]),
            Just(vec![s("NOPE"), s("k1")]),
        ],
    ]
}

/// A step: a plain command, a transaction, a WATCH scenario, or a stray
/// transaction-control command.
fn step() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop_oneof![
        8 => command().prop_map(|c| vec![c]),
        2 => (prop::collection::vec(command(), 0..5), prop::bool::ANY).prop_map(|(body, commit)| {
            let mut v = vec![vec![s("MULTI")]];
            v.extend(body);
            v.push(vec![if commit { s("EXEC") } else { s("DISCARD") }]);
            v
        }),
        1 => (key(), prop::option::of(command()), prop::collection::vec(command(), 0..3))
            .prop_map(|(k, meddle, body)| {
                let mut v = vec![vec![s("WATCH"), k]];
                v.extend(meddle);
                v.push(vec![s("MULTI")]);
                v.extend(body);
                v.push(vec![s("EXEC")]);
                v
            }),
        1 => prop_oneof![
            Just(vec![vec![s("EXEC")]]),
            Just(vec![vec![s("DISCARD")]]),
            Just(vec![vec![s("UNWATCH")]]),
            Just(vec![vec![s("MULTI")], vec![s("MULTI")], vec![s("EXEC")]]),
        ],
    ]
}

/// Expiry amounts are generated as `@S<base>` (seconds) or `@M<base>`
/// (milliseconds, a whole number of seconds) and made unique per line:
/// base + line index. Two TTLs in a case then always differ by at least a
/// second, so `GT`/`LT` never compare equal values, whose outcome on a real
/// server depends on whether a millisecond ticked in between.
fn unique_amount(token: &str, line: usize) -> String {
    let (unit, base) = match (token.strip_prefix("@S"), token.strip_prefix("@M")) {
        (Some(b), _) => (1, b),
        (_, Some(b)) => (1000, b),
        _ => return token.to_owned(),
    };
    let base: u64 = base.parse().expect("numeric base");
    ((base + line as u64) * unit).to_string()
}

fn sequence() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(step(), 1..12).prop_map(|steps| {
        let mut lines: Vec<String> = steps
            .into_iter()
            .flatten()
            .take(30)
            .enumerate()
            .map(|(i, tokens)| line(tokens.into_iter().map(|t| unique_amount(&t, i)).collect()))
            .collect();
        // Never leave a transaction open: the next case's FLUSHALL runs on a
        // new connection anyway, but a dangling MULTI says nothing useful.
        lines.push(s("DISCARD"));
        lines
    })
}

fn script_of(lines: &[String]) -> Script {
    let mut text = String::from("FLUSHALL\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    diff::parse_script("proptest", &text).expect("generated lines parse")
}

/// The proptest runner is driven by hand (not the `proptest!` macro) so the
/// one server it uses lives on this test's stack and is killed when the test
/// ends, pass or fail.
#[test]
fn random_sequences_match_real_redis() {
    let server = RedisServer::start();
    let url = server.url();
    // 64 cases by default (about a second); PROPTEST_CASES=5000 for a soak.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&sequence(), |lines| {
        let script = script_of(&lines);
        // A new connection per case: no MULTI or WATCH state leaks across.
        let mut conn = RealConnection::open(&url).expect("connect");
        let real = diff::run_real(&script, &mut conn);
        let sim = diff::run_sim(&script, Profile::V7_0);
        let mismatches = diff::compare(&script, &sim, &real);
        prop_assert!(
            mismatches.is_empty(),
            "{}\nwhole sequence:\n{}",
            diff::report(&mismatches),
            script.plain_text()
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
