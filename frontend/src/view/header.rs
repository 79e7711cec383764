//! The top bar: name, driver switch (with what the real driver runs on),
//! language switch, shortcuts button.

use yew::prelude::*;

use crate::driver::real::SocketState;
use crate::i18n::{Lang, Text};
use crate::query::DriverKind;
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct HeaderProps {
    pub onlang: Callback<Lang>,
    pub onhelp: Callback<()>,
    pub ondriver: Callback<DriverKind>,
}

/// What the real driver is connected to: `redis 7.0.15 · managed single`.
fn real_badge(state: &AppContext) -> Html {
    let lang = state.lang;
    let Some(real) = &state.real else { return html! {} };
    let r = real.borrow();
    let (class, text) = match (&r.link, r.problem()) {
        (SocketState::Open, None) => {
            let version = r
                .run_info()
                .map(|(v, _)| v)
                .filter(|v| !v.is_empty())
                .or_else(|| r.health.as_ref().and_then(|h| h.version.clone()))
                // A lock service's run names itself ("etcd 3.4.23").
                .map_or_else(String::new, |v| {
                    if v.starts_with(|c: char| c.is_ascii_digit()) {
                        format!("redis {v}")
                    } else {
                        v
                    }
                });
            let topology = r.session.as_ref().map(|s| s.topology.to_string()).unwrap_or_default();
            let place = match r.health.as_ref() {
                Some(h) if h.is_external() => Text::RealExternalShort.get(lang).to_owned(),
                Some(_) => format!("{} {topology}", Text::RealManaged.get(lang)),
                None => topology,
            };
            let factor = r
                .run_info()
                .map(|(_, f)| f)
                .filter(|f| *f > 1)
                .map(|f| format!(" · {} ÷{f}", Text::RealTime.get(lang)));
            ("ok", format!("{version} · {place}{}", factor.unwrap_or_default()))
        }
        (SocketState::Open, Some(_)) => ("down", Text::RealRedisShort.get(lang).to_owned()),
        (SocketState::Connecting { .. }, _) => ("pending", Text::RealConnecting.get(lang).to_owned()),
        _ => ("down", Text::RealOffline.get(lang).to_owned()),
    };
    html! { <span class={ classes!("badge", "server", class) } data-testid="real-server" data-state={ class }>{ text }</span> }
}

#[function_component(Header)]
pub fn header(props: &HeaderProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    html! {
        <header class="topbar">
            <div class="brand">
                <span class="wordmark">{ "locklab" }</span>
                <span class="tagline">{ Text::Tagline.get(lang) }</span>
            </div>
            <div class="segmented driver" role="group" aria-label={ Text::DriverTitle.get(lang) }
                title={ Text::DriverTitle.get(lang) } data-testid="driver-switch" data-driver={ state.driver.code() }>
                { for DriverKind::ALL.into_iter().map(|d| {
                    let ondriver = props.ondriver.clone();
                    let label = match d { DriverKind::Sim => Text::DriverSim, DriverKind::Real => Text::DriverReal };
                    html! {
                        <button class={ classes!((d == state.driver).then_some("on")) } data-driver={ d.code() }
                            data-testid="driver" aria-pressed={ (d == state.driver).to_string() }
                            onclick={ move |_| ondriver.emit(d) }>{ label.get(lang) }</button>
                    }
                }) }
            </div>
            { real_badge(&state) }
            <div class="spacer" />
            <div class="segmented" role="group" aria-label={ Text::LangSwitchLabel.get(lang) } data-testid="lang-switch">
                { for Lang::ALL.into_iter().map(|l| {
                    let onlang = props.onlang.clone();
                    html! {
                        <button
                            class={ classes!((l == lang).then_some("on")) }
                            lang={ l.code() }
                            data-lang={ l.code() }
                            aria-pressed={ (l == lang).to_string() }
                            onclick={ move |_| onlang.emit(l) }
                        >{ l.native_name() }</button>
                    }
                }) }
            </div>
            <button class="help-button" data-testid="help-button" title={ Text::HelpButton.get(lang) }
                onclick={ props.onhelp.reform(|_| ()) }>{ "?" }</button>
        </header>
    }
}
