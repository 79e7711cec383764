//! The `locklab` binary: one entry point for every front end.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use locklab_backend::cli::via::BackendClient;
use locklab_backend::cli::{bench, check, explore, import, lessons, repl};
use locklab_backend::real::lesson as real_lesson;
use locklab_backend::real::play;
use locklab_backend::{sim_server, web};
use locklab_core::lesson::Lang;
use locklab_core::server::Profile;

#[derive(Parser)]
#[command(name = "locklab", version, about = "An interactive lab for Redis distributed locks")]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// A redis-cli work-alike: lines on stdin, replies as `redis-cli --no-raw` prints them.
    Cli {
        /// Send the lines to a real server instead of the simulator.
        #[arg(long, value_name = "redis://HOST:PORT", conflicts_with = "via")]
        real: Option<String>,
        /// Use a running `locklab serve`'s lab session (its /api/session
        /// WebSocket): prefixed keys, refused commands, managed topologies
        /// and faults, as in the browser. Lab commands start with `:`.
        #[arg(long, value_name = "http://HOST:PORT")]
        via: Option<String>,
        /// With --via: seconds to wait for the backend to connect and for
        /// each reply (starting a topology gets 4×).
        #[arg(long, default_value_t = 30.0, requires = "via", value_name = "SECONDS")]
        timeout: f64,
        /// The simulator's version profile.
        #[arg(long, default_value = "8.4", value_name = "7.0|8.4")]
        redis_version: String,
    },
    /// The browser lab: serves dist/ (build it with `cargo xtask dist`).
    Serve {
        /// A real server for the "real" driver (never killed or reconfigured);
        /// without it the real driver starts managed servers of its own. Also
        /// read from the environment variable LOCKLAB_REDIS_URL: a password in
        /// a command line is visible to every local user in `ps`, one in the
        /// environment is not (or give it with --redis-password-file).
        #[arg(long, value_name = "redis://HOST:PORT")]
        redis: Option<String>,
        /// Read the password for --redis (or LOCKLAB_REDIS_URL) from this file
        /// (one line; a file only you can read), so it is not on the command line.
        #[arg(long, value_name = "PATH")]
        redis_password_file: Option<std::path::PathBuf>,
        /// Accept at most this many lab WebSockets at once; more are refused
        /// (HTTP 503) until one closes.
        #[arg(long, value_name = "N", default_value_t = locklab_backend::web::api::DEFAULT_MAX_SOCKETS)]
        max_sockets: usize,
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// The address to listen on. The default is loopback only (all
        /// addresses with --class); from any other address other machines
        /// reach the page and the class routes, never the real driver.
        #[arg(long)]
        bind: Option<std::net::IpAddr>,
        /// Serve a class (issue 37): listen on the LAN too and print the URL
        /// trainees open.
        #[arg(long)]
        class: bool,
        /// The URL trainees open (its QR code is shown); by default
        /// http://LAN-ADDRESS:PORT/ with this machine's LAN IPv4 address.
        #[arg(long, value_name = "URL")]
        class_url: Option<String>,
        /// Most followers in one class.
        #[arg(long, value_name = "N", default_value_t = locklab_core::class::DEFAULT_MAX_FOLLOWERS)]
        class_max: usize,
        /// A class whose presenter has been away or silent this long ends by itself.
        #[arg(long, value_name = "SECONDS", default_value_t = 7200)]
        class_idle: u64,
        /// Where classes live: in this process (the default), or a Redis
        /// server (`redis://host:port/db`) that several `locklab serve`
        /// instances share, so any of them serves a class and a restart
        /// loses no answer.
        #[arg(long, value_name = "URL")]
        class_store: Option<String>,
        #[arg(long, default_value = "dist")]
        dist: std::path::PathBuf,
        /// Also accept lab sessions from pages of this origin, and requests to
        /// its host name (e.g. `http://lab.example:8080` behind a proxy);
        /// repeatable. The lab's own page (reached by IP address or localhost)
        /// is always accepted; any other `Host` gets 403 on every route.
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origin: Vec<String>,
        /// How long a lab session's script may run on Redis before the lab
        /// kills it (Redis serves the kill only after its busy-reply-threshold).
        #[arg(long, value_name = "MS", default_value_t = 1000)]
        script_budget_ms: u64,
        /// Close a lab session's WebSocket after this many idle seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 600)]
        idle_timeout: u64,
        /// Most mebibytes the keys of one lab session may hold on Redis (the
        /// lab's upper-bound account; a write past it is refused before it is sent).
        #[arg(long, value_name = "MIB", default_value_t = 64)]
        session_quota: u64,
        /// How lab sessions' scripts reach a server given with --redis:
        /// `simulate` (the default) runs each on the lab's simulator and sends
        /// only its writes, in MULTI/EXEC; `run` (a speaker alone on a laptop)
        /// sends scripts after a check on the simulator, with a kill timer,
        /// and refuses those that read the server's state.
        #[arg(long, value_name = "simulate|run", default_value = "simulate",
              value_parser = ["simulate", "run"])]
        scripts: String,
    },
    /// The simulator on the Redis wire protocol, for redis-cli, redis-benchmark and client libraries.
    SimServer {
        #[arg(long, default_value_t = 6390)]
        port: u16,
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        #[arg(long, default_value = "8.4", value_name = "7.0|8.4")]
        redis_version: String,
    },
    /// The lessons: `list`, `show ID`, `run ID [--lang zh|en] [--step N]`.
    Lesson {
        #[command(subcommand)]
        action: LessonCmd,
        /// Read lessons from this directory instead of the built-in ones.
        #[arg(long, global = true)]
        dir: Option<std::path::PathBuf>,
        #[arg(long, global = true, default_value = "en", value_name = "zh|en")]
        lang: String,
    },
    /// Search schedules and faults for the shortest trace that breaks a lock invariant.
    Explore(explore::ExploreArgs),
    /// Check a lock library's history (JSON lines): lock invariants, leases, linearizability.
    Check(check::CheckArgs),
    /// Traces from elsewhere: `trace import` replays a `redis-cli MONITOR` capture.
    Trace {
        #[command(subcommand)]
        action: TraceCmd,
    },
    /// Lock cycles per second: simulator vs a real redis-server.
    Bench {
        /// The real server to compare with (default: none).
        #[arg(long, value_name = "redis://HOST:PORT")]
        redis: Option<String>,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// Only sim-server against a redis-server started here: redis-benchmark's default
        /// tests and EVAL with -c 50 -P 16, 20 k one-element pushes, and with --soak the RSS.
        #[arg(long)]
        sim_server: bool,
        /// Requests per redis-benchmark test (with --sim-server).
        #[arg(long, default_value_t = locklab_backend::sim_server::REQUESTS, value_name = "N")]
        requests: u64,
        /// Requests of the RSS soak, which prints RSS at its start, middle and end (with --sim-server;
        /// issue 42's soak is 10000000).
        #[arg(long, value_name = "N")]
        soak: Option<u64>,
        /// Only class mode: this many WebSocket followers in-process, the fan-out
        /// latency of a move, answers/s and RSS per follower.
        #[arg(long, value_name = "N")]
        class: Option<usize>,
        /// With --class: the classes live in this Redis (`redis://host:port/db`); `redis`
        /// (or the flag alone): in a redis-server the bench starts on a free loopback port.
        #[arg(long, value_name = "URL", requires = "class", num_args = 0..=1, default_missing_value = "redis")]
        class_store: Option<String>,
        /// With --class: be the room (presenter and followers) of a bench
        /// whose backend is at ADDR; the bench runs this itself.
        #[arg(long, value_name = "ADDR", requires = "class", hide = true)]
        class_room: Option<std::net::SocketAddr>,
    },
}

