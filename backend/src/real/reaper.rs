//! No managed redis-server (or redis-sentinel) outlives the backend that
//! started it.
//!
//! A managed topology kills its processes when it drops, and `locklab
//! serve` drops every lab when it gets SIGTERM or SIGINT. A backend killed
//! with SIGKILL (or one that crashed) cannot: its redis-servers are
//! reparented to init and keep their ports. So every managed process is
//! recorded in a pid file under the runtime directory
//! (`$XDG_RUNTIME_DIR/locklab/managed`, else `/tmp/locklab-<uid>/managed`):
//! its pid, its port and the backend's pid. A backend that starts reaps
//! the files whose backend is gone, killing the process only if it still
//! is a `redis-server` on that port (a pid may have been reused), or an
//! `etcd` member serving clients on that port (`real/lockservice`).

use std::path::PathBuf;
use std::process::Command;

/// The directory of the pid files.
pub fn runtime_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(|d| PathBuf::from(d).join("locklab"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("locklab-{}", uid())));
    base.join("managed")
}

/// The real user id, from `/proc/self/status` (no libc: unsafe code is
/// forbidden in this workspace).
fn uid() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Uid:")
                    .map(|r| r.split_whitespace().next().unwrap_or("0").to_owned())
            })
        })
        .unwrap_or_else(|| "0".into())
}

/// Record a managed redis-server this backend started.
pub fn record(pid: u32, port: u16) {
    let dir = runtime_dir();
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(
            dir.join(format!("{pid}.pid")),
            format!("{port}\n{}\n", std::process::id()),
        );
    }
}

/// The process is gone (killed and reaped by its topology).
pub fn forget(pid: u32) {
    let _ = std::fs::remove_file(runtime_dir().join(format!("{pid}.pid")));
}

/// Kill the managed redis-servers of backends that no longer run (and,
/// with `mine`, this backend's own: the last step of a shutdown). Returns
/// how many processes were killed.
pub fn reap(mine: bool) -> usize {
    let Ok(entries) = std::fs::read_dir(runtime_dir()) else {
        return 0;
    };
    let me = std::process::id();
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut lines = text.lines();
        let (Some(port), Some(owner)) = (lines.next(), lines.next().and_then(|o| o.parse::<u32>().ok())) else {
            continue;
        };
        let owner_alive = owner != me && alive(owner);
        if owner_alive || (owner == me && !mine) {
            continue;
        }
        if is_managed_redis(pid, port) || is_managed_etcd(pid, port) || is_managed_zookeeper(pid, port) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            killed += 1;
        }
        // Gone, reused by another program, or killed now: the file is done.
        let _ = std::fs::remove_file(&path);
    }
    killed
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Is `pid` still a redis-server (or a redis-sentinel) listening on `port`
/// as the lab starts them (`--port <port>` on its command line)?
pub(crate) fn is_managed_redis(pid: u32, port: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    // The program, as started (`/usr/bin/redis-server`) or as retitled
    // (`/usr/bin/redis-server 127.0.0.1:6379`,
    // `redis-sentinel 127.0.0.1:26379 [sentinel]`).
    let program = args
        .first()
        .and_then(|a| a.split(|&b| b == b' ').next())
        .unwrap_or_default();
    let redis = program.ends_with(b"redis-server") || program.ends_with(b"redis-sentinel");
    // redis-server rewrites its argv to "redis-server 127.0.0.1:<port>".
    let suffix = format!(":{port}");
    let on_port = args.windows(2).any(|w| w[0] == b"--port" && w[1] == port.as_bytes())
        || args
            .iter()
            .flat_map(|a| a.split(|&b| b == b' '))
            .any(|w| w.ends_with(suffix.as_bytes()));
    redis && on_port
}

/// Is `pid` still an `etcd` member serving clients on `port` as the lab
/// starts them (`--listen-client-urls http://127.0.0.1:<port>`)?
pub(crate) fn is_managed_etcd(pid: u32, port: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let etcd = args.first().is_some_and(|a| a.ends_with(b"etcd"));
    let url = format!("http://127.0.0.1:{port}");
    let on_port = args
        .windows(2)
        .any(|w| w[0] == b"--listen-client-urls" && w[1] == url.as_bytes());
    etcd && on_port
}

/// Is `pid` still a ZooKeeper server the lab started for `port`? Its
/// command line names QuorumPeerMain and carries `-Dlocklab.clientPort=
/// <port>` (ZooKeeper takes its port from zoo.cfg, so the lab puts it
/// there for this check).
pub(crate) fn is_managed_zookeeper(pid: u32, port: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let mark = format!("-Dlocklab.clientPort={port}");
    args.contains(&&b"org.apache.zookeeper.server.quorum.QuorumPeerMain"[..]) && args.contains(&mark.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_server_is_known_by_its_title_or_its_arguments() {
        let server = crate::real::process::RedisServer::start();
        let port = server.port().to_string();
        assert!(is_managed_redis(server.pid(), &port));
        assert!(!is_managed_redis(server.pid(), "1"));
        assert!(!is_managed_redis(std::process::id(), &port));
    }
}
