//! The input generators: seeded, so an input is its seed.

use locklab_core::rng::Rng;

/// The generators' draws: core's SplitMix64 ([`Rng`]) started from the
/// seed as its raw state, with a modulo reduction. Both are how the fuzzer
/// drew from the start, so every seed in a report or a regression name
/// still gives its input.
#[derive(Clone, Debug)]
pub struct Draws(Rng);

impl Draws {
    pub fn new(seed: u64) -> Draws {
        Draws(Rng::from_state(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ------------------------------------------------------------------ RESP ---

/// A stream of requests: well-formed frames, inline lines, and frames bent
/// at one place (a wrong length, a huge count, a missing CR, random bytes).
pub fn resp_input(rng: &mut Draws) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..1 + rng.below(6) {
        match rng.below(8) {
            0 => {
                // inline
                let line = cli_line(rng);
                out.extend_from_slice(&line);
                out.extend_from_slice(if rng.one_in(3) { b"\n" } else { b"\r\n" });
            }
            1 => {
                let n = rng.below(64);
                out.extend((0..n).map(|_| rng.next_u64() as u8));
            }
            _ => {
                let args = 1 + rng.below(4);
                let announced = if rng.one_in(10) {
                    *rng.pick(&["-1", "0", "1048577", "2147483648", "x", ""])
                } else {
                    ""
                };
                if announced.is_empty() {
                    out.extend_from_slice(format!("*{args}\r\n").as_bytes());
                } else {
                    out.extend_from_slice(format!("*{announced}\r\n").as_bytes());
                }
                for _ in 0..args {
                    let arg: Vec<u8> = (0..rng.below(12)).map(|_| *rng.pick(b"abcSETGET01 \r\n$*")).collect();
                    let len = if rng.one_in(12) {
                        rng.pick(&["-1", "-5", "536870913", "99999999999999999999", "3x"])
                            .to_string()
                    } else {
                        arg.len().to_string()
                    };
                    out.extend_from_slice(format!("${len}\r\n").as_bytes());
                    out.extend_from_slice(&arg);
                    if !rng.one_in(20) {
                        out.extend_from_slice(b"\r\n");
                    }
                }
            }
        }
    }
    out
}

/// Cut a stream where a network might: the first byte of each chunk says
/// nothing, the chunk sizes come from the bytes themselves.
pub fn split_chunks(input: &[u8]) -> Vec<Vec<u8>> {
    let mut rng = Draws::new(input.len() as u64 ^ input.iter().map(|&b| u64::from(b)).sum::<u64>());
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let n = 1 + rng.below(16.min(input.len() - i).max(1));
        out.push(input[i..i + n].to_vec());
        i += n;
    }
    out
}

// ------------------------------------------------------------------- CLI ---

/// A redis-cli line: words, quotes, escapes, a repeat count.
pub fn cli_line(rng: &mut Draws) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"SET",
        b"get",
        b"k",
        b" ",
        b"  ",
        b"\t",
        b"\"",
        b"'",
        b"\\",
        b"\\x",
        b"\\x4",
        b"\\x41",
        b"\\xZZ",
        b"\\n",
        b"\\t",
        b"\\\"",
        b"\"a b\"",
        b"'it''s'",
        b"\"\"x",
        b"3",
        b"-1",
        b"0",
        b"999999999999999999999",
        b"\xc3\xa9",
        b"\xff",
        b"\x00",
        b"\r",
    ];
    let mut out = Vec::new();
    for _ in 0..rng.below(12) {
        let piece = rng.pick::<&[u8]>(PIECES);
        out.extend_from_slice(piece);
    }
    out
}

// ---------------------------------------------------------------- lesson ---

/// The lesson files, as the fuzzer's seeds.
pub fn lesson_corpus() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lessons");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    if texts.is_empty() {
        vec!["id = \"01\"\n".to_owned()]
    } else {
        texts
    }
}

/// A lesson file cut, spliced and salted with TOML's sharp edges.
pub fn lesson_text(rng: &mut Draws, corpus: &[String]) -> Vec<u8> {
    const SALT: &[&str] = &[
        "[[steps]]\n",
        "\"",
        "'''",
        "= ",
        "1e308",
        "-9223372036854775809",
        "nan",
        "[",
        "]",
        "{",
        "}",
        "\n",
        "at = 18446744073709551616\n",
        "ms = -1\n",
        "expect = \"\"\n",
        "\u{0}",
        "é",
        "id = \"99\"\n",
    ];
    let mut text = rng.pick(corpus).clone().into_bytes();
    for _ in 0..1 + rng.below(4) {
        if text.is_empty() {
            break;
        }
        let at = rng.below(text.len());
        match rng.below(4) {
            0 => {
                let end = (at + rng.below(200)).min(text.len());
                text.drain(at..end);
            }
            1 => {
                let end = (at + rng.below(200)).min(text.len());
                let piece = text[at..end].to_vec();
                let to = rng.below(text.len());
                text.splice(to..to, piece);
            }
            _ => {
                let salt = rng.pick(SALT).as_bytes().to_vec();
                text.splice(at..at, salt);
            }
        }
    }
    text
}

