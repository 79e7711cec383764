//! Three real `etcd` processes on free loopback ports: the processes only
//! (spawn, SIGKILL, wait, clean up). Talking to them — readiness, the
//! leader, every request — is [`super::driver`]'s, through etcd-client.
//!
//! Each member has a client port and a peer port, its own data directory
//! under one temporary root, and a log file next to it (read back when a
//! member will not start). Heartbeat 10 ms and election timeout 100 ms, so
//! an election after a crash takes a few hundred milliseconds of wall time
//! and etcd's minimum lease TTL (`1.5 × election timeout`, rounded up to
//! whole seconds) is 1 s, the floor the simulator takes too. Every process
//! is recorded with the [reaper](crate::real::reaper), like a managed
//! redis-server, so none outlives a killed backend.

use std::path::PathBuf;
use std::process::{Child, Command};

use crate::real::process::free_port;
use crate::real::service::member;

/// How `etcd` is found: `$LOCKLAB_ETCD`, else `etcd` on the `PATH`.
pub fn etcd_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOCKLAB_ETCD") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())
}

/// What to say when there is no `etcd` binary.
pub const ETCD_NOT_FOUND: &str =
    "etcd not found: install Debian's etcd-server (apt-get install etcd-server) or set LOCKLAB_ETCD";

/// One member process.
#[derive(Debug)]
pub struct EtcdMember {
    pub name: String,
    pub client_port: u16,
    pub peer_port: u16,
    child: Option<Child>,
}

impl EtcdMember {
    /// `http://127.0.0.1:<client port>`, what etcd-client connects to.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    pub fn is_up(&self) -> bool {
        self.child.is_some()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// Three etcd members forming one fresh cluster; killed when dropped.
#[derive(Debug)]
pub struct Cluster {
    pub members: Vec<EtcdMember>,
    root: PathBuf,
    binary: PathBuf,
    token: String,
}

impl Cluster {
    /// Spawn `n` members of a new cluster (not yet known to be ready).
    pub fn spawn(n: usize) -> Result<Cluster, String> {
        let binary = etcd_binary().ok_or_else(|| ETCD_NOT_FOUND.to_owned())?;
        let (root, hex) = member::fresh_root("etcd")?;
        let members = (0..n)
            .map(|i| EtcdMember {
                name: format!("etcd{}", i + 1),
                client_port: free_port(),
                peer_port: free_port(),
                child: None,
            })
            .collect();
        let mut c = Cluster {
            members,
            root,
            binary,
            token: format!("locklab-{hex}"),
        };
        for i in 0..n {
            c.start(i)?;
        }
        Ok(c)
    }

    /// `etcd1=http://127.0.0.1:p1,…`: every member's peer URL.
    fn initial_cluster(&self) -> String {
        let urls: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect();
        urls.join(",")
    }

    fn start(&mut self, i: usize) -> Result<(), String> {
        let initial = self.initial_cluster();
        let m = self.members.get_mut(i).ok_or_else(|| format!("no member {i}"))?;
        let dir = self.root.join(&m.name);
        let log = std::fs::File::create(self.root.join(format!("{}.log", m.name)))
            .map_err(|e| format!("creating {}'s log: {e}", m.name))?;
        let client = m.endpoint();
        let peer = m.peer_url();
        let mut cmd = Command::new(&self.binary);
        cmd.args(["--name", &m.name, "--data-dir"])
            .arg(&dir)
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &initial, "--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &self.token])
            .args(["--heartbeat-interval", "10", "--election-timeout", "100"])
            .args(["--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]);
        member::spawn(&mut m.child, &mut cmd, &self.binary, log, m.client_port)
    }

    /// SIGKILL member `i` and reap it: no shutdown, its data directory
    /// stays as a crashed machine's disk would.
    pub fn kill(&mut self, i: usize) -> Result<String, String> {
        let m = self.members.get_mut(i).ok_or_else(|| format!("no member {i}"))?;
        member::kill(&mut m.child, &m.name)
    }

    /// Has a member's process exited on its own? Its log's tail says why.
    pub fn exited(&mut self) -> Option<String> {
        let root = &self.root;
        self.members
            .iter_mut()
            .find_map(|m| member::exited(&mut m.child, &m.name, &root.join(format!("{}.log", m.name))))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            let _ = self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
