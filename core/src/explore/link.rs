//! A counterexample as a link: `?explore=<design>&seed=N`.
//!
//! The search is deterministic per design and seed — the page's worker and
//! `locklab explore FILE --seed N` visit the same schedules in the same
//! order and keep the same shortest one — so a link does not need to carry
//! the counterexample itself: the design and the seed reproduce it, on any
//! machine, with the transcript the CLI prints. The design is either a
//! built-in file by its stem (`explore=07-redlock5-gc-pause`), or the
//! editor's text, versioned and base64url-encoded (`explore=1.<base64url>`)
//! so that a trainee's own Lua survives the trip through a chat message
//! unchanged (no `+`, `/`, `=` or `%` for a mail client to mangle).
//!
//! A link is input from anyone: [`decode`] bounds its size before decoding,
//! refuses formats it does not know by name, and says what is wrong in one
//! sentence the page shows; the decoded text then goes through the same
//! [`super::designs::parse`] checks as a file given to the CLI.

use thiserror::Error;

/// The link format this build writes and reads.
pub const VERSION: &str = "1";

/// The longest `explore=` value read or written (encoded characters):
/// under the 65 534-byte request target hyper (the backend's HTTP server)
/// answers `414 URI Too Long` past, so any link the page writes also loads.
/// About 44 KB of design text — two scripts of [`super::spec::MAX_SCRIPT`]
/// and more; a longer design is shared as a file. Anything longer is
/// refused before it is decoded.
pub const MAX_LINK: usize = 60_000;

/// What an `explore=` value names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DesignRef {
    /// A built-in design by its file stem, e.g. `01-bare-del`.
    Builtin(String),
    /// A design's text (TOML, or JSON of a spec).
    Text(String),
}

/// Why a link cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LinkError {
    #[error("this link names no design")]
    Empty,
    #[error("this link's design is {0} characters long; a link holds at most {MAX_LINK}")]
    TooLong(usize),
    #[error("this link was written in format {0:?}; this page reads format {VERSION} (open it with the locklab that made it)")]
    Version(String),
    #[error("this link's design is damaged: {0}")]
    Damaged(&'static str),
    #[error("this link names {0:?}, which is not a built-in design")]
    Unknown(String),
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding (RFC 4648 §5).
fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn b64_decode(s: &str) -> Result<Vec<u8>, LinkError> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3 + 2);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = ALPHABET
            .iter()
            .position(|&a| a == c)
            .ok_or(LinkError::Damaged("a character outside base64url"))?;
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be padding zeros, and one leftover character
    // (six bits) cannot end a byte sequence.
    if bits >= 6 || acc != 0 {
        return Err(LinkError::Damaged("it was cut short"));
    }
    Ok(out)
}

/// The `explore=` value for a design's text.
pub fn encode_text(text: &str) -> String {
    format!("{VERSION}.{}", b64_encode(text.as_bytes()))
}

/// The `explore=` value for a built-in design file (`01-bare-del.toml`).
pub fn builtin_ref(file: &str) -> String {
    file.strip_suffix(".toml").unwrap_or(file).to_owned()
}

fn is_stem(s: &str) -> bool {
    s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Read an `explore=` value.
pub fn decode(value: &str) -> Result<DesignRef, LinkError> {
    if value.len() > MAX_LINK {
        return Err(LinkError::TooLong(value.len()));
    }
    if value.is_empty() {
        return Err(LinkError::Empty);
    }
    match value.split_once('.') {
        None if is_stem(value) => Ok(DesignRef::Builtin(value.to_owned())),
        None => Err(LinkError::Damaged(
            "it is neither a design's name nor an encoded design",
        )),
        Some((VERSION, data)) => {
            let bytes = b64_decode(data)?;
            let text = String::from_utf8(bytes).map_err(|_| LinkError::Damaged("its text is not UTF-8"))?;
            if text.trim().is_empty() {
                return Err(LinkError::Empty);
            }
            Ok(DesignRef::Text(text))
        }
        Some((v, _)) => Err(LinkError::Version(v.chars().take(16).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips_every_length() {
        let data: Vec<u8> = (0..=255u8).collect();
        for n in 0..data.len() {
            let e = b64_encode(&data[..n]);
            assert!(e.bytes().all(|b| ALPHABET.contains(&b)), "{e}");
            assert_eq!(b64_decode(&e).as_deref(), Ok(&data[..n]), "{n}");
        }
        // RFC 4648's test vectors, unpadded.
        assert_eq!(b64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(b64_encode(b"fooba"), "Zm9vYmE");
        assert_eq!(b64_encode(b"f"), "Zg");
        assert_eq!(b64_encode(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn a_design_and_a_builtin_name_round_trip() {
        let text = "name = \"mine\"\n[scripts]\nrelease = '''\nreturn redis.call(\"DEL\", KEYS[1]) -- ü\n'''\n";
        let v = encode_text(text);
        assert!(v.starts_with("1."), "{v}");
        assert_eq!(decode(&v), Ok(DesignRef::Text(text.to_owned())));
        assert_eq!(builtin_ref("07-redlock5-gc-pause.toml"), "07-redlock5-gc-pause");
        assert_eq!(
            decode("07-redlock5-gc-pause"),
            Ok(DesignRef::Builtin("07-redlock5-gc-pause".into()))
        );
    }

    #[test]
    fn hostile_values_are_clear_errors() {
        assert_eq!(decode(""), Err(LinkError::Empty));
        assert_eq!(decode("1."), Err(LinkError::Empty));
        let huge = format!("1.{}", "A".repeat(MAX_LINK));
        assert_eq!(decode(&huge), Err(LinkError::TooLong(MAX_LINK + 2)));
        assert_eq!(decode("2.Zm9v"), Err(LinkError::Version("2".into())));
        assert!(decode("2.Zm9v")
            .unwrap_err()
            .to_string()
            .contains("format \"2\"; this page reads format 1"));
        assert!(matches!(decode("1.Zm9v!"), Err(LinkError::Damaged(_))));
        assert!(
            matches!(decode("1.Zm9vY"), Err(LinkError::Damaged(_))),
            "one leftover character"
        );
        assert!(
            matches!(decode("1.Zm9vYm_"), Err(LinkError::Damaged(_))),
            "non-zero padding bits"
        );
        assert!(matches!(decode("1.__8"), Err(LinkError::Damaged(_))), "not UTF-8");
        assert!(matches!(decode("<script>"), Err(LinkError::Damaged(_))));
        assert!(matches!(decode(&"x".repeat(65)), Err(LinkError::Damaged(_))));
    }
}
