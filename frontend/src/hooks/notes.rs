//! The presenter's side of the notes window ([`crate::notes`]): say where
//! the presenter is on the channel, at every move and when a notes window
//! asks.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use yew::prelude::*;

use crate::i18n::Lang;
use crate::notes::{Sync, CHANNEL};

/// Keep the notes windows told: `lesson` (with `step` steps played) in
/// `lang`. A browser without `BroadcastChannel` has no notes window;
/// nothing else changes.
#[hook]
pub fn use_notes_sync(lesson: Option<String>, step: usize, lang: Lang) {
    let at = use_mut_ref(|| None::<Sync>);
    let channel = use_mut_ref(|| None::<(web_sys::BroadcastChannel, Closure<dyn FnMut(web_sys::MessageEvent)>)>);
    {
        let (at, channel) = (at.clone(), channel.clone());
        use_effect_with((), move |_| {
            if let Ok(ch) = web_sys::BroadcastChannel::new(CHANNEL) {
                let answer: Rc<RefCell<Option<Sync>>> = at;
                let post_to = ch.clone();
                let onmessage = Closure::<dyn FnMut(_)>::new(move |e: web_sys::MessageEvent| {
                    let hello = e.data().as_string().and_then(|l| Sync::parse(&l)) == Some(Sync::Hello);
                    if let (true, Some(now)) = (hello, answer.borrow().as_ref()) {
                        let _ = post_to.post_message(&JsValue::from_str(&now.to_line()));
                    }
                });
                ch.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
                *channel.borrow_mut() = Some((ch, onmessage));
            }
            move || {
                if let Some((ch, _)) = channel.borrow_mut().take() {
                    ch.set_onmessage(None);
                    ch.close();
                }
            }
        });
    }
    use_effect_with((lesson, step, lang), move |(lesson, step, lang)| {
        let now = lesson.clone().map(|lesson| Sync::At {
            lesson,
            step: *step,
            lang: *lang,
        });
        if let (Some(now), Some((ch, _))) = (&now, channel.borrow().as_ref()) {
            let _ = ch.post_message(&JsValue::from_str(&now.to_line()));
        }
        *at.borrow_mut() = now;
    });
}
