//! Crossing the border between Redis and Lua, both ways, by redis-server
//! 7.0's rules (`script_lua.c`).
//!
//! Two facts shape everything here. Lua 5.1 has one number type, a double,
//! so integers become doubles on the way in and doubles are *truncated* (a C
//! cast) on the way out: `return 3.99` replies `(integer) 3`. And Lua has no
//! nil inside a table, so a nil reply becomes `false` on the way in, and an
//! array stops at its first nil on the way out: `return {1, nil, 3}` replies
//! with one element.
//!
//! | Redis → Lua            | Lua → Redis                               |
//! |------------------------|-------------------------------------------|
//! | integer → number       | number → integer (truncated)              |
//! | bulk → string          | string → bulk                             |
//! | nil → `false`          | `false`, `nil` → nil; `true` → 1          |
//! | array → table          | table → array, up to the first nil        |
//! | status → `{ok = s}`    | `{ok = s}` → status                       |
//! | error → `{err = s}`    | `{err = s}` → error                       |

use omnilua::{Lua, Table, Value};

use crate::reply::Reply;

/// How deep a returned table may nest before the conversion gives up with
/// redis-server's "reached lua stack limit". Redis runs out of Lua stack at
/// about 8000 levels; the simulator stops earlier so a cyclic table cannot
/// exhaust the (much smaller) WebAssembly stack.
pub(crate) const MAX_REPLY_DEPTH: usize = 1000;

/// The bytes a C string function would see: everything before the first NUL.
/// redis-server builds error and status texts with such functions, so
/// `error('a\0b')` replies `ERR user_script:1: a`.
pub(crate) fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(end) => &b[..end],
        None => b,
    }
}

/// `sdstrim(s, "\r\n")`.
pub(crate) fn trim_crlf(mut b: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = b {
        b = rest;
    }
    b
}

/// An error or status line must stay one protocol line: CR and LF become
/// spaces (`sdsmapchars(s, "\r\n", "  ", 2)`).
pub(crate) fn one_line(b: &[u8]) -> String {
    let mapped: Vec<u8> = b
        .iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect();
    String::from_utf8_lossy(&mapped).into_owned()
}

/// `luaPushErrorBuff`: `-CODE message` keeps its code, anything else gets
/// `ERR`; the message loses surrounding CR/LF. The result is the `err` field
/// of a Lua error table.
pub(crate) fn error_field(buf: &[u8]) -> Vec<u8> {
    let buf = cstr(buf);
    let (code, msg): (&[u8], &[u8]) = match buf.split_first() {
        Some((b'-', rest)) => match rest.iter().position(|&c| c == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        _ => (b"ERR", buf),
    };
    let mut out = Vec::with_capacity(code.len() + 1 + msg.len());
    out.extend_from_slice(code);
    out.push(b' ');
    out.extend_from_slice(trim_crlf(msg));
    out
}

/// C's `printf("%.{prec}g", v)` as glibc prints it (`-nan` keeps NaN's sign).
/// Lua 5.1 shows numbers with `%.14g`; redis.call sends them with `%.17g`.
pub(crate) fn fmt_g(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let p = prec.max(1);
    // The exponent %e would print decides between fixed and exponent form.
    let e_form = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = match e_form.split_once('e') {
        Some((m, e)) => (m.to_owned(), e.parse::<i32>().unwrap_or(0)),
        None => (e_form.clone(), 0),
    };
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(&mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}"))
    }
}

