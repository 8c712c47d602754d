//! The one error type that crosses the wire, for server functions and the REST API alike.
//!
//! It carries what a user or client can act on — which field is wrong, what conflicts, what is
//! not allowed — and never internal detail: database and I/O failures become
//! [`AppError::Internal`] with only the request id, after the cause has been logged on the server.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use server_fn::{
    ServerFnError,
    codec::JsonEncoding,
    error::{FromServerFnError, ServerFnErrorErr},
};

/// Per-field messages, keyed by the field's JSON path (`name`, `compute.nodePool`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FieldErrors(pub BTreeMap<String, String>);

impl FieldErrors {
    /// No errors yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `message` for `field` unless the field already has one (the first problem found
    /// is the one worth fixing first).
    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.entry(field.into()).or_insert_with(|| message.into());
    }

    /// Records the error of a rule check, if any.
    pub fn check(&mut self, field: &str, result: Result<(), String>) {
        if let Err(message) = result {
            self.add(field, message);
        }
    }

    /// The message for `field`.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.0.get(field).map(String::as_str)
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(value)` when empty, otherwise `Err(self)`.
    pub fn into_result<T>(self, value: T) -> Result<T, Self> {
        if self.is_empty() { Ok(value) } else { Err(self) }
    }
}

/// Everything that can go wrong in a request, as the caller sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum AppError {
    /// The input is invalid; every offending field has a message.
    #[error("{}", summary(fields))]
    Validation {
        /// Field path → message.
        fields: FieldErrors,
    },
    /// The thing asked for does not exist (or the caller may not know it exists).
    #[error("{message}")]
    NotFound {
        /// Machine-readable code, e.g. `CLUSTER_TENANT_NOT_FOUND`.
        code: String,
        /// Sentence for people.
        message: String,
    },
    /// The request conflicts with stored state (duplicate name, last owner, …).
    #[error("{message}")]
    Conflict {
        /// Machine-readable code, e.g. `CONFLICT` or `LAST_OWNER`.
        code: String,
        /// Sentence for people.
        message: String,
        /// The field the conflict is about, when there is one.
        field: Option<String>,
    },
    /// Well-formed, but this installation cannot do it (e.g. an unavailable isolation tier).
    #[error("{message}")]
    Unprocessable {
        /// Machine-readable code, e.g. `TIER_UNAVAILABLE`.
        code: String,
        /// Sentence for people.
        message: String,
        /// The field concerned.
        field: Option<String>,
    },
    /// The request itself is unusable (not the fields of a form: a missing body, a key that is
    /// not a key); 400 with a code of its own.
    #[error("{message}")]
    BadRequest {
        /// Machine-readable code, e.g. `INVALID_REQUEST`.
        code: String,
        /// Sentence for people.
        message: String,
        /// The field concerned.
        field: Option<String>,
    },
    /// A system this one depends on (Zitadel) could not be reached; 502.
    #[error("{message}")]
    Upstream {
        /// Machine-readable code, e.g. `ZITADEL_UNREACHABLE`.
        code: String,
        /// Sentence for people (names the system, never a secret).
        message: String,
    },
    /// Nobody is signed in.
    #[error("Sign-in required.")]
    Unauthorized,
    /// Signed in, but not allowed.
    #[error("{message}")]
    Forbidden {
        /// Machine-readable code, e.g. `FORBIDDEN_NOT_PLATFORM_OPERATOR`.
        code: String,
        /// Sentence for people.
        message: String,
    },
    /// A dependency (the database) is down; retrying later may work.
    #[error("The service is temporarily unavailable. Try again in a moment (request {request_id}).")]
    Unavailable {
        /// Correlates with the server log.
        request_id: String,
    },
    /// A bug or unexpected state; details are in the server log under this request id.
    #[error("Something went wrong on our side (request {request_id}).")]
    Internal {
        /// Correlates with the server log.
        request_id: String,
    },
    /// The call did not reach the server or its answer could not be read (client side only).
    #[error("Could not reach the server: {message}")]
    Transport {
        /// What the transport reported.
        message: String,
    },
}

fn summary(fields: &FieldErrors) -> String {
    match fields.0.iter().next() {
        Some((field, message)) if fields.0.len() == 1 => format!("{field}: {message}"),
        Some((field, message)) => format!("{field}: {message} (and {} more)", fields.0.len() - 1),
        None => "Invalid input.".into(),
    }
}

impl AppError {
    /// A validation error for one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut fields = FieldErrors::new();
        fields.add(field, message);
        Self::Validation { fields }
    }

    /// The machine-readable code of the `{error, code}` envelope.
    pub fn code(&self) -> &str {
        match self {
            Self::Validation { .. } => "VALIDATION_ERROR",
            Self::NotFound { code, .. }
            | Self::Conflict { code, .. }
            | Self::Unprocessable { code, .. }
            | Self::BadRequest { code, .. }
            | Self::Upstream { code, .. }
            | Self::Forbidden { code, .. } => code,
            Self::Unauthorized => "UNAUTHORIZED",
            Self::Unavailable { .. } => "SERVICE_UNAVAILABLE",
            Self::Internal { .. } => "INTERNAL_ERROR",
            Self::Transport { .. } => "TRANSPORT_ERROR",
        }
    }

    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Validation { .. } | Self::BadRequest { .. } => 400,
            Self::Upstream { .. } => 502,
            Self::Unauthorized => 401,
            Self::Forbidden { .. } => 403,
            Self::NotFound { .. } => 404,
            Self::Conflict { .. } => 409,
            Self::Unprocessable { .. } => 422,
            Self::Unavailable { .. } => 503,
            Self::Internal { .. } | Self::Transport { .. } => 500,
        }
    }

    /// Per-field messages: those of a validation error, or the one field a conflict names.
    pub fn field_errors(&self) -> FieldErrors {
        match self {
            Self::Validation { fields } => fields.clone(),
            Self::Conflict { field: Some(field), message, .. }
            | Self::Unprocessable { field: Some(field), message, .. }
            | Self::BadRequest { field: Some(field), message, .. } => {
                let mut fields = FieldErrors::new();
                fields.add(field.clone(), message.clone());
                fields
            }
            _ => FieldErrors::new(),
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        use ServerFnErrorErr as E;
        match value {
            // The server could not decode the arguments: the client sent something malformed.
            E::Args(message) | E::MissingArg(message) => Self::field("request", message),
            other => Self::Transport { message: other.to_string() },
        }
    }

    /// Reads an error a server function answered with (in the browser). The derived, internally
    /// tagged `Deserialize` buffers the object and then dispatches on `kind`: the largest single
    /// function of the wasm bundle (29 KB); this reads one flat object and picks the variant.
    /// `every_variant_round_trips_through_the_wire` keeps the two in step.
    fn de(data: server_fn::Bytes) -> Self {
        /// Every variant's fields at once (the `kind` tag names which apply).
        #[derive(Deserialize)]
        struct Wire {
            kind: String,
            #[serde(default)]
            fields: FieldErrors,
            code: Option<String>,
            message: Option<String>,
            field: Option<String>,
            request_id: Option<String>,
        }
        let wire = match serde_json::from_slice::<Wire>(&data) {
            Ok(wire) => wire,
            Err(e) => return Self::from_server_fn_error(ServerFnErrorErr::Deserialization(e.to_string())),
        };
        let (code, message, field) = (wire.code.unwrap_or_default(), wire.message.unwrap_or_default(), wire.field);
        let request_id = wire.request_id.unwrap_or_default();
        match wire.kind.as_str() {
            "validation" => Self::Validation { fields: wire.fields },
            "notFound" => Self::NotFound { code, message },
            "conflict" => Self::Conflict { code, message, field },
            "unprocessable" => Self::Unprocessable { code, message, field },
            "badRequest" => Self::BadRequest { code, message, field },
            "upstream" => Self::Upstream { code, message },
            "unauthorized" => Self::Unauthorized,
            "forbidden" => Self::Forbidden { code, message },
            "unavailable" => Self::Unavailable { request_id },
            "internal" => Self::Internal { request_id },
            "transport" => Self::Transport { message },
            other => Self::Transport { message: format!("the server answered with an unknown error ({other})") },
        }
    }
}

impl From<ServerFnError> for AppError {
    fn from(value: ServerFnError) -> Self {
        Self::Transport { message: value.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_statuses_follow_the_reference_envelope() {
        assert_eq!(AppError::field("name", "x").code(), "VALIDATION_ERROR");
        assert_eq!(AppError::field("name", "x").status(), 400);
        assert_eq!(AppError::Unauthorized.status(), 401);
        let conflict =
            AppError::Conflict { code: "CONFLICT".into(), message: "dup".into(), field: Some("name".into()) };
        assert_eq!((conflict.code(), conflict.status()), ("CONFLICT", 409));
        assert_eq!(conflict.field_errors().get("name"), Some("dup"));
        assert_eq!(AppError::Internal { request_id: "r1".into() }.status(), 500);
    }

    #[test]
    fn internal_errors_show_only_the_request_id() {
        let text = AppError::Internal { request_id: "abc".into() }.to_string();
        assert_eq!(text, "Something went wrong on our side (request abc).");
    }

    #[test]
    fn round_trips_through_its_wire_encoding() {
        let mut fields = FieldErrors::new();
        fields.add("name", "Name is required.");
        fields.add("name", "ignored: first message wins");
        let err = AppError::Validation { fields };
        let bytes = err.ser();
        assert_eq!(AppError::de(bytes), err);
        assert_eq!(err.to_string(), "name: Name is required.");
    }

    #[test]
    fn every_variant_round_trips_through_the_wire() {
        let (code, message) = (|| "SOME_CODE".to_owned(), || "A sentence.".to_owned());
        let field = || Some("name".to_owned());
        let all = [
            AppError::field("name", "Name is required."),
            AppError::NotFound { code: code(), message: message() },
            AppError::Conflict { code: code(), message: message(), field: field() },
            AppError::Conflict { code: code(), message: message(), field: None },
            AppError::Unprocessable { code: code(), message: message(), field: field() },
            AppError::BadRequest { code: code(), message: message(), field: field() },
            AppError::Upstream { code: code(), message: message() },
            AppError::Unauthorized,
            AppError::Forbidden { code: code(), message: message() },
            AppError::Unavailable { request_id: "r1".into() },
            AppError::Internal { request_id: "r2".into() },
            AppError::Transport { message: message() },
        ];
        for err in all {
            // What the derived encoding writes, read back by the browser's reader and by the derive.
            assert_eq!(AppError::de(err.ser()), err);
            assert_eq!(serde_json::from_slice::<AppError>(&err.ser()).unwrap(), err);
        }
        assert!(matches!(AppError::de("not json".into()), AppError::Transport { .. }));
        assert!(matches!(AppError::de(r#"{"kind":"mystery"}"#.into()), AppError::Transport { .. }));
    }
}
