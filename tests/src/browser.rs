//! The browser suites' harness: headless Chromium under chromedriver,
//! `dist/`, polling with a deadline, screenshots. Shared by
//! `tests/tests/e2e/page/browser.rs` and `tests/tests/e2e/page/browser_explore.rs`.
//!
//! Nothing sleeps for a fixed time: [`eventually`] polls a condition with a
//! deadline, so a suite is as fast as the machine and fails with a message
//! saying what never happened.

use std::future::Future;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(40);

/// How long chromedriver may take to listen.
const DRIVER_WAIT: Duration = Duration::from_secs(30);

const INSTALL_HINT: &str = "install them with `sudo apt-get install -y chromium chromium-driver` \
     (Debian), or run ./scripts/test, which installs what is missing";

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The first of `candidates` that exists, on PATH or as an absolute path.
pub fn find_program(candidates: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    candidates.iter().find_map(|c| {
        let p = Path::new(c);
        if p.is_absolute() {
            p.is_file().then(|| p.to_path_buf())
        } else {
            std::env::split_paths(&path).map(|d| d.join(c)).find(|f| f.is_file())
        }
    })
}

pub fn newest_mtime(dir: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(m) = entry.metadata().and_then(|m| m.modified()) {
                if newest.as_ref().is_none_or(|(t, _)| m > *t) {
                    newest = Some((m, path));
                }
            }
        }
    }
    newest
}

/// `dist/`, built and newer than every source it is built from.
pub fn require_dist() -> PathBuf {
    let dist = std::env::var_os("LOCKLAB_DIST").map_or_else(|| root().join("dist"), PathBuf::from);
    let index = dist.join("index.html");
    let built = std::fs::metadata(&index)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} is missing: build the app first with `cargo xtask dist` (./scripts/test does)",
                index.display()
            )
        });
    for src in ["frontend", "redis/src", "core/src", "engine", "explore-worker"] {
        if let Some((t, path)) = newest_mtime(&root().join(src)) {
            assert!(
                t <= built,
                "dist/ is older than {}: rebuild it with `cargo xtask dist` (./scripts/test does)",
                path.display()
            );
        }
    }
    dist
}

/// A chromedriver process, killed (with the Chromium it started) on drop.
pub struct Chromedriver {
    child: Child,
    port: u16,
    profile: PathBuf,
}

impl Chromedriver {
    fn start(chromedriver: &Path) -> Chromedriver {
        use std::os::unix::process::CommandExt;
        let port = free_port();
        let profile = std::env::temp_dir().join(format!("locklab-chromium-{}-{port}", std::process::id()));
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so Drop can end Chromium with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", chromedriver.display()));
        let deadline = Instant::now() + DRIVER_WAIT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on port {port} within {DRIVER_WAIT:?}"
            );
            std::thread::sleep(POLL);
        }
        Chromedriver { child, port, profile }
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        // The group we created for it: chromedriver and its Chromium.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Poll `probe` until it gives a value, for at most `wait`; panics naming
/// `what` when it never does.
pub async fn eventually<T, F, Fut>(wait: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {wait:?} waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// The first `css` element's attribute `name`, if both are there.
pub async fn attr(c: &Client, css: &str, name: &str) -> Option<String> {
    c.find(Locator::Css(css)).await.ok()?.attr(name).await.ok()?
}

pub async fn text(c: &Client, css: &str) -> Option<String> {
    c.find(Locator::Css(css)).await.ok()?.text().await.ok()
}

pub async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap_or(Value::Null)
}

pub async fn screenshot(c: &Client, name: &str) {
    let dir = root().join("tests/out");
    std::fs::create_dir_all(&dir).unwrap();
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    std::fs::write(dir.join(name), png).unwrap();
}

/// Headless Chromium under a fresh chromedriver, and a WebDriver session on it.
pub async fn browser() -> (Chromedriver, Client) {
    let chromium = find_program(&["chromium", "chromium-browser", "/usr/lib/chromium/chromium"])
        .unwrap_or_else(|| panic!("Chromium is not installed: {INSTALL_HINT}"));
    let chromedriver = find_program(&["chromedriver", "/usr/lib/chromium/chromedriver"])
        .unwrap_or_else(|| panic!("chromedriver is not installed: {INSTALL_HINT}"));
    let driver = Chromedriver::start(&chromedriver);
    let caps = json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--window-size=1400,1300", "--lang=en-US",
                format!("--user-data-dir={}", driver.profile.display()),
            ],
        }
    });
    let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps.as_object().unwrap().clone())
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session with headless Chromium");
    (driver, c)
}

pub async fn viewport(c: &Client, w: u32, h: u32) {
    // The window's frame differs from the page's inner size, and a resize
    // lands asynchronously (later still on a loaded machine): measure,
    // correct by the difference, and measure again until they agree.
    c.set_window_size(w, h).await.unwrap();
    let mut inner = Value::Null;
    for _ in 0..100 {
        inner = js(c, "return [window.innerWidth, window.innerHeight]").await;
        let (Some(iw), Some(ih)) = (inner[0].as_i64(), inner[1].as_i64()) else {
            tokio::time::sleep(POLL).await;
            continue;
        };
        if (iw, ih) == (i64::from(w), i64::from(h)) {
            return;
        }
        let (ow, oh) = c.get_window_size().await.unwrap();
        let fit = |outer: u64, want: u32, got: i64| (outer as i64 + i64::from(want) - got).max(1) as u32;
        c.set_window_size(fit(ow, w, iw), fit(oh, h, ih)).await.unwrap();
        tokio::time::sleep(POLL).await;
    }
    assert_eq!(inner, json!([w, h]), "the viewport");
}

/// `locklab serve` as the real driver needs it — `dist/` plus the
/// real-Redis API, managed servers started from the redis-server binary —
/// on its own runtime, so the test can take the whole backend away
/// (every WebSocket with it, as when the process dies) and bring it back on
/// the same port.
pub struct Backend {
    runtime: Option<tokio::runtime::Runtime>,
    pub port: u16,
}

impl Backend {
    pub fn start(dist: &Path, port: u16) -> Backend {
        Backend::start_with(dist, port, None)
    }

    /// `redis`: the user's own server (`locklab serve --redis URL`).
    pub fn start_with(dist: &Path, port: u16, redis: Option<String>) -> Backend {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        // The old runtime closes its listener in the background: retry.
        let deadline = Instant::now() + DRIVER_WAIT;
        let std_listener = loop {
            match std::net::TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => break l,
                Err(e) => assert!(Instant::now() < deadline, "binding port {port} again: {e}"),
            }
            std::thread::sleep(POLL);
        };
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        // As `locklab serve` serves it: every route behind the `Host` check,
        // which the browser's `http://127.0.0.1:PORT/` passes.
        let app = locklab_backend::web::site(
            Some(dist.to_path_buf()),
            locklab_backend::web::api::ApiState::new(redis),
        );
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            // With each connection's peer: the lab's routes answer loopback only.
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .await
        });
        Backend {
            runtime: Some(runtime),
            port,
        }
    }

    /// Gone at once: the listener and every connection, mid-session.
    pub fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.kill();
    }
}
