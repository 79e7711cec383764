//! "Bring your own lock": acquire, release and extend written as Lua.
//!
//! The explorer's built-in variants ([`super::Acquire`], [`super::Release`],
//! [`super::Renew`]) are the ones the lessons compare. A trainee's own
//! design is three scripts instead, run with `EVAL` exactly as a client
//! library would send them, with one calling convention for all three:
//!
//! | | `KEYS[1]` | `ARGV[1]` | `ARGV[2]` |
//! |---|---|---|---|
//! | acquire | the lock key | this acquisition's token | the TTL in ms |
//! | release | the lock key | the token | the TTL in ms |
//! | extend | the lock key | the token | the TTL in ms |
//!
//! A script succeeds the way the built-in commands do: `OK` or `1`
//! (`redis.status_reply("OK")`, `return 1`, or the reply of the `SET` it
//! ends with). Anything else — `nil`, `0`, an error — is a failure: the
//! acquire retries, the extend gives the lock up, the release is simply
//! done. The scripts run on the simulated node's real Lua VM, so a typo is
//! the error redis-server 7.0 gives for it (see [`LockScripts::check`]).

use serde::{Deserialize, Serialize};

use super::{argv, Argv};
use crate::reply::Reply;

/// The user's three scripts; a missing one falls back to the program's
/// built-in variant (release: none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LockScripts {
    pub acquire: Option<String>,
    pub release: Option<String>,
    pub extend: Option<String>,
}

/// Which of the three scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptRole {
    Acquire,
    Release,
    Extend,
}

impl ScriptRole {
    pub fn name(self) -> &'static str {
        match self {
            ScriptRole::Acquire => "acquire",
            ScriptRole::Release => "release",
            ScriptRole::Extend => "extend",
        }
    }
}

impl LockScripts {
    /// The scripts that are given, by role.
    pub fn given(&self) -> Vec<(ScriptRole, &str)> {
        [
            (ScriptRole::Acquire, &self.acquire),
            (ScriptRole::Release, &self.release),
            (ScriptRole::Extend, &self.extend),
        ]
        .into_iter()
        .filter_map(|(r, s)| s.as_deref().map(|s| (r, s)))
        .collect()
    }

    /// `EVAL script 1 key token ttl`.
    pub fn eval(script: &str, key: &str, token: &str, ttl_ms: u64) -> Argv {
        argv(&["EVAL", script, "1", key, token, &ttl_ms.to_string()])
    }

    /// Compile every given script the way redis-server does when it first
    /// sees it (`SCRIPT LOAD` on a fresh node), and return the first one
    /// that does not compile with the reply redis-cli would print for it,
    /// e.g. `(error) ERR Error compiling script (new function):
    /// user_script:1: '=' expected near 'end'`.
    pub fn check(&self) -> Result<(), (ScriptRole, String)> {
        for (role, src) in self.given() {
            let mut node = crate::server::Node::new(crate::server::Profile::default());
            let conn = node.connect();
            let cmd = argv(&["SCRIPT", "LOAD", src]);
            let reply = node.execute(conn, &cmd);
            if let Reply::Error(_) = reply {
                return Err((role, crate::cli::render(&cmd, &reply).trim_end().to_owned()));
            }
        }
        Ok(())
    }
}
