//! Three real ZooKeeper servers on free loopback ports: the processes only
//! (spawn, SIGSTOP, SIGKILL, wait, clean up) and the `srvr` four-letter
//! word. Every request a lesson sends is [`super::driver`]'s, through
//! zookeeper-client.
//!
//! The servers are Debian's `zookeeperd` (3.8), run as
//! `java -cp … QuorumPeerMain zoo.cfg` directly rather than through
//! `zkServer.sh`, so the process the lab signals is the server itself and
//! not a shell around it. Each server has a data directory with its
//! `myid` and `zoo.cfg` under one temporary root, and a log file next to
//! it (read back when a server will not start).
//!
//! * **tickTime 100 ms** (ZooKeeper's default is 2 s): a session timeout
//!   is negotiated in ticks and a session expires within a tick of it, so
//!   with lessons compressed 5× (a 6 s session is 1.2 s) ticks must be
//!   small for an expiry to land within half a second of lesson time.
//!   initLimit 50 / syncLimit 10 ticks: a follower gives up on a silent
//!   leader after a second (not sooner: three JVMs on two busy cores must
//!   not elect by accident), and an election takes one to two seconds of
//!   wall time.
//! * **Session timeouts** are clamped to `[min, max]` set from the run's
//!   time factor (the simulator's 4–40 s, divided by the factor), so a
//!   negotiated timeout is the simulator's, compressed.
//! * **myids run backwards** (the first server is `myid 3`): on a fresh
//!   ensemble every vote ties on zxid and the highest id wins, so `zk1`,
//!   which the lessons call the leader, usually leads; the driver checks.
//! * The admin server is off and only `srvr` is whitelisted: it tells the
//!   driver who leads and the last zxid a server applied.
//!
//! Every process is recorded with the [reaper](crate::real::reaper), like a
//! managed redis-server, so none outlives a killed backend; dropping the
//! ensemble SIGKILLs all of them (a SIGSTOPped one too).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::real::process::{find_on_path, free_port};
use crate::real::service::member;

/// ZooKeeper's server jar where Debian's `zookeeper` package puts it (its
/// manifest names the other jars it needs).
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";
/// An slf4j binding, when installed, so a server's log says why it failed.
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// The server's tick, ms.
pub const TICK_MS: u64 = 100;

/// What to say when there is no ZooKeeper or no java.
pub const ZK_NOT_FOUND: &str = "ZooKeeper not found: install Debian's zookeeperd (apt-get install zookeeperd), \
     or set LOCKLAB_ZOOKEEPER_CLASSPATH (and LOCKLAB_JAVA)";

/// The class path of a ZooKeeper server: `$LOCKLAB_ZOOKEEPER_CLASSPATH`,
/// else Debian's jar (with slf4j-simple when present).
pub fn zk_classpath() -> Option<String> {
    if let Ok(cp) = std::env::var("LOCKLAB_ZOOKEEPER_CLASSPATH") {
        return Some(cp);
    }
    if !Path::new(DEBIAN_JAR).is_file() {
        return None;
    }
    let mut cp = DEBIAN_JAR.to_owned();
    if Path::new(SLF4J_SIMPLE).is_file() {
        cp.push(':');
        cp.push_str(SLF4J_SIMPLE);
    }
    Some(cp)
}

/// `$LOCKLAB_JAVA`, else `java` on the `PATH`.
pub fn java_binary() -> Option<PathBuf> {
    match std::env::var_os("LOCKLAB_JAVA") {
        Some(p) => Some(PathBuf::from(p)),
        None => find_on_path("java"),
    }
}

/// Are a ZooKeeper server and a java to run it installed?
pub fn zookeeper_installed() -> bool {
    zk_classpath().is_some() && java_binary().is_some()
}

/// One server process.
#[derive(Debug)]
pub struct Server {
    pub name: String,
    pub myid: u32,
    pub client_port: u16,
    quorum_port: u16,
    election_port: u16,
    /// Its data directory (myid, zoo.cfg, snapshots); the log is
    /// `<dir>.log`.
    dir: PathBuf,
    child: Option<Child>,
    stopped: bool,
}

impl Server {
    fn log(&self) -> PathBuf {
        self.dir.with_extension("log")
    }

