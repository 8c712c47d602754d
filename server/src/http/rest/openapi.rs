//! The OpenAPI 3.1 document of the REST API, listing exactly the operations the server mounts
//! (feature areas that are switched off are left out).

use app::{
    model::{
        fleet::{
            billing::{BillingAccount, BillingOverview, PlanAssignment, PlanView, StatementView},
            cluster_tenant::{ClusterTenant, ClusterTenantStatus},
            dns::{DnsHostView, PlatformDnsView},
            members::{InvitationChange, InvitationView, MemberChange, MemberView},
            provisioning::ProvisioningView,
            usage::UsageDay,
        },
        session::AccessTokenView,
        silo::{
            BudgetOverview, ByokOutcome, ByokStatus, CredentialView, DefaultView, DeploymentView, EffectiveAccess,
            GrantView, GroupView, KeyStatus, LimitView, PolicyView, RouteTest, SiloSettingsView, TokenUsage, UserView,
            WhatIf,
        },
    },
    state::{AppState, RoleSettings},
};
use schemars::{JsonSchema, SchemaGenerator};
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

/// The generator of the wire types' schemas: JSON Schema 2020-12 (OpenAPI 3.1's dialect), each
/// type once under `#/components/schemas/`, as the server serialises it (the generated schemas
/// describe answers; the requests' are written, with the original's spellings).
fn generator() -> SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| s.definitions_path = "#/components/schemas/".into())
        .into_generator()
}

/// The schema of `T` (a `$ref` to its component for a named type), from the type itself.
fn typed<T: JsonSchema>(schemas: &mut SchemaGenerator) -> Value {
    schemas.subschema_for::<T>().to_value()
}

/// A list of `T`.
fn list_of<T: JsonSchema>(schemas: &mut SchemaGenerator) -> Value {
    json!({ "type": "array", "items": typed::<T>(schemas) })
}

/// The operations mounted for `state`'s role and feature switches.
pub fn operations(state: &AppState) -> Vec<Operation> {
    operations_with(state, &mut generator())
}

