//! The node's cost grows as redis-server's does (issue 42, rows 8 and 9):
//! building a value one element at a time is linear in its size, and a
//! command's cost under `maxmemory` does not grow with the number of keys.
//!
//! Each test does the same work at two sizes, 4× apart, and compares the
//! time it took, in the same test, so the verdict does not depend on the
//! machine's speed: linear work gives a ratio near 4 (a little more with a
//! `log n`), the old clone-and-store code about 16, and a per-command walk
//! of the keyspace 4 where the cost should not grow at all. The sizes are
//! past what fits in a cache, where the cost per element is steady; the
//! small size's best of three sets a budget, and the large size passes as
//! soon as one run stays within it (a run past it is cut short, so the
//! quadratic code fails in seconds, not minutes). Counting the bytes
//! allocated instead would need a counting global allocator, which is
//! `unsafe` code the workspace forbids.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use locklab_core::server::{ConnId, Node, Profile};
use locklab_core::Reply;

fn run(node: &mut Node, parts: &[&[u8]]) -> Reply {
    let argv: Vec<Vec<u8>> = parts.iter().map(|p| p.to_vec()).collect();
    node.execute(ConnId(1), &argv)
}

/// Run `step(i)` for `i` in `0..n`; the time taken, or `None` once it
/// exceeds `budget`.
fn timed(n: usize, budget: Duration, step: &mut dyn FnMut(usize)) -> Option<Duration> {
    let start = Instant::now();
    for i in 0..n {
        step(i);
        if i % 256 == 0 && start.elapsed() > budget {
            return None;
        }
    }
    Some(start.elapsed())
}

/// The tests of this file, one at a time: each measures time, and two
/// running side by side would slow each other unevenly.
static SERIAL: Mutex<()> = Mutex::new(());

/// A measured run: a fresh node, and how many steps to take on it.
type Run<'a> = (&'a dyn Fn() -> Node, usize);

/// Whether the `large` run takes less than `ratio` times the `small` one,
/// for one of five pairs (each run of a pair right after the other, so both
/// meet the same load; the large one cut short past the bound).
fn within_ratio(ratio: f64, small: Run<'_>, large: Run<'_>, step: &dyn Fn(&mut Node, usize)) -> Result<f64, String> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut bases = Vec::new();
    for _ in 0..5 {
        let mut node = small.0();
        let base = timed(small.1, Duration::MAX, &mut |i| step(&mut node, i)).unwrap_or(Duration::MAX);
        let mut node = large.0();
        match timed(large.1, base.mul_f64(ratio), &mut |i| step(&mut node, i)) {
            Some(took) => return Ok(took.as_secs_f64() / base.as_secs_f64().max(1e-9)),
            None => bases.push(base),
        }
    }
    Err(format!(
        "the large run took over {ratio}x the small one five times (small: {bases:?})"
    ))
}

/// Building a value of 160 k elements one at a time takes less than 8×
/// the time of 40 k (linear is 4×, quadratic 16×).
fn assert_linear(what: &str, build: &dyn Fn(&mut Node, usize)) {
    let fresh = || Node::new(Profile::V7_0);
    match within_ratio(8.0, (&fresh, 40_000), (&fresh, 160_000), build) {
        Ok(ratio) => eprintln!("{what}: {ratio:.1}x for 4x the elements"),
        Err(e) => panic!("{what} grows faster than linearly: {e}"),
    }
}

fn num(i: usize) -> Vec<u8> {
    i.to_string().into_bytes()
}

#[test]
fn one_element_lpush_is_linear() {
    assert_linear("LPUSH", &|n, i| {
        run(n, &[b"LPUSH", b"l", &num(i)]);
    });
}

#[test]
fn one_element_hset_is_linear() {
    assert_linear("HSET", &|n, i| {
        run(n, &[b"HSET", b"h", &num(i), b"v"]);
    });
}

#[test]
fn one_element_sadd_is_linear() {
    assert_linear("SADD", &|n, i| {
        run(n, &[b"SADD", b"s", format!("m{i}").as_bytes()]);
    });
}

#[test]
fn one_element_zadd_is_linear() {
    assert_linear("ZADD", &|n, i| {
        run(n, &[b"ZADD", b"z", &num(i), format!("m{i}").as_bytes()]);
    });
}

#[test]
fn one_byte_append_and_setrange_are_linear() {
    assert_linear("APPEND", &|n, _| {
        run(n, &[b"APPEND", b"s", b"x"]);
    });
    assert_linear("SETRANGE", &|n, i| {
        run(n, &[b"SETRANGE", b"s", &num(i), b"x"]);
    });
}