#[derive(Subcommand)]
enum TraceCmd {
    /// Replay a `redis-cli MONITOR` capture through the simulator: lanes per client, lock bars,
    /// two holders and non-owner deletes; exits 1 when it shows a violation.
    Import(import::ImportArgs),
}

#[derive(Subcommand)]
enum LessonCmd {
    /// One lesson a line, starting with its catalogue id.
    List,
    /// The lesson lint (answers not on the screen, no silent steps, hooks,
    /// trainer notes…) over the catalogue or `--dir`; exits 1 when it fails.
    Lint,
    /// A lesson's narration, timed answer and steps.
    Show {
        id: String,
        /// Also the trainer's notes (the lesson's, then each step's).
        #[arg(long)]
        notes: bool,
    },
    /// Play a lesson on the simulator: transcript and swimlane; exits 1 when
    /// an expected reply or the expected outcome does not happen.
    Run {
        id: String,
        /// Stop after this step (1-based).
        #[arg(long)]
        step: Option<usize>,
        /// The world's seed; with `--quiz`, the seed the choices are
        /// shuffled by (the same seed asks in the same order).
        #[arg(long)]
        seed: Option<u64>,
        /// Play it on real redis-server instead of the simulator: on this
        /// server (single-node lessons), or with `--real` alone on a managed
        /// topology of the lesson's kind that locklab starts and stops.
        #[arg(long, value_name = "redis://HOST:PORT", num_args = 0..=1, default_missing_value = "")]
        real: Option<String>,
        /// Time compression on a real server (TTLs and waits divided by it).
        /// Default 100, or 10 for the Redlock lessons, whose programs' timers
        /// leave ~100 lesson ms of slack (one wall millisecond at 100×).
        #[arg(long)]
        compress: Option<u64>,
        /// Ask each quiz (and each reply the article states) on the
        /// terminal before playing the step, then show the score.
        #[arg(long)]
        quiz: bool,
    },
}