fn strip_zeros(s: &str) -> String {
    if !s.contains('.') {
        return s.to_owned();
    }
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `(long long)d` as x86-64 computes it: truncation toward zero, and the
/// "integer indefinite" value `i64::MIN` for NaN and anything out of range —
/// which is why `return 1e20` replies `(integer) -9223372036854775808`.
pub(crate) fn double_to_i64(v: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if v.is_nan() || !(-TWO_63..TWO_63).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// `string2ll`, the strict integer parser behind every numkeys argument: an
/// optional minus, no plus, no blanks, no leading zeros, no overflow.
pub(crate) fn parse_ll(b: &[u8]) -> Option<i64> {
    crate::server::string2ll(b)
}

/// The text of a Lua value that `lua_isstring` accepts (a string, or a
/// number shown with `%.14g`), or `None`.
pub(crate) fn lua_string_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => s.as_bytes().ok(),
        Value::Number(n) => Some(fmt_g(*n, 14).into_bytes()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

/// `luaArgsToRedisArgv`: redis.call's arguments must be strings or numbers;
/// numbers travel as `%.17g` (so `3.5` is `"3.5"` and `0.1` is
/// `"0.10000000000000001"`).
pub(crate) fn lua_args_to_argv(args: &[Value]) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    let mut argv = Vec::with_capacity(args.len());
    for a in args {
        argv.push(match a {
            Value::String(s) => s
                .as_bytes()
                .map_err(|_| "Lua redis lib command arguments must be strings or integers")?,
            Value::Number(n) => fmt_g(*n, 17).into_bytes(),
            Value::Integer(i) => i.to_string().into_bytes(),
            _ => return Err("Lua redis lib command arguments must be strings or integers"),
        });
    }
    Ok(argv)
}

/// A Lua error table `{err = ...}`, as `luaPushErrorBuff` builds it. Command
/// errors also carry `ignore_error_stats_update` (Redis counted them once
/// already), which scripts can see.
pub(crate) fn error_table(lua: &Lua, buf: &[u8], from_command: bool) -> omnilua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_field(buf))?)?;
    if from_command {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// A command's reply as redis.call hands it to Lua. The flag says the reply
/// was an error (redis.call raises it, redis.pcall returns it). With
/// `redis.setresp(3)` nils stay nil and maps become `{map = {...}}`.
pub(crate) fn reply_to_lua(lua: &Lua, reply: &Reply, resp3: bool) -> omnilua::Result<(Value, bool)> {
    if let Reply::Error(e) = reply {
        let mut buf = Vec::with_capacity(e.len() + 1);
        buf.push(b'-');
        buf.extend_from_slice(e.as_bytes());
        return Ok((Value::Table(error_table(lua, &buf, true)?), true));
    }
    Ok((reply_value(lua, reply, resp3)?, false))
}

// long: one arm per RESP reply type, as redisProtocolToLuaType has
fn reply_value(lua: &Lua, reply: &Reply, resp3: bool) -> omnilua::Result<Value> {
    let rich = matches!(
        reply,
        Reply::Double(_)
            | Reply::Boolean(_)
            | Reply::Set(_)
            | Reply::BigNumber(_)
            | Reply::Verbatim { .. }
            | Reply::Push(_)
            | Reply::Pairs(_)
    );
    if rich && !resp3 {
        // A RESP2 script's fake client got the RESP2 shape.
        return reply_value(lua, &reply.clone().into_resp2(), false);
    }
    let tagged = |name: &str, v: Value| -> omnilua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(name, v)?;
        Ok(Value::Table(t))
    };
    Ok(match reply {
        // RESP3 shapes (`redisProtocolToLuaType_*` in script_lua.c).
        Reply::Double(d) => tagged("double", Value::Number(d.parse::<f64>().unwrap_or(f64::NAN)))?,
        Reply::Boolean(b) => Value::Boolean(*b),
        Reply::BigNumber(n) => tagged("big_number", Value::String(lua.create_string(n.as_bytes())?))?,
        Reply::Verbatim { format, text } => {
            let inner = lua.create_table()?;
            inner.raw_set("format", lua.create_string(format.as_bytes())?)?;
            inner.raw_set("string", lua.create_string(text)?)?;
            tagged("verbatim_string", Value::Table(inner))?
        }
        Reply::Set(items) => {
            let inner = lua.create_table()?;
            for item in items {
                let k = reply_value(lua, item, resp3)?;
                if !matches!(k, Value::Nil) {
                    inner.raw_set(k, true)?;
                }
            }
            tagged("set", Value::Table(inner))?
        }
        Reply::Push(items) => reply_value(lua, &Reply::Array(items.clone()), resp3)?,
        Reply::Pairs(pairs) => reply_value(
            lua,
            &Reply::Array(
                pairs
                    .iter()
                    .map(|(k, v)| Reply::Array(vec![k.clone(), v.clone()]))
                    .collect(),
            ),
            resp3,
        )?,
        Reply::Integer(i) => Value::Number(*i as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(b)?),
        Reply::Nil | Reply::NilArray => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Reply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(s.as_bytes())?)?;
            Value::Table(t)
        }
        Reply::Error(_) => reply_to_lua(lua, reply, resp3)?.0,
        Reply::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                let v = reply_value(lua, item, resp3)?;
                if !matches!(v, Value::Nil) {
                    t.raw_set(i as i64 + 1, v)?;
                }
            }
            Value::Table(t)
        }
        Reply::Map(pairs) => {
            if resp3 {
                let inner = lua.create_table()?;
                for (k, v) in pairs {
                    let k = reply_value(lua, k, resp3)?;
                    let v = reply_value(lua, v, resp3)?;
                    if !matches!(k, Value::Nil) {
                        inner.raw_set(k, v)?;
                    }
                }
                let t = lua.create_table()?;
                t.raw_set("map", inner)?;
                Value::Table(t)
            } else {
                // A RESP2 client sees a map as a flat array, and so does a
                // script that did not ask for RESP3.
                let t = lua.create_table()?;
                let mut i = 1i64;
                for (k, v) in pairs {
                    t.raw_set(i, reply_value(lua, k, resp3)?)?;
                    t.raw_set(i + 1, reply_value(lua, v, resp3)?)?;
                    i += 2;
                }
                Value::Table(t)
            }
        }
    })
}