    /// `127.0.0.1:<client port>`, what zookeeper-client connects to.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// Running and not SIGSTOPped.
    pub fn is_up(&self) -> bool {
        self.child.is_some() && !self.stopped
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// What `srvr` says about a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srvr {
    /// `leader`, `follower`, `standalone`, … (`Mode:`)
    pub mode: String,
    /// The last zxid it applied (`Zxid:`).
    pub zxid: i64,
    /// `3.8.0` (`Zookeeper version:`, up to the first `-`).
    pub version: String,
}

/// Three ZooKeeper servers forming one fresh ensemble; killed when dropped.
#[derive(Debug)]
pub struct Ensemble {
    pub servers: Vec<Server>,
    root: PathBuf,
    java: PathBuf,
    classpath: String,
}

impl Ensemble {
    /// Spawn `n` servers of a new ensemble (not yet known to serve), whose
    /// session timeouts are negotiated into `[min_session_ms,
    /// max_session_ms]`.
    pub fn spawn(n: usize, min_session_ms: u64, max_session_ms: u64) -> Result<Ensemble, String> {
        let classpath = zk_classpath().ok_or_else(|| ZK_NOT_FOUND.to_owned())?;
        let java = java_binary().ok_or_else(|| ZK_NOT_FOUND.to_owned())?;
        let (root, _) = member::fresh_root("zk")?;
        let servers = (0..n)
            .map(|i| Server {
                name: format!("zk{}", i + 1),
                myid: (n - i) as u32,
                client_port: free_port(),
                quorum_port: free_port(),
                election_port: free_port(),
                dir: root.join(format!("server{}", n - i)),
                child: None,
                stopped: false,
            })
            .collect();
        let mut e = Ensemble {
            servers,
            root,
            java,
            classpath,
        };
        for i in 0..n {
            e.write_config(i, min_session_ms, max_session_ms)?;
        }
        for i in 0..n {
            e.start(i)?;
        }
        Ok(e)
    }

    /// `server.<myid>=127.0.0.1:<quorum>:<election>` for every server.
    fn server_lines(&self) -> String {
        self.servers
            .iter()
            .map(|s| format!("server.{}=127.0.0.1:{}:{}\n", s.myid, s.quorum_port, s.election_port))
            .collect()
    }

    fn write_config(&self, i: usize, min_ms: u64, max_ms: u64) -> Result<(), String> {
        let s = self.servers.get(i).ok_or_else(|| format!("no server {i}"))?;
        let dir = &s.dir;
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        std::fs::write(dir.join("myid"), format!("{}\n", s.myid)).map_err(|e| format!("writing myid: {e}"))?;
        let min = min_ms.max(2 * TICK_MS);
        let cfg = format!(
            "tickTime={TICK_MS}\ninitLimit=50\nsyncLimit=10\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=srvr\nminSessionTimeout={min}\nmaxSessionTimeout={}\n\
             electionPortBindRetry=3\n{}",
            dir.display(),
            s.client_port,
            max_ms.max(min),
            self.server_lines()
        );
        std::fs::write(dir.join("zoo.cfg"), cfg).map_err(|e| format!("writing zoo.cfg: {e}"))
    }

