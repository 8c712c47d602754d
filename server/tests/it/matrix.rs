//! The access matrices, generated from what the server registers: every server function (from
//! `server_fn_paths()`) and every REST route (from the OpenAPI operations) × principals ×
//! objects. A route without a row here fails the test, so nothing new ships unexamined.
//!
//! - Cross-tenant: zero reads or writes of another organisation's objects, and another
//!   organisation's object answers exactly like one that does not exist (no existence oracle).
//! - CSRF: every state-changing call with a session cookie is refused from a foreign Origin,
//!   from a cross-site fetch, with a `null` Origin, or with neither header; no server function
//!   answers GET.

use std::collections::BTreeSet;

use axum::{
    Router,
    http::{Method, StatusCode},
};
use serde_json::Value;
use sqlx::PgPool;

use crate::support::{self, Reply, browser, send_as, session_cookie};

/// What a route does, which decides who may call it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Acts on one ClusterTenant, given by name.
    ClusterTenant,
    /// Changes an operator-only field of one ClusterTenant (suspension, quota, …): its own owners
    /// get 403 `FORBIDDEN_NOT_PLATFORM_OPERATOR`, other organisations 404 like a missing one.
    OperatorField,
    /// Lists ClusterTenants (filtered for non-operators).
    List,
    /// Creates a ClusterTenant (operators, or people with a billing account).
    Create,
    /// A person's own things (billing account, sessions).
    Person,
    /// Platform operators only.
    Operator,
    /// Platform operators only, and the handler's answer depends on configuration the matrix
    /// does not have (no Zitadel here): operators reach it (never 401, 403 or 5xx), others are
    /// refused.
    OperatorReach,
    /// Anyone (sign-in plumbing, the API description).
    Public,
    /// Silo: any member.
    SiloMember,
    /// Silo: owners and admins.
    SiloAdmin,
    /// Silo: one access token, by id.
    Token,
    /// Retired (the original's raw provider keys): everyone signed in gets 410 with the route
    /// that replaces it.
    Retired,
    /// Silo portal: owners and admins reach the handler (its answer may be a validation error,
    /// a conflict or a 404 for the placeholder object, never 401/403/5xx); others get 403.
    SiloAdminWrite,
}

struct Route {
    method: Method,
    /// A path; `{name}`/`{id}` are replaced by the object.
    path: &'static str,
    /// The JSON body, with `{name}`/`{id}` replaced by the object.
    body: Option<&'static str>,
    kind: Kind,
}

fn route(method: Method, path: &'static str, body: Option<&'static str>, kind: Kind) -> Route {
    Route { method, path, body, kind }
}

const LIST_QUERY: &str =
    r#"{"query":{"search":null,"phase":null,"tier":null,"sort":"name","descending":false,"limit":50,"offset":0}}"#;
const CREATE: &str = r#"{"name":"made-by-matrix","displayName":"Made","isolationTier":"shared","compute":{"mode":"shared"},"resources":{"quota":{}},"owner":{"subject":"otto"}}"#;

const USER: &str = r#"{"name":"matrix-user","displayName":"Matrix","email":"matrix@example.com","subject":"s-matrix"}"#;
const GRANT: &str = r#"{"payloadType":"model","payloadId":"*","subjectType":"user","subjectId":"s-matrix","access":"deny","priority":1}"#;
/// The grant form's fields as the browser posts them (`app::forms`), for the island's preview.
const GRANT_FORM: &str = r#"{"fields":"_target=%7B%22Portal%22%3A%7B%22target%22%3A%22CreateGrant%22%2C%22done%22%3A%22%2Fpolicies%22%2C%22kinds%22%3A%5B%5B%22payloadId%22%2C%22Text%22%5D%2C%5B%22subjectType%22%2C%22Text%22%5D%2C%5B%22subjectId%22%2C%22Text%22%5D%2C%5B%22access%22%2C%22Text%22%5D%2C%5B%22priority%22%2C%22Number%22%5D%5D%2C%22fixed%22%3A%5B%5B%22payloadType%22%2C%22model%22%5D%5D%7D%7D&_form=new-grant&payloadId=%2A&subjectType=user&subjectId=s-matrix&access=deny&priority=1"}"#;
const CREDENTIAL: &str = r#"{"name":"matrix","provider":"openai","apiKey":"sk-matrix-123456"}"#;
const MODEL: &str = r#"{"publicName":"matrix","upstreamModel":"openai/gpt-4o-mini"}"#;
const SETTINGS: &str = r#"{"request":{"timeZone":"UTC","currency":"USD","defaultModelAccess":"allow"}}"#;