// ---------------------------------------------------------------- engine ---

const KEYS: &[&str] = &["k", "h", "n"];
const VALUES: &[&str] = &[
    "",
    "v",
    "1",
    "-1",
    "0",
    "10",
    "3.5",
    "abc",
    "9223372036854775807",
    "-9223372036854775808",
    "1e3",
    " 1",
    "nan",
    "inf",
    "0x10",
];
const SECONDS: &[&str] = &["100", "0", "-1", "abc", "9223372036854775807", "1.5"];

/// A few commands on a few keys: the command families the differential
/// suite covers, with their options and bad arguments. No command whose
/// reply depends on time passing (TTL) or on hash order (KEYS).
pub fn argv_sequence(rng: &mut Draws) -> Vec<u8> {
    let n = 1 + rng.below(8);
    let seq: Vec<Vec<String>> = (0..n).map(|_| one_command(rng)).collect();
    encode_sequence(&seq)
}

fn one_command(rng: &mut Draws) -> Vec<String> {
    let key = rng.pick(KEYS).to_string();
    let val = rng.pick(VALUES).to_string();
    let mut v: Vec<String> = match rng.below(30) {
        0 => {
            let mut a = vec!["SET".into(), key, val];
            for _ in 0..rng.below(3) {
                match rng.below(7) {
                    0 => a.push("NX".into()),
                    1 => a.push("XX".into()),
                    2 => a.push("GET".into()),
                    3 => a.extend(["EX".into(), rng.pick(SECONDS).to_string()]),
                    4 => a.extend(["PX".into(), rng.pick(SECONDS).to_string()]),
                    5 => a.push("KEEPTTL".into()),
                    _ => a.push(rng.pick(&["EXAT", "bogus", "PXAT"]).to_string()),
                }
            }
            a
        }
        1 => vec!["GET".into(), key],
        2 => vec!["GETDEL".into(), key],
        4 => vec!["SETNX".into(), key, val],
        7 => vec!["DEL".into(), key, rng.pick(KEYS).to_string()],
        8 => vec!["EXISTS".into(), key.clone(), key],
        9 => vec!["INCR".into(), key],
        10 => vec!["DECR".into(), key],
        11 => vec!["INCRBY".into(), key, val],
        12 => vec!["DECRBY".into(), key, val],
        14 => vec!["STRLEN".into(), key],
        15 => vec!["TYPE".into(), key],
        16 => {
            let mut a = vec!["EXPIRE".into(), key, rng.pick(SECONDS).to_string()];
            if rng.one_in(2) {
                a.push(rng.pick(&["NX", "XX", "GT", "LT", "YY"]).to_string());
            }
            a
        }
        17 => vec!["PERSIST".into(), key],
        18 => vec!["HSET".into(), key, rng.pick(&["f", "g"]).to_string(), val],
        19 => vec!["HGET".into(), key, rng.pick(&["f", "g"]).to_string()],
        20 => vec!["HDEL".into(), key, "f".into(), "g".into()],
        21 => vec!["HLEN".into(), key],
        22 => vec!["HGETALL".into(), key],
        23 => vec!["HINCRBY".into(), key, "f".into(), val],
        24 => vec!["HEXISTS".into(), key, "f".into()],
        25 => vec![rng.pick(&["MULTI", "EXEC", "DISCARD"]).to_string()],
        26 => vec![
            "EVAL".into(),
            rng.pick(&[
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
                "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 30000)",
                "return redis.call('incr', KEYS[1])",
                "return {KEYS[1], ARGV[1], 1, false, true}",
                "return redis.pcall('hget', KEYS[1])",
                "return redis.call('nosuch')",
            ])
            .to_string(),
            "1".into(),
            key,
            val,
        ],
        27 => vec!["DBSIZE".into()],
        _ => vec![rng.pick(&["NOSUCH", "GET", "SET", "HSET"]).to_string()],
    };
    if rng.one_in(25) {
        v.push("extra".into());
    }
    v
}

