//! The top bar: name, driver badge, language switch, shortcuts button.

use yew::prelude::*;

use crate::i18n::{Lang, Text};
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct HeaderProps {
    pub onlang: Callback<Lang>,
    pub onhelp: Callback<()>,
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
            <span class="badge driver" data-testid="driver-badge" title={ Text::DriverTitle.get(lang) }>
                { Text::DriverSim.get(lang) }
            </span>
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