/// [`operations`], their response schemas generated into `schemas`.
fn operations_with(state: &AppState, schemas: &mut SchemaGenerator) -> Vec<Operation> {
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
        Operation {
            method: "get",
            path: "/audit",
            summary: "The audit log, newest first (?actor=&action=<prefix>&outcome=&limit=1..1000&cursor=): {data, pagination: {limit, hasMore, nextCursor}}; Link rel=next",
            body: None,
            ok: (200, schema("AuditPage")),
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
                    ok: (200, json!({ "type": "array", "items": typed::<ClusterTenant>(schemas) })),
                },
                Operation {
                    method: "post",
                    path: "/cluster-tenants",
                    summary: "Create a ClusterTenant (phase pending) with its first Owner; a name whose deleted customer's data was kept answers 409 NAME_RETAINED (operators may re-attach with reattachRetained)",
                    body: Some("ClusterTenantCreateRequest"),
                    ok: (201, typed::<ClusterTenant>(schemas)),
                },
                Operation {
                    method: "get",
                    path: "/cluster-tenants/{name}",
                    summary: "One ClusterTenant",
                    body: None,
                    ok: (200, typed::<ClusterTenant>(schemas)),
                },
                Operation {
                    method: "put",
                    path: "/cluster-tenants/{name}",
                    summary: "Update the desired state; absent fields keep their value. Suspension, quota, seats, tier, compute, version and retention are platform operators' (403 FORBIDDEN_NOT_PLATFORM_OPERATOR for a customer's own admins)",
                    body: Some("ClusterTenantUpdateRequest"),
                    ok: (200, typed::<ClusterTenant>(schemas)),
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
                    ok: (200, typed::<ProvisioningView>(schemas)),
                },
                op(
                    "get",
                    "/cluster-tenants/{name}/members",
                    "The customer's members, owners first (owners, admins and operators)",
                    None,
                    200,
                    json!({ "type": "array", "items": typed::<MemberView>(schemas) }),
                ),
                op(
                    "post",
                    "/cluster-tenants/{name}/members",
                    "Add a member (takes a seat: 409 SEAT_CAP_EXCEEDED when none is free) or change a role (201 created, 200 changed; only owners give or take Owner; 409 LAST_OWNER). With {email, role} and no subject: invite that person (201 {email, role, status: invited, invitedBy, createdAt, created}; no seat until their first sign-in with the address verified)",
                    Some("MemberRequest"),
                    201,
                    json!({ "oneOf": [typed::<MemberChange>(schemas), typed::<InvitationChange>(schemas)] }),
                ),
                op(
                    "delete",
                    "/cluster-tenants/{name}/members/{subject}",
                    "Remove a member (404 MEMBERSHIP_NOT_FOUND, 409 LAST_OWNER)",
                    None,
                    200,
                    json!({ "type": "object", "properties": { "subject": { "type": "string" }, "status": { "const": "removed" } } }),
                ),
                op(
                    "post",
                    "/cluster-tenants/{name}/members/{subject}/suspend",
                    "Suspend a member: no access, the seat is freed (409 LAST_OWNER for the last active owner)",
                    None,
                    200,
                    typed::<MemberView>(schemas),
                ),
                op(
                    "get",
                    "/cluster-tenants/{name}/invitations",
                    "The customer's pending invitations, oldest first",
                    None,
                    200,
                    json!({ "type": "array", "items": typed::<InvitationView>(schemas) }),
                ),
                op(
                    "delete",
                    "/cluster-tenants/{name}/invitations/{email}",
                    "Withdraw a pending invitation (404 INVITATION_NOT_FOUND)",
                    None,
                    200,
                    json!({ "type": "object", "properties": { "email": { "type": "string" }, "status": { "const": "cancelled" } } }),
                ),
                op(
                    "post",
                    "/cluster-tenants/{name}/members/{subject}/reactivate",
                    "Reactivate a member: takes a seat again (409 SEAT_CAP_EXCEEDED when none is free)",
                    None,
                    200,
                    typed::<MemberView>(schemas),
                ),
                op(
                    "post",
                    "/cluster-tenants/{name}/refresh",
                    "Check the customer's DNS records (at the zone's authoritative nameservers) and the certificates its hosts serve now (probing: false when the fleet has no base domain or ingress address: nothing is checked)",
                    None,
                    200,
                    json!({ "type": "object", "properties": { "name": { "type": "string" }, "phase": { "type": "string" }, "probing": { "type": "boolean" }, "dns": { "type": "array", "items": typed::<DnsHostView>(schemas) } } }),
                ),
                Operation {
                    method: "post",
                    path: "/cluster-tenants/{name}/retry",
                    summary: "Retry one failed step ({step}) or every step ({})",
                    body: Some("RetryRequest"),
                    ok: (202, json!({ "type": "object", "properties": { "name": { "type": "string" }, "status": { "const": "retrying" } } })),
                },
                Operation {
                    method: "post",
                    path: "/cluster-tenants/{name}/silo-credential/rotate",
                    summary: "Operators: revoke the silo's own credential for the fleet now; the provisioner installs a new one",
                    body: None,
                    ok: (
                        202,
                        json!({ "type": "object", "properties": {
                            "name": { "type": "string" },
                            "status": { "const": "rotating" },
                            "revoked": { "type": "boolean" }
                        } }),
                    ),
                },
                Operation {
                    method: "get",
                    path: "/cluster-tenants/{name}/status",
                    summary: "Observed status only",
                    body: None,
                    ok: (200, typed::<ClusterTenantStatus>(schemas)),
                },
            ]);
        }
        let rotation = json!({ "type": "object", "properties": {
            "id": { "type": "string" }, "method": { "enum": ["upload", "minted"] },
            "state": { "enum": ["prepared", "active", "done", "cancelled"] },
            "keyId": { "type": "string" }, "previousKeyId": { "type": ["string", "null"] },
            "revokeAfter": { "type": ["string", "null"], "format": "date-time" }
        } });
        ops.extend([
            Operation {
                method: "get",
                path: "/platform/dns",
                summary: "Operators: the platform's cert-manager ACME ClusterIssuer as the cluster has it (its Ready condition; the token only as tokenSet/tokenChangedAt)",
                body: None,
                ok: (200, typed::<PlatformDnsView>(schemas)),
            },
            Operation {
                method: "put",
                path: "/platform/dns",
                summary: "Operators: write the DNS-01 issuer and its solver Secret opencrane-dns01-<provider> (400 naming provider, zone or email; 422 DNS_PROVIDER_MISCONFIGURED; 409 ISSUER_NOT_MANAGED when the chart owns the issuer)",
                body: Some("PlatformDnsRequest"),
                ok: (200, typed::<PlatformDnsView>(schemas)),
            },
            Operation {
                method: "get",
                path: "/admin/zitadel",
                summary: "Operators: the Zitadel key in use (id, user, expiry, last token exchange), banners, the rotation under way",
                body: None,
                ok: (200, json!({ "type": "object" })),
            },
            Operation {
                method: "post",
                path: "/admin/zitadel/sa-key:rotate",
                summary: "Operators: validate, persist and use a new service-account key (422 {rotated:false, validation}; 409 SECRET_PERSISTENCE_NOT_CONFIGURED; 502 ZITADEL_UNREACHABLE)",
                body: Some("RotateRequest"),
                ok: (200, json!({ "type": "object", "properties": {
                    "rotated": { "type": "boolean" }, "keyId": { "type": "string" },
                    "previousKeyId": { "type": "string" }, "validation": { "type": "object" }
                } })),
            },
            Operation {
                method: "post",
                path: "/admin/zitadel/sa-key:prepare",
                summary: "Operators: mint a new key through Zitadel, validate and persist it (not yet in use)",
                body: None,
                ok: (201, rotation.clone()),
            },
            Operation {
                method: "post",
                path: "/admin/zitadel/sa-key:activate",
                summary: "Operators: put the prepared key into use; the old one is revoked after the grace period",
                body: None,
                ok: (200, rotation.clone()),
            },
            Operation {
                method: "post",
                path: "/admin/zitadel/sa-key:revoke",
                summary: "Operators: revoke the old key now (cut the grace period short)",
                body: None,
                ok: (200, rotation.clone()),
            },
            Operation {
                method: "post",
                path: "/admin/zitadel/sa-key:cancel",
                summary: "Operators: abandon a prepared rotation (its minted key is deleted)",
                body: None,
                ok: (200, rotation),
            },
            Operation {
                method: "post",
                path: "/admin/zitadel/reconcile",
                summary: "Operators: heal customers with incomplete Zitadel ids and adopt organisation users ({name?})",
                body: Some("ReconcileRequest"),
                ok: (200, json!({ "type": "object", "properties": {
                    "reconciled": { "type": "array" }, "skipped": { "type": "array" }, "failed": { "type": "array" },
                    "memberAdoption": { "type": "array" }, "memberAdoptionFailed": { "type": "array" }
                } })),
            },
        ]);
        if fleet.billing_enabled {
            ops.extend([
                Operation {
                    method: "post",
                    path: "/billing-accounts",
                    summary: "Create (201) or update (200) the caller's billing account",
                    body: Some("BillingAccountRequest"),
                    ok: (200, typed::<BillingAccount>(schemas)),
                },
                Operation {
                    method: "get",
                    path: "/billing-accounts/me",
                    summary: "The caller's billing account (404 BILLING_ACCOUNT_NOT_FOUND)",
                    body: None,
                    ok: (200, typed::<BillingAccount>(schemas)),
                },
                op(
                    "get",
                    "/billing/{name}/usage",
                    "The customer's usage per day as its silo reported it (?from=&to=, the last 31 days by default): active seats, spend per model and currency (decimal strings), revision (operators, and the customer's owners and admins)",
                    None,
                    200,
                    list_of::<UsageDay>(schemas),
                ),
                op(
                    "get",
                    "/billing/{name}/usage/export",
                    "The usage days as a download (?format=csv|json&from=&to=): CSV one row per day and model, spreadsheet-safe",
                    None,
                    200,
                    list_of::<UsageDay>(schemas),
                ),
                op(
                    "get",
                    "/billing/{name}/statements/{month}/export",
                    "The statement as a download (?format=csv|json): CSV one row per line and the total, spreadsheet-safe",
                    None,
                    200,
                    typed::<StatementView>(schemas),
                ),
                op(
                    "get",
                    "/billing/customers",
                    "The billing overview of a month (?month=YYYY-MM&q=&plan=&status=&page=): every customer with the account that pays for it, its plan, the month so far and a linear forecast of its end, totals per currency and a six-month trend; unbilled and deleted customers included (operators: all; others: the customers they own or administer)",
                    None,
                    200,
                    typed::<BillingOverview>(schemas),
                ),
                op("get", "/billing/plans", "Billing plans (platform operators)", None, 200, list_of::<PlanView>(schemas)),
                op(
                    "post",
                    "/billing/plans",
                    "Define a plan: name, ISO 4217 currency, seat price per month, included seats, markup percent, optional monthly minimum (operators; 409 PLAN_EXISTS)",
                    Some("PlanRequest"),
                    201,
                    typed::<PlanView>(schemas),
                ),
                op(
                    "get",
                    "/billing/{name}/plan",
                    "The customer's plan history, oldest first (operators, and the customer's owners and admins)",
                    None,
                    200,
                    list_of::<PlanAssignment>(schemas),
                ),
                op(
                    "put",
                    "/billing/{name}/plan",
                    "Put the customer on a plan from a day of this month or later (operators; 422 CURRENCY_CHANGE_MID_MONTH)",
                    Some("AssignPlanRequest"),
                    200,
                    list_of::<PlanAssignment>(schemas),
                ),
                op(
                    "get",
                    "/billing/{name}/statements/{month}",
                    "The customer's statement for a month (YYYY-MM): seats prorated by seat-days, LLM spend with markup, minimum top-up, the correction of the final month before; each line with its usage days (final once frozen, else a draft from the usage held now)",
                    None,
                    200,
                    typed::<StatementView>(schemas),
                ),
                op(
                    "post",
                    "/billing/{name}/statements/{month}/finalise",
                    "Make a closed month's statement final: its numbers are frozen (operators; audited; 409 MONTH_OPEN, STATEMENT_FINAL); later usage corrections become a correction line on the next month",
                    None,
                    200,
                    typed::<StatementView>(schemas),
                ),
            ]);
        }
    }
    if matches!(state.role, RoleSettings::Silo(_)) {
        ops.extend(silo_operations(schemas));
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
    let count =
        json!({ "type": ["integer", "null"], "minimum": 0, "maximum": app::model::fleet::cluster_tenant::MAX_COUNT });
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
    let step_ids: Vec<&str> = app::model::fleet::provisioning::StepId::ALL.iter().map(|s| s.as_str()).collect();
    json!({
        "schemas": {
            "Error": {
                "type": "object", "required": ["error", "code", "requestId"],
                "properties": {
                    "error": text, "code": text, "requestId": text,
                    "fields": { "type": "object", "additionalProperties": { "type": "string" }, "description": "Field path → message" }
                }
            },
            "QuotaRequest": quota,
            "ComputeRequest": compute,
            "ClusterTenantCreateRequest": {
                "type": "object", "additionalProperties": false,
                "required": ["name", "displayName", "isolationTier", "compute", "resources"],
                "properties": {
                    "name": { "type": "string", "pattern": "^[a-z]([-a-z0-9]{0,51}[a-z0-9])?$", "description": "DNS label starting with a letter, at most 53 characters; namespace opencrane-<name>" },
                    "displayName": { "type": "string", "minLength": 1, "maxLength": 128 },
                    "vanityDomain": opt_text,
                    "isolationTier": tier,
                    "compute": schema("ComputeRequest"),
                    "resources": { "type": "object", "required": ["quota"], "properties": { "quota": schema("QuotaRequest") } },
    "seatCap": count,
                    "terminationPolicy": { "enum": ["Retain", "Delete"], "description": "What deletion does with the database; default Retain" },
                    "reattachRetained": { "type": "boolean", "description": "Platform operators only: give out a name held by a deleted customer's retained data and re-attach that data (audited)" },
                    "siloVersion": opt_text,
                    "suspended": { "type": "boolean" },
                    "owner": { "type": "object", "properties": { "subject": text, "email": opt_text }, "description": "First Owner; defaults to the signed-in person, required for token callers" }
                }
            },
            "MemberRequest": {
                "type": "object", "additionalProperties": false,
                "description": "A subject adds (or changes) a member; an e-mail address and no subject invites",
                "properties": {
                    "subject": { "type": "string", "maxLength": 255 },
                    "email": { "type": "string", "format": "email", "maxLength": 254 },
                    "role": { "type": "string", "description": "owner, admin or member (Owner/Admin/Member accepted); default member" }
                }
            },
            "ClusterTenantUpdateRequest": {
                "type": "object", "additionalProperties": false,
                "properties": {
                    "displayName": text, "vanityDomain": opt_text, "isolationTier": tier,
                    "compute": schema("ComputeRequest"),
                    "resources": { "type": "object", "properties": { "quota": schema("QuotaRequest") } },
                    "seatCap": count,
                    "terminationPolicy": { "enum": ["Retain", "Delete"] },
                    "siloVersion": opt_text,
                    "suspended": { "type": "boolean", "description": "true scales the silo to zero and blocks its sign-ins; false resumes" }
                }
            },
            "PlatformDnsRequest": {
                "type": "object",
                "required": ["provider", "zone", "email"],
                "properties": {
                    "provider": { "enum": ["cloudflare", "digitalocean", "route53", "clouddns", "rfc2136", "acmedns", "azuredns", "akamai", "webhook"] },
                    "zone": { "type": "string", "description": "the platform's DNS zone; the DNS-01 solver's dnsZones selector" },
                    "email": { "type": "string", "format": "email" },
                    "server": { "type": "string", "format": "uri", "description": "ACME directory (default Let's Encrypt production)" },
                    "issuerName": { "type": "string", "description": "must be the fleet's issuer (certManager.issuerName)" },
                    "apiToken": { "type": "string", "writeOnly": true, "description": "written to the solver Secret only; omitted keeps the token on file" },
                    "solverConfig": { "type": "object", "description": "the provider's solver block in cert-manager's field names" }
                }
            },
            "RetryRequest": {
                "type": "object", "additionalProperties": false,
                "properties": { "step": { "enum": step_ids } }
            },
            "BillingAccountRequest": { "type": "object", "additionalProperties": false, "properties": {
                "displayName": opt_text,
                "timeZone": { "type": ["string", "null"], "description": "IANA time zone its customers are billed in (kept when absent; UTC for a new account)" } } },
            "PlanRequest": { "type": "object", "additionalProperties": false, "required": ["name", "currency", "seatPrice"], "properties": {
                "name": { "type": "string", "minLength": 1, "maxLength": 80 }, "currency": { "type": "string", "pattern": "^[A-Z]{3}$" },
                "seatPrice": { "type": "string", "description": "Decimal, at most two places" }, "includedSeats": { "type": "integer", "minimum": 0 },
                "markupPercent": opt_text, "monthlyMinimum": opt_text } },
            "AssignPlanRequest": { "type": "object", "additionalProperties": false, "required": ["plan"], "properties": {
                "plan": { "type": "string", "description": "The plan's name or id" }, "effectiveFrom": { "type": ["string", "null"], "format": "date" } } },
            "RotateRequest": { "type": "object", "required": ["serviceAccountKey"], "properties": {
                "serviceAccountKey": { "type": ["object", "string"], "description": "Zitadel's JSON key file {type, keyId, key, userId, expirationDate}" }
            } },
            "ReconcileRequest": { "type": "object", "additionalProperties": false, "properties": { "name": opt_text } },
            "AuthMe": {
                "type": "object",
                "properties": {
                    "mode": { "type": "string", "enum": ["development", "oidc", "token"] },
                    "authenticated": { "type": "boolean" },
                    "user": { "type": ["object", "null"], "properties": {
                        "sub": text, "email": opt_text, "name": text, "isPlatformOperator": { "type": "boolean" },
                        "isOrgAdmin": { "type": "boolean" },
                        "ownedOrgs": { "type": "array", "items": { "type": "object", "properties": {
                            "clusterTenant": text, "role": { "enum": ["owner", "admin"] } } } } } },
                    "clusterTenant": { "type": "string", "description": "On a silo: its customer" }
                }
            },
            "AuditPage": {
                "type": "object",
                "properties": {
                    "data": { "type": "array", "items": { "type": "object", "properties": {
                        "id": { "type": "integer" }, "timestamp": { "type": "string", "format": "date-time" }, "actor": text,
                        "actorRole": text, "action": text, "resource": text, "tenant": opt_text,
                        "outcome": { "enum": ["success", "failure", "denied"] }, "requestId": opt_text, "message": text,
                        "metadata": { "type": "object" } } } },
                    "pagination": { "type": "object", "properties": {
                        "limit": { "type": "integer" }, "hasMore": { "type": "boolean" }, "nextCursor": opt_text } }
                }
            }
        },
        "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
    })
}

