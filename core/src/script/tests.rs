//! Scripts against a tiny fake node, with the replies redis-server 7.0.15
//! gave for the same input.

use std::collections::BTreeMap;

use super::Scripting;
use crate::reply::Reply;
use crate::server::ScriptHost;

/// A map-backed stand-in for a node: strings and hashes, and the command
/// table's own checks for unknown commands, arity and no-script commands.
#[derive(Default)]
pub(super) struct Fake {
    strings: BTreeMap<Vec<u8>, Vec<u8>>,
    hashes: BTreeMap<Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>>,
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

impl ScriptHost for Fake {
    fn call(&mut self, argv: &[Vec<u8>]) -> Reply {
        let Some(cmd) = crate::server::table::find(&argv[0], crate::server::Profile::V7_0) else {
            return Reply::error("ERR Unknown Redis command called from script");
        };
        if !cmd.arity_ok(argv.len()) {
            return Reply::error("ERR Wrong number of args calling Redis command from script");
        }
        if !cmd.allowed_in_scripts() {
            return Reply::error("ERR This Redis command is not allowed from script");
        }
        let key = argv.get(1).cloned().unwrap_or_default();
        match cmd.name {
            "ping" => Reply::status("PONG"),
            "echo" => Reply::Bulk(key),
            "get" => {
                if self.hashes.contains_key(&key) {
                    return Reply::error(WRONGTYPE);
                }
                self.strings.get(&key).cloned().map_or(Reply::Nil, Reply::Bulk)
            }
            "set" => {
                self.strings.insert(key, argv[2].clone());
                Reply::ok()
            }
            "del" => {
                let mut n = 0;
                for k in &argv[1..] {
                    n += i64::from(self.strings.remove(k).is_some() || self.hashes.remove(k).is_some());
                }
                Reply::Integer(n)
            }
            "exists" => Reply::Integer(argv[1..].iter().filter(|k| self.strings.contains_key(*k) || self.hashes.contains_key(*k)).count() as i64),
            "incr" => {
                let v = self.strings.get(&key).map_or(Some(0), |v| String::from_utf8_lossy(v).parse::<i64>().ok());
                match v {
                    Some(v) => {
                        self.strings.insert(key, (v + 1).to_string().into_bytes());
                        Reply::Integer(v + 1)
                    }
                    None => Reply::error("ERR value is not an integer or out of range"),
                }
            }
            "hset" => {
                let h = self.hashes.entry(key).or_default();
                h.push((argv[2].clone(), argv[3].clone()));
                Reply::Integer(1)
            }
            "hgetall" => Reply::Map(
                self.hashes
                    .get(&key)
                    .map(|h| h.iter().map(|(f, v)| (Reply::Bulk(f.clone()), Reply::Bulk(v.clone()))).collect())
                    .unwrap_or_default(),
            ),
            _ => Reply::error("ERR the fake node does not implement this command"),
        }
    }
}

fn argv(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

/// Run one command line through the scripting commands.
pub(super) fn run(s: &mut Scripting, h: &mut Fake, args: &[&str]) -> Reply {
    use crate::server::table::{find, Handler};
    let argv = argv(args);
    // Through the command table, as the node dispatches them.
    match find(&argv[0], crate::server::Profile::V7_0).map(|c| c.handler) {
        Some(Handler::Script(f)) => f(s, h, &argv),
        _ => h.call(&argv),
    }
}

#[test]
fn smoke() {
    let (mut s, mut h) = (Scripting::new(), Fake::default());
    let r = run(&mut s, &mut h, &["EVAL", "return 1", "0"]);
    assert_eq!(r, Reply::Integer(1));
}
