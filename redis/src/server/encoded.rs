//! Replies written straight as RESP bytes, for a host that sends them on a
//! socket (sim-server), instead of a [`Reply`](crate::Reply) tree the host
//! then encodes.
//!
//! redis-server's range reads copy each element into the client's output
//! buffer (`addReplyBulkCBuffer` per element in `addListRangeReply`). A
//! [`Reply::Array`](crate::Reply::Array) of [`Reply::Bulk`](crate::Reply::Bulk)s
//! costs one allocation per element, a vector of replies, and a walk to
//! encode it and another to free it: `LRANGE_100` in redis-benchmark spent
//! most of its time there (issue 42, item 6). A command that can (see
//! [`Encoded::lend`]) writes its reply here instead and returns a
//! placeholder; the host takes the bytes with `Node::take_encoded`.
//!
//! Only a command the host runs itself, outside `EXEC` and scripts (whose
//! replies are collected as trees), is written here, and only when the
//! host asked for it (`Node::encode_replies`): the lab, the page and the
//! CLI keep their trees.

/// The host's buffer for one command's reply, and whether the running
/// command may (and did) write there.
#[derive(Clone, Debug, Default)]
pub(crate) struct Encoded {
    /// The host asked for encoded replies.
    pub(crate) wanted: bool,
    /// The running command is one the host runs itself (see the module's
    /// doc): it may write here.
    pub(crate) open: bool,
    /// The running command wrote its reply here.
    pub(crate) ready: bool,
    bytes: Vec<u8>,
}

impl Encoded {
    /// The buffer the running command writes its reply into, if it may
    /// (lent, so the command can hold the keyspace meanwhile); it comes
    /// back through [`Encoded::give_back`]. RESP2 and RESP3 agree on every
    /// reply written here: arrays and bulk strings.
    pub(crate) fn lend(&mut self) -> Option<Vec<u8>> {
        if !self.open {
            return None;
        }
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.clear();
        Some(bytes)
    }

    /// The lent buffer back: its reply is the command's if anything was
    /// written (an encoded reply is never empty).
    pub(crate) fn give_back(&mut self, bytes: Vec<u8>) {
        self.ready = !bytes.is_empty();
        self.bytes = bytes;
    }

    /// The running command's reply, if it was written here.
    pub(crate) fn take(&mut self) -> Option<&[u8]> {
        std::mem::take(&mut self.ready).then_some(&self.bytes[..])
    }
}

/// `<prefix><n>\r\n`: an aggregate's or a bulk string's header.
pub(crate) fn header(out: &mut Vec<u8>, prefix: u8, n: usize) {
    out.push(prefix);
    crate::reply::push_int(out, n as i64);
    out.extend_from_slice(b"\r\n");
}

/// An array of bulk strings (`addReplyArrayLen`, then `addReplyBulk` for
/// each).
pub(crate) fn bulk_array<'a>(out: &mut Vec<u8>, len: usize, items: impl Iterator<Item = &'a [u8]>) {
    header(out, b'*', len);
    for item in items {
        header(out, b'$', item.len());
        out.extend_from_slice(item);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::Reply;
    use crate::server::{Node, Profile};

    fn argv(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    fn bulks(items: &[&str]) -> Reply {
        Reply::Array(items.iter().map(|s| Reply::bulk(s.as_bytes())).collect())
    }

    #[test]
    fn lrange_is_written_as_bytes_only_for_the_host_that_asked() {
        let mut node = Node::new(Profile::V7_0);
        let c = node.connect();
        node.execute(c, &argv(&["RPUSH", "l", "a", "bb", ""]));
        let all = argv(&["LRANGE", "l", "0", "-1"]);
        assert_eq!(node.execute(c, &all), bulks(&["a", "bb", ""]));
        assert_eq!(node.take_encoded(), None);
        node.encode_replies(true);
        assert_eq!(node.execute(c, &all), Reply::Nil);
        assert_eq!(
            node.take_encoded(),
            Some(&b"*3\r\n$1\r\na\r\n$2\r\nbb\r\n$0\r\n\r\n"[..])
        );
        // Empty ranges and errors stay replies.
        assert_eq!(node.execute(c, &argv(&["LRANGE", "l", "5", "9"])), bulks(&[]));
        assert_eq!(node.execute(c, &argv(&["LRANGE", "none", "0", "-1"])), bulks(&[]));
        assert!(node.execute(c, &argv(&["LRANGE", "l", "x", "1"])).is_error());
        assert_eq!(node.take_encoded(), None);
        // Inside EXEC and from a script, the reply is part of another.
        node.execute(c, &argv(&["MULTI"]));
        node.execute(c, &argv(&["LRANGE", "l", "0", "0"]));
        assert_eq!(node.execute(c, &argv(&["EXEC"])), Reply::Array(vec![bulks(&["a"])]));
        let script = "return redis.call('lrange', KEYS[1], 1, 1)";
        assert_eq!(node.execute(c, &argv(&["EVAL", script, "1", "l"])), bulks(&["bb"]));
        assert_eq!(node.take_encoded(), None);
    }

    #[test]
    fn only_an_open_command_writes_and_its_bytes_are_taken_once() {
        let mut e = Encoded::default();
        assert!(e.lend().is_none());
        e.open = true;
        // Lent and given back unused: the command replied with a tree.
        let unused = e.lend().expect("open");
        e.give_back(unused);
        assert_eq!(e.take(), None);
        let mut out = e.lend().expect("open");
        let items: [&[u8]; 3] = [b"a", b"", b"0123456789"];
        bulk_array(&mut out, items.len(), items.into_iter());
        e.give_back(out);
        assert_eq!(e.take(), Some(&b"*3\r\n$1\r\na\r\n$0\r\n\r\n$10\r\n0123456789\r\n"[..]));
        assert_eq!(e.take(), None);
    }
}
