//! Lesson sessions and the free lab, for the page: core's engine seam
//! (`locklab_core::engine`) as two JavaScript classes.
//!
//! The page calls these synchronously once the module is loaded (see
//! `frontend/src/engine.rs`): a move is a few milliseconds of simulation,
//! and a step that answers at once keeps the page's driver as simple as
//! it was when the simulator was linked into the page. Moves and views are
//! JSON of core's serde types; a move that does not parse is an error
//! string, never a panic.

use locklab_core::engine::{self, LabMove, Move, Open};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;

fn read<T: DeserializeOwned>(what: &str, json: &str) -> Result<T, JsValue> {
    serde_json::from_str(json).map_err(|e| JsValue::from_str(&format!("{what}: {e}")))
}

fn write<T: Serialize>(view: &T) -> String {
    serde_json::to_string(view).unwrap_or_default()
}

/// A lesson being played on the simulator.
#[wasm_bindgen]
pub struct LessonEngine {
    inner: engine::LessonEngine,
}

#[wasm_bindgen]
impl LessonEngine {
    /// Open a lesson (JSON of core's `Open`: the lesson, a seed, a step).
    #[wasm_bindgen(constructor)]
    pub fn new(open: &str) -> Result<LessonEngine, JsValue> {
        let open: Open = read("open", open)?;
        let inner = engine::LessonEngine::open(open).map_err(|e| JsValue::from_str(&e))?;
        Ok(LessonEngine { inner })
    }

    /// What the page shows now (JSON of core's `SessionView`).
    pub fn view(&mut self) -> String {
        write(&self.inner.view())
    }

    /// Carry out a move (JSON of core's `Move`) and say what the page shows.
    pub fn act(&mut self, m: &str) -> Result<String, JsValue> {
        let m: Move = read("move", m)?;
        Ok(write(&self.inner.act(m)))
    }
}

/// The free-play lab: three redis-cli sessions on one node.
#[wasm_bindgen]
pub struct LabEngine {
    inner: engine::LabEngine,
}

#[wasm_bindgen]
impl LabEngine {
    #[wasm_bindgen(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> LabEngine {
        LabEngine {
            inner: engine::LabEngine::new(),
        }
    }

    /// What the page shows now (JSON of core's `LabView`).
    pub fn view(&mut self) -> String {
        write(&self.inner.view())
    }

    /// Carry out a move (JSON of core's `LabMove`) and say what the page shows.
    pub fn act(&mut self, m: &str) -> Result<String, JsValue> {
        let m: LabMove = read("move", m)?;
        Ok(write(&self.inner.act(m)))
    }
}