fn profile(s: &str) -> Result<Profile> {
    match Profile::parse(s) {
        Some(p) => Ok(p),
        None => bail!("unknown --redis-version {s:?}: choose 7.0 or 8.4"),
    }
}

/// SIGTERM or SIGINT (Ctrl-C).
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The user's server for `locklab serve`: `--redis`, else
/// `LOCKLAB_REDIS_URL`, with the password of `--redis-password-file` put
/// in. A password typed in `--redis` itself works, with a warning: every
/// local user can read it in `ps` (issue 35, B17).
fn redis_url(flag: Option<String>, password_file: Option<&std::path::Path>) -> Result<Option<String>> {
    use locklab_backend::real::conn::{has_password, with_password};
    if flag.as_deref().is_some_and(has_password) {
        eprintln!(
            "warning: the password in --redis is visible to every local user in `ps`; set LOCKLAB_REDIS_URL \
             instead, or give the password with --redis-password-file PATH"
        );
    }
    let url = flag.or_else(|| std::env::var("LOCKLAB_REDIS_URL").ok().filter(|u| !u.is_empty()));
    let Some(file) = password_file else { return Ok(url) };
    let Some(url) = url else {
        bail!("--redis-password-file needs a server: give --redis or set LOCKLAB_REDIS_URL");
    };
    let text = locklab_backend::userfile::read(file, locklab_backend::userfile::PASSWORD)?;
    let password = text.trim_end_matches(['\n', '\r']);
    if password.is_empty() || password.contains(['\n', '\r']) {
        bail!("{}: a password file holds one non-empty line", file.display());
    }
    Ok(Some(with_password(&url, password).map_err(anyhow::Error::msg)?))
}

/// The class routes' limits and the URL trainees open: `--class-url`, or
/// this machine's LAN address when serving a class, else the bound address.
fn class_config(
    class: bool,
    url: Option<String>,
    max: usize,
    idle: u64,
    bind: std::net::IpAddr,
    port: u16,
) -> locklab_backend::class::ClassConfig {
    let host = match (class, locklab_backend::web::peer::lan_ipv4()) {
        (true, Some(lan)) => lan.to_string(),
        _ if bind.is_unspecified() => "127.0.0.1".to_owned(),
        _ => match bind {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        },
    };
    locklab_backend::class::ClassConfig {
        max_followers: max.max(1),
        idle: Duration::from_secs(idle.max(1)),
        join_base: url.unwrap_or_else(|| format!("http://{host}:{port}/")),
        ..Default::default()
    }
}

/// `scheme://host[:port]` of `url` when its host is a name (not an IP
/// literal), for `--allow-origin`.
fn named_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    let literal = host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok();
    (!literal && !host.is_empty()).then(|| format!("{scheme}://{authority}"))
}

