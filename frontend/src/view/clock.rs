//! The node's clock: where it stands and buttons to move it forward.

use yew::prelude::*;

use crate::i18n::seconds;
use crate::i18n::Text;
use crate::state::{AppContext, CLOCK_STEPS_MS};

#[derive(Properties, PartialEq)]
pub struct ClockProps {
    pub onadvance: Callback<u64>,
    pub onreset: Callback<()>,
}

#[function_component(Clock)]
pub fn clock(props: &ClockProps) -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    // Real time passes by itself: no buttons to move it.
    let (now, virtual_clock) = match (&state.lesson, &state.real) {
        (Some(s), _) => {
            let s = s.borrow();
            (s.now_ms(), s.has_virtual_clock())
        }
        (None, Some(r)) => (r.borrow().last_ms(), false),
        (None, None) => (state.lab.borrow().now_ms(), true),
    };
    html! {
        <div class="clock" data-testid="clock" title={ Text::ClockHint.get(lang) }>
            <span class="label">{ Text::Clock.get(lang) }</span>
            <span class="now" data-testid="clock-now" data-ms={ now.to_string() }>
                { format!("t = {}", seconds(now)) }
            </span>
            if !virtual_clock {
                <span class="hint" data-testid="clock-real">{ Text::RealClock.get(lang) }</span>
            }
            { for CLOCK_STEPS_MS.into_iter().filter(|_| virtual_clock).map(|ms| {
                let onadvance = props.onadvance.clone();
                html! {
                    <button data-testid={ format!("advance-{ms}") } onclick={ move |_| onadvance.emit(ms) }>
                        { format!("{} +{} {}", Text::Advance.get(lang), ms / 1000, Text::Seconds.get(lang)) }
                    </button>
                }
            }) }
            if state.lesson.is_none() && state.real.is_none() {
                <button class="quiet" data-testid="reset-lab" onclick={ props.onreset.reform(|_| ()) }>
                    { Text::ResetLab.get(lang) }
                </button>
            }
        </div>
    }
}
