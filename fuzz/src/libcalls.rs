//! Calls of Lua 5.1's library with edge arguments (issue 43): one call of a
//! `string`, `table`, `math` or base function per script, whose results (or
//! whose error, raised or caught) are rendered as text, so that the
//! simulator's reply can be compared with redis-server's byte for byte,
//! error texts and their `user_script:1:` position included.
//!
//! The script is one line: `luaL_where` names line 1 in both. Results are
//! shown as `type:tostring(v)` (a number through `%.14g`, as `lua_Number`
//! prints), a table by its first elements, and a function or table element
//! by its type alone (an address would differ).
//!
//! Left out because redis-server 7.0.15 itself crashes or hangs on them (the
//! README lists them): `string.rep` of a long result (it allocates before
//! any limit), `error` with a table lacking `err` (its error handler reads a
//! NULL), `unpack` up to `INT_MAX` and `table.insert` at a far position
//! (5.1's loops run two billion times). Left out because they differ by
//! design or outside the library: `string.dump` (bytecode), `tostring` of a
//! table or function (an address), tables with holes (their border `#t`
//! depends on how the table is laid out), `-0` written in a chunk (5.1's
//! constant table keeps 0 and -0 in one slot, so `1/0` in the same chunk is
//! `-inf` on redis-server; the simulator's compiler keeps both), and error
//! texts that are not UTF-8 (the client reading redis-server's replies
//! refuses them).

use crate::gen::Draws;

/// Numbers at C's edges: the `int` and `long` casts 5.1's library makes
/// (`luaL_checkint`, `(LUA_INTFRM_T)`), NaN and the infinities.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "-3",
    "0.5",
    "-2.5",
    "7.9",
    "2^31",
    "-2^31",
    "2^32+2",
    "2^53",
    "2^63",
    "-2^63",
    "0/0",
    "1/0",
    "-1/0",
    "1e308",
    "255",
    "256",
    "1e15",
    "123456789012",
    "100",
    "99",
];

/// Strings as numbers (`luaO_str2d`: strtod, then a hex retry, blanks
/// after), as subjects and as separators.
const STRINGS: &[&str] = &[
    "''",
    "'abc'",
    "'a\\0b'",
    "'10'",
    "' 0x10 '",
    "'1e2'",
    "'nan'",
    "'inf'",
    "'-0x1p4'",
    "'z'",
    "'(x)[y]%'",
    "'hello world'",
    "string.rep('ab', 60)",
    "'\\255\\128'",
    "'\\n\\r\\\"\\\\\\026'",
    "'aaa'",
    "' 5 '",
    "'5x'",
];

/// Values of the other types.
const OTHERS: &[&str] = &[
    "nil",
    "true",
    "false",
    "{}",
    "{1, 2, 3}",
    "{'b', 'a', 'c'}",
    "function() end",
    "string",
];

/// Tables for the `table` functions (`t` in the script, shown after the
/// call).
const TABLES: &[&str] = &[
    "{}",
    "{1, 2, 3}",
    "{'b', 'a', 'c'}",
    "{3, 1, 2, 5, 4}",
    "{1, 'x', 2}",
    "{1, {}, 3}",
    "{n = 3}",
    "{1.5, -0.5, 0/0}",
    "{'', 'a\\0b', 10}",
];

/// Pattern pieces, edge syntax included: `%f`, `%b`, unfinished captures,
/// an open `[`, a trailing `%`, position captures, back references.
const PATTERN_ITEMS: &[&str] = &[
    "a", ".", "%a", "%d", "%s", "%w", "%x", "%p", "%z", "%A", "[abc]", "[^x]", "[%a_]", "[a-c]", "[]]", "[^]", "(",
    ")", "()", "%b()", "%bxy", "%b", "%f[%w]", "%f", "%f[", "%1", "%2", "%0", "^", "$", "*", "+", "-", "?", "%", "[",
    "]", "x", "%%", "%.", "[%", "o", "l",
];

/// Replacement strings of `gsub`: `%0`..`%9`, a trailing `%`, `%%`, `%x`.
const REPLACEMENTS: &[&str] = &[
    "'x'",
    "'%0%0'",
    "'%1'",
    "'%2'",
    "'%9'",
    "'%'",
    "'a%'",
    "'%%'",
    "'%x'",
    "'<%1|%0>'",
    "''",
    "{}",
    "{a = 'A', l = false}",
    "string.upper",
    "function(c) return nil end",
    "function(c) return {} end",
    "function(c) return 1.5 end",
    "1",
];

/// What an argument should be.
#[derive(Clone, Copy)]
enum Kind {
    Num,
    Str,
    Any,
    Pattern,
    Format,
    Repl,
    Table,
    Count,
    Sorter,
    Base,
    /// A position `table.insert` moves elements up to: a far one (an `int`
    /// cast to a large negative) makes 5.1 loop two billion times.
    Pos,
    /// A `struct` format: its options with sizes, alignments and endianness,
    /// invalid ones and sizes past its limits.
    StructFmt,
    /// Data for `struct.unpack`: a packed string of a few formats, or text.
    StructData,
}

use Kind::*;