/// A stable, unique operation id: the method and the path's words (`get_tenants_by_name_spend`).
fn operation_id(method: &str, path: &str) -> String {
    let words: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => format!("by_{param}"),
            None => s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect(),
        })
        .collect();
    format!("{method}_{}", words.join("_"))
}

/// The operation's group: its path's first segment (`tenants`, `ai-budget`, `cluster-tenants`).
fn tag(path: &str) -> &str {
    path.split('/').find(|s| !s.is_empty()).unwrap_or("api")
}

/// The `{param}`s of an OpenAPI path, in order.
fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|segment| segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// The document for `state`'s role.
pub fn document(state: &AppState) -> Value {
    let mut schemas = generator();
    let mut paths = Map::new();
    for op in operations_with(state, &mut schemas) {
        // A `.csv` path answers CSV; everything else JSON.
        let media = if op.path.ends_with(".csv") { "text/csv" } else { "application/json" };
        let outcome = if op.ok.0 == 410 { "Retired: the answer names what replaces it" } else { "Success" };
        let mut operation = json!({
            "operationId": operation_id(op.method, op.path),
            "tags": [tag(op.path)],
            "summary": op.summary,
            "responses": {
                op.ok.0.to_string(): { "description": outcome, "content": { media: { "schema": op.ok.1 } } },
                "default": { "description": "Error envelope", "content": { "application/json": { "schema": schema("Error") } } }
            }
        });
        if op.ok.0 == 410 {
            operation["deprecated"] = json!(true);
        }
        if let Some(body) = op.body {
            operation["requestBody"] =
                json!({ "required": true, "content": { "application/json": { "schema": schema(body) } } });
        }
        let mut params: Vec<Value> = path_params(op.path)
            .map(|param| json!({ "name": param, "in": "path", "required": true, "schema": { "type": "string" } }))
            .collect();
        // Every list pages the same way (`super::page`).
        let is_list = op.method == "get" && op.ok.1.get("type").and_then(Value::as_str) == Some("array");
        if is_list {
            params.extend([
                json!({ "name": "limit", "in": "query", "required": false, "description": "At most this many (all when absent)",
                        "schema": { "type": "integer", "minimum": 1, "maximum": super::page::MAX_LIST_LIMIT } }),
                json!({ "name": "offset", "in": "query", "required": false, "description": "Skip this many",
                        "schema": { "type": "integer", "minimum": 0 } }),
            ]);
            operation["responses"][op.ok.0.to_string()]["headers"] = json!({
                "X-Total-Count": { "description": "How many there are in all", "schema": { "type": "integer" } },
                "Link": { "description": "RFC 8288 rel=\"next\" while more follow", "schema": { "type": "string" } }
            });
        }
        params.extend(query_parameters(op.method, op.path));
        if !params.is_empty() {
            operation["parameters"] = Value::Array(params);
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
        "components": with_generated(with_silo_schemas(components()), schemas.take_definitions(true))
    })
}

