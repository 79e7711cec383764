//! The lesson list, grouped by theme.

use yew::prelude::*;

use crate::catalog::{self, Theme};
use crate::i18n::Text;
use crate::state::AppContext;

#[derive(Properties, PartialEq)]
pub struct LessonListProps {
    pub onselect: Callback<String>,
}

#[function_component(LessonList)]
pub fn lesson_list(props: &LessonListProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    html! {
        <nav class="lessons" data-testid="lesson-list">
            <h2>{ Text::Lessons.get(lang) }</h2>
            { for Theme::ALL.into_iter().map(|theme| html! {
                <section class="theme" data-theme={ theme.slug() }>
                    <h3>{ theme.title(lang) }</h3>
                    <ul>
                        { for catalog::by_theme(theme).map(|l| {
                            let selected = state.lesson.as_deref() == Some(l.id);
                            let id = l.id.to_owned();
                            html! {
                                <li>
                                    <button
                                        class={ classes!("lesson", selected.then_some("selected")) }
                                        data-testid="lesson-item"
                                        data-lesson={ l.id }
                                        aria-current={ selected.then_some("true") }
                                        onclick={ props.onselect.reform(move |_| id.clone()) }
                                    >
                                        <span class="id">{ l.id }</span>
                                        <span class="title">{ l.title(lang) }</span>
                                    </button>
                                </li>
                            }
                        }) }
                    </ul>
                </section>
            }) }
        </nav>
    }
}
