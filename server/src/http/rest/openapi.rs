//! The OpenAPI 3.1 document of the REST API, listing exactly the operations the server mounts
//! (feature areas that are switched off are left out).

use app::state::{AppState, RoleSettings};
use serde_json::{Map, Value, json};

/// One documented operation.
#[derive(Clone, Debug)]
pub struct Operation {
    /// Lower-case HTTP method.
    pub method: &'static str,
    /// Path under `/api/v1`, OpenAPI style (`{name}`).
    pub path: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Request body schema name, if any.
    pub body: Option<&'static str>,
    /// Success status and response schema.
    pub ok: (u16, Value),
}

fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The operations mounted for `state`'s role and feature switches.
pub fn operations(state: &AppState) -> Vec<Operation> {
    let mut ops = vec![
        Operation {
            method: "get",
            path: "/auth/me",
            summary: "Who the server thinks is calling",
            body: None,
            ok: (200, schema("AuthMe")),
        },
        Operation {
            method: "get",
            path: "/auth/login",
            summary: "Start sign-in (?returnTo=/path): redirects to the identity provider; 503 without OIDC",
            body: None,
            ok: (303, json!({})),
        },
        Operation {
            method: "get",
            path: "/auth/callback",
            summary: "The identity provider's redirect back; starts the session",
            body: None,
            ok: (200, json!({})),
        },
        Operation {
            method: "post",
            path: "/auth/logout",
            summary: "End the session; answers {endSessionUrl} (or redirects a browser form post)",
            body: None,
            ok: (200, json!({ "type": "object", "properties": { "endSessionUrl": { "type": ["string", "null"] } } })),
        },
    ];
    if let RoleSettings::Fleet(fleet) = &state.role {
        if fleet.cluster_tenants_enabled {
            ops.extend([
                Operation {
                    method: "get",
                    path: "/cluster-tenants",
                    summary: "All ClusterTenants, oldest first (optional ?limit=&offset=; X-Total-Count header)",
                    body: None,
                    ok: (200, json!({ "type": "array", "items": schema("ClusterTenant") })),
                },
                Operation {
                    method: "post",
                    path: "/cluster-tenants",
                    summary: "Create a ClusterTenant (phase pending) with its first Owner",
                    body: Some("ClusterTenantCreateRequest"),
                    ok: (201, schema("ClusterTenant")),
                },
                Operation {
                    method: "get",
                    path: "/cluster-tenants/{name}",
                    summary: "One ClusterTenant",
                    body: None,
                    ok: (200, schema("ClusterTenant")),
                },
                Operation {
                    method: "put",
                    path: "/cluster-tenants/{name}",
                    summary: "Update the desired state; absent fields keep their value",
                    body: Some("ClusterTenantUpdateRequest"),
                    ok: (200, schema("ClusterTenant")),
                },
                Operation {
                    method: "delete",
                    path: "/cluster-tenants/{name}",
                    summary: "Start deleting a ClusterTenant: the silo is torn down in order and the database kept or deleted per terminationPolicy; the resource answers 404 when done",
                    body: None,
                    ok: (202, json!({ "type": "object", "properties": { "name": { "type": "string" }, "status": { "const": "deleting" }, "terminationPolicy": { "enum": ["Retain", "Delete"] } } })),
                },
                Operation {
                    method: "get",
                    path: "/cluster-tenants/{name}/provisioning",
                    summary: "The provisioning checklist: every step with its state, reason, message, action and timing",
                    body: None,
                    ok: (200, schema("ProvisioningView")),
                },
                Operation {
                    method: "post",
                    path: "/cluster-tenants/{name}/retry",
                    summary: "Retry one failed step ({step}) or every step ({})",
                    body: Some("RetryRequest"),
                    ok: (202, json!({ "type": "object", "properties": { "name": { "type": "string" }, "status": { "const": "retrying" } } })),
                },
                Operation {
                    method: "get",
                    path: "/cluster-tenants/{name}/status",
                    summary: "Observed status only",
                    body: None,
                    ok: (200, schema("ClusterTenantStatus")),
                },
            ]);
        }
        if fleet.billing_enabled {
            ops.extend([
                Operation {
                    method: "post",
                    path: "/billing-accounts",
                    summary: "Create (201) or update (200) the caller's billing account",
                    body: Some("BillingAccountRequest"),
                    ok: (200, schema("BillingAccount")),
                },
                Operation {
                    method: "get",
                    path: "/billing-accounts/me",
                    summary: "The caller's billing account (404 BILLING_ACCOUNT_NOT_FOUND)",
                    body: None,
                    ok: (200, schema("BillingAccount")),
                },
            ]);
        }
    }
    ops.push(Operation {
        method: "get",
        path: "/openapi.json",
        summary: "This document",
        body: None,
        ok: (200, json!({ "type": "object" })),
    });
    ops
}

