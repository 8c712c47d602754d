//! The hydrate entry point, compiled to wasm32.
//!
//! Pages of both roles are rendered on the server by `FleetApp` or `SiloApp`; in islands mode
//! nothing is mounted as a whole. The server marks the role on `<body data-role>`, and
//! `hydrate_islands` wakes exactly the islands that role's page contains — a fleet page has no
//! silo islands to wake and vice versa. Every island of both roles is compiled into this one
//! bundle (they share the component kit), so one `/pkg/opencrane.wasm` serves either role.

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
