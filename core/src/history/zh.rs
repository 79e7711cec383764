//! The checker's sentences in Chinese.
//!
//! The history checker words its own findings in both languages where it
//! makes them ([`super::judge`]). A stale write and a wrong release are the
//! simulator's [`Monitor`](crate::invariants::Monitor) sentences, and a
//! replayed MONITOR capture's violations are too; those are made in
//! English only, so this module reads each of the Monitor's sentence
//! shapes back into its parts (names, keys, tokens, times) and says it in
//! Chinese. A sentence of a shape it does not know stays English: a wrong
//! translation would be worse than none. The tests below make each shape
//! with the Monitor itself, so a reworded sentence fails here first.

use crate::invariants::{Invariant, Violation};

/// `en` split at the literal `parts` (the text between the holes, in
/// order; the first part is a prefix, the last a suffix): the holes, or
/// `None` when `en` is not of that shape.
fn holes<'a>(en: &'a str, parts: &[&str]) -> Option<Vec<&'a str>> {
    let (first, rest) = parts.split_first()?;
    let (last, middle) = rest.split_last()?;
    let mut s = en.strip_prefix(first)?.strip_suffix(last)?;
    let mut out = Vec::new();
    for p in middle {
        let at = s.find(p)?;
        out.push(&s[..at]);
        s = &s[at + p.len()..];
    }
    out.push(s);
    Some(out)
}

/// `no token` / `token 7` in Chinese.
fn token(t: &str) -> String {
    match t.strip_prefix("token ") {
        Some(n) => format!("令牌 {n}"),
        None if t == "no token" => "无令牌".to_owned(),
        None => t.to_owned(),
    }
}

/// A node's name; the history checker's "the server".
fn node(n: &str) -> String {
    if n == "the server" {
        "服务器".to_owned()
    } else {
        n.to_owned()
    }
}

fn stale_write(en: &str) -> Option<String> {
    let (en, reused) = match en.split_once(" — fencing token ") {
        Some((head, tail)) => (head, Some(tail.strip_suffix(" was handed out twice")?)),
        None => (en, None),
    };
    let h = holes(
        en,
        &[
            "the resource accepted ",
            "'s write (",
            ", holder #",
            ") after ",
            "'s (",
            ", holder #",
            "): ",
            "'s update is lost",
        ],
    )?;
    let [late, late_tok, late_grant, earlier, tok, grant, lost] = h[..] else {
        return None;
    };
    let mut zh = format!(
        "资源先接受了 {earlier} 的写入（{}，第 {grant} 任持有者），之后又接受了 {late} 的写入（{}，第 {late_grant} 任持有者）：{lost} 的更新丢失",
        token(tok),
        token(late_tok)
    );
    if let Some(n) = reused {
        zh.push_str(&format!("——防护令牌 {n} 被发出了两次"));
    }
    Some(zh)
}

fn not_owners(en: &str) -> Option<String> {
    let shape = [
        "",
        "'s command ",
        " the lock ",
        " that ",
        " acquired on ",
        " at ",
        " ms",
    ];
    let extended = en.strip_suffix(": it renewed a lock it does not own");
    let h = holes(extended.unwrap_or(en), &shape)?;
    let [by, verb, key, owner, on, at] = h[..] else {
        return None;
    };
    let on = node(on);
    match (verb, extended.is_some()) {
        ("removed", false) => Some(format!("{by} 的命令删除了 {owner} 于 {at} ms 在 {on} 上获得的锁 {key}")),
        ("extended", true) => Some(format!(
            "{by} 的命令给 {owner} 于 {at} ms 在 {on} 上获得的锁 {key} 续了期：它续期了一把不属于它的锁"
        )),
        _ => None,
    }
}

fn deadlock(en: &str) -> Option<String> {
    let no_ttl = [
        "",
        " on ",
        " has no TTL and its owner ",
        " is gone: it can never expire, nobody can acquire it",
    ];
    if let Some(h) = holes(en, &no_ttl) {
        let [key, on, owner] = h[..] else { return None };
        return Some(format!(
            "{on} 上的 {key} 没有 TTL，其持有者 {owner} 已不在：它永不过期，谁也拿不到"
        ));
    }
    let bound = [
        "",
        " has held ",
        " on ",
        " for ",
        " ms, beyond the ",
        " ms bound: nobody else can acquire it",
    ];
    let h = holes(en, &bound)?;
    let [owner, key, on, held, max] = h[..] else {
        return None;
    };
    Some(format!(
        "{owner} 已在 {on} 上持有 {key} {held} ms，超过了 {max} ms 的上限：其他人都拿不到"
    ))
}

