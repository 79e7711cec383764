//! Class mode's I/O, kept going as effects of the state: the class's
//! WebSocket (opened per connection number, flushed after every render,
//! reopened after [`rejoin_delay_ms`]), and what a reload needs in
//! `sessionStorage` (the presenter's secret, a follower's member and
//! stream ids). The class itself is [`crate::class`], sans-IO.

use yew::prelude::*;

use crate::class::{rejoin_delay_ms, STORAGE_KEY};
use crate::driver::real::SocketState;
use crate::socket::{self, Socket, SocketEvent};
use crate::state::{Action, AppContext, ClassAction};

fn session_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// The class a reload of this tab should resume, if any.
pub fn saved_class() -> Option<String> {
    session_storage()?.get_item(STORAGE_KEY).ok().flatten()
}

#[hook]
pub fn use_class(state: &AppContext) {
    let socket = use_mut_ref(|| None::<Socket>);
    let wants = state.class.as_ref().is_some_and(|c| c.borrow().wants_link());
    {
        let socket = socket.clone();
        let dispatcher = state.dispatcher();
        let class = state.class.clone();
        use_effect_with((wants, state.class_connection), move |&(wants, _)| {
            socket.borrow_mut().take();
            if wants {
                let report =
                    Callback::from(move |e: SocketEvent| dispatcher.dispatch(Action::Class(ClassAction::Socket(e))));
                // This page's instance, or after a loss the next live one.
                let url = socket::class_url().map(|home| match &class {
                    Some(c) => c.borrow().socket_url(&home),
                    None => home,
                });
                let opened = Socket::connect(url, "the class", report);
                *socket.borrow_mut() = opened;
            }
            move || {
                socket.borrow_mut().take();
            }
        });
    }
    {
        let class = state.class.clone();
        use_effect(move || {
            if let (Some(class), Some(socket)) = (class, socket.borrow().as_ref()) {
                for frame in class.borrow_mut().take_outbox() {
                    socket.send(&frame);
                }
            }
        });
    }
    let lost = state.class.as_ref().and_then(|c| match &c.borrow().link {
        SocketState::Lost { attempt, .. } if c.borrow().wants_link() => Some(*attempt),
        _ => None,
    });
    let dispatcher = state.dispatcher();
    use_effect_with(lost, move |lost| {
        let timer = lost.map(|attempt| {
            gloo_timers::callback::Timeout::new(rejoin_delay_ms(attempt), move || {
                dispatcher.dispatch(Action::Class(ClassAction::Reconnect))
            })
        });
        move || drop(timer)
    });
    let saved = state.class.as_ref().and_then(|c| c.borrow().saved());
    use_effect_with(saved, |saved| {
        if let Some(store) = session_storage() {
            let _ = match saved {
                Some(s) => store.set_item(STORAGE_KEY, s),
                None => store.remove_item(STORAGE_KEY),
            };
        }
    });
}
