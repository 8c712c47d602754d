//! The REST API's error envelope, `{error, code, requestId, fields?}`, and the JSON body
//! extractor whose decoding errors name the offending field.

use app::{
    error::{AppError, FieldErrors},
    state::{Caller, REQUEST_ID_HEADER},
};
use axum::{
    Json,
    body::Bytes,
    extract::{FromRequest, Request},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::de::DeserializeOwned;
use serde_json::json;

/// An [`AppError`] on its way out of a REST handler.
#[derive(Debug)]
pub struct ApiError {
    /// What went wrong.
    pub error: AppError,
    /// The request's id, repeated in the body so it survives copy-paste into a ticket.
    pub request_id: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        envelope(status, self.error.code(), &self.error.to_string(), &self.request_id, &self.error.field_errors())
    }
}

/// Builds an error response in the envelope.
pub fn envelope(status: StatusCode, code: &str, message: &str, request_id: &str, fields: &FieldErrors) -> Response {
    let mut body = json!({ "error": message, "code": code, "requestId": request_id });
    if !fields.is_empty() {
        body["fields"] = json!(fields);
    }
    (status, Json(body)).into_response()
}

/// Attaches the caller's request id to a service result.
pub trait ApiResult<T> {
    /// Converts the error side into an [`ApiError`].
    fn api(self, caller: &Caller) -> Result<T, ApiError>;
}

impl<T> ApiResult<T> for Result<T, AppError> {
    fn api(self, caller: &Caller) -> Result<T, ApiError> {
        self.map_err(|error| ApiError { error, request_id: caller.request_id.clone() })
    }
}

/// The request id the request-id layer assigned.
pub fn request_id_of(req: &Request) -> String {
    req.headers().get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned()
}

/// A JSON 404 in the envelope (also used by the role guard and unknown API paths).
pub fn not_found_response(req: &Request) -> ApiError {
    ApiError {
        error: AppError::NotFound { code: "NOT_FOUND".into(), message: "Not found.".into() },
        request_id: request_id_of(req),
    }
}

/// Fallback for unknown paths under `/api/v1`.
pub async fn api_not_found(req: Request) -> ApiError {
    not_found_response(&req)
}

/// A JSON request body. Unlike `axum::Json`, a decoding failure answers in the envelope and says
/// which field is wrong (`compute.mode: unknown variant …`).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let request_id = request_id_of(&req);
        let reject = |field: &str, message: String| {
            ApiError { error: AppError::field(field, message), request_id: request_id.clone() }.into_response()
        };
        let is_json =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|ct| {
                ct.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !is_json {
            return Err(reject("body", "Send a JSON body with Content-Type: application/json.".into()));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(IntoResponse::into_response)?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        match serde_path_to_error::deserialize(&mut de) {
            Ok(value) => Ok(Self(value)),
            Err(err) => {
                let path = err.path().to_string();
                let field = if path == "." { "body".to_owned() } else { path };
                Err(reject(&field, err.into_inner().to_string()))
            }
        }
    }
}
