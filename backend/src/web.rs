//! `locklab serve`: the browser app over HTTP.
//!
//! The app is static files — `dist/`, built by `cargo xtask dist` or
//! `trunk build` — so this is a file server with correct content types
//! (`application/wasm` matters: browsers refuse to stream-compile a module
//! served as anything else). `/api/health` and the `/api/session`
//! WebSocket come from [`api`](crate::api), merged in by [`serve`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use axum::handler::HandlerWithoutStateExt;
use axum::http::StatusCode;
use axum::Router;
use tower_http::services::ServeDir;

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "not found (if this is the app itself: dist/ is missing or empty, build it with `cargo xtask dist`)\n",
    )
}

/// Every path from `dist` (`/` is `dist/index.html`).
pub fn app(dist: PathBuf) -> Router {
    Router::new().fallback_service(ServeDir::new(dist).not_found_service(not_found.into_service()))
}

/// Bind `bind:port` and serve `dist` — plus `extra` routes (the real-Redis
/// API) — until `stop` completes and every connection has closed.
pub async fn serve(
    bind: IpAddr,
    port: u16,
    dist: PathBuf,
    extra: Router,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if !dist.join("index.html").is_file() {
        eprintln!(
            "warning: {} has no index.html; build the app with `cargo xtask dist`",
            dist.display()
        );
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(bind, port)).await?;
    eprintln!(
        "locklab: serving {} at http://{}/",
        dist.display(),
        listener.local_addr()?
    );
    // Nagle off, as for the API alone: see `api::no_delay`.
    axum::serve(crate::api::no_delay(listener), app(dist).merge(extra))
        .with_graceful_shutdown(stop)
        .await
}