fn components() -> Value {
    let text = json!({ "type": "string" });
    let opt_text = json!({ "type": ["string", "null"] });
    let count = json!({ "type": ["integer", "null"], "minimum": 0, "maximum": app::model::cluster_tenant::MAX_COUNT });
    let tier = json!({ "type": "string", "enum": ["shared", "dedicatedNodes", "dedicatedCluster"] });
    let quota = json!({
        "type": "object", "additionalProperties": false,
        "properties": {
            "cpu": { "type": "string", "description": "Kubernetes quantity, e.g. 500m or 8" },
            "memory": { "type": "string", "description": "Kubernetes quantity, e.g. 32Gi" },
            "pods": count, "storage": { "type": "string" }, "gpu": count
        }
    });
    let compute = json!({
        "type": "object", "additionalProperties": false, "required": ["mode"],
        "properties": {
            "mode": { "type": "string", "enum": ["shared", "dedicated"] },
            "nodePool": { "type": ["string", "null"], "description": "Required when mode is dedicated; a label value" }
        }
    });
    let step_ids: Vec<&str> = app::model::provisioning::StepId::ALL.iter().map(|s| s.as_str()).collect();
    let step_states = ["pending", "running", "done", "failed", "skipped", "removing", "removed", "retained"];
    let phase = json!({ "type": "string", "enum": app::model::cluster_tenant::Phase::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>() });
    json!({
        "schemas": {
            "Error": {
                "type": "object", "required": ["error", "code", "requestId"],
                "properties": {
                    "error": text, "code": text, "requestId": text,
                    "fields": { "type": "object", "additionalProperties": { "type": "string" }, "description": "Field path → message" }
                }
            },
            "Quota": quota,
            "Compute": compute,
            "ClusterTenantCreateRequest": {
                "type": "object", "additionalProperties": false,
                "required": ["name", "displayName", "isolationTier", "compute", "resources"],
                "properties": {
                    "name": { "type": "string", "pattern": "^[a-z]([-a-z0-9]{0,51}[a-z0-9])?$", "description": "DNS label starting with a letter, at most 53 characters; namespace opencrane-<name>" },
                    "displayName": { "type": "string", "minLength": 1, "maxLength": 128 },
                    "vanityDomain": opt_text,
                    "isolationTier": tier,
                    "compute": schema("Compute"),
                    "resources": { "type": "object", "required": ["quota"], "properties": { "quota": schema("Quota") } },
    "seatCap": count,
                    "terminationPolicy": { "enum": ["Retain", "Delete"], "description": "What deletion does with the database; default Retain" },
                    "siloVersion": opt_text,
                    "suspended": { "type": "boolean" },
                    "owner": { "type": "object", "properties": { "subject": text, "email": opt_text }, "description": "First Owner; defaults to the signed-in person, required for token callers" }
                }
            },
            "ClusterTenantUpdateRequest": {
                "type": "object", "additionalProperties": false,
                "properties": {
                    "displayName": text, "vanityDomain": opt_text, "isolationTier": tier,
                    "compute": schema("Compute"),
                    "resources": { "type": "object", "properties": { "quota": schema("Quota") } },
                    "seatCap": count,
                    "terminationPolicy": { "enum": ["Retain", "Delete"] },
                    "siloVersion": opt_text,
                    "suspended": { "type": "boolean", "description": "true scales the silo to zero and blocks its sign-ins; false resumes" }
                }
            },
            "RetryRequest": {
                "type": "object", "additionalProperties": false,
                "properties": { "step": { "enum": step_ids } }
            },
            "ProvisioningView": {
                "type": "object", "required": ["name", "phase", "converged", "steps", "asOf"],
                "properties": {
                    "name": text, "phase": phase.clone(), "message": text, "siloUrl": text, "provisioner": text,
                    "converged": { "type": "boolean" },
                    "retained": { "type": "array", "items": text },
                    "asOf": { "type": "string", "format": "date-time" },
                    "steps": { "type": "array", "items": {
                        "type": "object", "required": ["step", "state", "reason", "message"],
                        "properties": {
                            "step": { "enum": step_ids }, "state": { "enum": step_states },
                            "reason": text, "message": text, "action": text,
                            "startedAt": { "type": "string", "format": "date-time" },
                            "finishedAt": { "type": "string", "format": "date-time" }
                        }
                    } }
                }
            },
            "ClusterTenantStatus": {
                "type": "object", "required": ["phase"],
                "properties": {
                    "phase": phase,
                    "message": text, "boundNamespace": text, "provisioner": text, "siloUrl": text,
                    "generation": { "type": "integer" }, "observedGeneration": { "type": "integer" },
                    "retained": { "type": "array", "items": text, "description": "What the teardown kept" }
                }
            },
            "ClusterTenant": {
                "type": "object",
                "required": ["name", "displayName", "isolationTier", "compute", "resources", "status", "createdAt", "updatedAt"],
                "properties": {
                    "name": text, "displayName": text, "vanityDomain": text, "isolationTier": tier,
                    "compute": schema("Compute"),
                    "resources": { "type": "object", "properties": { "quota": schema("Quota") } },
                    "seatCap": { "type": "integer" }, "seatsUsed": { "type": "integer" },
                    "zitadel": { "type": "object", "properties": { "clientId": opt_text, "orgId": opt_text, "redirectUri": opt_text } },
                    "suspended": { "type": "boolean" },
                    "terminationPolicy": { "enum": ["Retain", "Delete"] },
                    "siloVersion": text,
                    "status": schema("ClusterTenantStatus"),
                    "createdAt": { "type": "string", "format": "date-time" },
                    "updatedAt": { "type": "string", "format": "date-time" }
                }
            },
            "BillingAccountRequest": { "type": "object", "additionalProperties": false, "properties": { "displayName": opt_text } },
            "BillingAccount": {
                "type": "object",
                "properties": {
                    "id": text, "subject": text, "email": opt_text, "displayName": opt_text,
                    "createdAt": { "type": "string", "format": "date-time" }, "updatedAt": { "type": "string", "format": "date-time" }
                }
            },
            "AuthMe": {
                "type": "object",
                "properties": {
                    "mode": { "type": "string", "enum": ["development", "oidc", "token"] },
                    "authenticated": { "type": "boolean" },
                    "user": { "type": ["object", "null"] }
                }
            }
        },
        "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
    })
}

/// The document for `state`'s role.
pub fn document(state: &AppState) -> Value {
    let mut paths = Map::new();
    for op in operations(state) {
        let mut operation = json!({
            "summary": op.summary,
            "responses": {
                op.ok.0.to_string(): { "description": "Success", "content": { "application/json": { "schema": op.ok.1 } } },
                "default": { "description": "Error envelope", "content": { "application/json": { "schema": schema("Error") } } }
            }
        });
        if let Some(body) = op.body {
            operation["requestBody"] =
                json!({ "required": true, "content": { "application/json": { "schema": schema(body) } } });
        }
        if op.path.contains("{name}") {
            operation["parameters"] =
                json!([{ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } }]);
        }
        let entry = paths.entry(format!("/api/v1{}", op.path)).or_insert_with(|| json!({}));
        entry[op.method] = operation;
    }
    let title = match state.role() {
        app::Role::Fleet => "OpenCrane Fleet Manager API",
        app::Role::Silo => "OpenCrane ClusterTenant Manager API",
    };
    json!({
        "openapi": "3.1.0",
        "info": { "title": title, "version": app::VERSION },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": components()
    })
}