    fn start(&mut self, i: usize) -> Result<(), String> {
        let s = self.servers.get_mut(i).ok_or_else(|| format!("no server {i}"))?;
        let dir = s.dir.clone();
        let log = std::fs::File::create(s.log()).map_err(|e| format!("creating {}'s log: {e}", s.name))?;
        let mut cmd = Command::new(&self.java);
        cmd
            // A small heap and the quick JIT: three servers on a laptop.
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
            .arg("-Dzookeeper.admin.enableServer=false")
            // For the reaper's check that a recorded pid is still this server.
            .arg(format!("-Dlocklab.clientPort={}", s.client_port))
            .args([
                "-cp",
                &self.classpath,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(dir.join("zoo.cfg"))
            .current_dir(&dir);
        member::spawn(&mut s.child, &mut cmd, &self.java, log, s.client_port)
    }

    /// SIGKILL server `i` and reap it: no shutdown, its data directory
    /// stays as a crashed machine's disk would.
    pub fn kill(&mut self, i: usize) -> Result<String, String> {
        let s = self.servers.get_mut(i).ok_or_else(|| format!("no server {i}"))?;
        member::kill(&mut s.child, &s.name)
    }

    /// SIGSTOP (or, with `stop = false`, SIGCONT) server `i`: it keeps its
    /// sockets and answers nothing, as a server cut off from everyone does.
    pub fn signal_stop(&mut self, i: usize, stop: bool) -> Result<String, String> {
        let s = self.servers.get_mut(i).ok_or_else(|| format!("no server {i}"))?;
        let pid = s.pid().ok_or_else(|| format!("{} is down", s.name))?;
        let sig = if stop { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .map_err(|e| format!("kill {sig} {pid}: {e}"))?;
        if !status.success() {
            return Err(format!("kill {sig} {pid} failed: {status}"));
        }
        s.stopped = stop;
        Ok(format!("SIG{} to {} (pid {pid})", &sig[1..], s.name))
    }

    /// Make server `i` the first (`zk1`, the one the lessons say leads),
    /// the others after it in their order; names follow the new order.
    pub fn lead_first(&mut self, i: usize) {
        if i < self.servers.len() {
            let s = self.servers.remove(i);
            self.servers.insert(0, s);
        }
        for (k, s) in self.servers.iter_mut().enumerate() {
            s.name = format!("zk{}", k + 1);
        }
    }

    /// Has a server's process exited on its own? Its log's tail says why.
    pub fn exited(&mut self) -> Option<String> {
        self.servers.iter_mut().find_map(|s| {
            let log = s.log();
            member::exited(&mut s.child, &s.name, &log)
        })
    }

    /// Ask server `i` `srvr` (a stopped or dead one answers nothing).
    pub fn srvr(&self, i: usize) -> Option<Srvr> {
        let s = self.servers.get(i).filter(|s| s.is_up())?;
        parse_srvr(&four_letters(s.client_port, "srvr")?)
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for i in 0..self.servers.len() {
            let _ = self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Send a four-letter word and read the answer to the end.
fn four_letters(port: u16, word: &str) -> Option<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(word.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// `srvr`'s `Zookeeper version:`, `Zxid:` and `Mode:` lines.
pub fn parse_srvr(text: &str) -> Option<Srvr> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    let zxid = field("Zxid:")?;
    let zxid = i64::from_str_radix(zxid.trim_start_matches("0x"), 16).ok()?;
    let version = field("Zookeeper version:").unwrap_or_default();
    Some(Srvr {
        mode: field("Mode:")?,
        zxid,
        version: version.split('-').next().unwrap_or_default().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_gives_the_mode_the_zxid_and_the_version() {
        let text = "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\n\
                    Latency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 0\nConnections: 1\nOutstanding: 0\n\
                    Zxid: 0x100000003\nMode: leader\nNode count: 5\n";
        assert_eq!(
            parse_srvr(text),
            Some(Srvr {
                mode: "leader".into(),
                zxid: 0x1_0000_0003,
                version: "3.8.0".into(),
            })
        );
        assert_eq!(
            parse_srvr("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
    }

    /// The reaper knows each server by its command line, and dropping the
    /// ensemble leaves no java process behind (a SIGSTOPped one included).
    #[test]
    fn servers_are_the_reapers_and_die_with_the_ensemble() {
        if !zookeeper_installed() {
            eprintln!("skipped: {ZK_NOT_FOUND}");
            return;
        }
        let mut e = Ensemble::spawn(3, 400, 4000).expect("three servers");
        // Serving first: a JVM still starting (or one that died, whose
        // reason this says) is not what is tested.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !(0..3).all(|i| e.srvr(i).is_some()) {
            if let Some(why) = e.exited() {
                panic!("{why}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the servers did not serve within 60 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let pids: Vec<(u32, String)> = e
            .servers
            .iter()
            .map(|s| (s.pid().expect("running"), s.client_port.to_string()))
            .collect();
        for (pid, port) in &pids {
            assert!(crate::real::reaper::is_managed_zookeeper(*pid, port));
            assert!(!crate::real::reaper::is_managed_zookeeper(*pid, "1"));
        }
        e.signal_stop(0, true).expect("SIGSTOP");
        drop(e);
        for (pid, _) in &pids {
            assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "{pid} is gone");
        }
    }
}
