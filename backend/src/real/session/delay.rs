//! A slow link for one client of one session: its connections to a node
//! go through a [`LinkProxy`] of its own (latency, jitter, lost requests),
//! while every other client — and every other session on the same server —
//! keeps the direct path. The simulator's links are per client and node
//! (`Fault::SetLink`), and so are these.

use std::net::{SocketAddr, ToSocketAddrs};

use super::*;
use crate::real::faults::proxy::{link_seed, LinkFault, LinkProxy};

impl Session {
    /// Make the link from `client` to node `node` slow or lossy
    /// (`LinkFault::default()`: as fast as the network is). The first call
    /// starts the proxy and closes the client's connections to the node
    /// (an open `MULTI` there is gone, as when a real proxy is put in the
    /// path), reconnects through the proxy, and only then slows it. The
    /// answer says what was done, for the trace.
    pub fn set_link(&mut self, client: &str, node: u32, fault: LinkFault) -> Result<String, SessionError> {
        let c = self.client_index(client)?;
        let n = node as usize;
        let target = self.nodes.get(n).ok_or(SessionError::NoNode(node))?.target.clone();
        let key = (c, node);
        if !self.delays.contains_key(&key) {
            let upstream = tcp_addr(&target.url).ok_or_else(|| SessionError::NoProxy {
                node: target.name.clone(),
                addr: display_addr(&target.url),
            })?;
            let proxy = LinkProxy::start(upstream, LinkFault::default(), link_seed(client, node))
                .map_err(|e| self.unreachable(n, RealError::Io(e)))?;
            self.delays.insert(key, proxy);
            self.conns.remove(&key);
            self.links.remove(&key);
            // The client's scripts' applier goes through the proxy too.
            let applier = (c | super::effects::APPLIER, node);
            self.conns.remove(&applier);
            self.links.remove(&applier);
            self.multi.remove(&key);
            // The link turns slow under a connection the client already
            // has, as a node turns slow under a client library's pool: the
            // handshake (connect, AUTH as the session user) goes through the
            // proxy while it is still fast. Best effort: a node that is down
            // now is connected to, through the proxy, when next asked.
            let _ = self.conn(c, n);
        }
        let proxy = &self.delays[&key];
        proxy.set(fault);
        Ok(proxy.describe(client, &target.name))
    }

    /// Does `client`'s link to node `node` go through a proxy?
    pub fn has_delay(&self, client: &str, node: u32) -> bool {
        self.clients
            .get(client)
            .is_some_and(|&c| self.delays.contains_key(&(c, node)))
    }

    /// Where client `c` connects to reach node `n`: the node's URL, with
    /// the address of the client's proxy when its link there is delayed
    /// (the credentials, database and protocol stay as they are).
    pub(super) fn client_url(&self, c: u32, n: usize) -> String {
        let url = &self.nodes[n].target.url;
        // A script's applier goes through its client's link.
        match self.delays.get(&(c & !super::effects::APPLIER, n as u32)) {
            Some(proxy) => with_addr(url, proxy.addr()),
            None => url.clone(),
        }
    }
}

/// The socket address of a `redis://` URL, if it names one.
fn tcp_addr(url: &str) -> Option<SocketAddr> {
    if !url.starts_with("redis://") {
        return None;
    }
    display_addr(url).to_socket_addrs().ok()?.next()
}

/// `url` with its `host:port` replaced by `addr` (the part
/// [`display_addr`] shows).
fn with_addr(url: &str, addr: SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (creds, host) = match rest.rsplit_once('@') {
        Some((c, h)) => (format!("{c}@"), h),
        None => (String::new(), rest),
    };
    let tail = &host[host.find(['/', '?', '#']).unwrap_or(host.len())..];
    format!("{scheme}://{creds}{addr}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxied_url_keeps_everything_but_the_address() {
        let at: SocketAddr = "127.0.0.1:7001".parse().unwrap();
        assert_eq!(with_addr("redis://127.0.0.1:6379", at), "redis://127.0.0.1:7001");
        assert_eq!(
            with_addr("redis://default:p@ss/w@h:1/2?protocol=resp3", at),
            "redis://default:p@ss/w@127.0.0.1:7001/2?protocol=resp3"
        );
        assert_eq!(tcp_addr("redis+unix:///run/redis.sock"), None);
        assert_eq!(
            tcp_addr("redis://127.0.0.1:6380/0"),
            Some("127.0.0.1:6380".parse().unwrap())
        );
    }

    #[test]
    fn a_link_to_a_unix_socket_cannot_be_slowed_and_says_so() {
        let pool = SessionPool::new(SessionLimits::default());
        let mut s = pool
            .open(vec![NodeTarget::new("redis", "redis+unix:///run/redis.sock")])
            .expect("a session opens without connecting");
        let slow = LinkFault {
            latency_ms: 7,
            ..LinkFault::default()
        };
        let err = s
            .set_link("A", 0, slow)
            .expect_err("no proxy in front of a socket file");
        assert!(matches!(err, SessionError::NoProxy { .. }), "{err}");
        assert!(err.to_string().contains("cannot be slowed"), "{err}");
        assert!(!s.has_delay("A", 0));
    }
}
