//! The real side's reply conversion, checked against a real redis-server:
//! server errors must come back as `Reply::Error` with the exact text the
//! server sent, statuses stay statuses, nils and nested errors survive.

use locklab_backend::real::conn::{RealConnection, RealError};
use locklab_core::cli::parse;
use locklab_core::reply::Reply;
use std::path::PathBuf;

use locklab_tests::server::NOT_FOUND;
use locklab_tests::RedisServer;

fn run(conn: &mut RealConnection, line: &str) -> Reply {
    let argv = parse(line).expect("valid redis-cli line");
    conn.execute(&argv).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn err(s: &str) -> Reply {
    Reply::error(s)
}

fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

#[test]
fn scalars_convert_faithfully() {
    let server = RedisServer::start();
    let mut c = RealConnection::open(&server.url()).unwrap();
    assert_eq!(run(&mut c, "PING"), Reply::status("PONG"));
    assert_eq!(run(&mut c, "PING hello"), bulk("hello"));
    assert_eq!(run(&mut c, "SET k v"), Reply::ok());
    assert_eq!(run(&mut c, "GET k"), bulk("v"));
    assert_eq!(run(&mut c, "GET missing"), Reply::Nil);
    assert_eq!(run(&mut c, "TYPE k"), Reply::status("string"));
    assert_eq!(run(&mut c, "INCR n"), Reply::Integer(1));
    assert_eq!(run(&mut c, "DECRBY n 10"), Reply::Integer(-9));
    // A bulk "OK" must stay a bulk, unlike the status +OK.
    assert_eq!(run(&mut c, "ECHO OK"), bulk("OK"));
    assert_eq!(run(&mut c, "ECHO OK").to_cli(), "\"OK\"");
    assert_eq!(run(&mut c, "SET bin \"a\\x00\\xff\\n\""), Reply::ok());
    assert_eq!(run(&mut c, "GET bin"), Reply::bulk(b"a\x00\xff\n".to_vec()));
    assert_eq!(run(&mut c, "KEYS nomatch*"), Reply::Array(vec![]));
}

#[test]
fn server_errors_are_replies_with_the_exact_text() {
    let server = RedisServer::start();
    let mut c = RealConnection::open(&server.url()).unwrap();
    assert_eq!(run(&mut c, "SET k v XX NX"), err("ERR syntax error"));
    assert_eq!(
        run(&mut c, "GET"),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(&mut c, "FOO a b"),
        err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(
        run(&mut c, "FOO"),
        err("ERR unknown command 'FOO', with args beginning with: ")
    );
    assert_eq!(run(&mut c, "HSET h f v"), Reply::Integer(1));
    assert_eq!(
        run(&mut c, "GET h"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(
        run(&mut c, "INCR h"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(
        run(&mut c, "SET k v EX 0"),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(run(&mut c, "SET n 9223372036854775807"), Reply::ok());
    assert_eq!(run(&mut c, "INCR n"), err("ERR increment or decrement would overflow"));
    assert_eq!(
        run(&mut c, "INCRBY n x"),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(&mut c, "EVALSHA 0000000000000000000000000000000000000000 0"),
        err("NOSCRIPT No matching script. Please use EVAL.")
    );
    // Custom error codes from Lua keep their code.
    assert_eq!(
        run(&mut c, "EVAL \"return redis.error_reply('MYERR x')\" 0"),
        err("MYERR x")
    );
    assert_eq!(
        run(&mut c, "EVAL \"return {err='MYERR  two  spaces '}\" 0"),
        err("MYERR  two  spaces ")
    );
    // An error with no detail at all: the code alone.
    assert_eq!(run(&mut c, "EVAL \"return {err='LONE'}\" 0"), err("LONE"));
    assert_eq!(run(&mut c, "EXEC"), err("ERR EXEC without MULTI"));
    // The connection is still usable after all those errors.
    assert_eq!(run(&mut c, "PING"), Reply::status("PONG"));
}

#[test]
fn lua_statuses_and_conversions() {
    let server = RedisServer::start();
    let mut c = RealConnection::open(&server.url()).unwrap();
    assert_eq!(
        run(&mut c, "EVAL \"return redis.status_reply('FINE')\" 0"),
        Reply::status("FINE")
    );
    assert_eq!(run(&mut c, "EVAL \"return redis.status_reply('OK')\" 0"), Reply::ok());
    assert_eq!(run(&mut c, "EVAL \"return {ok='DONE'}\" 0"), Reply::status("DONE"));
    assert_eq!(run(&mut c, "EVAL \"return true\" 0"), Reply::Integer(1));
    assert_eq!(run(&mut c, "EVAL \"return false\" 0"), Reply::Nil);
    assert_eq!(run(&mut c, "EVAL \"return 3.99\" 0"), Reply::Integer(3));
    assert_eq!(
        run(&mut c, "EVAL \"return {1,'a',{2,false}}\" 0"),
        Reply::Array(vec![
            Reply::Integer(1),
            bulk("a"),
            Reply::Array(vec![Reply::Integer(2), Reply::Nil])
        ])
    );
    // An error nested inside an array reply stays an error element.
    assert_eq!(
        run(&mut c, "EVAL \"return {1, redis.error_reply('E1 inner')}\" 0"),
        Reply::Array(vec![Reply::Integer(1), err("E1 inner")])
    );
}

#[test]
fn transactions_keep_nested_errors_and_nil_arrays() {
    let server = RedisServer::start();
    let mut c = RealConnection::open(&server.url()).unwrap();
    let mut other = RealConnection::open(&server.url()).unwrap();
    assert_eq!(run(&mut c, "HSET h f v"), Reply::Integer(1));
    assert_eq!(run(&mut c, "MULTI"), Reply::ok());
    assert_eq!(run(&mut c, "SET k 1"), Reply::status("QUEUED"));
    assert_eq!(run(&mut c, "INCR h"), Reply::status("QUEUED"));
    assert_eq!(run(&mut c, "INCR k"), Reply::status("QUEUED"));
    let exec = run(&mut c, "EXEC");
    assert_eq!(
        exec,
        Reply::Array(vec![
            Reply::ok(),
            err("WRONGTYPE Operation against a key holding the wrong kind of value"),
            Reply::Integer(2),
        ])
    );
    assert_eq!(
        exec.to_cli(),
        "1) OK\n2) (error) WRONGTYPE Operation against a key holding the wrong kind of value\n3) (integer) 2"
    );

    // Errors while queueing abort the transaction.
    assert_eq!(run(&mut c, "MULTI"), Reply::ok());
    assert_eq!(
        run(&mut c, "GET"),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(&mut c, "EXEC"),
        err("EXECABORT Transaction discarded because of previous errors.")
    );

    // A WATCHed key changed by another client: EXEC answers the null array.
    assert_eq!(run(&mut c, "WATCH k"), Reply::ok());
    assert_eq!(run(&mut other, "SET k changed"), Reply::ok());
    assert_eq!(run(&mut c, "MULTI"), Reply::ok());
    assert_eq!(run(&mut c, "SET k mine"), Reply::status("QUEUED"));
    let aborted = run(&mut c, "exec");
    assert_eq!(aborted, Reply::NilArray);
    assert_eq!(aborted.to_cli(), "(nil)");
    assert_eq!(run(&mut c, "GET k"), bulk("changed"));
}

#[test]
fn empty_argv_and_dead_server_are_transport_errors() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = RealConnection::open(&url).unwrap();
    assert!(matches!(c.execute(&[]), Err(RealError::EmptyCommand)));
    drop(server);
    assert!(c.execute(&parse("PING").unwrap()).is_err());
    assert!(matches!(RealConnection::open(&url), Err(RealError::Connect { .. })));
}

#[test]
fn missing_binary_message_is_helpful() {
    for binary in [None, Some(PathBuf::from("/nonexistent/redis-server"))] {
        let payload = std::panic::catch_unwind(|| RedisServer::start_using(binary, &[]))
            .expect_err("start must panic without a binary");
        let msg = payload.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(msg, NOT_FOUND);
    }
    assert_eq!(
        NOT_FOUND,
        "redis-server not found: install it with `sudo apt-get install -y redis-server` \
         (or run .ci/run, which installs it)"
    );
}
