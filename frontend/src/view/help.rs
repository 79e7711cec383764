//! The keyboard shortcuts overlay (`?`).

use yew::prelude::*;

use crate::i18n::Text;
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct HelpProps {
    pub onclose: Callback<()>,
}

#[function_component(Help)]
pub fn help(props: &HelpProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let rows = [
        ("Space", Text::HelpPlay),
        ("←", Text::HelpBack),
        ("→", Text::HelpForward),
        ("Home", Text::HelpHome),
        ("End", Text::HelpEnd),
        ("Shift+← →", Text::HelpPan),
        ("?", Text::HelpHelp),
        ("Esc", Text::HelpClose),
        ("↑ ↓", Text::HelpHistory),
        ("Enter", Text::HelpRun),
    ];
    let onclose = props.onclose.clone();
    html! {
        <div class="overlay" onclick={ onclose.reform(|_| ()) }>
            <div class="dialog" role="dialog" aria-modal="true" data-testid="help"
                onclick={ |e: MouseEvent| e.stop_propagation() }>
                <h2>{ Text::HelpTitle.get(lang) }</h2>
                <table>
                    { for rows.into_iter().map(|(key, text)| html! {
                        <tr><td><kbd>{ key }</kbd></td><td>{ text.get(lang) }</td></tr>
                    }) }
                </table>
                <p class="note">{ Text::HelpStepsNote.get(lang) }</p>
                <button onclick={ onclose.reform(|_| ()) }>{ Text::Close.get(lang) }</button>
            </div>
        </div>
    }
}
