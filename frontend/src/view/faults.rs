//! The fault toolbox beside the timeline: pause/resume a client, crash a
//! node, promote a replica, cut/heal a client's link, jump a clock — each
//! applied to the lesson's world at the current time, and so in the trace.
//!
//! On the real driver the toolbox acts on real processes instead: pause
//! (SIGSTOP), resume, crash (SIGKILL), restart without persistence, promote
//! a replica, cut replication — on the servers the backend manages, and on
//! nothing at all when it was given the user's own server, which the lab
//! never kills or reconfigures (and the toolbox says so).

use locklab_core::fault::{ClockOf, Endpoint, Fault};
use locklab_core::protocol::{FaultKind, NodeRole, NodeState, TopologyKind};
use yew::prelude::*;

use crate::driver::Driver;
use crate::i18n::{Lang, Text};
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct FaultsProps {
    pub oninject: Callback<Fault>,
    /// A fault on a managed real node: (`pause`|`resume`|`crash`|…, node).
    pub onreal: Callback<(FaultKind, u32)>,
    /// A new managed real topology.
    pub ontopology: Callback<TopologyKind>,
}

/// The real toolbox: the managed nodes and what can be done to each.
fn real_faults(props: &FaultsProps, state: &AppContext) -> Html {
    let lang = state.lang;
    let Some(real) = &state.real else { return html! {} };
    let r = real.borrow();
    let external = r.health.as_ref().is_some_and(|h| h.is_external());
    let nodes = r.session.as_ref().map(|s| s.nodes.clone()).unwrap_or_default();
    let topology = r.session.as_ref().map(|s| s.topology).unwrap_or_default();
    let fire = |fault: FaultKind, node: u32, label: String, disabled: bool| {
        let onreal = props.onreal.clone();
        html! {
            <button class="fault" data-testid={ format!("real-{fault}") } {disabled}
                onclick={ move |_| onreal.emit((fault, node)) }>{ label }</button>
        }
    };
    let body = html! {
        if external {
            <p class="hint" data-testid="real-external">{ Text::RealExternal.get(lang) }</p>
        } else {
            <p class="hint">{ Text::RealFaultsHint.get(lang) }</p>
            if state.lesson.is_none() {
                <div class="fault-row" role="group" aria-label={ Text::RealTopology.get(lang) }>
                    { for TopologyKind::ALL.into_iter().map(|kind| {
                        let ontopology = props.ontopology.clone();
                        html! {
                            <button class={ classes!("fault", (topology.managed() == Some(kind)).then_some("on")) }
                                data-testid="real-topology" data-kind={ kind.as_str() }
                                onclick={ move |_| ontopology.emit(kind) }>{ kind.as_str() }</button>
                        }
                    }) }
                </div>
            }
            <div class="fault-group">
                { for nodes.iter().enumerate().map(|(i, n)| {
                    let i = i as u32;
                    let down = n.state == NodeState::Down;
                    let paused = n.state == NodeState::Paused;
                    let replica = n.role == NodeRole::Replica;
                    html! {
                        <div class="fault-row" data-testid="real-node" data-state={ n.state.as_str() }>
                            <span class="node-name" title={ n.url.clone() }>{ format!("{} :{}", n.name, n.port) }</span>
                            if paused {
                                { fire(FaultKind::Resume, i, Text::RealResume.get(lang).to_owned(), false) }
                            } else {
                                { fire(FaultKind::Pause, i, Text::RealPause.get(lang).to_owned(), down) }
                            }
                            if down {
                                { fire(FaultKind::Restart, i, Text::RealRestart.get(lang).to_owned(), false) }
                            } else {
                                { fire(FaultKind::Crash, i, Text::CrashNode.get(lang).to_owned(), false) }
                            }
                            if replica {
                                { fire(FaultKind::Promote, i, Text::PromoteReplica.get(lang).to_owned(), down) }
                                { fire(FaultKind::CutReplication, i, Text::RealCutReplication.get(lang).to_owned(), down) }
                                { fire(FaultKind::HealReplication, i, Text::HealLink.get(lang).to_owned(), down) }
                            }
                        </div>
                    }
                }) }
            </div>
        }
    };
    toolbox(lang, body, r.last_error.as_deref())
}

/// The toolbox's frame, the same on either driver: its heading, `body`
/// (the hints and buttons), and why the last fault failed, if one did.
fn toolbox(lang: Lang, body: Html, error: Option<&str>) -> Html {
    html! {
        <section class="faults" data-testid="faults">
            <h2>{ Text::Faults.get(lang) }</h2>
            { body }
            if let Some(e) = error {
                <p class="error" data-testid="fault-error">{ e }</p>
            }
        </section>
    }
}

#[function_component(Faults)]
pub fn faults(props: &FaultsProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    if state.real.is_some() {
        return real_faults(props, &state);
    }
    // The toolbox acts on the simulated world (the real one is above).
    let Some(Driver::Sim(s)) = &state.lesson else {
        return html! {};
    };
    let s = s.borrow();
    let (clients, nodes, master) = (s.clients(), s.nodes(), s.master());
    let fire = |fault: Fault, label: String, testid: &'static str, disabled: bool| {
        let oninject = props.oninject.clone();
        html! {
            <button class="fault" data-testid={ testid } {disabled} onclick={ move |_| oninject.emit(fault.clone()) }>{ label }</button>
        }
    };
    let body = html! {
        <>
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
        </>
    };
    toolbox(lang, body, state.notice.as_deref())
}
