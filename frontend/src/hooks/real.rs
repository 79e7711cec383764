//! The real driver's I/O, kept going as effects of the state: its
//! WebSocket (opened, flushed, reconnected with backoff) and the
//! `/api/health` poll. What they hear goes to the reducer as a
//! [`RealInput`]; the protocol itself is [`crate::driver::real`].

use yew::prelude::*;

use crate::driver::real::{reconnect_delay_ms, SocketState};
use crate::query::DriverKind;
use crate::socket::{self, Socket, SocketEvent};
use crate::state::{Action, AppContext, RealInput};

/// How often the real driver re-reads `/api/health`.
const HEALTH_POLL_MS: u32 = 5_000;

/// What the socket and the health check report, as actions.
fn reporter(state: &AppContext) -> Callback<RealInput> {
    let dispatcher = state.dispatcher();
    Callback::from(move |input: RealInput| dispatcher.dispatch(Action::Real(input)))
}

/// The real driver's socket: one per (driver, connection number), so a
/// reconnect is a new number and switching back to the simulator drops it;
/// the frames the driver wants sent, after every change; and after a lost
/// link, a reconnect once the backoff has passed.
#[hook]
pub fn use_real_socket(state: &AppContext) {
    let socket = use_mut_ref(|| None::<Socket>);
    {
        let socket = socket.clone();
        let report = reporter(state);
        use_effect_with((state.driver, state.connection), move |&(driver, _)| {
            socket.borrow_mut().take();
            if driver == DriverKind::Real {
                let events = report.reform(|e| match e {
                    SocketEvent::Opened => RealInput::Opened,
                    SocketEvent::Message(m) => RealInput::Message(m),
                    SocketEvent::Closed(why) => RealInput::Closed(why),
                });
                let opened = Socket::connect(socket::session_url(), "the backend", events);
                *socket.borrow_mut() = opened;
            }
            move || {
                socket.borrow_mut().take();
            }
        });
    }
    {
        let real = state.real.clone();
        use_effect_with(state.rev, move |_| {
            if let (Some(real), Some(socket)) = (real, socket.borrow().as_ref()) {
                for frame in real.borrow_mut().take_outbox() {
                    socket.send(&frame);
                }
            }
        });
    }
    let lost = state.real.as_ref().and_then(|r| match &r.borrow().link {
        SocketState::Lost { attempt, .. } => Some(*attempt),
        _ => None,
    });
    let dispatcher = state.dispatcher();
    use_effect_with(lost, move |lost| {
        let timer = lost.map(|attempt| {
            gloo_timers::callback::Timeout::new(reconnect_delay_ms(attempt), move || {
                dispatcher.dispatch(Action::Reconnect)
            })
        });
        move || drop(timer)
    });
}

/// Redis can go away while the socket stays up (a crashed server behind
/// `--redis`): the health check notices. Read once per connection on the
/// real driver, then every [`HEALTH_POLL_MS`].
#[hook]
pub fn use_health_poll(state: &AppContext) {
    let report = reporter(state);
    use_effect_with((state.driver, state.connection), move |&(driver, _)| {
        let poll = (driver == DriverKind::Real).then(|| {
            socket::fetch_health(report.clone());
            gloo_timers::callback::Interval::new(HEALTH_POLL_MS, move || socket::fetch_health(report.clone()))
        });
        move || drop(poll)
    });
}
