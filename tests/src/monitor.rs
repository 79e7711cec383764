//! A real `redis-cli MONITOR` capture of a lesson played on a real
//! redis-server (issue 40): what `tests/tests/monitor_import.rs` imports
//! with the CLI's code and `tests/tests/e2e/page/browser_open.rs` opens in the page.
//!
//! The lesson runs through the real runner (the lab's session, time
//! compressed) while the real `redis-cli MONITOR` writes what the server
//! ran to a file; [`capture_lesson`] returns the lesson's own events, so a
//! test compares the capture's replay with what the lesson drew.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use locklab_backend::real::lesson::{RealEnv, RealLessonRun};
use locklab_backend::real::session::{SessionLimits, SessionPool};
use locklab_backend::real::topology::Servers;
use locklab_core::actor::Names;
use locklab_core::lesson::Lang;
use locklab_core::trace::Event;

use crate::server::{redis_cli_binary, RedisServer};

/// A `redis-cli MONITOR` process, stopped (killed and reaped) when dropped,
/// even when the test fails.
pub struct MonitorCli(Child);

impl Drop for MonitorCli {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `redis-cli MONITOR` on `server`, writing to `path`, running once a
/// marker command shows up in the file.
pub fn monitor(server: &RedisServer, path: &Path) -> MonitorCli {
    let cli = redis_cli_binary().expect("redis-cli on PATH (apt-get install redis-tools)");
    let out = std::fs::File::create(path).expect("capture file");
    let client = redis::Client::open(server.url()).expect("client");
    let mut con = client.get_connection().expect("connection");
    let child = MonitorCli(
        Command::new(cli)
            .args(["-p", &server.port().to_string(), "MONITOR"])
            .stdout(out)
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-cli MONITOR starts"),
    );
    let started = Instant::now();
    loop {
        let _: redis::RedisResult<String> = redis::cmd("ECHO").arg("monitor-marker").query(&mut con);
        if std::fs::read_to_string(path)
            .unwrap_or_default()
            .contains("monitor-marker")
        {
            return child;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "MONITOR never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Play lesson `id` on `server` through the real runner (time compressed
/// 100×) while MONITOR writes to `path`; the lesson's events (violations
/// streamed as the page receives them) and its client names. The capture
/// is complete when this returns.
pub fn capture_lesson(server: &RedisServer, id: &str, path: &Path) -> (Vec<Event>, Names) {
    let cli = monitor(server, path);
    let l = crate::lesson(id);
    let mut topology = Servers::external(server.url());
    let pool = SessionPool::new(SessionLimits {
        commands_per_sec: f64::INFINITY,
        ..SessionLimits::default()
    });
    let mut session = pool.open_on(&topology).expect("a session");
    let mut env = RealEnv {
        session: &mut session,
        topology: &mut topology,
    };
    let mut run = RealLessonRun::start(&l, &mut env, 100, Lang::En).expect("the lesson starts");
    let mut events = Vec::new();
    while run.step(&mut env).expect("a step").is_some() {
        for e in run.take_events() {
            locklab_core::trace::append_streamed(&mut events, e);
        }
    }
    let names: Names = env.session.names().clone();
    assert!(run.report().passed(), "lesson {id} passes on the real server");
    std::thread::sleep(Duration::from_millis(300));
    drop(cli);
    (events, names)
}
