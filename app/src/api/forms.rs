//! The islands' one way to send a form (`/api/forms/post`): the fields the browser would post
//! without wasm, URL-encoded exactly as it would encode them, run by the same form layer
//! ([`crate::forms`]) — so a form behaves the same with and without the wasm, and the bundle
//! carries one server-function client for every form instead of one per action.

use leptos::prelude::*;
use server_fn::codec::Json;

use crate::error::AppError;

/// Runs a form an island posted in the background (`fields`: `application/x-www-form-urlencoded`,
/// the hidden `_target` and `_form` fields included); answers where the browser goes next.
/// Which role's forms a server takes, the caller's permissions and every field's validation are
/// the form layer's and the service layer's, as for a post without wasm.
#[server(prefix = "/api/forms", endpoint = "post", input = Json)]
pub async fn post_form(fields: String) -> Result<String, AppError> {
    let (state, parts) = crate::state::request_parts()?;
    let values = form_urlencoded::parse(fields.as_bytes()).into_owned().collect();
    super::respond(crate::forms::submit_in_background(state, parts, values).await)
}
