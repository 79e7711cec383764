//! Real faults on managed redis-server processes (issue 18): a delaying,
//! lossy link proxy, a clock shifted inside a real redis-server, and a
//! failover done by Redis Sentinel itself. No timing thresholds: a delay
//! is checked as the lower bound the proxy guarantees (and printed as a
//! ratio to direct round trips), a clock is checked against the real time
//! read just before and just after, and every wait polls a deadline that
//! only guards against a hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use locklab_backend::real::conn;
use locklab_backend::real::faults::proxy::{LinkFault, LinkStats};
use locklab_backend::real::topology::{self, NodeFault, Servers, TopologyKind};
use locklab_core::reply::Reply;

fn poll(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn port_of(topo: &Servers, i: u32) -> u16 {
    topo.managed_node(i).unwrap().port()
}

fn real_now_us() -> i128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as i128
}

/// The node's `TIME`, in µs since the epoch.
fn node_time_us(port: u16) -> i128 {
    let Reply::Array(parts) = conn::command(port, &["TIME"]).unwrap() else {
        panic!("TIME did not answer an array")
    };
    let num = |r: &Reply| match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).parse::<i128>().unwrap(),
        other => panic!("{other:?}"),
    };
    num(&parts[0]) * 1_000_000 + num(&parts[1])
}

/// The node's `TIME` with the real time read just before and just after:
/// `(before, node, after)`, µs.
fn bracketed_time(port: u16) -> (i128, i128, i128) {
    let before = real_now_us();
    let node = node_time_us(port);
    (before, node, real_now_us())
}

#[test]
fn a_shifted_clock_moves_time_when_told_and_expires_keys_by_it() {
    let mut topo = Servers::start(TopologyKind::Single).unwrap();
    let port = port_of(&topo, 0);
    // Unshifted: TIME is the real time (the preload passes it through).
    let (b, t, a) = bracketed_time(port);
    assert!(
        b - 1_000 <= t && t <= a + 1_000,
        "unshifted TIME {t} outside [{b}, {a}]"
    );

    assert_eq!(
        conn::command(port, &["SET", "k", "v", "PX", "30000"]).unwrap(),
        Reply::Status("OK".into())
    );
    let Reply::Integer(ttl) = conn::command(port, &["PTTL", "k"]).unwrap() else {
        panic!()
    };
    assert!(ttl > 0 && ttl <= 30_000, "{ttl}");

    let said = topo.shift_clock(0, 60_000).unwrap();
    assert!(said.contains("+60000 ms"), "{said}");
    assert_eq!(topo.clock_shift_ms(0).unwrap(), 60_000);
    let (b, t, a) = bracketed_time(port);
    assert!(
        b + 60_000_000 - 1_000 <= t && t <= a + 60_000_000 + 1_000,
        "TIME {t} is not the real time + 60 s (real between {b} and {a})"
    );
    // The key had 30 s left: by the node's clock it is past due now.
    assert_eq!(conn::command(port, &["PTTL", "k"]).unwrap(), Reply::Integer(-2));
    assert_eq!(conn::command(port, &["GET", "k"]).unwrap(), Reply::Nil);

    // A step back: TIME goes backwards, as after an NTP correction.
    topo.shift_clock(0, -90_000).unwrap();
    let (b, t, a) = bracketed_time(port);
    assert!(
        b - 30_000_000 - 1_000 <= t && t <= a - 30_000_000 + 1_000,
        "TIME {t} is not the real time − 30 s"
    );

    // An absurd jump is bounded (±50 years), and the server lives on.
    topo.shift_clock(0, i64::MAX).unwrap();
    assert_eq!(topo.clock_shift_ms(0).unwrap(), 50 * 365 * 24 * 3600 * 1000);
    let (b, t, _) = bracketed_time(port);
    assert!(t >= b + 50 * 365 * 24 * 3600 * 1_000_000 - 1_000);
    assert_eq!(conn::command(port, &["PING"]).unwrap(), Reply::Status("PONG".into()));

    // reset puts the real clock back.
    topo.reset().unwrap();
    assert_eq!(topo.clock_shift_ms(0).unwrap(), 0);
    let (b, t, a) = bracketed_time(port);
    assert!(b - 1_000 <= t && t <= a + 1_000);
}

