//! `SYNC` / `PSYNC` beside redis-server 7.0.15: a raw socket attaches as a
//! replica (as the Redis test suite's `attach_to_replication_stream` does),
//! reads the RDB, then the stream of what another client's commands
//! propagate. Both servers get the same bytes; the streams must be the
//! same commands, absolute times (`PXAT`, `PEXPIREAT`) masked.

use std::io::Write;
use std::net::SocketAddr;

use locklab_core::server::Profile;
use locklab_tests::RedisServer;

use super::{connect, read_exact_bytes, read_line, req, sim};

/// The commands whose propagation is compared, ending with `SET end end`.
const WRITES: &[&[&str]] = &[
    &["SET", "a", "1"],
    &["GET", "a"],
    &["SET", "b", "2", "EX", "100"],
    &["MULTI"],
    &["SET", "c", "3"],
    &["INCR", "c"],
    &["GET", "c"],
    &["EXEC"],
    &["MULTI"],
    &["SET", "d", "4"],
    &["EXEC"],
    &["MULTI"],
    &["GET", "d"],
    &["EXEC"],
    &["DEL", "nothing"],
    &[
        "EVAL",
        "redis.call('SET', KEYS[1], 'x') redis.call('EXPIRE', KEYS[1], 100)",
        "1",
        "e",
    ],
    &["EVAL", "return redis.call('INCR', KEYS[1])", "1", "n"],
    &["EXPIRE", "a", "100"],
    &["SELECT", "2"],
    &["SET", "f", "5"],
    &["SELECT", "0"],
    &["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
    &["SET", "g", "1", "PX", "1"],
    &["DEBUG", "SLEEP", "0.01"],
    &["GET", "g"],
    &["DEBUG", "SET-ACTIVE-EXPIRE", "1"],
    &["GETEX", "b", "PERSIST"],
    &["RPUSH", "l", "x", "y"],
    &["LPOP", "l"],
    &["SET", "end", "end"],
];

/// One propagated command, its name lower-cased and times masked.
fn read_command(s: &mut std::net::TcpStream) -> String {
    let mut header = read_line(s);
    // Newlines are keep-alives while the RDB is made; PINGs are pings.
    while header.is_empty() {
        header = read_line(s);
    }
    let n: usize = header
        .trim_start_matches('*')
        .parse()
        .unwrap_or_else(|_| panic!("not a multibulk: {header}"));
    let mut args = Vec::new();
    for i in 0..n {
        let len: usize = read_line(s).trim_start_matches('$').parse().expect("bulk length");
        let arg = String::from_utf8_lossy(&read_exact_bytes(s, len + 2)[..len]).into_owned();
        let masked = match args.last().map(String::as_str) {
            Some("PXAT" | "pxat") => "<ms>".to_owned(),
            _ if i == 2 && args[0] == "pexpireat" => "<ms>".to_owned(),
            _ => arg,
        };
        args.push(if i == 0 { masked.to_lowercase() } else { masked });
    }
    args.join(" ")
}

/// Read one whole RESP2 reply (an EXEC's array with its elements).
fn skip_reply(s: &mut std::net::TcpStream) {
    let line = read_line(s);
    let n: i64 = line.get(1..).and_then(|n| n.parse().ok()).unwrap_or(0);
    match line.as_bytes().first() {
        Some(b'*') => (0..n).for_each(|_| skip_reply(s)),
        Some(b'$') if n >= 0 => drop(read_exact_bytes(s, n as usize + 2)),
        _ => {}
    }
}

/// Attach to `addr` as a replica (`SYNC`, or `PSYNC ? -1`), run
/// [`WRITES`] on another connection, and return the greeting, the RDB's
/// first nine bytes and the stream.
fn stream_of(addr: SocketAddr, psync: bool) -> (String, String, Vec<String>) {
    let mut client = connect(addr);
    client
        .write_all(&req(&[b"CONFIG", b"SET", b"repl-ping-replica-period", b"3600"]))
        .expect("write");
    assert_eq!(read_line(&mut client), "+OK");
    let mut replica = connect(addr);
    let greeting = if psync {
        replica.write_all(b"PSYNC ? -1\r\n").expect("write");
        let line = read_line(&mut replica);
        let mut words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words.len(), 3, "{line}");
        assert!(
            words[1].len() == 40 && words[1].bytes().all(|b| b.is_ascii_hexdigit()),
            "{line}"
        );
        assert!(words[2].parse::<u64>().is_ok(), "{line}");
        words.truncate(1);
        words.join(" ")
    } else {
        replica.write_all(b"SYNC\r\n").expect("write");
        String::new()
    };
    let mut count = read_line(&mut replica);
    while count.is_empty() {
        count = read_line(&mut replica);
    }
    let len: usize = count
        .trim_start_matches('$')
        .parse()
        .unwrap_or_else(|_| panic!("not a bulk: {count}"));
    let rdb = read_exact_bytes(&mut replica, len);
    for argv in WRITES {
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        client.write_all(&req(&args)).expect("write");
        skip_reply(&mut client);
    }
    let mut stream = Vec::new();
    loop {
        let cmd = read_command(&mut replica);
        if cmd == "ping" {
            continue;
        }
        let end = cmd == "set end end";
        stream.push(cmd);
        if end {
            break;
        }
    }
    (greeting, String::from_utf8_lossy(&rdb[..9]).into_owned(), stream)
}