/// A node holding `keys` keys (`key:0` …) under `policy`, with
/// `maxmemory` set to `maxmemory`, or to what the keys use.
fn full_node(keys: usize, maxmemory: Option<&[u8]>, policy: &[u8]) -> Node {
    let mut node = Node::new(Profile::V7_0);
    for i in 0..keys {
        run(&mut node, &[b"SET", format!("key:{i}").as_bytes(), b"value"]);
    }
    let used = match run(&mut node, &[b"INFO", b"memory"]) {
        Reply::Bulk(info) => String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:").map(|v| v.trim().to_owned()))
            .unwrap_or_default(),
        other => panic!("INFO memory gave {other:?}"),
    };
    run(&mut node, &[b"CONFIG", b"SET", b"maxmemory-policy", policy]);
    run(
        &mut node,
        &[b"CONFIG", b"SET", b"maxmemory", maxmemory.unwrap_or(used.as_bytes())],
    );
    node
}

/// 20 k GETs cost about the same with 50 k keys as with 200 k while
/// `maxmemory` is set: under 2.5× (a walk of the keyspace per command,
/// as `used_memory` was, costs 4×).
#[test]
fn a_get_under_maxmemory_does_not_walk_the_keyspace() {
    let (small, large) = (
        || full_node(50_000, Some(b"4gb"), b"noeviction"),
        || full_node(200_000, Some(b"4gb"), b"noeviction"),
    );
    let get = |node: &mut Node, i: usize| {
        let key = format!("key:{}", i * 2);
        assert!(matches!(run(node, &[b"GET", key.as_bytes()]), Reply::Bulk(_)));
    };
    match within_ratio(2.5, (&small, 20_000), (&large, 20_000), &get) {
        Ok(ratio) => eprintln!("GET under maxmemory: {ratio:.1}x for 4x the keys"),
        Err(e) => panic!("a GET's cost grows with the number of keys: {e}"),
    }
}

/// 5 k SETs of new keys on a node full to `maxmemory` under
/// `allkeys-random` (each SET evicts a key) cost about the same with 20 k
/// keys as with 80 k: under 2.5× (listing every key as a candidate before
/// each eviction costs 4×).
#[test]
fn eviction_samples_instead_of_listing_every_key() {
    let (small, large) = (
        || full_node(20_000, None, b"allkeys-random"),
        || full_node(80_000, None, b"allkeys-random"),
    );
    let set = |node: &mut Node, i: usize| {
        assert_eq!(
            run(node, &[b"SET", format!("new:{i}").as_bytes(), b"value"]),
            Reply::ok()
        );
    };
    match within_ratio(2.5, (&small, 5_000), (&large, 5_000), &set) {
        Ok(ratio) => eprintln!("evicting SET: {ratio:.1}x for 4x the keys"),
        Err(e) => panic!("an evicting SET's cost grows with the number of keys: {e}"),
    }
    // And it did evict: the node holds no more keys than it started with,
    // give or take the one the last SET added.
    let mut node = small();
    for i in 0..1_000 {
        set(&mut node, i);
    }
    let Reply::Integer(n) = run(&mut node, &[b"DBSIZE"]) else {
        panic!("DBSIZE is an integer");
    };
    assert!(n <= 20_001, "{n} keys: nothing was evicted");
}

/// 2 k RANDOMKEYs cost about the same with 20 k keys as with 80 k: under
/// 2.5× (listing the live keys before each draw, as RANDOMKEY did, costs
/// 4×). Each answer is a key of the database.
#[test]
fn randomkey_draws_without_listing_the_keys() {
    let (small, large) = (
        || full_node(20_000, Some(b"0"), b"noeviction"),
        || full_node(80_000, Some(b"0"), b"noeviction"),
    );
    let draw = |node: &mut Node, _: usize| match run(node, &[b"RANDOMKEY"]) {
        Reply::Bulk(k) => assert!(k.starts_with(b"key:"), "{k:?}"),
        other => panic!("RANDOMKEY gave {other:?}"),
    };
    match within_ratio(2.5, (&small, 2_000), (&large, 2_000), &draw) {
        Ok(ratio) => eprintln!("RANDOMKEY: {ratio:.1}x for 4x the keys"),
        Err(e) => panic!("RANDOMKEY's cost grows with the number of keys: {e}"),
    }
}

/// RANDOMKEY meets keys whose time is up (active expiry off) and expires
/// them as it goes, as `dbRandomKey` does: it never returns one, and a
/// database of only such keys answers nil and is left empty.
#[test]
fn randomkey_expires_what_it_meets() {
    let mut node = Node::new(Profile::V7_0);
    run(&mut node, &[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]);
    for i in 0..50 {
        run(&mut node, &[b"SET", format!("gone:{i}").as_bytes(), b"v", b"PX", b"10"]);
    }
    run(&mut node, &[b"SET", b"kept", b"v"]);
    node.advance(100);
    assert_eq!(run(&mut node, &[b"RANDOMKEY"]), Reply::Bulk(b"kept".to_vec()));
    run(&mut node, &[b"DEL", b"kept"]);
    assert_eq!(run(&mut node, &[b"RANDOMKEY"]), Reply::Nil);
    assert_eq!(node.dbsize(0), 0);
}