/// The query parameters an operation reads beside the lists' `limit` and `offset` (which every
/// list takes): the handlers' `params.get(…)`, declared here.
fn query_parameters(method: &str, path: &str) -> Vec<Value> {
    let text = || json!({ "type": "string" });
    let period = || json!({ "enum": ["day", "week", "month"], "default": "month" });
    let flag = || json!({ "type": "boolean", "default": false });
    let param = |name: &str, schema: Value, description: &str| json!({ "name": name, "in": "query", "required": false, "description": description, "schema": schema });
    match (method, path) {
        ("get", "/auth/login") => {
            vec![param("returnTo", text(), "A path on this server to come back to after signing in")]
        }
        ("get", "/tenants") => vec![
            param("q", text(), "Search in name, display name and e-mail"),
            param("team", text(), "Only this team"),
            param("phase", text(), "Only this runtime phase"),
            param("suspended", json!({ "type": "boolean" }), "Only suspended (true) or active (false) users"),
            param("page", json!({ "type": "integer", "minimum": 1 }), "The page of 50 (the original's paging)"),
        ],
        (
            "get",
            "/ai-budget" | "/ai-budget/{name}/spend" | "/spend/{name}" | "/ai-budget/spend.csv" | "/token-usage",
        ) => {
            vec![param("period", period(), "The calendar period to report, in the silo's time zone")]
        }
        ("post", "/tenants/repair" | "/policies/repair") => {
            vec![param("dryRun", flag(), "Only say what a repair would touch")]
        }
        ("get", "/audit") => vec![
            param("actor", text(), "Only this actor (subject)"),
            param("action", text(), "Only actions starting with this (e.g. tenant.)"),
            param("outcome", json!({ "enum": ["success", "denied", "failure"] }), "Only this outcome"),
            param(
                "limit",
                json!({ "type": "integer", "minimum": 1, "maximum": app::model::audit::MAX_AUDIT_LIMIT }),
                "At most this many",
            ),
            param("cursor", text(), "Continue after the page whose pagination.nextCursor this is"),
        ],
        ("get", "/billing/{name}/usage/export") => vec![
            param("format", json!({ "enum": ["csv", "json"], "default": "json" }), "The file's format"),
            param(
                "from",
                json!({ "type": "string", "format": "date" }),
                "The first day (default: 30 days before `to`)",
            ),
            param(
                "to",
                json!({ "type": "string", "format": "date" }),
                "The last day (default: today in the customer's billing time zone)",
            ),
        ],
        ("get", "/billing/customers") => vec![
            param("month", text(), "The calendar month, YYYY-MM (default: this month, UTC)"),
            param("q", text(), "Search in the customer's name and display name and its account's name"),
            param("plan", text(), "Only customers on this plan (`none`: on no plan)"),
            param(
                "status",
                json!({ "enum": ["billed", "unbilled", "draft", "final"] }),
                "Billed (a plan and an account), unbilled, or by the statement's state",
            ),
            param("page", json!({ "type": "integer", "minimum": 1 }), "The page of 50"),
        ],
        ("get", "/billing/{name}/statements/{month}/export") => {
            vec![param("format", json!({ "enum": ["csv", "json"], "default": "json" }), "The file's format")]
        }
        ("get", "/billing/{name}/usage") => vec![
            param(
                "from",
                json!({ "type": "string", "format": "date" }),
                "The first day (default: 30 days before `to`)",
            ),
            param(
                "to",
                json!({ "type": "string", "format": "date" }),
                "The last day (default: today in the customer's billing time zone)",
            ),
        ],
        ("delete", "/cluster-tenants/{name}") => vec![param(
            "terminationPolicy",
            json!({ "enum": ["Retain", "Delete"] }),
            "Override the customer's terminationPolicy for this deletion",
        )],
        _ => Vec::new(),
    }
}