#[test]
fn sync_and_psync_stream_what_redis_server_streams() {
    let real = RedisServer::start();
    let server = sim(Profile::V7_0);
    for psync in [false, true] {
        let theirs = stream_of(real.addr(), psync);
        let ours = stream_of(server.local_addr(), psync);
        assert_eq!(theirs.1, "REDIS0010");
        assert_eq!(
            ours, theirs,
            "sim-server (left) and redis-server (right), psync {psync}"
        );
    }
}

/// Every reply line `lines` get, read up to the `PING` sent after them.
fn replies_until_pong(addr: SocketAddr, lines: &[Vec<&[u8]>]) -> Vec<String> {
    let mut s = connect(addr);
    for argv in lines {
        s.write_all(&req(argv)).expect("write");
    }
    s.write_all(b"PING\r\n").expect("write");
    let mut out = Vec::new();
    loop {
        let line = read_line(&mut s);
        if line == "+PONG" {
            return out;
        }
        out.push(line);
    }
}

/// `REPLCONF` (replicationCommand's option pairs) answers as
/// redis-server 7.0.15 does, and `ACK` and `GETACK` get no reply at all,
/// from a replica or not.
#[test]
fn replconf_answers_as_redis_server_and_ack_gets_no_reply() {
    let real = RedisServer::start();
    let server = sim(Profile::V7_0);
    let long_ip = vec![b'a'; 300];
    let lines: Vec<Vec<&[u8]>> = vec![
        vec![b"REPLCONF"],
        vec![b"REPLCONF", b"capa"],
        vec![b"REPLCONF", b"listening-port", b"6380"],
        vec![b"REPLCONF", b"listening-port", b"x"],
        vec![b"REPLCONF", b"capa", b"eof", b"CAPA", b"psync2"],
        vec![b"REPLCONF", b"ip-address", b"127.0.0.1"],
        vec![b"REPLCONF", b"ip-address", &long_ip],
        vec![b"REPLCONF", b"rdb-only", b"1"],
        vec![b"REPLCONF", b"rdb-only", b"2"],
        vec![b"REPLCONF", b"rdb-only", b"x"],
        vec![b"REPLCONF", b"rdb-filter-only", b"functions"],
        vec![b"REPLCONF", b"rdb-filter-only", b"functions keys"],
        vec![b"REPLCONF", b"rdb-filter-only", b"\"unbalanced"],
        vec![b"REPLCONF", b"nonsense", b"1"],
        vec![b"REPLCONF", b"ACK", b"10"],
        vec![b"REPLCONF", b"ack", b"x"],
        vec![b"REPLCONF", b"GETACK", b"*"],
        vec![b"REPLCONF", b"listening-port", b"1", b"ACK", b"5"],
        vec![b"REPLCONF", b"listening-port", b"x", b"ACK", b"5"],
        vec![b"REPLCONF", b"capa", b"eof", b"bogus", b"1"],
    ];
    let theirs = replies_until_pong(real.addr(), &lines);
    assert!(theirs.len() < lines.len(), "ACK and GETACK answered: {theirs:?}");
    assert_eq!(replies_until_pong(server.local_addr(), &lines), theirs);
}

/// A replica attached with `SYNC` counts as a good replica
/// (`replicaPutOnline` sets its ACK time) for `min-replicas-to-write`.
#[test]
fn an_attached_replica_lets_min_replicas_writes_through() {
    let real = RedisServer::start();
    let server = sim(Profile::V7_0);
    let run = |addr: SocketAddr| {
        let mut replica = connect(addr);
        replica.write_all(b"SYNC\r\n").expect("write");
        let mut count = read_line(&mut replica);
        while count.is_empty() {
            count = read_line(&mut replica);
        }
        let len: usize = count.trim_start_matches('$').parse().expect("bulk length");
        read_exact_bytes(&mut replica, len);
        let lines: Vec<Vec<&[u8]>> = vec![
            vec![b"CONFIG", b"SET", b"min-replicas-to-write", b"1"],
            vec![b"SET", b"k", b"v"],
            vec![b"CONFIG", b"SET", b"min-replicas-to-write", b"2"],
            vec![b"SET", b"k", b"v"],
            vec![b"CONFIG", b"SET", b"min-replicas-to-write", b"0"],
        ];
        replies_until_pong(addr, &lines)
    };
    let theirs = run(real.addr());
    assert_eq!(theirs[1], "+OK");
    assert_eq!(run(server.local_addr()), theirs);
}

/// `INFO commandstats`' `usec` on sim-server is time measured around each
/// call, as redis-server's `call()` measures it: a script that loops a
/// million times spends at least a millisecond, and the call inside it
/// is timed on its own.
#[test]
fn commandstats_usec_is_measured_on_sim_server() {
    let server = sim(Profile::V7_0);
    let mut s = connect(server.local_addr());
    let script: &[u8] = b"local n = 0 for i = 1, 1000000 do n = n + i end redis.call('SET', 'k', n) return 1";
    s.write_all(&req(&[b"EVAL", script, b"0"])).expect("write");
    assert_eq!(read_line(&mut s), ":1");
    s.write_all(&req(&[b"INFO", b"commandstats"])).expect("write");
    let len: usize = read_line(&mut s).trim_start_matches('$').parse().expect("bulk");
    let info = String::from_utf8(read_exact_bytes(&mut s, len + 2)).expect("utf-8");
    let usec = |cmd: &str| -> u64 {
        let line = info
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")))
            .unwrap_or_else(|| panic!("no {cmd} in {info}"));
        let at = line.find("usec=").expect("usec") + 5;
        line[at..].split(',').next().unwrap_or("").parse().expect("usec number")
    };
    assert!(usec("eval") >= 1000, "{info}");
    assert!(usec("set") <= usec("eval"), "{info}");
}