#[test]
fn a_drifting_clock_gains_in_proportion_to_real_time() {
    let mut topo = Servers::start(TopologyKind::Redlock5).unwrap();
    let port = port_of(&topo, 2);
    // +100 %: one more second per real second.
    topo.drift_clock(2, 1_000_000).unwrap();
    let (b0, t0, a0) = bracketed_time(port);
    std::thread::sleep(Duration::from_millis(300));
    let (b1, t1, a1) = bracketed_time(port);
    // Real time passed is between b1 − a0 and a1 − b0; the node's clock
    // ran twice as fast over it (±1 ms for TIME's rounding and the
    // anchor).
    let node = t1 - t0;
    assert!(
        2 * (b1 - a0) - 2_000 <= node && node <= 2 * (a1 - b0) + 2_000,
        "node advanced {node} µs over a real {}..{} µs",
        b1 - a0,
        a1 - b0
    );
    assert!(topo.clock_shift_ms(2).unwrap() >= 300);
    // The other four masters keep the real time.
    let (b, t, a) = bracketed_time(port_of(&topo, 0));
    assert!(b - 1_000 <= t && t <= a + 1_000);
    // Drift stopped: what was gained stays, and no more is.
    topo.drift_clock(2, 0).unwrap();
    let kept = topo.clock_shift_ms(2).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(topo.clock_shift_ms(2).unwrap(), kept);
    let (b, t, a) = bracketed_time(port);
    let kept_us = i128::from(kept) * 1_000;
    assert!(b + kept_us - 2_000 <= t && t <= a + kept_us + 2_000);
}

/// A raw RESP connection (the proxy's client), reading one reply line.
struct Raw {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Raw {
    fn open(addr: &str) -> Raw {
        let w = TcpStream::connect(addr).unwrap();
        w.set_nodelay(true).unwrap();
        w.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let r = BufReader::new(w.try_clone().unwrap());
        Raw { w, r }
    }

    fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out += &format!("${}\r\n{a}\r\n", a.len());
        }
        self.w.write_all(out.as_bytes()).unwrap();
    }

    /// One reply: a status, an integer, or a bulk string, as text.
    fn reply(&mut self) -> String {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let line = line.trim_end().to_owned();
        if let Some(len) = line.strip_prefix('$') {
            let len: i64 = len.parse().unwrap();
            if len < 0 {
                return "(nil)".into();
            }
            let mut body = vec![0u8; len as usize + 2];
            self.r.read_exact(&mut body).unwrap();
            return String::from_utf8_lossy(&body[..len as usize]).into_owned();
        }
        line
    }

    fn call(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.reply()
    }
}

fn url_addr(url: &str) -> String {
    url.trim_start_matches("redis://").trim_end_matches('/').to_owned()
}

fn mean_round_trip(conn: &mut Raw, n: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        assert_eq!(conn.call(&["PING"]), "+PONG");
    }
    start.elapsed() / n
}

#[test]
fn the_link_proxy_adds_the_configured_latency_each_way() {
    let mut topo = Servers::start(TopologyKind::Single).unwrap();
    let port = port_of(&topo, 0);
    let mut direct = Raw::open(&format!("127.0.0.1:{port}"));
    let proxied_url = topo.link_url("A", 0).unwrap();
    let mut proxied = Raw::open(&url_addr(&proxied_url));
    const N: u32 = 20;
    let direct_rtt = mean_round_trip(&mut direct, N);
    let plain_rtt = mean_round_trip(&mut proxied, N);

    const LATENCY_MS: u64 = 20;
    let said = topo
        .set_link(
            "A",
            0,
            LinkFault {
                latency_ms: LATENCY_MS,
                ..LinkFault::default()
            },
        )
        .unwrap();
    assert!(said.contains("latency 20 ms"), "{said}");
    let slow_rtt = mean_round_trip(&mut proxied, N);
    // The guarantee: every round trip waits the latency out both ways.
    let floor = Duration::from_millis(2 * LATENCY_MS);
    assert!(slow_rtt >= floor, "{slow_rtt:?} < {floor:?}");
    // Another client's link, and the direct path, are untouched.
    let mut other = Raw::open(&url_addr(&topo.link_url("B", 0).unwrap()));
    assert_eq!(other.call(&["PING"]), "+PONG");
    println!(
        "round trip: direct {direct_rtt:?}, through the plain proxy {plain_rtt:?} ({:.2}× direct), \
         with {LATENCY_MS} ms each way {slow_rtt:?} ({:.1}× direct; added {:.3}× the configured 2×{LATENCY_MS} ms)",
        plain_rtt.as_secs_f64() / direct_rtt.as_secs_f64(),
        slow_rtt.as_secs_f64() / direct_rtt.as_secs_f64(),
        (slow_rtt.as_secs_f64() - direct_rtt.as_secs_f64()) / floor.as_secs_f64(),
    );

    // Jitter adds up to jitter_ms more, never less than the latency, and
    // replies still come back in order.
    topo.set_link(
        "A",
        0,
        LinkFault {
            latency_ms: 5,
            jitter_ms: 20,
            ..LinkFault::default()
        },
    )
    .unwrap();
    for i in 0..10 {
        proxied.send(&["ECHO", &i.to_string()]);
    }
    for i in 0..10 {
        assert_eq!(proxied.reply(), i.to_string());
    }
    // Back to plain: the same connection is fast again.
    topo.set_link("A", 0, LinkFault::default()).unwrap();
    assert_eq!(proxied.call(&["PING"]), "+PONG");
    assert_eq!(topo.link_stats("A", 0).unwrap().connections, 1);
}

