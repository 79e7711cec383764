//! The console: one redis-cli per client, in tabs. In the free lab they
//! share one node; in a lesson each tab is one of the lesson's actors on the
//! lesson's own world, so the user can go off script between steps.

use web_sys::HtmlInputElement;
use yew::prelude::*;

use crate::editor::LineEditor;
use crate::i18n::Text;
use crate::lab::Client;
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct ConsoleProps {
    /// A line was entered on a client's console.
    pub onrun: Callback<(usize, String)>,
    /// A client's tab was chosen.
    pub onselect: Callback<usize>,
}

#[function_component(Console)]
// long: a Yew view: its hooks and callbacks, then one html! tree
pub fn console(props: &ConsoleProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let tab = state.active;
    let editor = use_state(LineEditor::default);
    let input_ref = use_node_ref();
    let screen_ref = use_node_ref();

    // Keep the newest reply in view, as a terminal does.
    {
        let screen_ref = screen_ref.clone();
        use_effect_with((state.rev, tab), move |_| {
            if let Some(screen) = screen_ref.cast::<web_sys::Element>() {
                screen.set_scroll_top(screen.scroll_height());
            }
        });
    }

    // Tabs, prompt, history and transcript: the lesson's actors or the lab's clients.
    let (tabs, prompt, history, transcript) = match (&state.lesson, &state.real) {
        (Some(s), _) => {
            let s = s.borrow();
            let tab = tab.min(s.actors().len().saturating_sub(1));
            (
                s.actors().to_vec(),
                s.prompt(),
                s.history(tab).to_vec(),
                s.transcript(tab),
            )
        }
        (None, Some(r)) => {
            let r = r.borrow();
            let c = Client::from_index(tab).letter();
            let tabs = Client::ALL.iter().map(|c| c.letter().to_owned()).collect();
            (
                tabs,
                crate::driver::real::PROMPT.to_owned(),
                r.client_history(c).to_vec(),
                r.free_transcript(c),
            )
        }
        (None, None) => {
            let lab = state.lab.borrow();
            let c = Client::from_index(tab);
            let tabs = Client::ALL.iter().map(|c| c.letter().to_owned()).collect();
            let mut rows = lab.transcript(c).to_vec();
            // The engine module failed to load: say so where the replies go.
            rows.extend(lab.error.as_ref().map(|e| crate::lab::Exchange {
                prompt: String::new(),
                line: String::new(),
                output: format!("(error) {e}"),
                at_ms: 0,
            }));
            (tabs, lab.prompt(c), lab.history(c).to_vec(), rows)
        }
    };
    let tab = tab.min(tabs.len().saturating_sub(1));
    let hint = match (state.real.is_some(), state.lesson.is_some()) {
        (true, _) => Text::RealConsoleHint,
        (false, true) => Text::ConsoleLessonHint,
        (false, false) => Text::ConsoleHint,
    };

    let oninput = {
        let editor = editor.clone();
        Callback::from(move |e: InputEvent| {
            let mut next = (*editor).clone();
            next.edit(e.target_unchecked_into::<HtmlInputElement>().value());
            editor.set(next);
        })
    };
    let onkeydown = {
        let editor = editor.clone();
        let onrun = props.onrun.clone();
        Callback::from(move |e: KeyboardEvent| {
            let mut next = (*editor).clone();
            match e.key().as_str() {
                "Enter" => {
                    e.prevent_default();
                    onrun.emit((tab, next.submit()));
                }
                "ArrowUp" => {
                    e.prevent_default();
                    next.up(&history);
                }
                "ArrowDown" => {
                    e.prevent_default();
                    next.down(&history);
                }
                _ => return,
            }
            editor.set(next);
        })
    };
    let focus_input = {
        let input_ref = input_ref.clone();
        Callback::from(move |_: MouseEvent| {
            // Leave a text selection alone: people copy replies out.
            let selecting = web_sys::window()
                .and_then(|w| w.get_selection().ok().flatten())
                .is_some_and(|s| !s.is_collapsed());
            if selecting {
                return;
            }
            if let Some(input) = input_ref.cast::<HtmlInputElement>() {
                let _ = input.focus();
            }
        })
    };

    html! {
        <section class="console" data-testid="console" data-client={ tabs.get(tab).cloned() }>
            <div class="console-head">
                <h2>{ Text::Console.get(lang) }</h2>
                <div class="tabs" role="tablist">
                    { for tabs.iter().enumerate().map(|(c, name)| {
                        let onselect = props.onselect.clone();
                        let input_ref = input_ref.clone();
                        html! {
                            <button role="tab"
                                class={ classes!("tab", format!("client-{c}"), (c == tab).then_some("on")) }
                                data-testid="console-tab" data-client={ name.clone() }
                                aria-selected={ (c == tab).to_string() }
                                onclick={ move |_| {
                                    onselect.emit(c);
                                    if let Some(input) = input_ref.cast::<HtmlInputElement>() {
                                        let _ = input.focus();
                                    }
                                } }
                            >{ if name.chars().count() <= 2 { format!("{} {name}", Text::Client.get(lang)) } else { name.clone() } }</button>
                        }
                    }) }
                </div>
                <span class="hint">{ hint.get(lang) }</span>
            </div>
            <div class="screen" ref={ screen_ref } onclick={ focus_input }>
                { for transcript.iter().map(|x| html! {
                    <div class="exchange">
                        <div class="typed" data-testid="console-command">
                            <span class="prompt">{ &x.prompt }</span>{ &x.line }
                        </div>
                        if !x.output.is_empty() {
                            <pre class={ classes!("reply", x.output.starts_with("(error)").then_some("error")) }
                                data-testid="console-reply">{ &x.output }</pre>
                        }
                    </div>
                }) }
                <div class="input-line">
                    <label class="prompt" for="console-input">{ prompt }</label>
                    <input id="console-input" ref={ input_ref } data-testid="console-input"
                        type="text" autocomplete="off" spellcheck="false" autocapitalize="off"
                        placeholder={ Text::ConsolePlaceholder.get(lang) }
                        value={ editor.text.clone() } {oninput} {onkeydown} />
                </div>
            </div>
        </section>
    }
}
