//! Redlock's acquisition decision as data: a small condition a person
//! types, which the [`super::redlock`] client evaluates instead of its
//! built-in rule (the "write the validity check" exercise, issue 38).
//!
//! The built-in rule is redis.io's: the lock is held if at least `n/2 + 1`
//! masters said OK and `ttl − elapsed − drift` is still positive, with
//! `drift = ttl × 1 % + 2 ms`. A candidate writes that rule — or forgets
//! the elapsed time — as an expression over the round's figures:
//!
//! * `oks` — masters that answered OK; `n` — masters asked;
//! * `ttl` — the lock's TTL (ms); `elapsed` — ms on the client's own clock
//!   from sending the first `SET` to the last answer; `drift` — the clock
//!   drift allowance the client adds (`ttl / 100 + 2`).
//!
//! Integers with `+ - * / %` and parentheses, comparisons `< <= > >= ==
//! !=`, and `and`/`&&`, `or`/`||`, `not`/`!`. The whole must be a
//! comparison (true or false), never a bare number. Text is bounded
//! ([`MAX_CONDITION`]) and so is nesting, so hostile input is a clear error.

use std::fmt;

/// The longest condition accepted: the redis.io rule is under 60 bytes.
pub const MAX_CONDITION: usize = 512;
/// How deeply parentheses and operators may nest.
const MAX_DEPTH: u32 = 32;
/// The names a condition may use, in the order the error message lists them.
pub const NAMES: [&str; 5] = ["oks", "n", "ttl", "elapsed", "drift"];

/// One acquisition round's figures, as the condition sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    pub oks: i64,
    pub n: i64,
    pub ttl: i64,
    pub elapsed: i64,
    pub drift: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Num(i64),
    Var(usize),
    Neg(Box<Node>),
    Not(Box<Node>),
    Bin(Op, Box<Node>, Box<Node>),
}

/// A parsed condition: true when the lock counts as acquired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    root: Node,
}

/// Why a condition does not parse, as the candidate reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionError(pub String);

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Num(i64),
    Word(String),
    Sym(&'static str),
}

