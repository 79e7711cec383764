//! `locklab serve`: the browser app over HTTP.
//!
//! The app is static files — `dist/`, built by `cargo xtask dist` or
//! `trunk build` — so this is a file server with correct content types
//! (`application/wasm` matters: browsers refuse to stream-compile a module
//! served as anything else). `/api/health` and the `/api/session`
//! WebSocket come from [`api`](crate::web::api), merged in by [`site`],
//! which also puts every route behind the `Host` check
//! ([`origin::host_guard`]); those two answer loopback peers only
//! ([`peer`]). Class mode's WebSocket, `/api/class/ws`, is [`class`]'s.

pub mod api;
pub mod class;
pub mod origin;
pub mod peer;

/// The lab's public face: what a caller needs to serve it (the state, the
/// router [`site`], a listener with Nagle off) without `api`'s insides.
pub use api::{no_delay, serve_listener, ApiState};

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use axum::handler::HandlerWithoutStateExt;
use axum::http::{header, HeaderValue, StatusCode};
use axum::Router;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "not found (if this is the app itself: dist/ is missing or empty, build it with `cargo xtask dist`)\n",
    )
}

/// Every path from `dist` (`/` is `dist/index.html`), compressed when the
/// browser accepts it: `cargo xtask dist` writes `NAME.br` and `NAME.gz`
/// next to each file, and `ServeDir` sends the one the request's
/// `Accept-Encoding` prefers (brotli over gzip at equal weight) with its
/// `Content-Encoding` and the original's content type, or the file itself
/// when none is accepted or none was made (a `dist/` from `trunk build`).
/// Every response says `Vary: Accept-Encoding`, so a cache between the two
/// never hands a brotli body to a client that did not ask for one.
pub fn app(dist: PathBuf) -> Router {
    let files = ServeDir::new(dist)
        .precompressed_br()
        .precompressed_gzip()
        .not_found_service(not_found.into_service());
    Router::new()
        .fallback_service(files)
        .layer(SetResponseHeaderLayer::appending(
            header::VARY,
            HeaderValue::from_static("accept-encoding"),
        ))
}

/// Everything `locklab serve` answers: the app's files from `dist` (none
/// for the API alone, as tests and the bench serve it) and the real-Redis
/// API, every route of it answered only for a `Host` that names the lab
/// ([`origin::OriginPolicy::check_host`]: issue 35, B18).
pub fn site(dist: Option<PathBuf>, state: api::ApiState) -> Router {
    let policy = state.origins();
    let api = api::api_router(state);
    let routes = match dist {
        Some(dist) => app(dist).merge(api),
        None => api,
    };
    routes.layer(axum::middleware::from_fn_with_state(policy, origin::host_guard))
}

/// Bind `bind:port` and serve [`site`] (`dist` and the API with `state`)
/// until `stop` completes and every connection has closed.
pub async fn serve(
    bind: IpAddr,
    port: u16,
    dist: PathBuf,
    state: api::ApiState,
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
    let app = site(Some(dist), state).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(no_delay(listener), app).with_graceful_shutdown(stop).await
}
