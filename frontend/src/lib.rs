//! The hydrate entry point, compiled to wasm32.
//!
//! Pages of both roles are rendered on the server by `FleetApp` or `SiloApp`; in islands mode
//! nothing is mounted as a whole, and `hydrate_islands` wakes the islands the page contains.
//! The crate is built once per role (feature `fleet` or `silo`): a bundle holds only its role's
//! islands (the other role's are plain components there, never exported), and each role's pages
//! load their own (`/pkg/opencrane-fleet.*`, `/pkg/opencrane-silo.*`, see `app::bundle`).

// The islands are `#[wasm_bindgen]` exports inside `app`; this keeps the crate linked in.
extern crate app as _;

use wasm_bindgen::prelude::wasm_bindgen;

/// Called by the island loader script once the module is instantiated.
#[wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
    // A live page says so (`<body data-hydrated>`): tests tell it from one still waiting for its wasm.
    if let Some(body) = leptos::prelude::document().body() {
        let _ = body.set_attribute("data-hydrated", "");
    }
}