fn op(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: Option<&'static str>,
    status: u16,
    ok: Value,
) -> Operation {
    Operation { method, path, summary, body, ok: (status, ok) }
}

/// The silo portal's operations (owners and admins of the silo only).
fn silo_operations(schemas: &mut SchemaGenerator) -> Vec<Operation> {
    let empty = || json!({});
    let user = typed::<UserView>(schemas);
    let users = list_of::<UserView>(schemas);
    let access = typed::<EffectiveAccess>(schemas);
    let group = typed::<GroupView>(schemas);
    let groups = list_of::<GroupView>(schemas);
    let policy = typed::<PolicyView>(schemas);
    let policies = list_of::<PolicyView>(schemas);
    let grant = typed::<GrantView>(schemas);
    let grants = list_of::<GrantView>(schemas);
    let what_if = typed::<WhatIf>(schemas);
    let overview = typed::<BudgetOverview>(schemas);
    let limit = typed::<LimitView>(schemas);
    let settings = typed::<SiloSettingsView>(schemas);
    let deployment = typed::<DeploymentView>(schemas);
    let deployments = list_of::<DeploymentView>(schemas);
    let default = typed::<DefaultView>(schemas);
    let route = typed::<RouteTest>(schemas);
    let credential = typed::<CredentialView>(schemas);
    let credentials = list_of::<CredentialView>(schemas);
    let key = typed::<KeyStatus>(schemas);
    let token = typed::<AccessTokenView>(schemas);
    let tokens = list_of::<AccessTokenView>(schemas);
    let byok = typed::<ByokOutcome>(schemas);
    let byok_status = list_of::<ByokStatus>(schemas);
    let chains = json!({ "type": "array", "items": { "type": "array", "prefixItems": [
        { "type": "string" }, { "type": "array", "items": { "type": "string" } }] } });
    let routing = json!({ "type": "object", "properties": {
        "defaults": { "type": "array", "items": default.clone() }, "fallbacks": chains.clone() } });
    let ceiling = json!({ "type": "object", "properties": {
        "currency": { "type": "string" }, "ceilingAmount": { "type": "string" }, "period": { "type": "string" },
        "set": { "type": "boolean" } } });
    let accounts = json!({ "type": "array", "items": { "type": "object", "properties": {
        "userId": { "type": "string" }, "currency": { "type": "string" }, "ceilingAmount": { "type": "string" },
        "period": { "type": "string" } } } });
    let drift = json!({ "type": "object", "properties": { "count": { "type": "integer" },
        "drift": { "type": "array", "items": { "type": "object", "properties": {
            "tenant": { "type": "string" }, "resource": { "type": ["string", "null"] }, "key": { "type": ["string", "null"] } } } } } });
    let policy_drift = json!({ "type": "object", "properties": { "count": { "type": "integer" },
        "drift": { "type": "array", "items": { "type": "object", "properties": {
            "policy": { "type": "string" }, "resource": { "type": "string" } } } } } });
    let spend = json!({ "type": "object", "properties": {
        "tenant": { "type": "string" }, "currency": { "type": "string" }, "spend": { "type": "string" },
        "period": { "type": "string" }, "periodStart": { "type": "string", "format": "date-time" },
        "periodEnd": { "type": "string", "format": "date-time" }, "ownLimit": { "type": ["string", "null"] } } });
    let created_token = json!({ "type": "object", "properties": {
        "id": { "type": "string" }, "plainTextToken": { "type": "string" }, "token": token.clone() } });
    vec![
        op(
            "get",
            "/tenants",
            "Users (?q=&team=&phase=&suspended=; &page=N: 50 per page, count in X-Total-Count)",
            None,
            200,
            users.clone(),
        ),
        op(
            "post",
            "/tenants",
            "Create a user → {name, status: \"created\", …}",
            Some("UserRequest"),
            201,
            user.clone(),
        ),
        op("get", "/tenants/{name}", "One user", None, 200, user.clone()),
        op(
            "put",
            "/tenants/{name}",
            "Change a user: only the members sent change; null clears team, policyRef, a resource or monthlyBudgetUsd",
            Some("UserPatch"),
            200,
            user.clone(),
        ),
        op("delete", "/tenants/{name}", "Delete a user (their spend history stays, unattributed)", None, 204, empty()),
        op(
            "post",
            "/tenants/{name}/suspend",
            "Suspend a user: their LiteLLM key is blocked and their sign-in sessions end",
            None,
            200,
            user.clone(),
        ),
        op("post", "/tenants/{name}/resume", "Resume a user", None, 200, user.clone()),
        op(
            "get",
            "/tenants/{name}/effective-access",
            "Every model, policy and limit that applies to the user, and why; their live sessions",
            None,
            200,
            access.clone(),
        ),
        op(
            "get",
            "/tenants/{name}/effective-contract",
            "The original's name of effective-access: the compiled view of what applies to the user",
            None,
            200,
            access.clone(),
        ),
        op(
            "get",
            "/tenants/drift",
            "Users whose Tenant resource or LiteLLM key differed from this database on the last pass: {count, drift: [{tenant, resource, key}]}",
            None,
            200,
            drift.clone(),
        ),
        op(
            "post",
            "/tenants/repair",
            "Ask the background loops to put every user's resource and key back now (?dryRun=true: only what they would touch) → 202 {requested, drift}",
            None,
            202,
            drift.clone(),
        ),
        op(
            "get",
            "/policies/drift",
            "Policies whose AccessPolicy resource differed from this database on the last pass: {count, drift: [{policy, resource}]} (always empty outside Kubernetes mode)",
            None,
            200,
            policy_drift.clone(),
        ),
        op(
            "post",
            "/policies/repair",
            "Ask the background loops to put every policy's AccessPolicy resource back now (?dryRun=true: only what they would touch) → 202 {requested, drift}",
            None,
            202,
            policy_drift.clone(),
        ),
        op(
            "get",
            "/ai-budget/{name}/spend",
            "A user's spend in the current calendar period (?period=) with their own limit",
            None,
            200,
            spend.clone(),
        ),
        op("get", "/spend/{name}", "The original's name of /ai-budget/{name}/spend", None, 200, spend.clone()),
        op(
            "get",
            "/token-usage",
            "Tokens and cost per user in the current calendar period (?period=), from LiteLLM's spend logs; sampledAt is the last read",
            None,
            200,
            list_of::<TokenUsage>(schemas),
        ),
        op(
            "get",
            "/ai-budget/{name}/litellm-key",
            "A user's LiteLLM key as last applied (never the key): blocked, models, maxBudget, drift (404 LITELLM_KEY_NOT_FOUND)",
            None,
            200,
            key.clone(),
        ),
        op(
            "post",
            "/ai-budget/{name}/litellm-key/revoke",
            "Revoke a user's LiteLLM key: the pass this asks for deletes it in LiteLLM and issues a new one → 202 with revokeRequestedAt (404 LITELLM_KEY_NOT_FOUND)",
            None,
            202,
            key.clone(),
        ),
        op("get", "/groups", "Groups with their members", None, 200, groups.clone()),
        op("post", "/groups", "Create a group", Some("GroupRequest"), 201, group.clone()),
        op("get", "/groups/{id}", "One group", None, 200, group.clone()),
        op("put", "/groups/{id}", "Change a group and replace its members", Some("GroupRequest"), 200, group.clone()),
        op("delete", "/groups/{id}", "Delete a group (its grants, limit and default go with it)", None, 204, empty()),
        op("get", "/policies", "Access policies", None, 200, policies.clone()),
        op("post", "/policies", "Create an access policy", Some("PolicyRequest"), 201, policy.clone()),
        op("get", "/policies/{name}", "One access policy", None, 200, policy.clone()),
        op(
            "put",
            "/policies/{name}",
            "Change an access policy: only the members sent change; null clears one",
            Some("PolicyRequest"),
            200,
            policy.clone(),
        ),
        op("delete", "/policies/{name}", "Delete a policy no user names (409 POLICY_IN_USE)", None, 204, empty()),
        op("get", "/grants", "Grants, newest first", None, 200, grants.clone()),
        op(
            "post",
            "/grants",
            "Allow or deny a payload to a tenant, user or group",
            Some("GrantRequest"),
            201,
            grant.clone(),
        ),
        op(
            "post",
            "/grants/preview",
            "What a grant would change (who gains or loses which model), without making it",
            Some("GrantRequest"),
            200,
            what_if.clone(),
        ),
        op("delete", "/grants/{id}", "Delete a grant", None, 204, empty()),
        op(
            "get",
            "/ai-budget",
            "Limits in their current calendar period, notices and spend (?period=day|week|month)",
            None,
            200,
            overview.clone(),
        ),
        op(
            "get",
            "/ai-budget/global",
            "The silo's monthly limit as {currency, ceilingAmount, set}",
            None,
            200,
            ceiling.clone(),
        ),
        op(
            "put",
            "/ai-budget/global",
            "Set the silo's monthly limit {currency, ceilingAmount} or {monthlyLimitUsd} (422 CURRENCY_MISMATCH when the silo budgets in another currency)",
            Some("GlobalCeiling"),
            204,
            empty(),
        ),
        op(
            "get",
            "/ai-budget/accounts",
            "The reference's per-account ceilings: each user's own limit {userId, currency, ceilingAmount, period}",
            None,
            200,
            accounts.clone(),
        ),
        op(
            "put",
            "/ai-budget/accounts/{name}",
            "Set a user's monthly limit {currency, ceilingAmount} or {monthlyLimitUsd}",
            Some("GlobalCeiling"),
            204,
            empty(),
        ),
        op("delete", "/ai-budget/accounts/{name}", "Remove a user's own limit", None, 204, empty()),
        op(
            "put",
            "/ai-budget/limits",
            "Set the limit of the silo, a group or a user",
            Some("LimitRequest"),
            200,
            limit.clone(),
        ),
        op("delete", "/ai-budget/limits/{id}", "Remove a limit", None, 204, empty()),
        op(
            "put",
            "/ai-budget/settings",
            "Silo settings: time zone of the periods, currency, default model access",
            Some("SiloSettings"),
            200,
            settings.clone(),
        ),
        op(
            "get",
            "/ai-budget/spend.csv",
            "Spend of the current period per user, group and model as CSV (?period=)",
            None,
            200,
            json!({ "type": "string" }),
        ),
        op("get", "/models", "Model deployments", None, 200, deployments.clone()),
        op(
            "post",
            "/models",
            "Add a deployment behind a public model name (also the original's publicModelName, providerCredentialId, isDefault)",
            Some("DeploymentRequest"),
            201,
            deployment.clone(),
        ),
        op("get", "/models/{id}", "One deployment", None, 200, deployment.clone()),
        op(
            "put",
            "/models/{id}",
            "Change a deployment: only the members sent change; isDefault: true makes its name the silo's default",
            Some("DeploymentRequest"),
            200,
            deployment.clone(),
        ),
        op("delete", "/models/{id}", "Remove a deployment", None, 204, empty()),
        op("get", "/model-routing/defaults", "Default models and fallback chains", None, 200, routing.clone()),
        op(
            "put",
            "/model-routing/defaults",
            "Set the default model of the silo (also scope global or clusterTenant), a group or a user",
            Some("DefaultRequest"),
            200,
            default.clone(),
        ),
        op("delete", "/model-routing/defaults/{id}", "Remove a default model", None, 204, empty()),
        op(
            "put",
            "/model-routing/fallbacks",
            "Set the fallback chain of a public model name",
            Some("FallbackRequest"),
            200,
            chains.clone(),
        ),
        op(
            "post",
            "/model-routing/test",
            "Which deployment would serve a user's request, and why",
            Some("RouteTestRequest"),
            200,
            route.clone(),
        ),
        op(
            "get",
            "/providers/credentials",
            "Provider credentials (never their secrets)",
            None,
            200,
            credentials.clone(),
        ),
        op(
            "post",
            "/providers/credentials",
            "Store a provider key (sealed; never returned), or a reference to the Kubernetes Secret holding it (secretRef: read at each pass, never stored)",
            Some("CredentialRequest"),
            201,
            credential.clone(),
        ),
        op(
            "get",
            "/providers/credentials/{id}",
            "One provider credential (never its secret)",
            None,
            200,
            credential.clone(),
        ),
        op(
            "put",
            "/providers/credentials/{id}",
            "Rotate a provider key {apiKey}, or point the credential at a Secret {secretRef}",
            Some("CredentialRequest"),
            200,
            credential.clone(),
        ),
        op(
            "delete",
            "/providers/credentials/{id}",
            "Delete a credential no deployment uses (409 CREDENTIAL_IN_USE)",
            None,
            204,
            empty(),
        ),
        op(
            "get",
            "/providers/byok",
            "Each provider's quick set-up: key stored (its last four characters), its models defined, what it defines",
            None,
            200,
            byok_status.clone(),
        ),
        op(
            "put",
            "/providers/byok/{provider}",
            "Paste one provider key: sealed into byok-<provider>, and the provider's default models (with auto and auto-embedding) defined where no deployment has their name",
            Some("ByokRequest"),
            200,
            byok.clone(),
        ),
        op(
            "delete",
            "/providers/byok/{provider}",
            "Remove what the quick set-up defined, never what an admin did (the key stays while an admin's deployments use it)",
            None,
            200,
            byok.clone(),
        ),
        op(
            "get",
            "/providers/keys",
            "Retired (410 ROUTE_RETIRED): the original's raw keys; use /providers/byok",
            None,
            410,
            schema("Error"),
        ),
        op(
            "get",
            "/providers/keys/{provider}",
            "Retired (410 ROUTE_RETIRED); use /providers/byok/{provider}",
            None,
            410,
            schema("Error"),
        ),
        op(
            "put",
            "/providers/keys/{provider}",
            "Retired (410 ROUTE_RETIRED); use PUT /providers/byok/{provider}",
            None,
            410,
            schema("Error"),
        ),
        op(
            "delete",
            "/providers/keys/{provider}",
            "Retired (410 ROUTE_RETIRED); use DELETE /providers/byok/{provider}",
            None,
            410,
            schema("Error"),
        ),
        op(
            "get",
            "/access-tokens",
            "The silo's access tokens (metadata only, never a secret)",
            None,
            200,
            tokens.clone(),
        ),
        op(
            "post",
            "/access-tokens",
            "Create an access token for yourself → {id, plainTextToken, token}; the secret is shown once",
            Some("AccessTokenRequest"),
            201,
            created_token.clone(),
        ),
        op("delete", "/access-tokens/{id}", "Revoke an access token (404 TOKEN_NOT_FOUND)", None, 204, empty()),
    ]
}