// long: the CLI's dispatch: one arm per subcommand
fn main() -> Result<()> {
    let args = Args::parse();
    match args.command {
        Cmd::Cli {
            real,
            via,
            timeout,
            redis_version,
        } => {
            if !(timeout > 0.0 && timeout <= 3600.0) {
                bail!("--timeout must be between 0 and 3600 seconds");
            }
            let mut target = match (real, via) {
                (Some(url), _) => repl::ReplTarget::real(&url).with_context(|| format!("connecting to {url}"))?,
                (None, Some(url)) => {
                    let timeout = Duration::from_secs_f64(timeout);
                    repl::ReplTarget::Via(Box::new(BackendClient::connect(
                        &url,
                        timeout,
                        Box::new(std::io::stderr()),
                    )?))
                }
                (None, None) => repl::ReplTarget::sim(profile(&redis_version)?),
            };
            let stdin = std::io::stdin();
            let interactive = stdin.is_terminal();
            let mut input = stdin.lock();
            let mut output = std::io::stdout().lock();
            repl::run(&mut target, &mut input, &mut output, interactive)?;
        }
        Cmd::Serve {
            redis,
            redis_password_file,
            max_sockets,
            port,
            bind,
            class,
            class_url,
            class_max,
            class_idle,
            class_store,
            dist,
            mut allow_origin,
            script_budget_ms,
            idle_timeout,
            session_quota,
            scripts,
        } => {
            if !dist.join("index.html").is_file() {
                bail!(
                    "{} has no index.html: build the app with `cargo xtask dist` (./scripts/lab does)",
                    dist.display()
                );
            }
            let redis = redis_url(redis, redis_password_file.as_deref())?;
            let bind = bind.unwrap_or(if class {
                std::net::Ipv4Addr::UNSPECIFIED.into()
            } else {
                std::net::Ipv4Addr::LOCALHOST.into()
            });
            if !bind.is_loopback() {
                eprintln!(
                    "warning: --bind {bind} lets other machines load the lab's page and join its classes (the real \
                     driver, /api/session, answers this machine only); use it only on a network you trust"
                );
            }
            let class_cfg = class_config(class, class_url, class_max, class_idle, bind, port);
            if class {
                eprintln!("locklab: class mode: trainees open {}", class_cfg.join_base);
                if let Some(origin) = named_origin(&class_cfg.join_base) {
                    // A host name in --class-url must pass the Host check.
                    allow_origin.push(origin);
                }
            }
            match locklab_backend::real::reaper::reap(false) {
                Ok(0) => {}
                Ok(reaped) => {
                    eprintln!("locklab: stopped {reaped} redis-server process(es) a previous backend left running")
                }
                Err(why) => eprintln!(
                    "locklab: error: {why}. Managed servers run, but one left by a backend killed with SIGKILL \
                     is not stopped by the next"
                ),
            }
            let run_scripts = scripts == "run";
            if run_scripts && redis.is_some() {
                eprintln!(
                    "warning: --scripts=run sends lab sessions' scripts to your Redis after a check on the lab's \
                     simulator. A script whose run there goes another way than on the simulator can hold your \
                     server (BUSY), and once it has written Redis cannot kill it. Scripts that read the server's \
                     state (INFO, TIME, TTLs, OBJECT, random members) are refused."
                );
            }
            eprintln!("locklab: http://{bind}:{port}/ (simulator in the page; Ctrl-C stops)");
            let limits = locklab_backend::real::session::SessionLimits {
                script_budget: std::time::Duration::from_millis(script_budget_ms.max(1)),
                idle_timeout: std::time::Duration::from_secs(idle_timeout.max(1)),
                session_quota: session_quota.max(1).saturating_mul(1 << 20),
                run_scripts,
                ..Default::default()
            };
            let state = locklab_backend::web::api::ApiState::with_limits(redis, limits)
                .allow_origins(allow_origin)
                .max_sockets(max_sockets)
                .class_config(class_cfg);
            let state = match class_store {
                Some(url) => {
                    let idle = Duration::from_secs(class_idle.max(1));
                    let store = locklab_backend::class::store::RedisStore::open(&url, idle)
                        .with_context(|| format!("--class-store {url}"))?;
                    eprintln!(
                        "locklab: classes are kept in {url} (keys {}*)",
                        locklab_backend::class::store::PREFIX
                    );
                    state.class_store(std::sync::Arc::new(store))
                }
                None => state,
            };
            let served = tokio::runtime::Runtime::new()?.block_on(async {
                let stopping = state.clone();
                let stop = async move {
                    stop_signal().await;
                    eprintln!("locklab: stopping: ending every lab session and managed redis-server");
                    stopping.shutdown();
                };
                let served = web::serve(bind, port, dist, state.clone(), stop).await;
                // The sockets have closed; their labs drop on the blocking
                // pool. Wait for that (bounded), then kill what is left.
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
                while (state.live_topologies() > 0 || state.live_sessions() > 0)
                    && tokio::time::Instant::now() < deadline
                {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                served
            });
            let _ = locklab_backend::real::reaper::reap(true);
            served?;
        }
        Cmd::SimServer {
            port,
            bind,
            redis_version,
        } => {
            let cfg = sim_server::SimServerConfig::new(bind, port, profile(&redis_version)?);
            sim_server::run(cfg).with_context(|| format!("sim-server on {bind}:{port}"))?;
        }
        Cmd::Lesson { action, dir, lang } => {
            let lang = Lang::parse(&lang).with_context(|| format!("unknown --lang {lang:?}: choose zh or en"))?;
            let all = lessons::load(dir.as_ref())?;
            match action {
                LessonCmd::List => print!("{}", lessons::list(&all, lang)),
                LessonCmd::Lint => {
                    let report = locklab_core::lesson::lint::lint(&all);
                    print!("{report}");
                    if !report.passes() {
                        std::process::exit(1);
                    }
                }
                LessonCmd::Show { id, notes } => {
                    let lesson = locklab_core::lesson::find(&all, &id)?;
                    print!("{}", lessons::show(lesson, lang));
                    if notes {
                        print!("{}", lessons::show_notes(lesson, lang));
                    }
                }
                LessonCmd::Run {
                    id,
                    real: Some(url),
                    compress,
                    ..
                } => {
                    let lesson = locklab_core::lesson::find(&all, &id)?;
                    let compress = compress.unwrap_or_else(|| real_lesson::default_factor(lesson));
                    let report = if url.is_empty() {
                        play::run_managed(lesson, compress)?
                    } else {
                        play::run(lesson, &url, compress, false)?
                    };
                    print!("{}", report.transcript(lesson, lang));
                    if !report.passed() {
                        std::process::exit(1);
                    }
                }
                LessonCmd::Run {
                    id,
                    real: None,
                    quiz: true,
                    seed,
                    ..
                } => {
                    let lesson = locklab_core::lesson::find(&all, &id)?;
                    let stdin = std::io::stdin();
                    // A new order each attempt unless --seed repeats one.
                    let seed = seed.unwrap_or_else(|| {
                        std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000)
                    });
                    lessons::quiz(lesson, lang, seed, &mut stdin.lock(), &mut std::io::stdout())?;
                }
                LessonCmd::Run {
                    id,
                    step,
                    seed,
                    real: None,
                    ..
                } => {
                    let lesson = locklab_core::lesson::find(&all, &id)?;
                    let (text, ok) = repl::run_killable(|| lessons::run(lesson, lang, step, seed))?;
                    print!("{text}");
                    if !ok {
                        std::process::exit(1);
                    }
                }
            }
        }
        Cmd::Explore(args) => print!("{}", repl::run_killable(|| explore::run(&args))?),
        Cmd::Check(args) => {
            let outcome = check::run(&args)?;
            print!("{}", outcome.text);
            if !outcome.clean {
                std::process::exit(1);
            }
        }
        Cmd::Trace {
            action: TraceCmd::Import(args),
        } => {
            let outcome = import::run(&args)?;
            print!("{}", outcome.text);
            if !outcome.clean {
                std::process::exit(1);
            }
        }
        Cmd::Bench {
            redis,
            seconds,
            sim_server: only_sim_server,
            requests,
            soak,
            class,
            class_store,
            class_room,
        } => {
            if let Some(n) = class {
                if !(1..=10_000).contains(&n) {
                    bail!("--class must be between 1 and 10000 followers");
                }
                if let Some(addr) = class_room {
                    bench::class_room(addr, n)?;
                    return Ok(());
                }
                print!("{}", bench::class_report(n, class_store.as_deref())?);
                return Ok(());
            }
            if !(seconds > 0.0 && seconds < 600.0) {
                bail!("--seconds must be between 0 and 600");
            }
            if requests == 0 {
                bail!("--requests must be at least 1");
            }
            if only_sim_server {
                let real = locklab_backend::real::process::RedisServer::try_start(&[])
                    .map_err(|why| anyhow::anyhow!("no redis-server to compare with: {why}"))?;
                print!("{}", bench::wire_report(real.port(), requests, soak)?);
                return Ok(());
            }
            // Compare with the server given, or start one of our own.
            let own = match &redis {
                Some(_) => None,
                None => match locklab_backend::real::process::RedisServer::try_start(&[]) {
                    Ok(s) => Some(s),
                    Err(why) => {
                        eprintln!("no real redis-server to compare with: {why}");
                        None
                    }
                },
            };
            let url = redis.clone().or_else(|| own.as_ref().map(|s| s.url()));
            print!("{}", bench::report(url.as_deref(), Duration::from_secs_f64(seconds)));
            if let Some(url) = &url {
                print!("\nthe backend vs direct (lab session: prefix + ACL + checks + trace; WebSocket: /api/session):\n{}", bench::backend_report(url, seconds));
            }
            if let Some(server) = &own {
                print!(
                    "{}",
                    bench::wire_report(server.port(), locklab_backend::sim_server::REQUESTS, None)?
                );
            }
        }
    }
    Ok(())
}
