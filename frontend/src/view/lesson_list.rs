//! The lesson list from the lesson files, grouped by theme, each with the
//! article it comes from (seed and section), and its interview score once
//! the user has predicted some of its steps.

use yew::prelude::*;

use crate::catalog::{self, Theme};
use crate::hooks::score::{self as stored, use_score_changes};
use crate::i18n::Text;
use crate::state::AppContext;

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
    // On the real driver: the lessons this backend cannot play, and why.
    let health = state.real.as_ref().and_then(|r| r.borrow().health.clone());
    let sim_only = |id: &str| -> Option<String> {
        let h = health.as_ref()?;
        if h.lessons.iter().any(|l| l == id) {
            return None;
        }
        Some(
            h.unsupported
                .get(id)
                .cloned()
                .unwrap_or_else(|| Text::RealSimOnly.get(lang).to_owned()),
        )
    };
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
                            let why_not = sim_only(&l.id);
                            html! {
                                <li>
                                    <button
                                        class={ classes!("lesson", selected.then_some("selected"), why_not.is_some().then_some("sim-only")) }
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
                                        if let Some(why) = why_not {
                                            <span class="sim-only" data-testid="sim-only" title={ why }>{ Text::RealSimOnly.get(lang) }</span>
                                        }
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