fn wait_stats(topo: &Servers, what: &str, ok: impl Fn(LinkStats) -> bool) -> LinkStats {
    poll(what, Duration::from_secs(15), || ok(topo.link_stats("A", 0).unwrap()));
    topo.link_stats("A", 0).unwrap()
}

#[test]
fn the_link_proxy_loses_requests_and_replies_as_configured() {
    let mut topo = Servers::start(TopologyKind::Single).unwrap();
    let mut c = Raw::open(&url_addr(&topo.link_url("A", 0).unwrap()));
    assert_eq!(c.call(&["PING"]), "+PONG");

    // Every request lost: INCR never runs, no reply comes.
    let all_requests = LinkFault {
        drop_request_permille: 1000,
        ..LinkFault::default()
    };
    topo.set_link("A", 0, all_requests).unwrap();
    c.send(&["INCR", "lost-request"]);
    wait_stats(&topo, "the request to be dropped", |s| s.requests_dropped == 1);
    topo.set_link("A", 0, LinkFault::default()).unwrap();
    // The first reply on the connection is GET's: INCR's never came.
    assert_eq!(c.call(&["GET", "lost-request"]), "(nil)");

    // Every reply lost: INCR ran, the client never heard.
    topo.set_link(
        "A",
        0,
        LinkFault {
            drop_reply_permille: 1000,
            ..LinkFault::default()
        },
    )
    .unwrap();
    c.send(&["INCR", "lost-reply"]);
    wait_stats(&topo, "the reply to be dropped", |s| s.replies_dropped == 1);
    topo.set_link("A", 0, LinkFault::default()).unwrap();
    assert_eq!(c.call(&["GET", "lost-reply"]), "1");

    // 30 % of 400 pipelined requests: exactly the ones the proxy counts
    // as lost get no reply, and the rest answer in order.
    let before = topo.link_stats("A", 0).unwrap();
    topo.set_link(
        "A",
        0,
        LinkFault {
            drop_request_permille: 300,
            ..LinkFault::default()
        },
    )
    .unwrap();
    const N: u64 = 400;
    for i in 0..N {
        c.send(&["ECHO", &i.to_string()]);
    }
    let after = wait_stats(&topo, "400 requests through the proxy", |s| {
        s.requests_forwarded + s.requests_dropped == before.requests_forwarded + before.requests_dropped + N
    });
    topo.set_link("A", 0, LinkFault::default()).unwrap();
    c.send(&["ECHO", "end"]);
    let mut got = Vec::new();
    loop {
        let r = c.reply();
        if r == "end" {
            break;
        }
        got.push(r.parse::<u64>().unwrap());
    }
    let dropped = after.requests_dropped - before.requests_dropped;
    assert_eq!(got.len() as u64, N - dropped);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "replies out of order");
    // Binomial(400, 0.3): mean 120, sd 9.2. The seed is fixed per client
    // and node, and loss draws are made per message, so it is the same
    // count every run.
    assert!((60..=180).contains(&dropped), "{dropped} of {N} lost at 30 %");
    println!("lost {dropped} of {N} requests at 300‰");
}

