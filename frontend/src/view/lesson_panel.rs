//! The selected lesson's title and the step transport.

use yew::prelude::*;

use crate::catalog;
use crate::i18n::Text;
use crate::state::{AppContext, Transport};

#[derive(Properties, PartialEq)]
pub struct LessonPanelProps {
    pub onmove: Callback<Transport>,
}

#[function_component(LessonPanel)]
pub fn lesson_panel(props: &LessonPanelProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let lesson = state.lesson.as_deref().and_then(catalog::find);
    let button = |t: Transport, label: &'static str, title: Text| {
        let onmove = props.onmove.clone();
        html! {
            <button class="transport" title={ title.get(lang) } disabled={ lesson.is_none() }
                onclick={ move |_| onmove.emit(t) }>{ label }</button>
        }
    };
    html! {
        <section class="lesson-panel" data-testid="lesson-panel">
            <div class="lesson-heading">
                { match lesson {
                    Some(l) => html! {
                        <h1 data-testid="lesson-title" data-lesson={ l.id }>
                            <span class="id">{ l.id }</span>{ l.title(lang) }
                        </h1>
                    },
                    None => html! { <h1 class="muted">{ Text::PickLesson.get(lang) }</h1> },
                } }
                <p class="note">{ Text::LessonsSoon.get(lang) }</p>
            </div>
            <div class="transport-row">
                { button(Transport::Home, "⇤", Text::HelpHome) }
                { button(Transport::Back, "←", Text::HelpBack) }
                { button(Transport::TogglePlay, if state.playing { "❚❚" } else { "▶" }, Text::HelpPlay) }
                { button(Transport::Forward, "→", Text::HelpForward) }
                if let Some(step) = &state.step {
                    <span class="step-name" data-testid="step-name">{ step }</span>
                }
            </div>
        </section>
    }
}
