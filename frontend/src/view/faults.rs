//! The fault toolbox beside the timeline: pause/resume a client, crash a
//! node, promote a replica, cut/heal a client's link, jump a clock — each
//! applied to the lesson's world at the current time, and so in the trace.

use locklab_core::world::{ClockOf, Endpoint, Fault};
use yew::prelude::*;

use crate::i18n::Text;
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct FaultsProps {
    pub oninject: Callback<Fault>,
}

#[function_component(Faults)]
pub fn faults(props: &FaultsProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let Some(session) = &state.session else { return html! {} };
    let s = session.borrow();
    let (clients, nodes, master) = (s.clients(), s.nodes(), s.master());
    let fire = |fault: Fault, label: String, testid: &'static str, disabled: bool| {
        let oninject = props.oninject.clone();
        html! {
            <button class="fault" data-testid={ testid } {disabled} onclick={ move |_| oninject.emit(fault.clone()) }>{ label }</button>
        }
    };
    html! {
        <section class="faults" data-testid="faults">
            <h2>{ Text::Faults.get(lang) }</h2>
            <p class="hint">{ Text::FaultsHint.get(lang) }</p>
            <div class="fault-group">
                { for clients.iter().map(|c| {
                    let name = c.name.clone();
                    let pause = if c.paused {
                        fire(Fault::ResumeClient { client: name.clone() }, format!("{} {name}", Text::ResumeClient.get(lang)), "fault-resume", c.crashed)
                    } else {
                        fire(Fault::PauseClient { client: name.clone(), ms: None }, format!("{} {name}", Text::PauseClient.get(lang)), "fault-pause", c.crashed)
                    };
                    let link = (Endpoint::Client(name.clone()), Endpoint::Node(master));
                    html! {
                        <div class="fault-row">
                            { pause }
                            { fire(Fault::CutLink { a: link.0.clone(), b: link.1.clone() }, format!("{} {name}", Text::CutLink.get(lang)), "fault-cut", false) }
                            { fire(Fault::HealLink { a: link.0, b: link.1 }, Text::HealLink.get(lang).to_owned(), "fault-heal", false) }
                        </div>
                    }
                }) }
            </div>
            <div class="fault-group">
                { for nodes.iter().map(|n| html! {
                    <div class="fault-row">
                        { fire(Fault::CrashNode { node: n.index }, format!("{} {}", Text::CrashNode.get(lang), n.name), "fault-crash", n.down) }
                        if n.replica {
                            { fire(Fault::PromoteReplica { node: n.index }, format!("{} {}", Text::PromoteReplica.get(lang), n.name), "fault-promote", n.down) }
                        }
                        { fire(Fault::JumpClock { of: ClockOf::Node(n.index), delta_ms: 10_000 }, format!("{} {}", n.name, Text::JumpClock.get(lang)), "fault-jump", n.down) }
                    </div>
                }) }
            </div>
            if let Some(notice) = &state.notice {
                <p class="error" data-testid="fault-error">{ notice }</p>
            }
        </section>
    }
}