fn lex(text: &str) -> Result<Vec<Tok>, ConditionError> {
    const SYMS: [&str; 17] = [
        "<=", ">=", "==", "!=", "&&", "||", "<", ">", "=", "!", "+", "-", "*", "/", "%", "(", ")",
    ];
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
        } else if c.is_ascii_digit() {
            let end = rest.find(|ch: char| !ch.is_ascii_digit()).unwrap_or(rest.len());
            let n = rest[..end]
                .parse()
                .map_err(|_| ConditionError(format!("the number {} is too large", &rest[..end])))?;
            out.push(Tok::Num(n));
            rest = &rest[end..];
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            out.push(Tok::Word(rest[..end].to_ascii_lowercase()));
            rest = &rest[end..];
        } else if let Some(s) = SYMS.iter().find(|s| rest.starts_with(**s)) {
            if *s == "=" {
                return Err(ConditionError(
                    "write == to compare (a single = is not a comparison)".into(),
                ));
            }
            out.push(Tok::Sym(s));
            rest = &rest[s.len()..];
        } else {
            return Err(ConditionError(format!("{c:?} is not part of a condition")));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
    depth: u32,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn eat(&mut self, words: &[&str]) -> Option<String> {
        let hit = match self.peek()? {
            Tok::Sym(s) if words.contains(s) => s.to_string(),
            Tok::Word(w) if words.contains(&w.as_str()) => w.clone(),
            _ => return None,
        };
        self.at += 1;
        Some(hit)
    }

    fn deeper(&mut self) -> Result<(), ConditionError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ConditionError(format!(
                "the condition nests more than {MAX_DEPTH} deep"
            )));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Node, ConditionError> {
        self.deeper()?;
        let mut left = self.and()?;
        while self.eat(&["or", "||"]).is_some() {
            let right = self.and()?;
            left = Node::Bin(Op::Or, Box::new(left), Box::new(right));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn and(&mut self) -> Result<Node, ConditionError> {
        let mut left = self.not()?;
        while self.eat(&["and", "&&"]).is_some() {
            let right = self.not()?;
            left = Node::Bin(Op::And, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Node, ConditionError> {
        if self.eat(&["not", "!"]).is_some() {
            self.deeper()?;
            let inner = self.not()?;
            self.depth -= 1;
            return Ok(Node::Not(Box::new(inner)));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Node, ConditionError> {
        let left = self.sum()?;
        let op = match self.eat(&["<=", ">=", "==", "!=", "<", ">"]).as_deref() {
            Some("<=") => Op::Le,
            Some(">=") => Op::Ge,
            Some("==") => Op::Eq,
            Some("!=") => Op::Ne,
            Some("<") => Op::Lt,
            Some(">") => Op::Gt,
            _ => return Ok(left),
        };
        let right = self.sum()?;
        Ok(Node::Bin(op, Box::new(left), Box::new(right)))
    }

    fn sum(&mut self) -> Result<Node, ConditionError> {
        let mut left = self.product()?;
        while let Some(s) = self.eat(&["+", "-"]) {
            let right = self.product()?;
            let op = if s == "+" { Op::Add } else { Op::Sub };
            left = Node::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Node, ConditionError> {
        let mut left = self.unary()?;
        while let Some(s) = self.eat(&["*", "/", "%"]) {
            let right = self.unary()?;
            let op = match s.as_str() {
                "*" => Op::Mul,
                "/" => Op::Div,
                _ => Op::Rem,
            };
            left = Node::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, ConditionError> {
        if self.eat(&["-"]).is_some() {
            self.deeper()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Neg(Box::new(inner)));
        }
        match self.toks.get(self.at).cloned() {
            Some(Tok::Num(n)) => {
                self.at += 1;
                Ok(Node::Num(n))
            }
            Some(Tok::Word(w)) => match NAMES.iter().position(|n| *n == w) {
                Some(i) => {
                    self.at += 1;
                    Ok(Node::Var(i))
                }
                None => Err(ConditionError(format!(
                    "unknown name {w:?}: a condition may use {}",
                    NAMES.join(", ")
                ))),
            },
            Some(Tok::Sym("(")) => {
                self.at += 1;
                let inner = self.or()?;
                if self.eat(&[")"]).is_none() {
                    return Err(ConditionError("a ( is never closed".into()));
                }
                Ok(inner)
            }
            Some(t) => Err(ConditionError(format!("unexpected {}", show(&t)))),
            None => Err(ConditionError("the condition ends too early".into())),
        }
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Num(n) => n.to_string(),
        Tok::Word(w) => w.clone(),
        Tok::Sym(s) => (*s).to_owned(),
    }
}

/// Is `node` true or false (a comparison or a logical operator) rather
/// than a number?
fn is_bool(node: &Node) -> bool {
    match node {
        Node::Not(_) => true,
        Node::Bin(op, ..) => !matches!(op, Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Rem),
        _ => false,
    }
}

/// Numbers where numbers go, truth values where those go.
fn check(node: &Node, want_bool: bool) -> Result<(), ConditionError> {
    if is_bool(node) != want_bool {
        return Err(ConditionError(if want_bool {
            "a number where true or false is needed: compare it (for example oks >= n / 2 + 1)".into()
        } else {
            "a comparison used as a number: put it in its own and / or".into()
        }));
    }
    match node {
        Node::Num(_) | Node::Var(_) => Ok(()),
        Node::Neg(x) => check(x, false),
        Node::Not(x) => check(x, true),
        Node::Bin(Op::And | Op::Or, a, b) => check(a, true).and(check(b, true)),
        Node::Bin(_, a, b) => check(a, false).and(check(b, false)),
    }
}

impl Condition {
    /// Read a condition; a clear sentence when it is not one.
    pub fn parse(text: &str) -> Result<Condition, ConditionError> {
        if text.len() > MAX_CONDITION {
            return Err(ConditionError(format!(
                "the condition is {} bytes; at most {MAX_CONDITION}",
                text.len()
            )));
        }
        let toks = lex(text)?;
        if toks.is_empty() {
            return Err(ConditionError(
                "the condition is empty: write when the lock counts as acquired".into(),
            ));
        }
        let mut p = Parser { toks, at: 0, depth: 0 };
        let root = p.or()?;
        if let Some(t) = p.peek() {
            return Err(ConditionError(format!("unexpected {} after the condition", show(t))));
        }
        check(&root, true)?;
        Ok(Condition { root })
    }

    /// Does the round count as acquired? Arithmetic saturates; a division
    /// by zero is an error (the client then counts the round as failed).
    pub fn holds(&self, r: &Round) -> Result<bool, ConditionError> {
        Ok(eval(&self.root, r)? != 0)
    }
}

fn eval(node: &Node, r: &Round) -> Result<i64, ConditionError> {
    Ok(match node {
        Node::Num(n) => *n,
        Node::Var(i) => [r.oks, r.n, r.ttl, r.elapsed, r.drift][*i],
        Node::Neg(x) => eval(x, r)?.saturating_neg(),
        Node::Not(x) => i64::from(eval(x, r)? == 0),
        Node::Bin(op, a, b) => {
            let (x, y) = (eval(a, r)?, eval(b, r)?);
            match op {
                Op::Add => x.saturating_add(y),
                Op::Sub => x.saturating_sub(y),
                Op::Mul => x.saturating_mul(y),
                Op::Div | Op::Rem if y == 0 => return Err(ConditionError("division by zero".into())),
                Op::Div => x.saturating_div(y),
                Op::Rem => x.checked_rem(y).unwrap_or(0),
                Op::Lt => i64::from(x < y),
                Op::Le => i64::from(x <= y),
                Op::Gt => i64::from(x > y),
                Op::Ge => i64::from(x >= y),
                Op::Eq => i64::from(x == y),
                Op::Ne => i64::from(x != y),
                Op::And => i64::from(x != 0 && y != 0),
                Op::Or => i64::from(x != 0 || y != 0),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(oks: i64, elapsed: i64) -> Round {
        Round {
            oks,
            n: 5,
            ttl: 1_000,
            elapsed,
            drift: 12,
        }
    }

    #[test]
    fn the_redis_io_rule_reads_and_decides() {
        for text in [
            "oks >= n / 2 + 1 and ttl - elapsed - drift > 0",
            "oks >= n/2+1 && (ttl - elapsed - (ttl / 100 + 2)) > 0",
            "!(oks < 3 || elapsed + drift >= ttl)",
        ] {
            let c = Condition::parse(text).expect(text);
            assert!(c.holds(&round(3, 40)).unwrap(), "{text}");
            assert!(!c.holds(&round(2, 40)).unwrap(), "{text}: no majority");
            assert!(!c.holds(&round(5, 1_200)).unwrap(), "{text}: the lease is gone");
        }
        let forgetful = Condition::parse("oks >= n / 2 + 1").unwrap();
        assert!(
            forgetful.holds(&round(5, 1_200)).unwrap(),
            "no elapsed check: it takes a dead lease"
        );
    }

    #[test]
    fn what_is_not_a_condition_gets_a_sentence() {
        for (text, says) in [
            ("", "empty"),
            ("oks", "a number where true or false"),
            ("oks = 3", "write =="),
            ("validity > 0", "unknown name \"validity\""),
            ("(oks > 2", "never closed"),
            ("oks > 2 oks", "unexpected oks"),
            ("oks > 2 ; DEL", "';' is not part"),
            ("(oks > 1) + 2 > 1", "a comparison used as a number"),
            ("99999999999999999999 > 1", "too large"),
        ] {
            let e = Condition::parse(text).expect_err(text);
            assert!(e.0.contains(says), "{text:?}: {e}");
        }
        let deep = format!("{}oks > 1{}", "(".repeat(100), ")".repeat(100));
        assert!(Condition::parse(&deep).unwrap_err().0.contains("nests"));
        let negs = format!("{}1 > 0", "-".repeat(100));
        assert!(Condition::parse(&negs).unwrap_err().0.contains("nests"));
        assert!(Condition::parse(&"oks > 1 and ".repeat(100))
            .unwrap_err()
            .0
            .contains("at most"));
        let zero = Condition::parse("oks / (n - 5) > 0").unwrap();
        assert!(zero.holds(&round(5, 0)).is_err());
    }
}