fn overlap(en: &str) -> Option<String> {
    let (who, key) = en.split_once(" all believe they hold ")?;
    Some(format!(
        "{} 都认为自己持有 {key}",
        who.split(" and ").collect::<Vec<_>>().join("、")
    ))
}

/// A Monitor's violation sentence in Chinese (English when its shape is
/// unknown).
pub(super) fn violation(v: &Violation) -> String {
    let zh = match v.invariant {
        Invariant::StaleWrite => stale_write(&v.detail),
        Invariant::WrongRelease | Invariant::ForeignExtend => not_owners(&v.detail),
        Invariant::Deadlock => deadlock(&v.detail),
        Invariant::Overlap => overlap(&v.detail),
    };
    zh.unwrap_or_else(|| v.detail.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::Monitor;
    use crate::observe::Held;

    fn name(i: u32) -> String {
        ["c1", "c2", "c3"][i as usize].to_owned()
    }

    /// No English word is left: only names, keys and figures.
    fn chinese(zh: &str) {
        for w in [
            "the ", "write", "holder", "token", "acquired", "command", "believe", "ms,",
        ] {
            assert!(!zh.contains(w), "{w:?} left in {zh:?}");
        }
    }

    #[test]
    fn each_monitor_sentence_is_said_in_chinese() {
        let mut m = Monitor::default();
        m.grant(0, "lock");
        m.grant(1, "lock");
        assert!(m.accepted_write_under(1, Some("lock"), 10, Some(2), &name).is_none());
        let v = m.accepted_write_under(0, Some("lock"), 20, None, &name).expect("stale");
        let zh = violation(&v);
        chinese(&zh);
        assert!(
            zh.contains("c2 的写入（令牌 2，第 2 任持有者）") && zh.contains("c1 的写入（无令牌"),
            "{zh}"
        );

        let mut m = Monitor::default();
        m.grant(0, "lock");
        m.grant(1, "lock");
        m.accepted_write_under(1, Some("lock"), 10, Some(5), &name);
        let v = m
            .accepted_write_under(0, Some("lock"), 20, Some(5), &name)
            .expect("stale");
        let zh = violation(&v);
        chinese(&zh);
        assert!(zh.ends_with("防护令牌 5 被发出了两次"), "{zh}");

        let held = Held {
            owner: Some(1),
            value: b"t".to_vec(),
            deadline: Some(500),
            since: 40,
        };
        let server = |_: u32| "the server".to_owned();
        let v = m
            .wrong_release(0, "lock", 0, &held, 50, &name, &server)
            .expect("wrong release");
        let zh = violation(&v);
        chinese(&zh);
        assert_eq!(zh, "c1 的命令删除了 c2 于 40 ms 在 服务器 上获得的锁 lock");
        let n1 = |_: u32| "n1".to_owned();
        let extend = crate::observe::Observed::ForeignExtend {
            node: 0,
            key: "lock".into(),
            by: 2,
            held: held.clone(),
        };
        let v = m.not_owner(&extend, 50, &name, &n1).expect("foreign extend");
        let zh = violation(&v);
        chinese(&zh);
        assert!(
            zh.starts_with("c3 的命令给 c2 于 40 ms 在 n1 上获得的锁 lock 续了期"),
            "{zh}"
        );

        let v = Monitor::overlap_violation("lock", &[0, 1, 2], 10, &name);
        assert_eq!(violation(&v), "c1、c2、c3 都认为自己持有 lock");
    }

    #[test]
    fn deadlock_sentences_and_unknown_shapes() {
        let mut v = Violation {
            invariant: Invariant::Deadlock,
            from_ms: 0,
            to_ms: 1,
            actors: Vec::new(),
            detail: "lock on n1 has no TTL and its owner A is gone: it can never expire, nobody can acquire it".into(),
        };
        let zh = violation(&v);
        chinese(&zh);
        assert!(zh.starts_with("n1 上的 lock 没有 TTL"), "{zh}");
        v.detail = "A has held lock on n1 for 900 ms, beyond the 500 ms bound: nobody else can acquire it".into();
        let zh = violation(&v);
        chinese(&zh);
        assert!(zh.contains("900 ms") && zh.contains("500 ms"), "{zh}");
        v.detail = "something new".into();
        assert_eq!(violation(&v), "something new", "an unknown shape stays English");
    }
}
