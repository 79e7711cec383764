//! The `struct` library redis-server bundles with its Lua
//! (`deps/lua/src/lua_struct.c`: Roberto Ierusalimschy's struct.c 1.8, with
//! Redis's checks: `getnum`'s overflow, the offset of at least 1),
//! transcribed: `struct.pack`,
//! `struct.unpack` and `struct.size` over the same format letters, sizes
//! (x86-64: `h` 2, `i` 4, `l`/`T`/`d` 8, `f` 4, alignment at most 8),
//! conversions and error texts.
//!
//! The prelude's wrapper (`prelude.lua`, "struct") hands every argument over
//! as Lua sees it — its type, `tonumber` of it and its string form — so the
//! checks here are `luaL_checknumber`/`luaL_checklstring`'s, and an error
//! comes back as a [`StructError`] the wrapper raises with the script's
//! position, as `luaL_error` and `luaL_argerror` would.

/// An argument as the C functions would read it: absent, or with its type
/// name, its value as a number (`lua_isnumber`), and as a string
/// (`lua_tolstring`: a string, or a number formatted).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Arg {
    pub(crate) present: bool,
    pub(crate) type_name: String,
    pub(crate) number: Option<f64>,
    pub(crate) text: Option<Vec<u8>>,
}

/// What a call answers: a string or a number.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Out {
    Str(Vec<u8>),
    Num(f64),
}

/// `luaL_error` (the message) or `luaL_argerror` (the argument, the
/// message inside "bad argument #N to '…' (…)").
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StructError {
    Error(String),
    Arg(usize, String),
}

/// Integral sizes above this are refused (`MAXINTSIZE`).
const MAXINTSIZE: i64 = 32;
/// `MAXALIGN`: a double's alignment in a struct on x86-64.
const MAXALIGN: i64 = 8;
/// `LUAI_MAXCSTACK`: how many values a C function may push.
const MAXCSTACK: usize = 8000;

/// Endianness and alignment (`Header`); x86-64 is little-endian.
struct Header {
    little: bool,
    align: i64,
}

impl Default for Header {
    fn default() -> Self {
        Header { little: true, align: 1 }
    }
}

type Result<T> = std::result::Result<T, StructError>;

fn arg(args: &[Arg], i: usize) -> Arg {
    args.get(i - 1).cloned().unwrap_or_default()
}

/// `luaL_typename` of argument `i`: "no value" past the arguments, except
/// `b_pack`'s mark, the nil it pushes after them (`marked`).
fn type_name(args: &[Arg], i: usize, marked: bool) -> String {
    match args.get(i - 1) {
        Some(a) => a.type_name.clone(),
        None if marked && i == args.len() + 1 => "nil".into(),
        None => "no value".into(),
    }
}

fn check_number(args: &[Arg], i: usize, marked: bool) -> Result<f64> {
    arg(args, i)
        .number
        .ok_or_else(|| StructError::Arg(i, format!("number expected, got {}", type_name(args, i, marked))))
}

fn check_string(args: &[Arg], i: usize, marked: bool) -> Result<Vec<u8>> {
    arg(args, i)
        .text
        .ok_or_else(|| StructError::Arg(i, format!("string expected, got {}", type_name(args, i, marked))))
}

/// `(long) d` on x86-64: out of range or NaN is `LONG_MIN`.
fn c_long(d: f64) -> i64 {
    if d.is_nan() || !(i64::MIN as f64..-(i64::MIN as f64)).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// `(unsigned long) d` as gcc emits it: below 2^63 (or NaN) the signed
/// conversion, above it 2^63 subtracted first.
fn c_ulong(d: f64) -> u64 {
    const TWO63: f64 = -(i64::MIN as f64);
    if d.is_nan() || d < TWO63 {
        c_long(d) as u64
    } else {
        (c_long(d - TWO63) as u64) ^ (1 << 63)
    }
}

/// `lua_isnumber` of a string result (5.1's `luaO_str2d`: `strtod`, or a
/// hexadecimal integer, blanks around it allowed).
fn str_number(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s)
        .ok()?
        .trim_matches(|c: char| c.is_ascii_whitespace());
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"));
    match hex {
        Some(h) => u64::from_str_radix(h, 16).ok().map(|v| v as f64),
        None if t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eEinfatyINFATY".contains(&b)) =>
        {
            t.parse().ok()
        }
        None => None,
    }
}

