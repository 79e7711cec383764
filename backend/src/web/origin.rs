//! Who may open a lab session: the `Origin` check on `/api/session`, and
//! the `Host` check on every route.
//!
//! # Why
//!
//! A WebSocket is not protected by the same-origin policy: any page the
//! speaker visits while `locklab serve` runs can `new
//! WebSocket("ws://127.0.0.1:8080/api/session")` and, without this check,
//! drive a lab session on their Redis (cross-site WebSocket hijacking). A
//! browser always sends the page's `Origin` with the handshake and a page
//! cannot forge it, so the backend accepts a browser's WebSocket only from
//! the lab's own page: the origin whose `host:port` is the `Host` the
//! request was sent to.
//!
//! That alone would let *DNS rebinding* through: `evil.example` resolving
//! to 127.0.0.1 serves a page whose origin `http://evil.example:8080`
//! matches its own `Host: evil.example:8080`. So the lab's own origin must
//! also be named the way the lab is reached without anybody's DNS: an IP
//! literal (`127.0.0.1`, `[::1]`, the address given to `--bind`) or
//! `localhost`. Anything else — a name on a LAN, a reverse proxy — is
//! accepted only when the owner lists it with `--allow-origin`.
//!
//! A request without `Origin` does not come from a web page (`locklab cli
//! --via`, the bench, tests, curl): it is accepted, because the attack this
//! prevents needs a browser, and a non-browser client on the machine can
//! reach Redis directly anyway.
//!
//! # Every route checks `Host`
//!
//! DNS rebinding needs no WebSocket: a page of `evil.example` rebound to
//! 127.0.0.1 may `fetch("/api/health")` from its own origin and read the
//! Redis version and whether it is reachable (issue 35, B18). So every
//! HTTP route — the API and the app's files alike — answers only a
//! request whose `Host` names the lab the same way: an IP literal,
//! `localhost`, or the host of an origin given to `--allow-origin`
//! ([`OriginPolicy::check_host`], applied by [`host_guard`]). A request
//! without `Host` is not a browser's and is served.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The origins allowed besides the lab's own (normalised, see
/// [`normalise`]).
#[derive(Clone, Debug, Default)]
pub struct OriginPolicy {
    extra: BTreeSet<String>,
}

impl OriginPolicy {
    /// Accept the lab's own origin and `extra` (`--allow-origin`, e.g.
    /// `http://lab.example:8080`).
    pub fn new(extra: impl IntoIterator<Item = String>) -> Self {
        OriginPolicy {
            extra: extra.into_iter().filter_map(|o| normalise(&o)).collect(),
        }
    }

    /// May a WebSocket handshake with these `Origin` and `Host` headers
    /// open a session? `Err` says why not, for the 403's body.
    pub fn check(&self, origin: Option<&str>, host: Option<&str>) -> Result<(), String> {
        let Some(origin) = origin else { return Ok(()) };
        let refused = || {
            Err(format!(
                "locklab: a lab session may only be opened from the lab's own page, not from {origin:?} \
                 (start the lab with --allow-origin {origin} to allow it)"
            ))
        };
        let Some(norm) = normalise(origin) else {
            return refused();
        };
        if self.extra.contains(&norm) {
            return Ok(());
        }
        let Some(host) = host else { return refused() };
        // `scheme://host:port` of the origin against the Host header.
        let authority = norm.split_once("://").map_or("", |(_, a)| a);
        let host = host.trim().to_ascii_lowercase();
        let same = authority == host || authority == with_default_port(&norm, &host).unwrap_or_default();
        if same && is_own_name(hostname(&host)) {
            Ok(())
        } else {
            refused()
        }
    }
}

impl OriginPolicy {
    /// May a request with this `Host` header be answered at all? The
    /// lab's own names (an IP literal, `localhost`) and the hosts of the
    /// `--allow-origin` origins are; `Err` says why not, for the 403's body.
    pub fn check_host(&self, host: Option<&str>) -> Result<(), String> {
        let Some(raw) = host else { return Ok(()) };
        let host = raw.trim().to_ascii_lowercase();
        let allowed = self.extra.iter().any(|o| {
            let authority = o.split_once("://").map_or("", |(_, a)| a);
            authority == host || with_default_port(o, &host).is_some_and(|h| h == authority)
        });
        if allowed || is_own_name(hostname(&host)) {
            return Ok(());
        }
        Err(format!(
            "locklab: this lab answers only when reached by an IP address or localhost, not as {raw:?} (a page \
             of another site could read it through DNS rebinding); start the lab with --allow-origin \
             http://{raw} to allow that name"
        ))
    }
}