/// `luaReplyToRedisReply`: what a script's return value (or a table inside
/// it) means to the client. `resp3` is whether the script called
/// `redis.setresp(3)`, which turns `true`/`false` into booleans — shown to a
/// RESP2 client as 1 and 0.
pub(crate) fn lua_to_reply(v: &Value, resp3: bool) -> Reply {
    to_reply(v, resp3, 0)
}

fn to_reply(v: &Value, resp3: bool, depth: usize) -> Reply {
    if depth > MAX_REPLY_DEPTH {
        return Reply::error("ERR reached lua stack limit");
    }
    match v {
        Value::String(s) => Reply::Bulk(s.as_bytes().unwrap_or_default()),
        // After redis.setresp(3) a boolean is a RESP3 boolean (`:1`/`:0`
        // to a RESP2 client); before, true is 1 and false is nil.
        Value::Boolean(b) if resp3 => Reply::Boolean(*b),
        Value::Boolean(true) => Reply::Integer(1),
        Value::Boolean(false) => Reply::Nil,
        Value::Number(n) => Reply::Integer(double_to_i64(*n)),
        Value::Integer(i) => Reply::Integer(*i),
        Value::Table(t) => table_to_reply(t, resp3, depth),
        _ => Reply::Nil,
    }
}

fn raw_field(t: &Table, key: &str) -> Value {
    t.raw_get::<_, Value>(key).unwrap_or(Value::Nil)
}