#[test]
fn sentinel_fails_over_by_itself_and_clients_find_the_new_master() {
    let mut topo = Servers::start(TopologyKind::Sentinel).unwrap();
    assert_eq!(topo.kind_name(), "sentinel");
    let (master, replica) = (port_of(&topo, 0), port_of(&topo, 1));
    assert_eq!(topo.discover_master().unwrap().port(), master);
    let sentinels = topo.sentinel_nodes();
    assert_eq!(sentinels.len(), 3);
    // Each sentinel is recorded for the reaper, like every managed process.
    let pid_files = std::fs::read_dir(locklab_backend::real::reaper::runtime_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect::<Vec<_>>();
    for s in &sentinels {
        assert!(
            pid_files.iter().any(|f| f.starts_with(&format!("{}\n", s.port))),
            "no pid file for sentinel on {}",
            s.port
        );
    }
    assert_eq!(
        conn::command(master, &["SET", "lock", "A", "PX", "60000"]).unwrap(),
        Reply::Status("OK".into())
    );
    poll("the write to reach the replica", Duration::from_secs(10), || {
        conn::command(replica, &["GET", "lock"]).unwrap() == Reply::Bulk(b"A".to_vec())
    });

    let since = topo.sentinel_events().len();
    let started = Instant::now();
    topo.fault(NodeFault::Crash { node: 0 }).unwrap();
    let said = topo.await_failover(since, Duration::from_secs(60)).unwrap();
    println!("{said} after {:?}", started.elapsed());
    assert!(said.contains("replica is master now"), "{said}");

    // Sentinel, not the lab, made the replica master: the client finds it
    // through Sentinel, and it holds the replicated lock.
    assert_eq!(topo.discover_master().unwrap().port(), replica);
    assert_eq!(
        conn::command(replica, &["GET", "lock"]).unwrap(),
        Reply::Bulk(b"A".to_vec())
    );
    let roles: Vec<String> = topo.nodes().into_iter().map(|n| n.role.to_string()).collect();
    assert_eq!(roles, ["replica", "master"]);

    // The timeline's events, in Sentinel's order.
    let events = topo.sentinel_events();
    for e in &events[since..] {
        println!("{:>6} ms  {}", e.at_ms, e.text());
    }
    let first = |name: &str| {
        events[since..]
            .iter()
            .position(|e| e.event == name)
            .unwrap_or_else(|| panic!("no {name} event"))
    };
    assert!(first("+sdown") < first("+odown"));
    assert!(first("+odown") < first("+failover-end"));
    assert!(first("+failover-end") <= first("+switch-master"));
    let switch = &events[since + first("+switch-master")];
    assert!(
        switch
            .detail
            .ends_with(&format!("127.0.0.1 {master} 127.0.0.1 {replica}")),
        "{}",
        switch.detail
    );

    // reset: the original master again, sentinels watching it.
    topo.reset().unwrap();
    assert_eq!(topo.discover_master().unwrap().port(), master);
    assert_eq!(conn::command(master, &["DBSIZE"]).unwrap(), Reply::Integer(0));

    // Nothing outlives the topology.
    let sentinel_ports: Vec<u16> = topo.sentinel_nodes().iter().map(|s| s.port).collect();
    drop(topo);
    for port in sentinel_ports {
        assert!(
            conn::command(port, &["PING"]).is_err(),
            "sentinel on {port} still answers"
        );
    }
}

#[test]
fn a_paused_master_is_failed_over_then_demoted_by_sentinel_and_a_forced_failover_goes_back() {
    let mut topo = Servers::start(TopologyKind::Sentinel).unwrap();
    let (master, replica) = (port_of(&topo, 0), port_of(&topo, 1));

    // A GC pause long enough for Sentinel: it fails over, and the old
    // master, resumed, still thinks it is master until Sentinel tells it.
    let since = topo.sentinel_events().len();
    topo.fault(NodeFault::Pause { node: 0 }).unwrap();
    topo.await_failover(since, Duration::from_secs(60)).unwrap();
    assert_eq!(topo.discover_master().unwrap().port(), replica);
    topo.fault(NodeFault::Resume { node: 0 }).unwrap();
    let since = topo.sentinel_events().len();
    poll(
        "Sentinel to make the old master a replica",
        Duration::from_secs(60),
        || matches!(conn::command(master, &["ROLE"]), Ok(Reply::Array(r)) if r.first() == Some(&Reply::Bulk(b"slave".to_vec()))),
    );
    poll("+convert-to-slave", Duration::from_secs(10), || {
        topo.sentinel_events()[since..]
            .iter()
            .any(|e| e.event == "+convert-to-slave")
    });
    poll("the old master to sync", Duration::from_secs(30), || {
        topology::info_field(master, "replication", "master_link_status").as_deref() == Some("up")
    });

    // SENTINEL FAILOVER: Sentinel's own promotion, on request. Sentinel
    // refuses while its view of the replica is stale (NOGOODSLAVE), so ask
    // until it accepts.
    let since = topo.sentinel_events().len();
    poll("Sentinel to accept SENTINEL FAILOVER", Duration::from_secs(30), || {
        topo.sentinel_failover().is_ok()
    });
    let said = topo.await_failover(since, Duration::from_secs(60)).unwrap();
    assert!(said.contains("master is master now"), "{said}");
    assert_eq!(topo.discover_master().unwrap().port(), master);
    let roles: Vec<String> = topo.nodes().into_iter().map(|n| n.role.to_string()).collect();
    assert_eq!(roles, ["master", "replica"]);
}
