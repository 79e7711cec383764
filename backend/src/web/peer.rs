//! What a peer on the network may reach (issue 37: a class binds a LAN
//! address).
//!
//! The real driver (`/api/session`) runs commands on the lab owner's Redis
//! and starts redis-server processes on their machine; `/api/health` tells
//! what Redis is behind it. Those routes answer only a loopback peer
//! ([`peer_guard`] is layered on them, by route, so no spelling of a path
//! gets around it); from the network only the app's static files and the
//! class routes (`/api/class/…`) answer, where a follower can join, answer
//! and report a drill, and nothing else ([`crate::class::hub`] refuses a
//! `start` from a peer that is not loopback too).
//!
//! A peer is known by the connection's address (`ConnectInfo`); a server
//! started without it (a caller's own `axum::serve` of [`super::site`])
//! has no peer address, and every request is then treated as remote.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// May `peer` request `path`, a loopback-only route? `Err` is the 403's body.
pub fn loopback_only(peer: IpAddr, path: &str) -> Result<(), String> {
    if peer.to_canonical().is_loopback() {
        return Ok(());
    }
    Err(format!(
        "locklab: {path} answers only on the lab's own machine (a loopback address), not to {peer}: from the \
         network only the page and a class's routes are served"
    ))
}

/// The guard of the loopback-only routes ([`loopback_only`]).
pub async fn peer_guard(request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| a.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    match loopback_only(peer, request.uri().path()) {
        Ok(()) => next.run(request).await,
        Err(why) => (StatusCode::FORBIDDEN, format!("{why}\n")).into_response(),
    }
}

/// This machine's address on its LAN, for the join URL a class prints:
/// the IPv4 source address of its route to the outside, asked of the
/// kernel by connecting a UDP socket (nothing is sent). `None` on a
/// machine with no such route (then the owner gives `--class-url`).
pub fn lan_ipv4() -> Option<std::net::Ipv4Addr> {
    let probe = std::net::UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    // TEST-NET-1 (RFC 5737): routed like any outside address, never answered.
    probe.connect((std::net::Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    match probe.local_addr().ok()?.ip() {
        IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_unspecified() => Some(v4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_labs_own_machine_is_loopback() {
        for own in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert!(loopback_only(own.parse().unwrap(), "/api/session").is_ok(), "{own}");
        }
        for remote in ["192.168.1.20", "fd00::2", "::ffff:10.0.0.1", "0.0.0.0"] {
            let why = loopback_only(remote.parse().unwrap(), "/api/session").unwrap_err();
            assert!(why.contains("only on the lab's own machine"), "{remote}: {why}");
        }
    }
}
