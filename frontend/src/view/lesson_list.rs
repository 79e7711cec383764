//! The lesson list from the lesson files, grouped by theme, each with the
//! article it comes from (seed and section), and its interview score once
//! the user has predicted some of its steps.

use yew::prelude::*;

use crate::catalog::{self, Theme};
use crate::i18n::Text;
use crate::state::AppContext;
use crate::view::score::{self as stored, use_score_changes};

#[derive(Properties, PartialEq)]
pub struct LessonListProps {
    pub onselect: Callback<String>,
    pub onclose: Callback<()>,
}

#[function_component(LessonList)]
pub fn lesson_list(props: &LessonListProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let current = state.lesson_id();
    use_score_changes();
    html! {
        <nav class="lessons" data-testid="lesson-list">
            <h2>{ Text::Lessons.get(lang) }</h2>
            <button class={ classes!("lesson", "free", current.is_none().then_some("selected")) }
                data-testid="free-lab" onclick={ props.onclose.reform(|_| ()) }>
                <span class="title">{ Text::FreeLab.get(lang) }</span>
            </button>
            { for Theme::ALL.into_iter().map(|theme| html! {
                <section class="theme" data-theme={ catalog::theme_slug(theme) }>
                    <h3>{ catalog::theme_title(theme, lang) }</h3>
                    <ul>
                        { for catalog::by_theme(theme).map(|l| {
                            let selected = current.as_deref() == Some(l.id.as_str());
                            let id = l.id.clone();
                            html! {
                                <li>
                                    <button
                                        class={ classes!("lesson", selected.then_some("selected")) }
                                        data-testid="lesson-item"
                                        data-lesson={ l.id.clone() }
                                        aria-current={ selected.then_some("true") }
                                        title={ catalog::text(&l.title, lang).to_owned() }
                                        onclick={ props.onselect.reform(move |_| id.clone()) }
                                    >
                                        <span class="id">{ &l.id }</span>
                                        <span class="title">{ catalog::text(&l.title, lang) }</span>
                                        if let Some(score) = stored::load(&l.id).label() {
                                            <span class="lesson-score" data-testid="lesson-score"
                                                title={ Text::Score.get(lang) }>{ score }</span>
                                        }
                                        <span class="source" data-testid="lesson-source">{ catalog::source_label(l, lang) }</span>
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
