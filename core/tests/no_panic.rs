//! Arbitrary bytes into the line parser and arbitrary argv into the
//! dispatcher must never panic, and every reply must be well formed.

use locklab_core::cli::parse_line;
use locklab_core::server::{ConnId, Node, Profile};
use proptest::prelude::*;

fn word() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Real command names and options, so the dispatcher goes deep.
        prop::sample::select(vec![
            "SET",
            "GET",
            "DEL",
            "EXPIRE",
            "PEXPIRE",
            "TTL",
            "PTTL",
            "INCR",
            "INCRBY",
            "DECRBY",
            "HSET",
            "HINCRBY",
            "HGETALL",
            "MULTI",
            "EXEC",
            "WATCH",
            "DISCARD",
            "SCAN",
            "KEYS",
            "DELEX",
            "DIGEST",
            "NX",
            "XX",
            "PX",
            "EX",
            "EXAT",
            "PXAT",
            "KEEPTTL",
            "GET",
            "IFEQ",
            "IFNE",
            "IFDEQ",
            "GT",
            "LT",
            "MATCH",
            "COUNT",
            "TYPE",
            "k",
            "h",
            "0",
            "1",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
            "99999999999999999999",
            "*",
            "[",
            "\\",
            "INFO",
            "WAIT",
            "DEBUG",
            "SLEEP",
            "0.01",
            "FLUSHALL",
            "GETDEL",
            "SETNX",
            "PERSIST",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_line(&bytes);
    }

    #[test]
    fn dispatcher_never_panics(cmds in prop::collection::vec(prop::collection::vec(word(), 0..7), 1..40),
                               profile in prop::sample::select(vec![Profile::V7_0, Profile::V8_4])) {
        let mut node = Node::new(profile);
        let conns = [node.connect(), node.connect()];
        for (i, argv) in cmds.iter().enumerate() {
            let reply = node.execute(conns[i % 2], argv);
            // Every error reply is a single protocol line with a code.
            if let locklab_core::Reply::Error(e) = &reply {
                prop_assert!(!e.contains('\r') && !e.contains('\n'), "{e:?}");
                prop_assert!(e.split(' ').next().is_some_and(|c| !c.is_empty()));
            }
            let _ = reply.to_cli();
            node.advance(7);
        }
        let _ = node.execute(ConnId(99), &[b"DBSIZE".to_vec()]);
    }
}
