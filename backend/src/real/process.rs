//! A real `redis-server` process, started on a free loopback port and
//! killed when the guard drops (after redis-rs's `redis-test` crate).
//!
//! Tests get one each, so they run in parallel without sharing a keyspace;
//! `locklab bench` starts one to compare with. Nothing is written to disk
//! (`--save ''`, no AOF), and the process runs in a private temporary
//! directory.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a fresh server may take to answer `PING`.
const STARTUP_DEADLINE: Duration = Duration::from_secs(10);
/// How often to retry while it starts.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How many times to retry with a new port if the one we picked was taken.
const PORT_ATTEMPTS: usize = 5;

/// The panic message when there is no `redis-server` to run.
pub const NOT_FOUND: &str = "redis-server not found: install it with \
    `sudo apt-get install -y redis-server` (or run .ci/run, which installs it)";

/// The command line of a redis-server the lab starts, built in one place
/// for a test's or the bench's [`RedisServer`] and a managed topology's
/// node: on loopback only, nothing written to disk (`--save ''`, no AOF),
/// in the foreground, logging nowhere, with `--port <port>` on the command
/// line (what the [reaper](crate::real::reaper) knows it by). Options and
/// extra arguments follow in the order given; redis-server takes the last
/// of a repeated option.
#[derive(Clone, Debug)]
pub struct RedisServerArgs {
    args: Vec<OsString>,
}

impl RedisServerArgs {
    pub fn new(port: u16) -> Self {
        let port = port.to_string();
        let base = [
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ];
        let quiet = ["--daemonize", "no", "--logfile", ""];
        RedisServerArgs {
            args: base.iter().chain(&quiet).map(OsString::from).collect(),
        }
    }

    /// `--<name> <value>`.
    pub fn option(mut self, name: &str, value: &str) -> Self {
        self.args.push(format!("--{name}").into());
        self.args.push(value.into());
        self
    }

    /// Arguments as given (a caller's own options).
    pub fn extra(mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Self {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `binary` with these arguments, run in `dir`, with no standard
    /// streams.
    pub fn command(&self, binary: &Path, dir: &Path) -> Command {
        let mut cmd = Command::new(binary);
        cmd.args(&self.args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }
}

/// A running `redis-server`; killed in `Drop`.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    port: u16,
}

/// Locate `redis-server` on `PATH` (or at `$REDIS_SERVER` if set).
pub fn redis_server_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REDIS_SERVER") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    find_on_path("redis-server")
}

/// Locate `redis-cli` on `PATH` (or at `$REDIS_CLI` if set).
pub fn redis_cli_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REDIS_CLI") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    find_on_path("redis-cli")
}

pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Ask the kernel for a free loopback port. There is a window between
/// releasing it and redis-server binding it; [`RedisServer::start_with`]
/// retries with a new port if redis-server exits early.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// Send `PING` on a fresh socket and check for `+PONG`.
fn answers_ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while got.len() < 7 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    // A server still loading answers `-LOADING …`: not ready yet.
    got.starts_with(b"+PONG\r\n")
}

impl RedisServer {
    /// Start a server with the lab's default flags.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Start a server with extra command-line arguments appended (for
    /// example `["--maxmemory", "10mb"]`).
    pub fn start_with(extra_args: &[&str]) -> RedisServer {
        Self::start_using(redis_server_binary(), extra_args)
    }

    /// Start a specific `redis-server` binary (`None`: there is none, which
    /// panics with [`NOT_FOUND`]).
    pub fn start_using(binary: Option<PathBuf>, extra_args: &[&str]) -> RedisServer {
        let binary = binary.unwrap_or_else(|| panic!("{NOT_FOUND}"));
        Self::try_start_using(&binary, extra_args).unwrap_or_else(|why| panic!("{why}"))
    }

    /// Start one without panicking: for binaries, which report and go on.
    pub fn try_start(extra_args: &[&str]) -> Result<RedisServer, String> {
        let binary = redis_server_binary().ok_or_else(|| NOT_FOUND.to_owned())?;
        Self::try_start_using(&binary, extra_args)
    }

    fn try_start_using(binary: &Path, extra_args: &[&str]) -> Result<RedisServer, String> {
        let mut last_failure = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            match Self::spawn(binary, port, extra_args) {
                Ok(server) => return Ok(server),
                // No binary: another port will not help.
                Err(why) if why == NOT_FOUND => return Err(why),
                Err(why) => last_failure = why,
            }
        }
        Err(format!(
            "redis-server did not start after {PORT_ATTEMPTS} attempts: {last_failure}"
        ))
    }

    fn spawn(binary: &Path, port: u16, extra_args: &[&str]) -> Result<RedisServer, String> {
        // Run in a private directory so no stray dump.rdb lands in the repo.
        let dir = std::env::temp_dir().join(format!("locklab-redis-{}-{port}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let mut cmd = RedisServerArgs::new(port)
            .option("enable-debug-command", "yes")
            .extra(extra_args)
            .command(binary, &dir);
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                NOT_FOUND.to_owned()
            } else {
                format!("spawn {}: {e}", binary.display())
            }
        })?;
        let mut server = RedisServer { child, port };
        let addr = server.addr();
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if answers_ping(addr) {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                // Most likely the port was taken between free_port and bind.
                return Err(format!("redis-server on port {port} exited early: {status}"));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "redis-server on port {port} did not answer PING within {STARTUP_DEADLINE:?}"
                ));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The TCP port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `redis://127.0.0.1:port/`, for redis-rs.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The OS process id (for tests that pause or kill it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::env::temp_dir().join(format!("locklab-redis-{}-{}", std::process::id(), self.port));
        let _ = std::fs::remove_dir_all(dir);
    }
}