/// Every function, with the arguments it takes (one more or fewer is
/// generated too).
const FUNCTIONS: &[(&str, &[Kind])] = &[
    ("string.byte", &[Str, Num, Num]),
    ("string.char", &[Num, Num, Num]),
    ("string.find", &[Str, Pattern, Num, Any]),
    ("string.match", &[Str, Pattern, Num]),
    ("string.gmatch", &[Str, Pattern]),
    ("string.gsub", &[Str, Pattern, Repl, Num]),
    ("string.format", &[Format, Any, Any]),
    ("string.len", &[Str]),
    ("string.lower", &[Str]),
    ("string.upper", &[Str]),
    ("string.reverse", &[Str]),
    ("string.rep", &[Str, Count]),
    ("string.sub", &[Str, Num, Num]),
    ("table.concat", &[Table, Str, Num, Num]),
    ("table.insert", &[Table, Pos, Any]),
    ("table.maxn", &[Table]),
    ("table.remove", &[Table, Num]),
    ("table.sort", &[Table, Sorter]),
    ("table.getn", &[Table]),
    ("table.setn", &[Table, Num]),
    ("table.foreach", &[Table, Sorter]),
    ("table.foreachi", &[Table, Sorter]),
    ("math.abs", &[Num]),
    ("math.acos", &[Num]),
    ("math.asin", &[Num]),
    ("math.atan", &[Num]),
    ("math.atan2", &[Num, Num]),
    ("math.ceil", &[Num]),
    ("math.cos", &[Num]),
    ("math.cosh", &[Num]),
    ("math.deg", &[Num]),
    ("math.exp", &[Num]),
    ("math.floor", &[Num]),
    ("math.fmod", &[Num, Num]),
    ("math.frexp", &[Num]),
    ("math.ldexp", &[Num, Num]),
    ("math.log", &[Num]),
    ("math.log10", &[Num]),
    ("math.max", &[Num, Num, Num]),
    ("math.min", &[Num, Num, Num]),
    ("math.mod", &[Num, Num]),
    ("math.modf", &[Num]),
    ("math.pow", &[Num, Num]),
    ("math.rad", &[Num]),
    ("math.random", &[Num, Num]),
    ("math.randomseed", &[Num]),
    ("math.sin", &[Num]),
    ("math.sinh", &[Num]),
    ("math.sqrt", &[Num]),
    ("math.tan", &[Num]),
    ("math.tanh", &[Num]),
    ("unpack", &[Table, Num, Num]),
    ("tostring", &[Any]),
    ("tonumber", &[Any, Base]),
    ("select", &[Num, Any, Any, Any]),
    ("pcall", &[Any, Any]),
    ("error", &[Any, Num]),
    ("type", &[Any]),
    ("assert", &[Any, Any]),
    ("struct.pack", &[StructFmt, Num, Num, Str, Num]),
    ("struct.unpack", &[StructFmt, StructData, Num]),
    ("struct.size", &[StructFmt]),
];

/// Pieces of a `struct` format (lua_struct.c): every option, sizes after
/// `i`/`I`/`c`/`!`, and what it refuses (`z`, `i33`, `!3`).
const STRUCT_ITEMS: &[&str] = &[
    ">", "<", "!", "!4", "!3", " ", "x", "b", "B", "h", "H", "l", "L", "T", "i", "I", "i3", "I5", "i8", "i16", "i0",
    "i33", "f", "d", "c", "c0", "c3", "s", "z",
];

/// The helpers every script starts with: `s` shows one value, `show` all
/// of a call's results and then `t`, the table the call may have changed.
const PRELUDE: &str = "local function e(v) local k = type(v) if k == 'table' or k == 'function' then return k end \
return tostring(v) end \
local function s(v) local k = type(v) if k == 'table' then local o = {} for i = 1, 6 do o[i] = e(rawget(v, i)) end \
return 'table:' .. table.concat(o, ',') elseif k == 'function' then return k end return k .. ':' .. tostring(v) end \
local function show(...) local o = {} for i = 1, select('#', ...) do o[i] = s((select(i, ...))) end \
o[#o + 1] = 't=' .. s(t) return o end ";

/// One script: a library call, raised or caught, its results shown.
pub fn library_call(rng: &mut Draws) -> Vec<u8> {
    let (name, kinds) = *rng.pick(FUNCTIONS);
    let mut n = kinds.len();
    match rng.below(6) {
        0 => n = n.saturating_sub(1),
        1 => n += 1,
        2 => n = rng.below(n + 1),
        _ => {}
    }
    let args: Vec<String> = (0..n)
        .map(|i| arg(rng, kinds.get(i).copied().unwrap_or(Any), name))
        .collect();
    let args = args.join(", ");
    let callee = match name {
        // An iterator: its matches, twenty at most.
        "string.gmatch" => {
            "(function(...) local o = {} for a, b in string.gmatch(...) do o[#o + 1] = e(a) .. '/' .. e(b) \
             if #o > 20 then break end end return table.concat(o, ' ') end)"
        }
        _ => name,
    };
    let table = rng.pick(TABLES);
    let body = match rng.below(3) {
        0 => format!("return show({callee}({args}))"),
        1 => format!("return show(pcall(function() return {callee}({args}) end))"),
        _ => format!(
            "return show(pcall({callee}{}{args}))",
            if args.is_empty() { "" } else { ", " }
        ),
    };
    format!("local t = {table} {PRELUDE}{body}").into_bytes()
}

