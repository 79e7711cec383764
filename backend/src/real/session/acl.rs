//! The session's ACL user: the rules generated from the lab's command
//! table ([`acl_rules`]) and their making on a node ([`Session`]'s
//! `ensure_user`). This is the wall that holds inside Lua (see the module
//! doc of `session`), so it lives in one file a reviewer can read whole.

use locklab_core::reply::Reply;
use locklab_core::server::lab;

use super::{Argv, Session, SessionError};
use crate::real::conn::RealConnection;

impl Session {
    /// Make (or re-make) the ACL user on node `n` through its admin
    /// connection. `ACL SETUSER` is idempotent, and after a restart without
    /// persistence the user is gone, so this runs whenever the admin
    /// connection is new.
    pub(super) fn ensure_user(&mut self, n: usize) -> Result<(), SessionError> {
        if self.nodes[n].user_ready && self.nodes[n].admin.is_some() {
            return Ok(());
        }
        let url = self.nodes[n].target.url.clone();
        let mut admin = RealConnection::open(&url).map_err(|source| self.unreachable(n, source))?;
        admin
            .set_read_timeout(Some(self.sandbox.limits.reply_timeout))
            .map_err(|source| self.unreachable(n, source))?;
        let argv = setuser(acl_rules(&self.user, &self.password, &self.sandbox.prefix));
        match admin.execute(&argv) {
            Ok(Reply::Error(text)) => {
                return Err(SessionError::Setup {
                    node: self.nodes[n].target.name.clone(),
                    text,
                })
            }
            Ok(_) => {}
            Err(source) => return Err(self.unreachable(n, source)),
        }
        if let Err(source) = admin.execute(&setuser(acl_rules_later(&self.user))) {
            return Err(self.unreachable(n, source));
        }
        self.nodes[n].admin = Some(admin);
        self.nodes[n].user_ready = true;
        Ok(())
    }
}

/// The session user's ACL rules, in `ACL SETUSER` order. `reset` first so
/// re-applying is exact, whatever the user had before.
///
/// Generated from the lab's command table ([`lab::acl_commands`]):
/// `-@all`, then exactly the (command, subcommand) pairs the table allows,
/// so a script's `redis.call` meets the same list as a typed line — no
/// `SCRIPT DEBUG`, `MEMORY`, `OBJECT FREQ`, `CONFIG`, … anywhere. `SCAN`
/// is not in it: key patterns confine what a command *names*, not what
/// `SCAN` *returns*, so the lab runs a session's `SCAN` itself on its
/// administrative connection, confined to the prefix. A session on its own
/// cluster also gets `ASKING`, which it sends when it follows an `ASK`.
/// The commands of profile 8.4 (`DELEX`) go in a second call
/// ([`acl_rules_later`]), which a 7.0 server refuses harmlessly.
pub fn acl_rules(user: &str, password: &str, prefix: &str) -> Vec<String> {
    let mut rules = vec![
        user.to_owned(),
        "reset".to_owned(),
        "on".to_owned(),
        format!(">{password}"),
        format!("~{prefix}*"),
        "resetchannels".to_owned(),
        "-@all".to_owned(),
    ];
    rules.extend(lab::acl_commands(false));
    if prefix.is_empty() {
        rules.push("+asking".to_owned());
    }
    rules
}

/// The rules for the table's commands of profile 8.4, added to `user` by
/// a second `ACL SETUSER` whose error (an older server does not know
/// them) is ignored.
pub fn acl_rules_later(user: &str) -> Vec<String> {
    std::iter::once(user.to_owned())
        .chain(lab::acl_commands(true))
        .collect()
}

/// `ACL SETUSER` with `rules`.
pub(super) fn setuser(rules: Vec<String>) -> Argv {
    let mut argv: Argv = vec![b"ACL".to_vec(), b"SETUSER".to_vec()];
    argv.extend(rules.into_iter().map(String::into_bytes));
    argv
}
