//! Class mode's server side (issue 37): a room of followers on one
//! presenter's lesson.
//!
//! * [`hub`] — the state machine of every class this backend serves, without
//!   sockets or clocks: a connection's text frame in (with the time and the
//!   peer's address), messages out to connections ([`hub::Out`]). Who may
//!   say what, judging, tallies, throttles and caps are all decided there,
//!   and unit-tested there.
//! * The WebSocket adapter that pumps sockets through the hub is
//!   `web::class` (route `/api/class/ws`), so the web layer depends on this
//!   module and not the other way round.
//!
//! * [`store`] — where classes live: every change to a class is an entry
//!   of the class's log ([`hub::LogEntry`]), appended to the store and applied
//!   by every instance that reads it. [`store::MemoryStore`] (the default)
//!   keeps it in this process; [`store::RedisStore`]
//!   (`--class-store redis://…`) in a Redis stream per class, so several
//!   `locklab serve` instances serve one class and a restart loses no
//!   answer. The store is the hub's only I/O.

pub mod hub;
pub mod store;

pub use hub::{ClassConfig, Hub, Out, SocketId};

/// What a class keeps of its presenter secret, in memory and in the store:
/// a hex SHA-1 of it, domain-separated. The secret is 128 random bits, so
/// the hash reveals nothing a guess could use, and a store's reader (or a
/// dump of it) cannot present.
pub fn secret_hash(secret: &str) -> String {
    let mut h = sha1_smol::Sha1::new();
    h.update(b"locklab class presenter secret\0");
    h.update(secret.as_bytes());
    h.digest().to_string()
}

/// The join URL as a QR code, an SVG document: rendered here so the page's
/// wasm need not carry an encoder. Empty when the URL cannot be encoded
/// (longer than a QR code holds).
pub fn qr_svg(url: &str) -> String {
    use qrcode::render::svg;
    match qrcode::QrCode::new(url.as_bytes()) {
        Ok(code) => code
            .render::<svg::Color<'_>>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build(),
        Err(_) => String::new(),
    }
}

/// `a == b` in time that depends on their lengths only, not on where they
/// first differ: a presenter secret is compared with this, so a follower
/// timing refusals learns nothing of it.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
        assert!(!same_secret("", "a"));
    }

    #[test]
    fn a_join_url_becomes_an_svg_qr_code() {
        let svg = qr_svg("http://192.168.1.5:8080/?class=ABC234");
        assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{svg}");
        assert!(svg.len() < 64 * 1024);
    }
}
