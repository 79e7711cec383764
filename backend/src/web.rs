//! `locklab serve`: the browser app over HTTP.
//!
//! The app is static files — `dist/`, built by `cargo xtask dist` or
//! `trunk build` — so this is a file server with correct content types
//! (`application/wasm` matters: browsers refuse to stream-compile a module
//! served as anything else) and a health endpoint. The WebSocket session
//! (`/api/session`) and topology control will join it under `/api/`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use axum::handler::HandlerWithoutStateExt;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use tower_http::services::ServeDir;

/// `GET /api/health`.
#[derive(Debug, Serialize)]
struct Health {
    ok: bool,
    /// The driver a fresh browser session gets.
    driver: &'static str,
}

async fn health() -> Json<Health> {
    Json(Health { ok: true, driver: "sim" })
}

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "not found (if this is the app itself: dist/ is missing or empty, build it with `cargo xtask dist`)\n",
    )
}

/// The routes: `/api/health`, and every other path from `dist`
/// (`/` is `dist/index.html`).
pub fn app(dist: PathBuf) -> Router {
    Router::new()
        .route("/api/health", get(health))
        .fallback_service(ServeDir::new(dist).not_found_service(not_found.into_service()))
}

/// Serve [`app`] on an already bound listener (tests bind port 0).
pub async fn serve_listener(listener: tokio::net::TcpListener, dist: PathBuf) -> std::io::Result<()> {
    axum::serve(listener, app(dist)).await
}

/// Bind `bind:port` and serve `dist` — plus `extra` routes (the real-Redis
/// API) — until the process ends.
pub async fn serve(bind: IpAddr, port: u16, dist: PathBuf, extra: Router) -> std::io::Result<()> {
    if !dist.join("index.html").is_file() {
        eprintln!(
            "warning: {} has no index.html; build the app with `cargo xtask dist`",
            dist.display()
        );
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(bind, port)).await?;
    eprintln!("locklab: serving {} at http://{}/", dist.display(), listener.local_addr()?);
    axum::serve(listener, app(dist).merge(extra)).await
}