/// The generated schemas of the wire types, added to the components.
fn with_generated(mut components: Value, generated: Map<String, Value>) -> Value {
    if let Some(target) = components.get_mut("schemas").and_then(Value::as_object_mut) {
        target.extend(generated);
    }
    components
}

/// The silo portal's request schemas, added to the shared components.
fn with_silo_schemas(mut components: Value) -> Value {
    let text = json!({ "type": "string" });
    let opt = json!({ "type": ["string", "null"] });
    let list = json!({ "type": "array", "items": { "type": "string" } });
    let amount = json!({ "type": ["string", "number"], "description": "Decimal amount with at most two places" });
    let schemas = json!({
        "UserRequest": { "type": "object", "required": ["email", "subject"], "properties": {
            "name": text, "displayName": text, "email": text, "subject": text, "team": opt, "policyRef": opt,
            "resources": { "type": "object", "properties": { "cpu": opt, "memory": opt } },
            "monthlyBudgetUsd": amount } },
        "GroupRequest": { "type": "object", "required": ["name", "scope"], "properties": {
            "name": text, "scope": { "enum": ["org", "department", "team", "project", "personal"] }, "description": text, "members": list } },
        "PolicyRequest": { "type": "object", "properties": {
            "name": text, "description": text, "tenantSelector": { "type": "object", "additionalProperties": { "type": "string" } },
            "allowedDomains": list, "deniedDomains": list,
            "egressRules": { "type": "array", "items": { "type": "object", "properties": { "cidr": text, "ports": { "type": "array", "items": { "type": "integer" } } } } } } },
        "GrantRequest": { "type": "object", "required": ["payloadType", "payloadId", "subjectType", "subjectId", "access"], "properties": {
            "payloadType": { "enum": ["model", "mcp-server", "skill-bundle"] }, "payloadId": text,
            "subjectType": { "enum": ["tenant", "user", "group"] }, "subjectId": text, "access": { "enum": ["allow", "deny"] },
            "priority": { "type": "integer", "minimum": -1000, "maximum": 1000 }, "note": text } },
        "GlobalCeiling": { "type": "object", "properties": { "currency": text, "ceilingAmount": amount, "monthlyLimitUsd": amount },
            "description": "Either {currency, ceilingAmount} (the original's server) or {monthlyLimitUsd} (its CLI and spec)" },
        "UserPatch": { "type": "object", "description": "Any members of a user; null clears an optional one", "properties": {
            "displayName": text, "email": text, "subject": text, "team": opt, "policyRef": opt,
            "resources": { "type": ["object", "null"], "properties": { "cpu": opt, "memory": opt } },
            "monthlyBudgetUsd": { "type": ["string", "number", "null"] } } },
        "ByokRequest": { "type": "object", "required": ["apiKey"], "properties": { "apiKey": text } },
        "AccessTokenRequest": { "type": "object", "properties": {
            "name": text, "role": { "enum": ["admin", "member"] }, "expiresInDays": { "type": "integer", "minimum": 1, "maximum": 3650 },
            "expiresAt": { "type": "string", "format": "date-time" }, "owner": { "type": "string", "description": "Ignored: a token acts for its creator" } } },
        "LimitRequest": { "type": "object", "required": ["level", "amount"], "properties": {
            "level": { "enum": ["silo", "group", "user"] }, "target": opt, "currency": text, "amount": amount,
            "period": { "enum": ["day", "week", "month"] }, "thresholds": { "type": "array", "items": { "type": "integer", "minimum": 1, "maximum": 100 } } } },
        "SiloSettings": { "type": "object", "properties": { "timeZone": text, "currency": text, "defaultModelAccess": { "enum": ["allow", "deny"] } } },
        "DeploymentRequest": { "type": "object", "properties": {
            "publicName": text, "publicModelName": text, "upstreamModel": text, "apiBase": opt, "credential": opt,
            "providerCredentialId": opt, "isDefault": { "type": "boolean" }, "weight": { "type": "integer", "minimum": 1, "maximum": 1000 } } },
        "DefaultRequest": { "type": "object", "required": ["scope"], "properties": {
            "scope": { "enum": ["silo", "group", "user", "global", "clusterTenant"] }, "target": opt, "model": text, "defaultModel": text } },
        "FallbackRequest": { "type": "object", "required": ["publicName"], "properties": { "publicName": text, "chain": list } },
        "RouteTestRequest": { "type": "object", "required": ["user"], "properties": { "user": text, "model": opt } },
        "CredentialRequest": { "type": "object", "description": "Exactly one of apiKey (sealed here) and secretRef (a Secret of the silo's namespace: name, key api-key, or name/key); name defaults to the provider",
            "properties": {
            "name": text, "provider": { "enum": ["openai", "anthropic", "azure", "gemini", "mistral", "openai-compatible"] }, "apiKey": text,
            "secretRef": { "type": "string", "pattern": "^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?(/[-._a-zA-Z0-9]{1,253})?$" }, "apiBase": opt } },
    });
    if let (Some(target), Value::Object(extra)) =
        (components.get_mut("schemas").and_then(Value::as_object_mut), schemas)
    {
        target.extend(extra);
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generated schema never replaces a written one of the same name (the written ones describe
    /// the request spellings the types' derive cannot).
    #[test]
    fn generated_and_written_schemas_have_distinct_names() {
        let mut schemas = generator();
        let ops = silo_operations(&mut schemas);
        assert!(ops.iter().any(|op| op.path == "/tenants"));
        let generated = schemas.take_definitions(true);
        assert!(generated.contains_key("UserView") && generated.contains_key("EffectiveAccess"), "{generated:?}");
        let written = with_silo_schemas(components());
        let clashes: Vec<&String> =
            generated.keys().filter(|name| written["schemas"].get(name.as_str()).is_some()).collect();
        assert!(clashes.is_empty(), "generated schemas would replace written ones: {clashes:?}");
    }

    /// The same on the fleet, whose customer and member answers are generated beside the written
    /// request schemas (a generated `Compute` once replaced the written request one).
    #[tokio::test]
    async fn the_fleets_generated_and_written_schemas_have_distinct_names() {
        let pool = sqlx::postgres::PgPoolOptions::new().connect_lazy("postgres://unused/none").unwrap();
        let options = crate::start::leptos_options(
            std::path::Path::new("target/site"),
            "127.0.0.1:0".parse().unwrap(),
            leptos::config::Env::DEV,
        );
        let state = crate::fleet::fleet_state(options, pool, Some("example.com".into()), true, true, false);
        let mut schemas = generator();
        assert!(operations_with(&state, &mut schemas).iter().any(|op| op.path == "/cluster-tenants"));
        let generated = schemas.take_definitions(true);
        assert!(generated.contains_key("ClusterTenant") && generated.contains_key("MemberView"), "{generated:?}");
        let written = with_silo_schemas(components());
        let clashes: Vec<&String> =
            generated.keys().filter(|name| written["schemas"].get(name.as_str()).is_some()).collect();
        assert!(clashes.is_empty(), "generated schemas would replace written ones: {clashes:?}");
    }

    /// The request schemas are written (they carry the rules and the original's spellings the
    /// types cannot say), so they are held to the types: every member a request type reads is
    /// described under the same name. A field added to a type and not to its schema fails here.
    #[test]
    fn every_member_a_request_type_reads_is_described() {
        use app::model::{fleet, session::NewAccessTokenRequest, silo};
        fn members<T: JsonSchema>() -> Vec<String> {
            let schema = schemars::schema_for!(T).to_value();
            schema["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
        }
        let written = with_silo_schemas(components());
        let pairs: Vec<(&str, Vec<String>)> = vec![
            ("UserRequest", members::<silo::UserRequest>()),
            ("GroupRequest", members::<silo::GroupRequest>()),
            ("PolicyRequest", members::<silo::PolicyRequest>()),
            ("GrantRequest", members::<silo::GrantRequest>()),
            ("LimitRequest", members::<silo::LimitRequest>()),
            ("DeploymentRequest", members::<silo::DeploymentRequest>()),
            ("DefaultRequest", members::<silo::DefaultRequest>()),
            ("FallbackRequest", members::<silo::FallbackRequest>()),
            ("RouteTestRequest", members::<silo::RouteTestRequest>()),
            ("CredentialRequest", members::<silo::CredentialRequest>()),
            ("ByokRequest", members::<silo::ByokRequest>()),
            ("AccessTokenRequest", members::<NewAccessTokenRequest>()),
            ("ClusterTenantCreateRequest", members::<fleet::cluster_tenant::ClusterTenantCreateRequest>()),
            ("ClusterTenantUpdateRequest", members::<fleet::cluster_tenant::ClusterTenantUpdateRequest>()),
            ("ComputeRequest", members::<fleet::cluster_tenant::ComputeRequest>()),
            ("QuotaRequest", members::<app::model::fleet::cluster_tenant::Quota>()),
            ("MemberRequest", members::<fleet::members::MemberRequest>()),
            ("RetryRequest", members::<fleet::provisioning::RetryRequest>()),
            ("BillingAccountRequest", members::<fleet::billing::BillingAccountRequest>()),
            ("PlanRequest", members::<fleet::billing::PlanRequest>()),
            ("AssignPlanRequest", members::<fleet::billing::AssignPlanRequest>()),
            ("RotateRequest", members::<fleet::identity::RotateRequest>()),
            ("ReconcileRequest", members::<fleet::identity::ReconcileRequest>()),
        ];
        for (name, read) in pairs {
            assert!(!read.is_empty(), "{name}: the type has members");
            let described = &written["schemas"][name]["properties"];
            let missing: Vec<&String> = read.iter().filter(|m| described.get(m.as_str()).is_none()).collect();
            assert!(missing.is_empty(), "{name} does not describe {missing:?}");
        }
    }

    #[test]
    fn operation_ids_and_parameters_come_from_the_path() {
        assert_eq!(operation_id("get", "/tenants/{name}/spend"), "get_tenants_by_name_spend");
        assert_eq!(operation_id("get", "/ai-budget/spend.csv"), "get_ai_budget_spend_csv");
        assert_eq!(path_params("/cluster-tenants/{name}/invitations/{email}").collect::<Vec<_>>(), ["name", "email"]);
        assert_eq!(tag("/ai-budget/global"), "ai-budget");
    }
}