/// Every route's guard ([`OriginPolicy::check_host`]): a 403 with the
/// reason for a request to a name that is not the lab's.
pub async fn host_guard(State(policy): State<Arc<OriginPolicy>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{fffd}"));
    match policy.check_host(host) {
        Ok(()) => next.run(request).await,
        Err(why) => (StatusCode::FORBIDDEN, format!("{why}\n")).into_response(),
    }
}

/// `scheme://host[:port]` in lower case, without a path or a trailing
/// slash; `None` for anything that is not an http(s) origin (`null`, a
/// `file:` page).
fn normalise(origin: &str) -> Option<String> {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = origin.split_once("://")?;
    if !matches!(scheme, "http" | "https") || authority.is_empty() || authority.contains(['/', '@', '?', '#']) {
        return None;
    }
    Some(origin)
}

/// `host` with the origin's default port made explicit (`Host:
/// 127.0.0.1` means port 80 for an `http://` origin that spells no port).
fn with_default_port(origin: &str, host: &str) -> Option<String> {
    let authority = origin.split_once("://")?.1;
    if authority.ends_with(']') || !authority.contains(':') || authority.matches(':').count() > 1 {
        // The origin has no port (or is a bare IPv6 literal): compare the
        // Host with its default port removed.
        let default = if origin.starts_with("https") { ":443" } else { ":80" };
        return host.strip_suffix(default).map(str::to_owned);
    }
    None
}

/// The host name of a `Host` header value: `[::1]:8080` → `::1`,
/// `localhost:8080` → `localhost`.
fn hostname(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

/// A name nobody's DNS can point elsewhere: an IP literal or `localhost`.
fn is_own_name(name: &str) -> bool {
    name == "localhost" || name.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labs_own_page_may_connect() {
        let p = OriginPolicy::default();
        assert!(p.check(Some("http://127.0.0.1:8080"), Some("127.0.0.1:8080")).is_ok());
        assert!(p.check(Some("http://localhost:8080"), Some("localhost:8080")).is_ok());
        assert!(p.check(Some("http://[::1]:8080"), Some("[::1]:8080")).is_ok());
        assert!(p
            .check(Some("http://192.168.1.5:8080"), Some("192.168.1.5:8080"))
            .is_ok());
        assert!(p.check(Some("HTTP://LOCALHOST:8080/"), Some("localhost:8080")).is_ok());
        assert!(p.check(Some("http://127.0.0.1"), Some("127.0.0.1:80")).is_ok());
        // Not a browser: nothing to hijack.
        assert!(p.check(None, Some("127.0.0.1:8080")).is_ok());
    }

    #[test]
    fn other_pages_are_refused() {
        let p = OriginPolicy::default();
        for (origin, host) in [
            ("http://evil.example", "127.0.0.1:8080"),
            ("http://127.0.0.1:9999", "127.0.0.1:8080"),
            ("null", "127.0.0.1:8080"),
            ("file://", "127.0.0.1:8080"),
            // DNS rebinding: the page's own name, resolving to loopback.
            ("http://evil.example:8080", "evil.example:8080"),
            ("http://127.0.0.1:8080", ""),
            ("http://user@127.0.0.1:8080", "127.0.0.1:8080"),
        ] {
            let host = (!host.is_empty()).then_some(host);
            let err = p.check(Some(origin), host).unwrap_err();
            assert!(
                err.contains("only be opened from the lab's own page"),
                "{origin}: {err}"
            );
        }
        assert!(p.check(Some("http://127.0.0.1:8080"), None).is_err());
    }

    #[test]
    fn only_the_labs_own_names_are_answered() {
        let p = OriginPolicy::new(["http://lab.example:8080".to_owned()]);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST",
            "[::1]:8080",
            "10.0.0.7",
            "lab.example:8080",
        ] {
            assert!(p.check_host(Some(ok)).is_ok(), "{ok}");
        }
        assert!(p.check_host(None).is_ok(), "not a browser");
        for bad in [
            "evil.example:8080",
            "lab.example:8081",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8080",
            "",
        ] {
            let e = p.check_host(Some(bad)).unwrap_err();
            assert!(
                e.contains("answers only when reached by an IP address or localhost"),
                "{bad}: {e}"
            );
        }
        assert!(OriginPolicy::new(["http://lab.example".to_owned()])
            .check_host(Some("lab.example:80"))
            .is_ok());
    }

    #[test]
    fn allowed_origins_are_added() {
        let p = OriginPolicy::new(["http://Lab.example:8080/".to_owned()]);
        assert!(p.check(Some("http://lab.example:8080"), Some("127.0.0.1:8080")).is_ok());
        assert!(p
            .check(Some("http://lab.example:8081"), Some("127.0.0.1:8080"))
            .is_err());
    }
}