fn arg(rng: &mut Draws, kind: Kind, name: &str) -> String {
    // One argument in five is of any kind.
    let kind = match kind {
        Pos | Table | Count | StructFmt => kind,
        _ if rng.one_in(5) => Any,
        _ => kind,
    };
    match kind {
        Num => rng.pick(NUMBERS).to_string(),
        Str => rng.pick(STRINGS).to_string(),
        Any => match rng.below(3) {
            0 => rng.pick(NUMBERS).to_string(),
            // An error text that is not UTF-8 cannot be read back from
            // redis-server (its client parses error lines as text).
            1 if matches!(name, "error" | "assert") => "'a\\0b'".to_owned(),
            1 => rng.pick(STRINGS).to_string(),
            // `error` with a table: redis-server 7.0 reads its `err` field
            // and crashes when it is missing.
            _ if name == "error" => "nil".to_owned(),
            // `tostring` of a table or function shows its address.
            _ if name == "tostring" => rng.pick(&["nil", "true", "false"]).to_string(),
            _ => rng.pick(OTHERS).to_string(),
        },
        Pattern => pattern(rng),
        Format => format_string(rng),
        Repl => rng.pick(REPLACEMENTS).to_string(),
        Table => {
            if name == "unpack" || name.starts_with("table.") {
                "t".to_owned()
            } else {
                rng.pick(TABLES).to_string()
            }
        }
        // Short results only: redis-server builds `string.rep`'s whole
        // result before any limit (2^31 counts are C's negative ints).
        Count => rng
            .pick(&[
                "0", "-1", "1", "3", "1000", "2^31", "2^32+2", "2^53", "2^63", "-2^63", "0/0", "1/0", "2.7",
            ])
            .to_string(),
        Sorter => rng
            .pick(&[
                "nil",
                "function(a, b) return a > b end",
                "function(a, b) return true end",
                "function(a, b) return false end",
                "function(k, v) if v == 2 then return v end end",
                "'x'",
            ])
            .to_string(),
        Pos => rng
            .pick(&[
                "0", "-1", "1", "2", "3", "5", "10", "2^53", "2^32+2", "0/0", "0.5", "'2'", "'x'", "nil",
            ])
            .to_string(),
        Base => rng
            .pick(&["10", "16", "2", "36", "1", "37", "0", "8.9", "nil"])
            .to_string(),
        StructFmt => {
            let mut f = String::new();
            for _ in 0..rng.below(6) {
                f.push_str(rng.pick::<&str>(STRUCT_ITEMS));
            }
            format!("{f:?}")
        }
        StructData => rng
            .pick(&[
                "struct.pack('>i2c0', 3, 'abc')",
                "struct.pack('<d!8bi8', 1.5, -3, 2^40)",
                "struct.pack('sHf', 'hi', 65535, 0.1)",
                "'3abcd'",
                "'\\2abcd\\0x'",
                "''",
                "string.rep('\\255', 40)",
            ])
            .to_string(),
    }
}

/// A pattern of up to eight pieces, as a Lua string.
fn pattern(rng: &mut Draws) -> String {
    let mut p = String::new();
    for _ in 0..rng.below(9) {
        p.push_str(rng.pick::<&str>(PATTERN_ITEMS));
    }
    if rng.one_in(10) {
        p.push_str(&"()".repeat(*rng.pick(&[31usize, 32, 33])));
    }
    format!("{p:?}")
}

/// A format string: items with flags, widths and precisions at 5.1's limits
/// (two digits each, five flags), edge and invalid conversions, text
/// between.
fn format_string(rng: &mut Draws) -> String {
    let mut f = String::new();
    for _ in 0..1 + rng.below(3) {
        if rng.one_in(3) {
            f.push_str(rng.pick::<&str>(&["x", " ", "%%", "\\0"]));
        }
        f.push('%');
        for _ in 0..rng.below(3) {
            f.push_str(rng.pick::<&str>(&["-", "+", " ", "#", "0", "------"]));
        }
        if rng.one_in(2) {
            f.push_str(rng.pick::<&str>(&["1", "5", "10", "99", "100", "5000", "99999"]));
        }
        if rng.one_in(3) {
            f.push('.');
            f.push_str(rng.pick::<&str>(&["", "0", "2", "20", "99", "100"]));
        }
        if !rng.one_in(20) {
            f.push(*rng.pick(&[
                'd', 'i', 'o', 'x', 'X', 'c', 'e', 'E', 'f', 'g', 'G', 'q', 's', 'u', 'y', 'a', '%',
            ]));
        }
    }
    format!("'{f}'")
}

/// A script as a finding shows it: its helpers left out.
pub fn shown(script: &[u8]) -> String {
    String::from_utf8_lossy(script).replace(PRELUDE, "… ")
}