fn fleet_routes() -> Vec<Route> {
    use Kind::*;
    vec![
        route(Method::POST, "/api/fleet/cluster-tenants/list", Some(LIST_QUERY), List),
        route(Method::POST, "/api/fleet/cluster-tenants/get", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(Method::POST, "/api/fleet/cluster-tenants/create", Some(r#"{"request":CREATE}"#), Create),
        route(
            Method::POST,
            "/api/fleet/cluster-tenants/update",
            Some(r#"{"name":"{name}","request":{"displayName":"Changed"}}"#),
            ClusterTenant,
        ),
        route(
            Method::POST,
            "/api/fleet/cluster-tenants/delete",
            Some(r#"{"name":"{name}","confirmation":"{name}"}"#),
            ClusterTenant,
        ),
        route(Method::POST, "/api/fleet/cluster-tenants/provisioning", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(
            Method::POST,
            "/api/fleet/cluster-tenants/provisioning/rendered",
            Some(r#"{"name":"{name}"}"#),
            ClusterTenant,
        ),
        route(
            Method::POST,
            "/api/fleet/cluster-tenants/retry",
            Some(r#"{"name":"{name}","step":null}"#),
            ClusterTenant,
        ),
        route(
            Method::POST,
            "/api/fleet/cluster-tenants/suspend",
            Some(r#"{"name":"{name}","suspended":true}"#),
            OperatorField,
        ),
        route(Method::POST, "/api/fleet/members/list", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(
            Method::POST,
            "/api/fleet/members/add",
            Some(r#"{"name":"{name}","request":{"subject":"newbie","role":"member"}}"#),
            ClusterTenant,
        ),
        route(
            Method::POST,
            "/api/fleet/members/suspend",
            Some(r#"{"name":"{name}","subject":"sam","suspended":true}"#),
            ClusterTenant,
        ),
        route(Method::POST, "/api/fleet/members/remove", Some(r#"{"name":"{name}","subject":"sam"}"#), ClusterTenant),
        route(Method::POST, "/api/fleet/members/invitations", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(Method::POST, "/api/fleet/dns/of", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(Method::POST, "/api/fleet/dns/refresh", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(Method::POST, "/api/fleet/dns/overview", Some("{}"), Operator),
        route(Method::POST, "/api/fleet/dns/issuer", Some("{}"), Operator),
        route(
            Method::POST,
            "/api/fleet/dns/issuer/save",
            Some(
                r#"{"form":{"provider":"cloudflare","zone":"example.com","email":"ops@example.com","server":"","apiToken":"t","solverConfig":""}}"#,
            ),
            OperatorReach,
        ),
        route(Method::GET, "/api/v1/platform/dns", None, Operator),
        route(
            Method::PUT,
            "/api/v1/platform/dns",
            Some(r#"{"provider":"cloudflare","zone":"example.com","email":"ops@example.com","apiToken":"t"}"#),
            OperatorReach,
        ),
        route(
            Method::POST,
            "/api/fleet/members/invite",
            Some(r#"{"name":"{name}","request":{"email":"new@example.com","role":"member"}}"#),
            ClusterTenant,
        ),
        route(
            Method::POST,
            "/api/fleet/members/cancel-invitation",
            Some(r#"{"name":"{name}","email":"sam@example.com"}"#),
            ClusterTenant,
        ),
        route(Method::POST, "/api/fleet/billing/mine", Some("{}"), Person),
        route(Method::POST, "/api/fleet/billing/customer", Some(r#"{"name":"{name}"}"#), ClusterTenant),
        route(Method::POST, "/api/fleet/billing/save", Some(r#"{"request":{"displayName":"Mine"}}"#), Person),
        route(Method::POST, "/api/fleet/billing/overview", Some(r#"{"query":{}}"#), List),
        route(Method::POST, "/api/fleet/billing/plans", Some("{}"), Operator),
        route(
            Method::POST,
            "/api/fleet/billing/plans/create",
            Some(r#"{"request":{"name":"matrix-fn","currency":"EUR","seatPrice":"1","includedSeats":0}}"#),
            Operator,
        ),
        route(
            Method::POST,
            "/api/fleet/billing/assign",
            Some(r#"{"name":"{name}","request":{"plan":"matrix"}}"#),
            OperatorReach,
        ),
        route(
            Method::POST,
            "/api/fleet/billing/finalise",
            Some(r#"{"name":"{name}","month":"{month}"}"#),
            OperatorReach,
        ),
        route(Method::POST, "/api/fleet/audit/list", Some(r#"{"query":{}}"#), Operator),
        route(Method::GET, "/api/v1/audit", None, Operator),
        route(Method::POST, "/api/fleet/identity/overview", Some("{}"), Operator),
        route(Method::POST, "/api/fleet/identity/rotate", Some(r#"{"service_account_key":"{}"}"#), OperatorReach),
        route(Method::POST, "/api/fleet/identity/rotation", Some(r#"{"action":"prepare"}"#), OperatorReach),
        route(Method::POST, "/api/fleet/identity/reconcile", Some(r#"{"name":null}"#), OperatorReach),
        route(Method::POST, "/api/fleet/migrations/overview", Some("{}"), Operator),
        route(Method::POST, "/api/fleet/migrations/run", Some(r#"{"request":{"until":"preflight"}}"#), OperatorReach),
        route(Method::POST, "/api/fleet/sessions/list", Some("{}"), Person),
        route(Method::POST, "/api/fleet/sessions/revoke", Some(r#"{"what":{"scope":"myOthers"}}"#), Person),
        route(Method::GET, "/api/v1/cluster-tenants", None, List),
        route(Method::POST, "/api/v1/cluster-tenants", Some(CREATE), Create),
        route(Method::GET, "/api/v1/cluster-tenants/{name}", None, ClusterTenant),
        route(Method::PUT, "/api/v1/cluster-tenants/{name}", Some(r#"{"displayName":"Changed"}"#), ClusterTenant),
        route(Method::PUT, "/api/v1/cluster-tenants/{name}", Some(r#"{"suspended":true}"#), OperatorField),
        route(
            Method::PUT,
            "/api/v1/cluster-tenants/{name}",
            Some(r#"{"resources":{"quota":{"cpu":"64"}},"seatCap":1000}"#),
            OperatorField,
        ),
        route(Method::DELETE, "/api/v1/cluster-tenants/{name}", None, ClusterTenant),
        route(Method::GET, "/api/v1/cluster-tenants/{name}/status", None, ClusterTenant),
        route(Method::GET, "/api/v1/cluster-tenants/{name}/provisioning", None, ClusterTenant),
        route(Method::POST, "/api/v1/cluster-tenants/{name}/retry", Some("{}"), ClusterTenant),
        route(Method::POST, "/api/v1/cluster-tenants/{name}/refresh", None, ClusterTenant),
        route(Method::POST, "/api/v1/cluster-tenants/{name}/silo-credential/rotate", None, OperatorField),
        route(Method::GET, "/api/v1/cluster-tenants/{name}/members", None, ClusterTenant),
        route(
            Method::POST,
            "/api/v1/cluster-tenants/{name}/members",
            Some(r#"{"subject":"newbie","role":"member"}"#),
            ClusterTenant,
        ),
        route(Method::DELETE, "/api/v1/cluster-tenants/{name}/members/{subject}", None, ClusterTenant),
        route(Method::POST, "/api/v1/cluster-tenants/{name}/members/{subject}/suspend", None, ClusterTenant),
        route(Method::POST, "/api/v1/cluster-tenants/{name}/members/{subject}/reactivate", None, ClusterTenant),
        route(
            Method::POST,
            "/api/v1/cluster-tenants/{name}/members",
            Some(r#"{"email":"new@example.com","role":"member"}"#),
            ClusterTenant,
        ),
        route(Method::GET, "/api/v1/cluster-tenants/{name}/invitations", None, ClusterTenant),
        route(Method::DELETE, "/api/v1/cluster-tenants/{name}/invitations/{email}", None, ClusterTenant),
        route(Method::GET, "/api/v1/admin/zitadel", None, Operator),
        route(
            Method::POST,
            "/api/v1/admin/zitadel/sa-key:rotate",
            Some(r#"{"serviceAccountKey":"{}"}"#),
            OperatorReach,
        ),
        route(Method::POST, "/api/v1/admin/zitadel/sa-key:prepare", None, OperatorReach),
        route(Method::POST, "/api/v1/admin/zitadel/sa-key:activate", None, OperatorReach),
        route(Method::POST, "/api/v1/admin/zitadel/sa-key:revoke", None, OperatorReach),
        route(Method::POST, "/api/v1/admin/zitadel/sa-key:cancel", None, OperatorReach),
        route(Method::POST, "/api/v1/admin/zitadel/reconcile", Some("{}"), OperatorReach),
        route(Method::POST, "/api/v1/billing-accounts", Some("{}"), Person),
        route(Method::GET, "/api/v1/billing-accounts/me", None, Person),
        route(Method::GET, "/api/v1/billing/{name}/usage", None, ClusterTenant),
        route(Method::GET, "/api/v1/billing/{name}/usage/export", None, ClusterTenant),
        route(Method::GET, "/api/v1/billing/{name}/statements/{month}/export", None, ClusterTenant),
        route(Method::GET, "/api/v1/billing/customers", None, List),
        route(Method::GET, "/api/v1/billing/plans", None, Operator),
        route(
            Method::POST,
            "/api/v1/billing/plans",
            Some(r#"{"name":"matrix","currency":"EUR","seatPrice":"1"}"#),
            Operator,
        ),
        route(Method::GET, "/api/v1/billing/{name}/plan", None, ClusterTenant),
        route(Method::PUT, "/api/v1/billing/{name}/plan", Some(r#"{"plan":"matrix"}"#), OperatorReach),
        route(Method::GET, "/api/v1/billing/{name}/statements/{month}", None, ClusterTenant),
        route(Method::POST, "/api/v1/billing/{name}/statements/{month}/finalise", None, OperatorReach),
        route(Method::GET, "/api/v1/auth/me", None, Public),
        route(Method::GET, "/api/v1/auth/login", None, Public),
        route(Method::GET, "/api/v1/auth/callback", None, Public),
        route(Method::POST, "/api/v1/auth/logout", None, Public),
        route(Method::GET, "/api/v1/openapi.json", None, Public),
    ]
}

fn silo_routes() -> Vec<Route> {
    use Kind::*;
    vec![
        route(Method::POST, "/api/silo/overview", Some("{}"), SiloMember),
        route(Method::POST, "/api/silo/members/list", Some("{}"), SiloAdmin),
        route(Method::POST, "/api/silo/audit/list", Some(r#"{"query":{}}"#), SiloAdmin),
        route(Method::POST, "/api/silo/sessions/list", Some("{}"), Person),
        route(Method::POST, "/api/silo/sessions/revoke", Some(r#"{"what":{"scope":"myOthers"}}"#), Person),
        route(Method::POST, "/api/silo/tokens/list", Some("{}"), SiloAdmin),
        route(Method::POST, "/api/silo/tokens/create", Some(r#"{"request":{"name":"ci","role":"member"}}"#), SiloAdmin),
        route(Method::POST, "/api/silo/tokens/revoke", Some(r#"{"id":"{id}"}"#), Token),
        route(Method::GET, "/api/v1/providers/byok", None, SiloAdmin),
        route(
            Method::PUT,
            "/api/v1/providers/byok/{provider}",
            Some(r#"{"apiKey":"sk-matrix-123456"}"#),
            SiloAdminWrite,
        ),
        route(Method::DELETE, "/api/v1/providers/byok/{provider}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/providers/keys", None, Retired),
        route(Method::GET, "/api/v1/providers/keys/{provider}", None, Retired),
        route(Method::PUT, "/api/v1/providers/keys/{provider}", Some("{}"), Retired),
        route(Method::DELETE, "/api/v1/providers/keys/{provider}", None, Retired),
        route(Method::GET, "/api/v1/access-tokens", None, SiloAdmin),
        route(Method::POST, "/api/v1/access-tokens", Some(r#"{"name":"ci","role":"member"}"#), SiloAdmin),
        route(Method::DELETE, "/api/v1/access-tokens/{id}", None, Token),
        route(Method::GET, "/api/v1/audit", None, SiloAdmin),
        route(Method::POST, "/api/silo/users/list", Some(r#"{"filter":{}}"#), SiloAdmin),
        route(Method::POST, "/api/silo/users/create", Some(r#"{"request":USER}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/users/update", Some(r#"{"name":"{name}","request":USER}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/users/suspend", Some(r#"{"name":"{name}","suspended":true}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/users/revoke-key", Some(r#"{"name":"{name}"}"#), SiloAdminWrite),
        route(
            Method::POST,
            "/api/silo/users/delete",
            Some(r#"{"name":"{name}","confirmation":"{name}"}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/groups/list", Some("{}"), SiloAdmin),
        route(
            Method::POST,
            "/api/silo/groups/create",
            Some(r#"{"request":{"name":"matrix","scope":"team"}}"#),
            SiloAdminWrite,
        ),
        route(
            Method::POST,
            "/api/silo/groups/update",
            Some(r#"{"id":"{id}","request":{"name":"m","scope":"team"}}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/groups/delete", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/policies/overview", Some("{}"), SiloAdmin),
        route(
            Method::POST,
            "/api/silo/policies/save",
            Some(r#"{"request":{"name":"matrix"},"create":true}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/policies/preview", Some(r#"{"request":{"name":"matrix"}}"#), SiloAdmin),
        route(Method::POST, "/api/silo/policies/delete", Some(r#"{"name":"{name}"}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/grants/create", Some(r#"{"request":GRANT}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/grants/preview", Some(r#"{"request":GRANT}"#), SiloAdmin),
        route(Method::POST, "/api/silo/portal/preview", Some(GRANT_FORM), SiloAdmin),
        route(Method::POST, "/api/silo/grants/preview-removal", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/grants/delete", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/access/effective", Some(r#"{"user":"{name}"}"#), SiloAdminWrite),
        route(
            Method::POST,
            "/api/silo/access/domain",
            Some(r#"{"user":"{name}","domain":"api.example.com"}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/models/test-route", Some(r#"{"request":{"user":"{name}"}}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/budgets/overview", Some(r#"{"period":null}"#), SiloAdmin),
        route(Method::POST, "/api/silo/budgets/set", Some(r#"{"request":{"level":"silo","amount":"100"}}"#), SiloAdmin),
        route(Method::POST, "/api/silo/budgets/delete", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/settings/update", Some(SETTINGS), SiloAdmin),
        route(Method::POST, "/api/silo/notices/dismiss", Some(r#"{"id":1}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/models/overview", Some("{}"), SiloAdmin),
        route(Method::POST, "/api/silo/credentials/create", Some(r#"{"request":CREDENTIAL}"#), SiloAdminWrite),
        route(
            Method::POST,
            "/api/silo/credentials/rotate",
            Some(r#"{"id":"{id}","request":CREDENTIAL}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/credentials/delete", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(
            Method::POST,
            "/api/silo/byok/set",
            Some(r#"{"provider":"openai","request":{"apiKey":"sk-matrix-123456"}}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/models/create", Some(r#"{"request":MODEL}"#), SiloAdminWrite),
        route(Method::POST, "/api/silo/models/delete", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(
            Method::POST,
            "/api/silo/models/fallbacks",
            Some(r#"{"request":{"publicName":"m","chain":[]}}"#),
            SiloAdminWrite,
        ),
        route(
            Method::POST,
            "/api/silo/models/default",
            Some(r#"{"request":{"scope":"silo","model":"m"}}"#),
            SiloAdminWrite,
        ),
        route(Method::POST, "/api/silo/models/default-delete", Some(r#"{"id":"{id}"}"#), SiloAdminWrite),
        route(Method::GET, "/api/v1/tenants", None, SiloAdmin),
        route(Method::POST, "/api/v1/tenants", Some(USER), SiloAdminWrite),
        route(Method::GET, "/api/v1/tenants/{name}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/tenants/{name}", Some(USER), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/tenants/{name}", None, SiloAdminWrite),
        route(Method::POST, "/api/v1/tenants/{name}/suspend", None, SiloAdminWrite),
        route(Method::POST, "/api/v1/tenants/{name}/resume", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/tenants/{name}/effective-access", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/tenants/{name}/effective-contract", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/tenants/drift", None, SiloAdmin),
        route(Method::POST, "/api/v1/tenants/repair", None, SiloAdmin),
        route(Method::GET, "/api/v1/policies/drift", None, SiloAdmin),
        route(Method::POST, "/api/v1/policies/repair", None, SiloAdmin),
        route(Method::GET, "/api/v1/ai-budget/{name}/spend", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/spend/{name}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/token-usage", None, SiloAdmin),
        route(Method::GET, "/api/v1/ai-budget/{name}/litellm-key", None, SiloAdminWrite),
        route(Method::POST, "/api/v1/ai-budget/{name}/litellm-key/revoke", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/groups", None, SiloAdmin),
        route(Method::POST, "/api/v1/groups", Some(r#"{"name":"matrix-rest","scope":"team"}"#), SiloAdminWrite),
        route(Method::GET, "/api/v1/groups/{id}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/groups/{id}", Some(r#"{"name":"m","scope":"team"}"#), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/groups/{id}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/policies", None, SiloAdmin),
        route(Method::POST, "/api/v1/policies", Some(r#"{"name":"matrix-rest"}"#), SiloAdminWrite),
        route(Method::GET, "/api/v1/policies/{name}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/policies/{name}", Some("{}"), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/policies/{name}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/grants", None, SiloAdmin),
        route(Method::POST, "/api/v1/grants", Some(GRANT), SiloAdminWrite),
        route(Method::POST, "/api/v1/grants/preview", Some(GRANT), SiloAdmin),
        route(Method::DELETE, "/api/v1/grants/{id}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/ai-budget", None, SiloAdmin),
        route(Method::GET, "/api/v1/ai-budget/global", None, SiloAdmin),
        route(Method::PUT, "/api/v1/ai-budget/global", Some(r#"{"ceilingAmount":100}"#), SiloAdmin),
        route(Method::GET, "/api/v1/ai-budget/accounts", None, SiloAdmin),
        route(Method::PUT, "/api/v1/ai-budget/accounts/{name}", Some(r#"{"ceilingAmount":10}"#), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/ai-budget/accounts/{name}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/ai-budget/limits", Some(r#"{"level":"silo","amount":"90"}"#), SiloAdmin),
        route(Method::DELETE, "/api/v1/ai-budget/limits/{id}", None, SiloAdminWrite),
        route(
            Method::PUT,
            "/api/v1/ai-budget/settings",
            Some(r#"{"timeZone":"UTC","currency":"USD","defaultModelAccess":"allow"}"#),
            SiloAdmin,
        ),
        route(Method::GET, "/api/v1/ai-budget/spend.csv", None, SiloAdmin),
        route(Method::GET, "/api/v1/models", None, SiloAdmin),
        route(Method::POST, "/api/v1/models", Some(MODEL), SiloAdminWrite),
        route(Method::GET, "/api/v1/models/{id}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/models/{id}", Some(r#"{"weight":2}"#), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/models/{id}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/model-routing/defaults", None, SiloAdmin),
        route(Method::PUT, "/api/v1/model-routing/defaults", Some(r#"{"scope":"silo","model":"m"}"#), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/model-routing/defaults/{id}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/model-routing/fallbacks", Some(r#"{"publicName":"m","chain":[]}"#), SiloAdminWrite),
        route(Method::POST, "/api/v1/model-routing/test", Some(r#"{"user":"{name}"}"#), SiloAdminWrite),
        route(Method::GET, "/api/v1/providers/credentials", None, SiloAdmin),
        route(Method::POST, "/api/v1/providers/credentials", Some(CREDENTIAL), SiloAdminWrite),
        route(Method::GET, "/api/v1/providers/credentials/{id}", None, SiloAdminWrite),
        route(Method::PUT, "/api/v1/providers/credentials/{id}", Some(CREDENTIAL), SiloAdminWrite),
        route(Method::DELETE, "/api/v1/providers/credentials/{id}", None, SiloAdminWrite),
        route(Method::GET, "/api/v1/auth/me", None, Public),
        route(Method::GET, "/api/v1/auth/login", None, Public),
        route(Method::GET, "/api/v1/auth/callback", None, Public),
        route(Method::POST, "/api/v1/auth/logout", None, Public),
        route(Method::GET, "/api/v1/openapi.json", None, Public),
    ]
}

/// Fails when the server registers a server function or REST route of `role` that the table
/// has no row for.
fn assert_complete(routes: &[Route], prefix: &str, state: &app::state::AppState) {
    let mut registered: BTreeSet<(String, String)> = server_fn::axum::server_fn_paths()
        .filter(|(p, _)| p.starts_with(prefix))
        .map(|(p, m)| (m.to_string(), p.to_owned()))
        .collect();
    for op in opencrane::http::rest::openapi::operations(state) {
        registered.insert((op.method.to_uppercase(), format!("/api/v1{}", op.path)));
    }
    let covered: BTreeSet<(String, String)> =
        routes.iter().map(|r| (r.method.to_string(), r.path.to_owned())).collect();
    let missing: Vec<_> = registered.difference(&covered).collect();
    assert!(missing.is_empty(), "routes without a row in the access matrix: {missing:?}");
}

async fn call(app: &Router, r: &Route, object: &str, headers: &[(&'static str, String)]) -> Reply {
    // `{subject}`: sam, a plain member of both customers.
    // `{email}`: sam's pending invitation to both customers. `{month}`: a statement's month.
    let path = r
        .path
        .replace("{name}", object)
        .replace("{id}", object)
        .replace("{subject}", "sam")
        .replace("{provider}", "openai")
        .replace("{email}", "sam@example.com")
        .replace("{month}", "2026-11");
    let body = r.body.map(|b| {
        b.replace("CREATE", CREATE)
            .replace("USER", USER)
            .replace("GRANT", GRANT)
            .replace("CREDENTIAL", CREDENTIAL)
            .replace("MODEL", MODEL)
            .replace("{name}", object)
            .replace("{id}", object)
            .replace("{month}", "2026-11")
    });
    send_as(app, r.method.clone(), &path, body.as_deref(), headers).await
}

/// The body without what differs between two otherwise identical answers.
fn normalised(reply: &Reply) -> (StatusCode, Value) {
    let mut body: Value = serde_json::from_str(&reply.text).unwrap_or(Value::String(reply.text.clone()));
    if let Some(map) = body.as_object_mut() {
        map.remove("requestId");
    }
    (reply.status, body)
}

async fn seed_fleet(db: &PgPool) {
    sqlx::query(
        "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme-a', 'A'), ('acme-b', 'B') ON CONFLICT DO NOTHING",
    )
    .execute(db)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES
           ('acme-a', 'otto', 'owner'), ('acme-a', 'mia', 'member'), ('acme-b', 'bea', 'owner'),
           ('acme-a', 'sam', 'member'), ('acme-b', 'sam', 'member')
         ON CONFLICT (cluster_tenant, subject) DO UPDATE SET role = EXCLUDED.role, status = 'active'",
    )
    .execute(db)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO org_invitations (cluster_tenant, email, role, invited_by) VALUES
           ('acme-a', 'sam@example.com', 'member', 'otto'), ('acme-b', 'sam@example.com', 'member', 'bea')
         ON CONFLICT DO NOTHING",
    )
    .execute(db)
    .await
    .unwrap();
    sqlx::query("DELETE FROM cluster_tenants WHERE name = 'made-by-matrix'").execute(db).await.unwrap();
    sqlx::query(
        "UPDATE cluster_tenants SET display_name = upper(substr(name, 6)), deletion_requested_at = NULL, phase = 'pending',
           suspended = false, quota = '{}', seat_cap = NULL
         WHERE name IN ('acme-a', 'acme-b')",
    )
        .execute(db)
        .await
        .unwrap();
}

#[sqlx::test(migrations = false)]
async fn fleet_cross_tenant_matrix(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let app = support::fleet_signed_in(db.clone());
    let state = opencrane::fleet::fleet_state(
        opencrane::start::leptos_options(
            std::path::Path::new("target/site"),
            "127.0.0.1:0".parse().unwrap(),
            leptos::config::Env::DEV,
        ),
        db.clone(),
        None,
        true,
        true,
        true,
    );
    let routes = fleet_routes();
    assert_complete(&routes, "/api/fleet/", &state);
    seed_fleet(&db).await;

    let operator = browser(&session_cookie(&db, "ana", true, false).await);
    let owner_a = browser(&session_cookie(&db, "otto", false, false).await);
    let member_a = browser(&session_cookie(&db, "mia", false, false).await);
    let owner_b = browser(&session_cookie(&db, "bea", false, false).await);
    let expired = browser(&session_cookie(&db, "otto", false, true).await);
    let anonymous = browser("");

    for r in &routes {
        let ok = |reply: &Reply, who: &str| {
            assert!(reply.status.is_success(), "{who}: {} {} → {} {}", r.method, r.path, reply.status, reply.text)
        };
        let status = |reply: &Reply, expected: StatusCode, who: &str| {
            assert_eq!(reply.status, expected, "{who}: {} {} → {}", r.method, r.path, reply.text)
        };
        match r.kind {
            Kind::ClusterTenant | Kind::OperatorField => {
                for (who, headers, own, other) in
                    [("owner of A", &owner_a, "acme-a", "acme-b"), ("owner of B", &owner_b, "acme-b", "acme-a")]
                {
                    seed_fleet(&db).await;
                    let mine = call(&app, r, own, headers).await;
                    if r.kind == Kind::OperatorField {
                        status(&mine, StatusCode::FORBIDDEN, who);
                        assert!(mine.text.contains("FORBIDDEN_NOT_PLATFORM_OPERATOR"), "{who}: {}", mine.text);
                        let (suspended, quota): (bool, Value) =
                            sqlx::query_as("SELECT suspended, quota FROM cluster_tenants WHERE name = $1")
                                .bind(own)
                                .fetch_one(&db)
                                .await
                                .unwrap();
                        assert_eq!(
                            (suspended, quota),
                            (false, serde_json::json!({})),
                            "{who} changed an operator field"
                        );
                    } else {
                        ok(&mine, who);
                    }
                    // Another organisation's object looks exactly like a missing one.
                    seed_fleet(&db).await;
                    let theirs = call(&app, r, other, headers).await;
                    status(&theirs, StatusCode::NOT_FOUND, who);
                    sqlx::query("DELETE FROM cluster_tenants WHERE name = $1").bind(other).execute(&db).await.unwrap();
                    let missing = call(&app, r, other, headers).await;
                    assert_eq!(
                        normalised(&theirs),
                        normalised(&missing),
                        "{who}: {} {} is an existence oracle",
                        r.method,
                        r.path
                    );
                    seed_fleet(&db).await;
                    let stored: String = sqlx::query_scalar("SELECT display_name FROM cluster_tenants WHERE name = $1")
                        .bind(other)
                        .fetch_one(&db)
                        .await
                        .unwrap();
                    assert_ne!(stored, "Changed", "{who} changed another organisation's customer");
                }
                seed_fleet(&db).await;
                let member = call(&app, r, "acme-a", &member_a).await;
                status(&member, StatusCode::FORBIDDEN, "member of A on A");
                seed_fleet(&db).await;
                ok(&call(&app, r, "acme-b", &operator).await, "operator");
                status(&call(&app, r, "no-such-customer", &operator).await, StatusCode::NOT_FOUND, "operator, missing");
                for (who, headers) in [("anonymous", &anonymous), ("expired session", &expired)] {
                    seed_fleet(&db).await;
                    status(&call(&app, r, "acme-a", headers).await, StatusCode::UNAUTHORIZED, who);
                }
            }
            Kind::List => {
                let mine = call(&app, r, "", &owner_a).await;
                ok(&mine, "owner of A");
                assert!(mine.text.contains("acme-a") && !mine.text.contains("acme-b"), "{}: {}", r.path, mine.text);
                let members = call(&app, r, "", &member_a).await;
                ok(&members, "member of A");
                assert!(!members.text.contains("acme-"), "a member manages nothing: {}", members.text);
                let all = call(&app, r, "", &operator).await;
                assert!(all.text.contains("acme-a") && all.text.contains("acme-b"));
                status(&call(&app, r, "", &anonymous).await, StatusCode::UNAUTHORIZED, "anonymous");
            }
            Kind::Create => {
                seed_fleet(&db).await;
                let refused = call(&app, r, "", &owner_a).await;
                status(&refused, StatusCode::FORBIDDEN, "without a billing account");
                assert!(refused.text.contains("BILLING_ACCOUNT_REQUIRED"));
                ok(&call(&app, r, "", &operator).await, "operator");
                seed_fleet(&db).await;
                status(&call(&app, r, "", &anonymous).await, StatusCode::UNAUTHORIZED, "anonymous");
            }
            Kind::Person => {
                ok(&call(&app, r, "", &member_a).await, "a person");
                status(&call(&app, r, "", &anonymous).await, StatusCode::UNAUTHORIZED, "anonymous");
            }
            Kind::Operator => {
                ok(&call(&app, r, "", &operator).await, "operator");
                status(&call(&app, r, "", &owner_a).await, StatusCode::FORBIDDEN, "owner");
                status(&call(&app, r, "", &anonymous).await, StatusCode::UNAUTHORIZED, "anonymous");
            }
            Kind::OperatorReach => {
                let reached = call(&app, r, "", &operator).await;
                assert!(
                    !matches!(reached.status.as_u16(), 401 | 403 | 500..=599),
                    "operator: {} {} → {} {}",
                    r.method,
                    r.path,
                    reached.status,
                    reached.text
                );
                status(&call(&app, r, "", &owner_a).await, StatusCode::FORBIDDEN, "owner");
                status(&call(&app, r, "", &anonymous).await, StatusCode::UNAUTHORIZED, "anonymous");
            }
            Kind::Public => {
                let reply = call(&app, r, "", &anonymous).await;
                assert!(
                    !matches!(reply.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN),
                    "{} {}",
                    r.method,
                    r.path
                );
            }
            other => panic!("{other:?} is not a fleet kind"),
        }
    }
}

#[sqlx::test(migrations = false)]
async fn silo_access_matrix(pool: PgPool) {
    let db = support::silo_db(&pool).await;
    let app = support::silo_signed_in(db.clone());
    let state = opencrane::silo::silo_state(
        opencrane::start::leptos_options(
            std::path::Path::new("target/site"),
            "127.0.0.1:0".parse().unwrap(),
            leptos::config::Env::DEV,
        ),
        db.clone(),
        "acme".into(),
        None,
        true,
    );
    let routes = silo_routes();
    assert_complete(&routes, "/api/silo/", &state);
    for (subject, role) in [("otto", "owner"), ("mia", "member")] {
        opencrane_silo_db::memberships::upsert(&db, "acme", subject, role, "active").await.unwrap();
    }
    // Another silo's database, with its own token: its ids mean nothing here.
    let other_silo = support::silo_db(&pool).await;
    let theirs = new_token(&other_silo, "bea", "secret-of-another-silo").await;

    let operator = browser(&session_cookie(&db, "ana", true, false).await);
    let owner = browser(&session_cookie(&db, "otto", false, false).await);
    let member = browser(&session_cookie(&db, "mia", false, false).await);
    let outsider = browser(&session_cookie(&db, "bea", false, false).await);
    let expired = browser(&session_cookie(&db, "otto", false, true).await);
    let anonymous = browser("");
    let revoked_secret = "ocp_0123456789abcdef0123456789abcdef0123456789abcdef";
    let revoked = new_token(&db, "otto", revoked_secret).await;
    opencrane_silo_db::access_tokens::revoke(&db, revoked).await.unwrap();
    let revoked_token =
        vec![("authorization", format!("Bearer {revoked_secret}")), ("accept", "application/json".to_owned())];

    for r in &routes {
        let expect = |reply: &Reply, expected: StatusCode, who: &str| {
            assert_eq!(reply.status, expected, "{who}: {} {} → {}", r.method, r.path, reply.text)
        };
        let ok = |reply: &Reply, who: &str| {
            assert!(reply.status.is_success(), "{who}: {} {} → {} {}", r.method, r.path, reply.status, reply.text)
        };
        if r.kind != Kind::Public {
            for (who, headers) in [("anonymous", &anonymous), ("expired session", &expired)] {
                expect(&call(&app, r, "x", headers).await, StatusCode::UNAUTHORIZED, who);
            }
            expect(&call(&app, r, "x", &revoked_token).await, StatusCode::UNAUTHORIZED, "revoked token");
        }
        match r.kind {
            Kind::SiloMember => {
                for (who, headers) in [("operator", &operator), ("owner", &owner), ("member", &member)] {
                    ok(&call(&app, r, "", headers).await, who);
                }
                expect(&call(&app, r, "", &outsider).await, StatusCode::FORBIDDEN, "outsider");
            }
            Kind::SiloAdmin => {
                for (who, headers) in [("operator", &operator), ("owner", &owner)] {
                    ok(&call(&app, r, "", headers).await, who);
                }
                for (who, headers) in [("member", &member), ("outsider", &outsider)] {
                    expect(&call(&app, r, "", headers).await, StatusCode::FORBIDDEN, who);
                }
            }
            Kind::SiloAdminWrite => {
                for (who, headers) in [("operator", &operator), ("owner", &owner)] {
                    let reply = call(&app, r, "x", headers).await;
                    assert!(
                        !matches!(reply.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
                            && !reply.status.is_server_error(),
                        "{who}: {} {} → {} {}",
                        r.method,
                        r.path,
                        reply.status,
                        reply.text
                    );
                }
                for (who, headers) in [("member", &member), ("outsider", &outsider)] {
                    expect(&call(&app, r, "x", headers).await, StatusCode::FORBIDDEN, who);
                }
            }
            Kind::Token => {
                let mine = new_token(&db, "otto", &format!("ocp_{}", uuid::Uuid::new_v4().simple())).await.to_string();
                expect(&call(&app, r, &mine, &member).await, StatusCode::FORBIDDEN, "member");
                ok(&call(&app, r, &mine, &owner).await, "owner, own silo's token");
                let other = call(&app, r, &theirs.to_string(), &owner).await;
                let missing = call(&app, r, &uuid::Uuid::new_v4().to_string(), &owner).await;
                expect(&other, StatusCode::NOT_FOUND, "another silo's token");
                assert_eq!(normalised(&other), normalised(&missing), "another silo's token is an existence oracle");
                let untouched: Option<chrono::DateTime<chrono::Utc>> =
                    sqlx::query_scalar("SELECT revoked_at FROM access_tokens WHERE id = $1")
                        .bind(theirs)
                        .fetch_one(&other_silo)
                        .await
                        .unwrap();
                assert!(untouched.is_none());
            }
            Kind::Person => {
                for (who, headers) in [("member", &member), ("outsider", &outsider)] {
                    ok(&call(&app, r, "", headers).await, who);
                }
            }
            Kind::Public => {
                let reply = call(&app, r, "", &anonymous).await;
                assert!(
                    !matches!(reply.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN),
                    "{} {}",
                    r.method,
                    r.path
                );
            }
            Kind::Retired => {
                for (who, headers) in [("operator", &operator), ("owner", &owner), ("member", &member)] {
                    let reply = call(&app, r, "openai", headers).await;
                    expect(&reply, StatusCode::GONE, who);
                    assert!(reply.text.contains("/providers/byok"), "says what replaces it: {}", reply.text);
                }
            }
            other => panic!("{other:?} is not a silo kind"),
        }
    }

    // Another silo's portal objects: their ids mean nothing here, and answer exactly like ids
    // that exist nowhere.
    let their_group = opencrane_silo_db::groups::insert(&other_silo, "theirs", "team", "", "local").await.unwrap();
    let their_grant = opencrane_silo_db::grants::insert(
        &other_silo,
        &opencrane_silo_db::grants::NewGrant {
            payload_type: "model",
            payload_id: "*",
            subject_type: "user",
            subject_id: "bea",
            access: "deny",
            priority: 0,
            note: "",
            created_by: "bea",
        },
    )
    .await
    .unwrap();
    let api = |method: Method, path: String| (method, path);
    for (method, path, missing) in [
        api(Method::GET, format!("/api/v1/groups/{their_group}")),
        api(Method::DELETE, format!("/api/v1/groups/{their_group}")),
        api(Method::DELETE, format!("/api/v1/grants/{their_grant}")),
    ]
    .map(|(m, p)| {
        let missing =
            p.rsplit_once('/').map(|(head, _)| format!("{head}/{}", uuid::Uuid::new_v4())).unwrap_or_default();
        (m, p, missing)
    }) {
        let theirs = send_as(&app, method.clone(), &path, None, &owner).await;
        let nowhere = send_as(&app, method.clone(), &missing, None, &owner).await;
        assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{method} {path} → {}", theirs.text);
        let strip = |r: &Reply, id: &str| normalised(r).1.to_string().replace(id, "ID");
        let their_id = path.rsplit('/').next().unwrap_or_default();
        let missing_id = missing.rsplit('/').next().unwrap_or_default();
        assert_eq!(strip(&theirs, their_id), strip(&nowhere, missing_id), "{method} {path} is an existence oracle");
    }
    assert!(
        opencrane_silo_db::groups::get(&other_silo, their_group).await.unwrap().is_some(),
        "their group is untouched"
    );
    assert_eq!(opencrane_silo_db::grants::list(&other_silo).await.unwrap().len(), 1, "their grant is untouched");
}

async fn new_token(db: &PgPool, owner: &str, secret: &str) -> uuid::Uuid {
    let hash = app::service::silo::tokens::hash(secret);
    let token = opencrane_silo_db::access_tokens::NewAccessToken {
        name: "matrix",
        owner_subject: owner,
        role: "admin",
        token_hash: &hash,
        prefix: &secret[..10],
        expires_at: None,
    };
    opencrane_silo_db::access_tokens::insert(db, &token).await.unwrap().id
}

/// Every state-changing server function and REST route × a hostile request shape: none passes.
#[sqlx::test(migrations = false)]
async fn csrf_matrix(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let app = support::fleet_signed_in(db.clone());
    seed_fleet(&db).await;
    let cookie = session_cookie(&db, "ana", true, false).await;
    let hostile: Vec<(&str, Vec<(&'static str, String)>)> = vec![
        ("cross-site fetch", vec![("sec-fetch-site", "cross-site".into()), ("origin", "https://evil.test".into())]),
        ("same-site but not same-origin", vec![("sec-fetch-site", "same-site".into())]),
        ("foreign Origin", vec![("origin", "https://evil.test".into())]),
        ("null Origin", vec![("origin", "null".into())]),
        ("plain-HTTP Origin of this host", vec![("origin", "http://console.test".into())]),
        ("neither header", vec![]),
    ];
    let mut checked = 0;
    for r in fleet_routes().iter().filter(|r| r.method != Method::GET) {
        for (shape, extra) in &hostile {
            let mut headers = vec![("cookie", cookie.clone()), ("host", "console.test".to_owned())];
            headers.extend(extra.iter().cloned());
            for content_type in ["application/json", "application/x-www-form-urlencoded", "text/plain"] {
                let mut headers = headers.clone();
                headers.push(("content-type", content_type.to_owned()));
                let reply = call(&app, r, "acme-a", &headers).await;
                assert_eq!(
                    reply.status,
                    StatusCode::FORBIDDEN,
                    "{shape} ({content_type}): {} {} → {}",
                    r.method,
                    r.path,
                    reply.text
                );
                assert!(reply.text.contains("CSRF_"), "{}", reply.text);
                checked += 1;
            }
        }
    }
    assert!(checked >= 12 * 6 * 3, "the matrix must cover every mutating route ({checked})");
    assert!(
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM cluster_tenants").fetch_one(&db).await.unwrap() == 2,
        "nothing changed"
    );

    // No server function answers GET (so none can be triggered by a link or an image).
    for (path, _) in server_fn::axum::server_fn_paths().filter(|(p, _)| p.starts_with("/api/fleet/")) {
        let reply = send_as(&app, Method::GET, path, None, &browser(&cookie)).await;
        assert!(!reply.status.is_success(), "GET {path} → {}", reply.status);
    }
    // The same calls from this origin pass the CSRF check.
    let fine = send_as(&app, Method::POST, "/api/fleet/billing/mine", Some("{}"), &browser(&cookie)).await;
    assert_eq!(fine.status, StatusCode::OK, "{}", fine.text);
}