/// `getnum`, with Redis's overflow check.
fn getnum(fmt: &[u8], at: &mut usize, default: i64) -> Result<i64> {
    if !fmt.get(*at).is_some_and(u8::is_ascii_digit) {
        return Ok(default);
    }
    let mut a: i64 = 0;
    while let Some(&c) = fmt.get(*at).filter(|c| c.is_ascii_digit()) {
        let d = i64::from(c - b'0');
        if a > i64::from(i32::MAX) / 10 || a * 10 > i64::from(i32::MAX) - d {
            return Err(StructError::Error("integral size overflow".into()));
        }
        a = a * 10 + d;
        *at += 1;
    }
    Ok(a)
}

/// `optsize`: the bytes an option takes (0 for the control options).
fn optsize(opt: u8, fmt: &[u8], at: &mut usize) -> Result<u64> {
    Ok(match opt {
        b'B' | b'b' | b'x' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        // `getnum` is an int, made a size_t.
        b'c' => getnum(fmt, at, 1)? as u64,
        b'i' | b'I' => {
            let sz = getnum(fmt, at, 4)?;
            if sz > MAXINTSIZE {
                return Err(StructError::Error(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz as u64
        }
        _ => 0,
    })
}

/// `gettoalign`: padding before an element of `size` at `len`.
fn gettoalign(len: u64, h: &Header, opt: u8, size: u64) -> u64 {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align as u64);
    (size.wrapping_sub(len & size.wrapping_sub(1))) & size.wrapping_sub(1)
}

/// `controloptions`: ' ', '>', '<', '!n', or an invalid option.
fn controloptions(opt: u8, fmt: &[u8], at: &mut usize, h: &mut Header) -> Result<()> {
    match opt {
        b' ' => {}
        b'>' => h.little = false,
        b'<' => h.little = true,
        b'!' => {
            let a = getnum(fmt, at, MAXALIGN)?;
            if !(a > 0 && a & (a - 1) == 0) {
                return Err(StructError::Error(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
        }
        _ => {
            return Err(StructError::Arg(
                1,
                format!("invalid format option '{}'", String::from_utf8_lossy(&[opt])),
            ))
        }
    }
    Ok(())
}

/// `b_pack`: `args` are the call's arguments from the format on.
pub(crate) fn pack(args: &[Arg]) -> Result<Vec<u8>> {
    let fmt = check_string(args, 1, false)?;
    let fmt = &fmt[..fmt.iter().position(|&b| b == 0).unwrap_or(fmt.len())];
    let mut h = Header::default();
    let (mut at, mut argi, mut total, mut out) = (0usize, 2usize, 0u64, Vec::new());
    while at < fmt.len() {
        let opt = fmt[at];
        at += 1;
        let mut size = optsize(opt, fmt, &mut at)?;
        let toalign = gettoalign(total, &h, opt, size);
        total += toalign;
        out.resize(out.len() + toalign as usize, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(args, argi, true)?;
                argi += 1;
                let mut value = if n < 0.0 { c_long(n) as u64 } else { c_ulong(n) };
                let mut buff = vec![0u8; size as usize];
                for k in 0..size as usize {
                    let at = if h.little { k } else { size as usize - 1 - k };
                    buff[at] = (value & 0xff) as u8;
                    value >>= 8;
                }
                out.extend_from_slice(&buff);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(args, argi, true)? as f32;
                argi += 1;
                out.extend_from_slice(&if h.little { f.to_le_bytes() } else { f.to_be_bytes() });
            }
            b'd' => {
                let d = check_number(args, argi, true)?;
                argi += 1;
                out.extend_from_slice(&if h.little { d.to_le_bytes() } else { d.to_be_bytes() });
            }
            b'c' | b's' => {
                let s = check_string(args, argi, true)?;
                argi += 1;
                if size == 0 {
                    size = s.len() as u64;
                }
                // `luaL_argcheck(L, l >= size, arg, …)` after `arg++`.
                if (s.len() as u64) < size {
                    return Err(StructError::Arg(argi, "string too short".into()));
                }
                out.extend_from_slice(&s[..size as usize]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => controloptions(opt, fmt, &mut at, &mut h)?,
        }
        total += size;
    }
    Ok(out)
}

/// `getinteger`: the bytes as the C loop reads them, shifts as x86 does.
fn getinteger(buff: &[u8], little: bool, signed: bool, size: u64) -> f64 {
    let mut l: u64 = 0;
    let bytes: Box<dyn Iterator<Item = &u8>> = if little {
        Box::new(buff.iter().rev())
    } else {
        Box::new(buff.iter())
    };
    for b in bytes {
        l = (l << 8) | u64::from(*b);
    }
    if !signed {
        return l as f64;
    }
    let mask = u64::MAX.wrapping_shl((size * 8).wrapping_sub(1) as u32);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// An integer or float field of `b_unpack`, as a Lua number.
fn number_at(opt: u8, bytes: &[u8], little: bool) -> f64 {
    match opt {
        b'f' => {
            let b: [u8; 4] = bytes.try_into().unwrap_or_default();
            f64::from(if little {
                f32::from_le_bytes(b)
            } else {
                f32::from_be_bytes(b)
            })
        }
        b'd' => {
            let b: [u8; 8] = bytes.try_into().unwrap_or_default();
            if little {
                f64::from_le_bytes(b)
            } else {
                f64::from_be_bytes(b)
            }
        }
        _ => getinteger(bytes, little, opt.is_ascii_lowercase(), bytes.len() as u64),
    }
}

/// `c0`'s length: the previous result, if there is one and it reads as a
/// number (`n == 0 || !lua_isnumber(L, -1)` is an error).
fn previous_size(results: &[Out]) -> Result<f64> {
    match results.last() {
        Some(Out::Num(n)) => Some(*n),
        Some(Out::Str(s)) => str_number(s),
        None => None,
    }
    .ok_or_else(|| StructError::Error("format 'c0' needs a previous size".into()))
}

/// `b_unpack`: results, then the position after the last one.
pub(crate) fn unpack(args: &[Arg]) -> Result<Vec<Out>> {
    let fmt = check_string(args, 1, false)?;
    let fmt = &fmt[..fmt.iter().position(|&b| b == 0).unwrap_or(fmt.len())];
    let data = check_string(args, 2, false)?;
    let ld = data.len() as u64;
    // `luaL_optinteger(L, 3, 1)` as a size_t, at least 1, then 0-based.
    let third = arg(args, 3);
    let start = if !third.present || third.type_name == "nil" {
        1
    } else {
        c_long(check_number(args, 3, false)?)
    };
    if start as u64 == 0 {
        return Err(StructError::Arg(3, "offset must be 1 or greater".into()));
    }
    let mut pos = start as u64 - 1;
    let mut h = Header::default();
    let mut results: Vec<Out> = Vec::new();
    let too_short = || StructError::Arg(2, "data string too short".into());
    let mut at = 0usize;
    while at < fmt.len() {
        let opt = fmt[at];
        at += 1;
        let mut size = optsize(opt, fmt, &mut at)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(too_short());
        }
        // `luaL_checkstack(L, 2, …)`: the arguments, the results, two more.
        if args.len() + results.len() + 2 > MAXCSTACK {
            return Err(StructError::Error("stack overflow (too many results)".into()));
        }
        let field = |pos: u64, size: u64| &data[pos as usize..(pos + size) as usize];
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' | b'f' | b'd' => {
                results.push(Out::Num(number_at(opt, field(pos, size), h.little)));
            }
            b'x' => {}
            b'c' => {
                if size == 0 {
                    size = c_ulong(previous_size(&results)?);
                    results.pop();
                    if !(size <= ld && pos <= ld - size) {
                        return Err(too_short());
                    }
                }
                results.push(Out::Str(field(pos, size).to_vec()));
            }
            b's' => {
                let rest = &data[pos as usize..];
                let Some(len) = rest.iter().position(|&b| b == 0) else {
                    return Err(StructError::Error("unfinished string in data".into()));
                };
                size = len as u64 + 1;
                results.push(Out::Str(rest[..len].to_vec()));
            }
            _ => controloptions(opt, fmt, &mut at, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    results.push(Out::Num(pos.wrapping_add(1) as i64 as f64));
    Ok(results)
}

/// `b_size`: the bytes a format packs to; `s` and `c0` have none fixed.
pub(crate) fn size(args: &[Arg]) -> Result<f64> {
    let fmt = check_string(args, 1, false)?;
    let fmt = &fmt[..fmt.iter().position(|&b| b == 0).unwrap_or(fmt.len())];
    let mut h = Header::default();
    let (mut at, mut pos) = (0usize, 0u64);
    while at < fmt.len() {
        let opt = fmt[at];
        at += 1;
        let size = optsize(opt, fmt, &mut at)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(StructError::Arg(1, "option 's' has no fixed size".into()));
        } else if opt == b'c' && size == 0 {
            return Err(StructError::Arg(1, "option 'c0' has no fixed size".into()));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, fmt, &mut at, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as i64 as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Arg {
        Arg {
            present: true,
            type_name: "string".into(),
            number: text.parse().ok(),
            text: Some(text.as_bytes().to_vec()),
        }
    }

    fn n(v: f64) -> Arg {
        Arg {
            present: true,
            type_name: "number".into(),
            number: Some(v),
            text: Some(v.to_string().into_bytes()),
        }
    }

    #[test]
    fn packs_and_unpacks_as_lua_struct_c_does() {
        assert_eq!(pack(&[s(">i2"), n(258.0)]), Ok(vec![1, 2]));
        assert_eq!(pack(&[s("<i2"), n(-1.0)]), Ok(vec![0xff, 0xff]));
        assert_eq!(pack(&[s("!4bi4"), n(1.0), n(2.0)]), Ok(vec![1, 0, 0, 0, 2, 0, 0, 0]));
        let packed = pack(&[s(">i2c0"), n(3.0), s("abc")]).unwrap();
        assert_eq!(
            unpack(&[
                s(">i2c0"),
                Arg {
                    text: Some(packed),
                    ..s("")
                }
            ]),
            Ok(vec![Out::Str(b"abc".to_vec()), Out::Num(6.0)])
        );
        assert_eq!(size(&[s(">i4h")]), Ok(6.0));
        assert_eq!(size(&[s("z")]), Ok(0.0));
    }

    #[test]
    fn errors_are_redis_servers() {
        assert_eq!(
            pack(&[s("i99999999999")]),
            Err(StructError::Error("integral size overflow".into()))
        );
        assert_eq!(
            pack(&[s("i33")]),
            Err(StructError::Error("integral size 33 is larger than limit of 32".into()))
        );
        assert_eq!(
            pack(&[s("!3i"), n(1.0)]),
            Err(StructError::Error("alignment 3 is not a power of 2".into()))
        );
        assert_eq!(
            pack(&[s("z")]),
            Err(StructError::Arg(1, "invalid format option 'z'".into()))
        );
        assert_eq!(
            pack(&[s("c5"), s("ab")]),
            Err(StructError::Arg(3, "string too short".into()))
        );
        assert_eq!(
            pack(&[s("i")]),
            Err(StructError::Arg(2, "number expected, got nil".into()))
        );
        assert_eq!(
            pack(&[]),
            Err(StructError::Arg(1, "string expected, got no value".into()))
        );
        assert_eq!(
            unpack(&[s("b"), s("ab"), n(0.0)]),
            Err(StructError::Arg(3, "offset must be 1 or greater".into()))
        );
        assert_eq!(
            unpack(&[s("c0"), s("3")]),
            Err(StructError::Error("format 'c0' needs a previous size".into()))
        );
        assert_eq!(
            unpack(&[s("i4"), s("ab")]),
            Err(StructError::Arg(2, "data string too short".into()))
        );
        assert_eq!(
            size(&[s("s")]),
            Err(StructError::Arg(1, "option 's' has no fixed size".into()))
        );
    }
}
