//! Redis's glob matching (`stringmatchlen` from util.c), for KEYS and SCAN
//! MATCH: `*`, `?`, `[abc]`, `[^a-z]`, and `\` to escape.
//!
//! Written as an explicit backtracking loop over the last `*` seen, so a
//! pattern like `*a*a*a*…b` against a long key cannot explode the way the
//! naive recursion does (redis-server bounds its recursion for the same
//! reason).

/// Does `string` match `pattern`? `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
    let (mut p, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while s < string.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    p += 1;
                    s += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pattern, p, string[s], nocase) {
                        if matched {
                            p = next;
                            s += 1;
                            continue;
                        }
                    } else if eq(b'[', string[s]) {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], string[s]) {
                        p += 2;
                        s += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, string[s]) {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Match one character against the class starting at `pattern[p] == '['`.
/// Returns (matched, index after the class). An unterminated class extends
/// to the end of the pattern, as in redis-server.
fn class(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let fold = |x: u8| if nocase { x.to_ascii_lowercase() } else { x };
    let mut i = p + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        match pattern.get(i) {
            None => break,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(b'\\') if i + 1 < pattern.len() => {
                matched |= fold(pattern[i + 1]) == fold(c);
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() && pattern[i + 2] != b']' => {
                let hi = pattern[i + 2];
                let (lo, hi) = if lo > hi { (hi, lo) } else { (lo, hi) };
                let x = fold(c);
                matched |= (fold(lo)..=fold(hi)).contains(&x) || (lo..=hi).contains(&c);
                i += 3;
            }
            Some(&x) => {
                matched |= fold(x) == fold(c);
                i += 1;
            }
        }
    }
    Some((matched != negate, i))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn patterns() {
        assert!(glob_match(b"lock:*", b"lock:order:1", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a\\*b", b"axb", false));
        assert!(glob_match(b"*", b"", false));
        assert!(!glob_match(b"?", b"", false));
        let long = vec![b'a'; 5000];
        assert!(!glob_match(b"*a*a*a*a*a*a*a*b", &long, false));
    }
}