/// Argv sequences as bytes (to keep as regression files): per argv a
/// count, then each argument's length and bytes, all lengths u32 LE.
pub fn encode_sequence(seq: &[Vec<String>]) -> Vec<u8> {
    let mut out = Vec::new();
    for argv in seq {
        out.extend_from_slice(&(argv.len() as u32).to_le_bytes());
        for a in argv {
            out.extend_from_slice(&(a.len() as u32).to_le_bytes());
            out.extend_from_slice(a.as_bytes());
        }
    }
    out
}

pub fn decode_sequence(mut bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    fn take_u32(b: &mut &[u8]) -> Option<usize> {
        let (head, rest) = b.split_first_chunk::<4>()?;
        *b = rest;
        Some(u32::from_le_bytes(*head) as usize)
    }
    let mut out = Vec::new();
    while let Some(n) = take_u32(&mut bytes) {
        let mut argv = Vec::new();
        for _ in 0..n.min(64) {
            let Some(len) = take_u32(&mut bytes) else {
                return out;
            };
            let len = len.min(bytes.len());
            argv.push(bytes[..len].to_vec());
            bytes = &bytes[len..];
        }
        if !argv.is_empty() {
            out.push(argv);
        }
    }
    out
}

pub fn show_argv(argv: &[Vec<u8>]) -> String {
    argv.iter()
        .map(|a| format!("{:?}", String::from_utf8_lossy(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

// ------------------------------------------------------------------- Lua ---

/// A Lua program from a small grammar: locals, assignments, branches,
/// bounded and (rarely) unbounded loops, functions, pcall, tables, and the
/// builtins a script reaches for (string patterns above all).
pub fn lua_program(rng: &mut Draws) -> Vec<u8> {
    let mut g = Lua {
        rng: rng.clone(),
        depth: 0,
        vars: 0,
        out: String::new(),
    };
    let n = 1 + g.rng.below(6);
    for _ in 0..n {
        g.stmt();
    }
    if g.rng.one_in(2) {
        let e = g.expr();
        g.out.push_str(&format!("return {e}\n"));
    }
    *rng = g.rng;
    g.out.into_bytes()
}

struct Lua {
    rng: Draws,
    depth: usize,
    vars: usize,
    out: String,
}

impl Lua {
    fn var(&mut self) -> String {
        if self.vars == 0 || self.rng.one_in(4) {
            return self
                .rng
                .pick(&["KEYS[1]", "ARGV[1]", "x", "redis", "string", "t"])
                .to_string();
        }
        format!("v{}", self.rng.below(self.vars))
    }

    fn block(&mut self) -> String {
        let saved = std::mem::take(&mut self.out);
        self.depth += 1;
        for _ in 0..1 + self.rng.below(3) {
            self.stmt();
        }
        self.depth -= 1;
        std::mem::replace(&mut self.out, saved)
    }

    fn stmt(&mut self) {
        if self.depth > 3 {
            let e = self.expr();
            self.out.push_str(&format!("local _ = {e}\n"));
            return;
        }
        let s = match self.rng.below(11) {
            0 | 1 => {
                let e = self.expr();
                self.vars += 1;
                format!("local v{} = {e}\n", self.vars - 1)
            }
            2 => {
                let (c, a, b) = (self.expr(), self.block(), self.block());
                format!("if {c} then\n{a}else\n{b}end\n")
            }
            3 => {
                let hi = *self.rng.pick(&["3", "10", "100", "#tostring(x)", "1e9"]);
                let b = self.block();
                format!("for i = 1, {hi} do\n{b}end\n")
            }
            4 => {
                let b = self.block();
                if self.rng.one_in(50) {
                    format!("while true do\n{b}end\n")
                } else {
                    format!("local c = 0\nwhile c < 5 do\nc = c + 1\n{b}end\n")
                }
            }
            5 => {
                let b = self.block();
                format!("local ok, e = pcall(function()\n{b}end)\n")
            }
            6 => {
                let (a, b) = (self.expr(), self.expr());
                format!("redis.pcall('set', {a}, {b})\n")
            }
            7 => {
                let e = self.expr();
                format!("t = {{{e}}}\n")
            }
            8 => {
                let b = self.block();
                format!("local function f(a, b)\n{b}return a\nend\nlocal _ = f(1, 2)\n")
            }
            9 => {
                let e = self.expr();
                format!("x = {e}\n")
            }
            _ => {
                let e = self.expr();
                format!("local _ = {e}\n")
            }
        };
        self.out.push_str(&s);
    }

    fn pattern(&mut self) -> String {
        const ITEMS: &[&str] = &[
            "a", ".", "%a", "%d", "%s", "%w", "[abc]", "[^x]", "[%a_]", "(", ")", "()", "%b()", "%f[%w]", "%1", "^",
            "$", "*", "+", "-", "?", "%", "[", "]", "x",
        ];
        let mut p = String::new();
        for _ in 0..self.rng.below(10) {
            let item = self.rng.pick::<&str>(ITEMS);
            p.push_str(item);
        }
        if self.rng.one_in(30) {
            let n = *self.rng.pick(&[100usize, 1999, 2001, 20000]);
            return format!("string.rep('a?', {n})");
        }
        format!("{p:?}")
    }

    // long: one arm per Lua expression form the generator writes
    fn expr(&mut self) -> String {
        if self.depth > 4 {
            return self.atom();
        }
        self.depth += 1;
        let e = match self.rng.below(14) {
            0..=3 => self.atom(),
            4 => {
                let (a, b) = (self.expr(), self.expr());
                let op = *self
                    .rng
                    .pick(&["+", "-", "*", "/", "%", "^", "..", "==", "<", "<=", "and", "or"]);
                format!("({a} {op} {b})")
            }
            5 => {
                let a = self.expr();
                format!("{}{a}", self.rng.pick(&["-", "not ", "#"]))
            }
            6 => {
                let (s, p) = (self.expr(), self.pattern());
                let f = *self.rng.pick(&["find", "match", "gsub", "gmatch"]);
                match f {
                    "gsub" => format!("string.gsub(tostring({s}), {p}, {})", self.rng.pick(&["'x'", "'%0%0'", "'%1'", "{}", "string.upper"])),
                    "gmatch" => format!("(function() local n = 0 for m in string.gmatch(tostring({s}), {p}) do n = n + 1 if n > 50 then break end end return n end)()"),
                    _ => format!("string.{f}(tostring({s}), {p}{})", self.rng.pick(&["", ", 2", ", -1", ", 1, true", ", 100"])),
                }
            }
            7 => {
                let a = self.expr();
                let n = *self.rng.pick(&["3", "0", "-1", "1000", "1e6", "1e9"]);
                format!("string.rep(tostring({a}), {n})")
            }
            8 => {
                let a = self.expr();
                let f = *self.rng.pick(&[
                    "tostring",
                    "tonumber",
                    "type",
                    "string.upper",
                    "string.reverse",
                    "string.len",
                    "string.byte",
                    "math.floor",
                    "redis.sha1hex",
                    "bit.band",
                    "unpack",
                    "select",
                    "string.format",
                    "error",
                ]);
                format!("{f}({a})")
            }
            9 => {
                let (a, b) = (self.expr(), self.expr());
                format!("{{{a}, {b}, k = {a}}}")
            }
            10 => {
                let a = self.expr();
                let cmd = *self.rng.pick(&["get", "incr", "del", "hget", "nosuch", "set"]);
                format!("redis.pcall('{cmd}', {a})")
            }
            11 => {
                let a = self.expr();
                format!(
                    "table.concat({{tostring({a}), 'x'}}, {})",
                    self.rng.pick(&["','", "''", "1"])
                )
            }
            12 => {
                let a = self.expr();
                format!("(function() local t = {{5, 3, {a} and 1 or 2}} table.sort(t) return t[1] end)()")
            }
            _ => {
                let a = self.expr();
                format!(
                    "string.format({}, {a})",
                    self.rng.pick(&["'%d'", "'%s'", "'%5.2f'", "'%q'", "'%x'", "'%'"])
                )
            }
        };
        self.depth -= 1;
        e
    }

    fn atom(&mut self) -> String {
        match self.rng.below(8) {
            0 => self.var(),
            1 => self
                .rng
                .pick(&["0", "1", "-1", "3.5", "1e308", "0/0", "2^53"])
                .to_string(),
            2 => self
                .rng
                .pick(&["'a'", "''", "'aaa'", "'(x)'", "'%'", "'\\0'"])
                .to_string(),
            3 => self.rng.pick(&["nil", "true", "false"]).to_string(),
            4 => "{}".into(),
            5 => "KEYS[1]".into(),
            6 => "ARGV[1]".into(),
            _ => "redis.call('get', KEYS[1])".into(),
        }
    }
}

#[cfg(test)]
mod draws_tests {
    use super::Draws;

    /// The stream the fuzzer drew before it took core's generator
    /// (SplitMix64 from the raw seed), so a kept seed names the same input.
    #[test]
    fn a_seed_gives_the_stream_it_always_gave() {
        let mut d = Draws::new(12345);
        let drawn: Vec<u64> = (0..3).map(|_| d.next_u64()).collect();
        assert_eq!(
            drawn,
            [0x2211_8258_a9d1_11a0, 0x346e_dce5_f713_f8ed, 0x1e9a_57bc_80e6_721d]
        );
        assert_eq!(Draws::new(7).below(10), (Draws::new(7).next_u64() % 10) as usize);
    }
}
