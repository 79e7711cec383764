//! The page's end of core's engine seam (`locklab_core::engine`): the
//! simulator lives in the engine's own wasm module, and this is how the
//! page reaches it.
//!
//! In the browser the engine module is fetched once, when the page first
//! plays on the simulator ([`load`]; `index.html` defines the loader), and
//! then called synchronously: a move goes in as JSON, the view comes back
//! as JSON. The page's module therefore links the seam's types and none of
//! the simulator, which is what keeps it small (`cargo xtask bloat`).
//! Natively (the page's unit tests) the same seam is core's own engine,
//! called directly but still through JSON, so the tests cross the same
//! wire the browser does.

use locklab_core::engine::{LabMove, LabView, Move, Open, SessionView};
use serde::de::DeserializeOwned;

fn decode<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| format!("the simulator's reply does not read: {e}"))
}

fn encode<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use yew::Callback;

    #[wasm_bindgen]
    extern "C" {
        /// The page's loader (`index.html`): imports the engine module once
        /// and sets `globalThis.locklabEngine` to it.
        #[wasm_bindgen(js_name = locklabLoadEngine, catch)]
        fn load_engine() -> Result<web_sys::js_sys::Promise, JsValue>;
    }

    #[wasm_bindgen]
    extern "C" {
        /// Either engine object, a lesson or the lab: both answer a move
        /// with the new view, as JSON, and keep memory in the engine's
        /// module until freed by hand.
        pub type EngineObject;
        #[wasm_bindgen(method, catch)]
        fn act(this: &EngineObject, m: &str) -> Result<String, JsValue>;
        #[wasm_bindgen(method)]
        fn view(this: &EngineObject) -> String;
        #[wasm_bindgen(method)]
        fn free(this: &EngineObject);
    }

    #[wasm_bindgen(js_namespace = locklabEngine)]
    extern "C" {
        #[wasm_bindgen(extends = EngineObject)]
        pub type LessonEngine;
        #[wasm_bindgen(constructor, catch)]
        pub fn new(open: &str) -> Result<LessonEngine, JsValue>;

        #[wasm_bindgen(extends = EngineObject)]
        pub type LabEngine;
        #[wasm_bindgen(constructor, catch)]
        pub fn new() -> Result<LabEngine, JsValue>;
    }

    /// What a JS failure says: a thrown string, or an `Error`'s message.
    fn text(e: JsValue) -> String {
        if let Some(s) = e.as_string() {
            return s;
        }
        match e.dyn_ref::<web_sys::js_sys::Error>() {
            Some(err) => String::from(err.message()),
            None => format!("{e:?}"),
        }
    }

    /// Is the engine module loaded?
    pub fn is_loaded() -> bool {
        let global = web_sys::js_sys::global();
        web_sys::js_sys::Reflect::get(&global, &JsValue::from_str("locklabEngine")).is_ok_and(|v| v.is_object())
    }

    /// Load the engine module; `done` hears once it is ready (or why not).
    pub fn load(done: Callback<Result<(), String>>) {
        if is_loaded() {
            done.emit(Ok(()));
            return;
        }
        let promise = match load_engine() {
            Ok(p) => p,
            Err(e) => return done.emit(Err(text(e))),
        };
        wasm_bindgen_futures::spawn_local(async move {
            let r = wasm_bindgen_futures::JsFuture::from(promise).await;
            done.emit(r.map(|_| ()).map_err(text));
        });
    }

    /// An engine object the page holds: freed when the page drops it, as
    /// JS will not.
    pub(super) struct Instance<E: AsRef<EngineObject>>(E);

    pub(super) type LessonInstance = Instance<LessonEngine>;
    pub(super) type LabInstance = Instance<LabEngine>;

    impl LessonInstance {
        pub(super) fn open(open: &str) -> Result<(LessonInstance, String), String> {
            Instance::made(LessonEngine::new(open))
        }
    }

    impl LabInstance {
        pub(super) fn open() -> Result<(LabInstance, String), String> {
            Instance::made(LabEngine::new())
        }
    }

    impl<E: AsRef<EngineObject>> Instance<E> {
        /// What a constructor made, with its first view.
        fn made(made: Result<E, JsValue>) -> Result<(Instance<E>, String), String> {
            let e = made.map_err(text)?;
            let view = e.as_ref().view();
            Ok((Instance(e), view))
        }

        pub(super) fn act(&mut self, m: &str) -> Result<String, String> {
            self.0.as_ref().act(m).map_err(text)
        }
    }

    impl<E: AsRef<EngineObject>> Drop for Instance<E> {
        fn drop(&mut self) {
            self.0.as_ref().free();
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use locklab_core::engine::{LabEngine, LessonEngine};

    use super::{decode, encode};

    /// Natively the engine is core, linked in: always loaded.
    pub fn is_loaded() -> bool {
        true
    }

    pub fn load(done: yew::Callback<Result<(), String>>) {
        done.emit(Ok(()));
    }

    pub(super) struct LessonInstance(LessonEngine);

    impl LessonInstance {
        pub(super) fn open(open: &str) -> Result<(LessonInstance, String), String> {
            let mut e = LessonEngine::open(decode(open)?)?;
            let view = encode(&e.view());
            Ok((LessonInstance(e), view))
        }

        pub(super) fn act(&mut self, m: &str) -> Result<String, String> {
            Ok(encode(&self.0.act(decode(m)?)))
        }
    }

    pub(super) struct LabInstance(LabEngine);

    impl LabInstance {
        pub(super) fn open() -> Result<(LabInstance, String), String> {
            let mut e = LabEngine::new();
            let view = encode(&e.view());
            Ok((LabInstance(e), view))
        }

        pub(super) fn act(&mut self, m: &str) -> Result<String, String> {
            Ok(encode(&self.0.act(decode(m)?)))
        }
    }
}

pub use imp::{is_loaded, load};

/// The page's handle on something in the engine (a lesson, the lab): until
/// the module has loaded it waits, with what is asked of it queued.
pub trait EngineHandle: Sized {
    /// Open it in the (now loaded) engine and carry out what was queued.
    fn connect(&mut self);

    /// `self`, opened at once if the engine is loaded, else left for
    /// [`EngineHandle::connect`] when it is.
    fn connected_if_loaded(mut self) -> Self {
        if is_loaded() {
            self.connect();
        }
        self
    }
}

/// A lesson session in the engine.
pub struct LessonLink(imp::LessonInstance);

impl LessonLink {
    pub fn open(open: &Open) -> Result<(LessonLink, SessionView), String> {
        let (link, view) = imp::LessonInstance::open(&encode(open))?;
        Ok((LessonLink(link), decode(&view)?))
    }

    pub fn act(&mut self, m: &Move) -> Result<SessionView, String> {
        decode(&self.0.act(&encode(m))?)
    }
}

/// The free lab in the engine.
pub struct LabLink(imp::LabInstance);

impl LabLink {
    pub fn open() -> Result<(LabLink, LabView), String> {
        let (link, view) = imp::LabInstance::open()?;
        Ok((LabLink(link), decode(&view)?))
    }

    pub fn act(&mut self, m: &LabMove) -> Result<LabView, String> {
        decode(&self.0.act(&encode(m))?)
    }
}
