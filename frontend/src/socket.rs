//! The browser side of the backend's WebSockets — the real driver's to
//! `/api/session` and class mode's to `/api/class/ws` — and the
//! `/api/health` fetch. What they report goes to the reducer (as a
//! [`RealInput`], or a class's [`SocketEvent`]); the protocols themselves
//! live, sans-IO and natively tested, in [`real`](crate::driver::real) and
//! [`class`](crate::class).

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{CloseEvent, MessageEvent, WebSocket};
use yew::Callback;

pub use crate::class::SocketEvent;
use crate::state::RealInput;

/// `ws://host/api/session` for the page's own origin (`wss:` under https).
pub fn session_url() -> Option<String> {
    ws_url("/api/session")
}

/// `ws://host/api/class/ws`: class mode's route.
pub fn class_url() -> Option<String> {
    ws_url("/api/class/ws")
}

fn ws_url(path: &str) -> Option<String> {
    let location = web_sys::window()?.location();
    let scheme = if location.protocol().ok()? == "https:" {
        "wss"
    } else {
        "ws"
    };
    Some(format!("{scheme}://{}{path}", location.host().ok()?))
}

/// An open WebSocket and the handlers it calls. Dropping it closes the
/// socket and detaches the handlers first, so a socket being replaced
/// (a reconnect, a switch back to the simulator) reports nothing more.
pub struct Socket {
    ws: WebSocket,
    _on_open: Closure<dyn FnMut()>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_close: Closure<dyn FnMut(CloseEvent)>,
}

impl Socket {
    pub fn open(url: &str, report: Callback<SocketEvent>) -> Result<Socket, String> {
        let ws = WebSocket::new(url).map_err(|e| format!("cannot open {url}: {e:?}"))?;
        let on_open = {
            let report = report.clone();
            Closure::<dyn FnMut()>::new(move || report.emit(SocketEvent::Opened))
        };
        let on_message = {
            let report = report.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
                if let Some(text) = e.data().as_string() {
                    report.emit(SocketEvent::Message(text));
                }
            })
        };
        let on_close = {
            let host = url.to_owned();
            Closure::<dyn FnMut(CloseEvent)>::new(move |e: CloseEvent| {
                // 1006 is "closed abnormally": the usual way a backend that
                // was stopped or never started shows up.
                let why = if e.reason().is_empty() {
                    format!("code {}", e.code())
                } else {
                    e.reason()
                };
                report.emit(SocketEvent::Closed(format!("{host} closed ({why})")));
            })
        };
        ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        Ok(Socket {
            ws,
            _on_open: on_open,
            _on_message: on_message,
            _on_close: on_close,
        })
    }

    /// A socket to `url`, the address of `peer` ("the backend", "the
    /// class"). When there is none to be had (the page has no address, or
    /// the browser refused), `report` hears a close saying why: the caller
    /// meets it as any lost link, and its reconnect takes it from there.
    pub fn connect(url: Option<String>, peer: &str, report: Callback<SocketEvent>) -> Option<Socket> {
        let opened = match url {
            Some(url) => Socket::open(&url, report.clone()),
            None => Err(format!("this page has no address to reach {peer} at")),
        };
        opened.map_err(|why| report.emit(SocketEvent::Closed(why))).ok()
    }

    /// Send one text frame; false when the socket is not open.
    pub fn send(&self, text: &str) -> bool {
        self.ws.ready_state() == WebSocket::OPEN && self.ws.send_with_str(text).is_ok()
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        let _ = self.ws.close();
    }
}

/// Fetch `/api/health` and report what it says.
pub fn fetch_health(report: Callback<RealInput>) {
    wasm_bindgen_futures::spawn_local(async move {
        report.emit(RealInput::Health(health().await));
    });
}

async fn health() -> Result<crate::driver::real::Health, String> {
    crate::driver::real::parse_health(&fetch_text("/api/health").await?)
}

/// GET `url` from the lab's backend: the body, or what failed.
pub async fn fetch_text(url: &str) -> Result<String, String> {
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(|_| format!("the lab backend is not answering {url}"))?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| "not a response".to_owned())?;
    if !response.ok() {
        return Err(format!("{url} answered HTTP {}", response.status()));
    }
    let text = JsFuture::from(response.text().map_err(|_| format!("unreadable {url}"))?)
        .await
        .map_err(|_| format!("unreadable {url}"))?;
    Ok(text.as_string().unwrap_or_default())
}