fn table_to_reply(t: &Table, resp3: bool, depth: usize) -> Reply {
    // The special shapes, in the order redis-server tests them.
    if let Value::String(s) = raw_field(t, "err") {
        let mut line = vec![b'-'];
        line.extend_from_slice(cstr(&s.as_bytes().unwrap_or_default()));
        let line = trim_crlf(&line).to_vec();
        return Reply::Error(one_line(line.get(1..).unwrap_or_default()));
    }
    if let Value::String(s) = raw_field(t, "ok") {
        return Reply::Status(one_line(cstr(&s.as_bytes().unwrap_or_default())));
    }
    if let Value::Number(d) = raw_field(t, "double") {
        // addReplyDouble: `,%.17g` to RESP3, a bulk string to RESP2.
        return Reply::Double(fmt_g(d, 17));
    }
    if let Value::String(s) = raw_field(t, "big_number") {
        return Reply::BigNumber(one_line(&s.as_bytes().unwrap_or_default()));
    }
    if let Value::Table(vt) = raw_field(t, "verbatim_string") {
        if let (Value::String(f), Value::String(s)) = (raw_field(&vt, "format"), raw_field(&vt, "string")) {
            // addReplyVerbatim: exactly three format characters, from a C
            // string, padded with spaces.
            let f = f.as_bytes().unwrap_or_default();
            let mut format: Vec<u8> = cstr(&f).iter().copied().take(3).collect();
            format.resize(3, b' ');
            return Reply::Verbatim {
                format: String::from_utf8_lossy(&format).into_owned(),
                text: s.as_bytes().unwrap_or_default(),
            };
        }
    }
    if let Value::Table(m) = raw_field(t, "map") {
        let pairs = m.raw_pairs().unwrap_or_default();
        return Reply::Map(
            pairs
                .iter()
                .map(|(k, v)| (to_reply(k, resp3, depth + 1), to_reply(v, resp3, depth + 1)))
                .collect(),
        );
    }
    if let Value::Table(s) = raw_field(t, "set") {
        // addReplySetLen: `~N` to RESP3, an array to RESP2.
        let pairs = s.raw_pairs().unwrap_or_default();
        return Reply::Set(pairs.iter().map(|(k, _)| to_reply(k, resp3, depth + 1)).collect());
    }
    let mut items = Vec::new();
    let mut j = 1i64;
    loop {
        let v = t.raw_get::<_, Value>(j).unwrap_or(Value::Nil);
        if matches!(v, Value::Nil) {
            break;
        }
        items.push(to_reply(&v, resp3, depth + 1));
        j += 1;
    }
    Reply::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_g_matches_glibc() {
        assert_eq!(fmt_g(0.1, 17), "0.10000000000000001");
        assert_eq!(fmt_g(3.5, 17), "3.5");
        assert_eq!(fmt_g(100.0, 17), "100");
        assert_eq!(fmt_g(1e20, 17), "1e+20");
        assert_eq!(fmt_g(1.0 / 3.0, 17), "0.33333333333333331");
        assert_eq!(fmt_g(9007199254740992.0, 17), "9007199254740992");
        assert_eq!(fmt_g(-0.0, 17), "-0");
        assert_eq!(fmt_g(f64::INFINITY, 17), "inf");
        assert_eq!(fmt_g(1e15, 14), "1e+15");
        assert_eq!(fmt_g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(fmt_g(2.0 / 3.0, 14), "0.66666666666667");
        assert_eq!(fmt_g(9_223_372_036_854_775_808.0, 14), "9.2233720368548e+18");
        assert_eq!(fmt_g(0.0001, 14), "0.0001");
        assert_eq!(fmt_g(0.00001, 14), "1e-05");
        assert_eq!(fmt_g(5.0, 14), "5");
        assert_eq!(fmt_g(-(f64::NAN.copysign(1.0)), 17), "-nan");
    }

    #[test]
    fn doubles_truncate_like_a_c_cast() {
        assert_eq!(double_to_i64(3.99), 3);
        assert_eq!(double_to_i64(-3.99), -3);
        assert_eq!(double_to_i64(1e20), i64::MIN);
        assert_eq!(double_to_i64(-1e20), i64::MIN);
        assert_eq!(double_to_i64(f64::NAN), i64::MIN);
        assert_eq!(double_to_i64(f64::INFINITY), i64::MIN);
        assert_eq!(double_to_i64(9007199254740993.0), 9007199254740992);
    }

    #[test]
    fn string2ll_is_strict() {
        assert_eq!(parse_ll(b"0"), Some(0));
        assert_eq!(parse_ll(b"12"), Some(12));
        assert_eq!(parse_ll(b"-1"), Some(-1));
        assert_eq!(parse_ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"1.5",
            b"abc",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn error_fields_follow_push_error_buff() {
        assert_eq!(
            error_field(b"-WRONGTYPE Operation against"),
            b"WRONGTYPE Operation against"
        );
        assert_eq!(error_field(b"oops"), b"ERR oops");
        assert_eq!(error_field(b"-NOSPACE"), b"ERR NOSPACE");
        assert_eq!(error_field(b"-ERR x\r\n"), b"ERR x");
        assert_eq!(error_field(b"-\n-E x\n"), b"\n-E x");
        assert_eq!(error_field(b"-ERR a\0b"), b"ERR a");
    }

    #[test]
    fn trim_and_one_line() {
        assert_eq!(trim_crlf(b"\r\nab\n"), b"ab");
        assert_eq!(trim_crlf(b"\n\n"), b"");
        assert_eq!(one_line(b"a\r\nb"), "a  b");
    }
}
