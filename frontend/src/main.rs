//! The wasm entry point. Natively there is no page to render into, so the
//! binary does nothing: it exists so the workspace builds on every target.

fn main() {
    #[cfg(target_arch = "wasm32")]
    locklab_frontend::run();
}
