//! The calls the fleet makes, one function each, with the documented request and answer shapes
//! (Management API v1, Admin API v1, and `POST /v2/organizations`). Org-scoped calls take the
//! organisation id and send it as `x-zitadel-orgid`. Reads, updates, deletes and searches are
//! retried; creates are not (a retried create could make a second object).

use base64::Engine as _;
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    client::{Client, Error, Idempotent, Result},
    key::ServiceAccountKey,
};

/// An organisation.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Org {
    /// Its id.
    pub id: String,
    /// Its name (unique in the instance).
    #[serde(default)]
    pub name: String,
    /// `ORG_STATE_ACTIVE`, …
    #[serde(default)]
    pub state: String,
}

/// A member of an organisation (Zitadel's administrators, e.g. `ORG_OWNER`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// The user.
    pub user_id: String,
    /// Their organisation roles.
    #[serde(default)]
    pub roles: Vec<String>,
}

/// A project.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Project {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

/// A project role.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Role {
    /// The key tokens carry.
    pub key: String,
    /// What people read.
    #[serde(default)]
    pub display_name: String,
}

/// The OIDC settings of the login app the fleet manages (a public PKCE client, code flow).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginApp {
    /// Callback URIs: the canonical host's, and the vanity host's when there is one.
    pub redirect_uris: Vec<String>,
    /// Where sign-out may return to.
    pub post_logout_redirect_uris: Vec<String>,
}

impl LoginApp {
    fn config(&self) -> Value {
        json!({
            "redirectUris": self.redirect_uris,
            "postLogoutRedirectUris": self.post_logout_redirect_uris,
            "responseTypes": ["OIDC_RESPONSE_TYPE_CODE"],
            "grantTypes": ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"],
            "appType": "OIDC_APP_TYPE_WEB",
            "authMethodType": "OIDC_AUTH_METHOD_TYPE_NONE",
            "devMode": false,
            "accessTokenRoleAssertion": true,
            "idTokenRoleAssertion": true,
            "idTokenUserinfoAssertion": true,
        })
    }
}

/// An application as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct App {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The OIDC client id (empty for a non-OIDC app).
    pub client_id: String,
    /// Its callback URIs.
    pub redirect_uris: Vec<String>,
    /// Its sign-out URIs.
    pub post_logout_redirect_uris: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AppWire {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    oidc_config: Option<OidcWire>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OidcWire {
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    post_logout_redirect_uris: Vec<String>,
}

impl From<AppWire> for App {
    fn from(wire: AppWire) -> Self {
        let oidc = wire.oidc_config.unwrap_or_default();
        Self {
            id: wire.id,
            name: wire.name,
            client_id: oidc.client_id,
            redirect_uris: oidc.redirect_uris,
            post_logout_redirect_uris: oidc.post_logout_redirect_uris,
        }
    }
}

/// A newly created OIDC app.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedApp {
    /// The app's id.
    pub app_id: String,
    /// The OIDC client id.
    pub client_id: String,
}

/// A user grant: a user's roles on one project.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGrant {
    /// The grant's id.
    pub id: String,
    /// The user.
    pub user_id: String,
    /// The project.
    #[serde(default)]
    pub project_id: String,
    /// The roles.
    #[serde(default)]
    pub role_keys: Vec<String>,
    /// `USER_GRANT_STATE_ACTIVE` or `USER_GRANT_STATE_INACTIVE`.
    #[serde(default)]
    pub state: String,
}

impl UserGrant {
    /// Not deactivated.
    pub fn is_active(&self) -> bool {
        self.state != "USER_GRANT_STATE_INACTIVE"
    }
}

/// What [`Client::ensure_user_grant`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantChange {
    /// The grant already carried exactly these roles.
    Unchanged(String),
    /// A new grant.
    Created(String),
    /// The existing grant's roles were replaced.
    Updated(String),
}

/// A user of an organisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrgUser {
    /// The user's id (the OIDC `sub`).
    pub user_id: String,
    /// The verified e-mail of a human user.
    pub email: Option<String>,
    /// The login name.
    pub login_name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UserWire {
    #[serde(alias = "userId")]
    id: String,
    #[serde(default)]
    preferred_login_name: String,
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    human: Option<Value>,
}

/// A machine key as listed (never the private part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineKey {
    /// The key's id.
    pub id: String,
    /// When it expires.
    pub expiration_date: Option<DateTime<Utc>>,
    /// When it was made.
    pub created: Option<DateTime<Utc>>,
}

/// The instance.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Instance {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize)]
struct Listed<T> {
    #[serde(default = "Vec::new")]
    result: Vec<T>,
}

fn equals(name: &str) -> Value {
    json!({ "name": name, "method": "TEXT_QUERY_METHOD_EQUALS" })
}

fn shape(call: &'static str, detail: impl Into<String>) -> Error {
    Error::Shape { call, detail: detail.into() }
}

/// `Ok(None)` for a 404.
fn found<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

impl Client {
    // ----- organisations -----

    /// `POST /v2/organizations`: a new organisation; answers its id. A taken name is a 409.
    pub async fn create_organization(&self, name: &str) -> Result<String> {
        const CALL: &str = "create organisation (POST /v2/organizations)";
        let answer: Value = self
            .call(CALL, Method::POST, "/v2/organizations", None, Some(&json!({ "name": name })), Idempotent::No)
            .await?;
        answer
            .get("organizationId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| shape(CALL, "no organizationId"))
    }

    /// `GET /management/v1/orgs/me` in `org`: the organisation, `None` when it is gone.
    pub async fn organization(&self, org: &str) -> Result<Option<Org>> {
        #[derive(Deserialize)]
        struct Answer {
            org: Org,
        }
        const CALL: &str = "read organisation (GET /management/v1/orgs/me)";
        let answer: Option<Answer> =
            found(self.call(CALL, Method::GET, "/management/v1/orgs/me", Some(org), None, Idempotent::Yes).await)?;
        Ok(answer.map(|a| a.org))
    }

    /// `PUT /management/v1/orgs/me` in `org`: renames it (a taken name is a 409; the same name
    /// is Zitadel's 400 "No changes", so callers compare first).
    pub async fn rename_organization(&self, org: &str, name: &str) -> Result<()> {
        const CALL: &str = "rename organisation (PUT /management/v1/orgs/me)";
        let body = json!({ "name": name });
        self.call::<Value>(CALL, Method::PUT, "/management/v1/orgs/me", Some(org), Some(&body), Idempotent::Yes)
            .await
            .map(|_| ())
    }

    /// `DELETE /admin/v1/orgs/{id}`: `false` when it was already gone.
    pub async fn delete_organization(&self, org: &str) -> Result<bool> {
        const CALL: &str = "delete organisation (DELETE /admin/v1/orgs/{id})";
        let path = format!("/admin/v1/orgs/{org}");
        Ok(found(self.call::<Value>(CALL, Method::DELETE, &path, None, None, Idempotent::Yes).await)?.is_some())
    }

    /// `POST /management/v1/orgs/me/members`: makes `user` an `ORG_OWNER` of `org`; `false` when
    /// it was a member already.
    pub async fn add_org_owner(&self, org: &str, user: &str) -> Result<bool> {
        const CALL: &str = "add organisation owner (POST /management/v1/orgs/me/members)";
        let body = json!({ "userId": user, "roles": ["ORG_OWNER"] });
        match self
            .call::<Value>(CALL, Method::POST, "/management/v1/orgs/me/members", Some(org), Some(&body), Idempotent::No)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.is_already_exists() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `POST /management/v1/orgs/me/members/_search`: the organisation's members and their roles.
    pub async fn org_members(&self, org: &str) -> Result<Vec<Member>> {
        const CALL: &str = "search organisation members (POST /management/v1/orgs/me/members/_search)";
        let path = "/management/v1/orgs/me/members/_search";
        let listed: Listed<Member> =
            self.call(CALL, Method::POST, path, Some(org), Some(&json!({})), Idempotent::Yes).await?;
        Ok(listed.result)
    }

    // ----- projects and roles -----

    /// `POST /management/v1/projects/_search` in `org` by exact name.
    pub async fn projects_named(&self, org: &str, name: &str) -> Result<Vec<Project>> {
        const CALL: &str = "search projects (POST /management/v1/projects/_search)";
        let body = json!({ "queries": [{ "nameQuery": equals(name) }] });
        let listed: Listed<Project> = self
            .call(CALL, Method::POST, "/management/v1/projects/_search", Some(org), Some(&body), Idempotent::Yes)
            .await?;
        Ok(listed.result.into_iter().filter(|p| p.name == name).collect())
    }

    /// `GET /management/v1/projects/{id}` in `org`; `None` when it is gone.
    pub async fn project(&self, org: &str, project: &str) -> Result<Option<Project>> {
        #[derive(Deserialize)]
        struct Answer {
            project: Project,
        }
        const CALL: &str = "read project (GET /management/v1/projects/{id})";
        let path = format!("/management/v1/projects/{project}");
        let answer: Option<Answer> =
            found(self.call(CALL, Method::GET, &path, Some(org), None, Idempotent::Yes).await)?;
        Ok(answer.map(|a| a.project))
    }

    /// `POST /management/v1/projects` in `org` (roles asserted into tokens); answers its id.
    pub async fn create_project(&self, org: &str, name: &str) -> Result<String> {
        const CALL: &str = "create project (POST /management/v1/projects)";
        let body = json!({ "name": name, "projectRoleAssertion": true });
        let answer: Value =
            self.call(CALL, Method::POST, "/management/v1/projects", Some(org), Some(&body), Idempotent::No).await?;
        answer.get("id").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| shape(CALL, "no id"))
    }

    /// `POST /management/v1/projects/{id}/roles/_search`.
    pub async fn project_roles(&self, org: &str, project: &str) -> Result<Vec<Role>> {
        const CALL: &str = "search project roles (POST /management/v1/projects/{id}/roles/_search)";
        let path = format!("/management/v1/projects/{project}/roles/_search");
        let listed: Listed<Role> =
            self.call(CALL, Method::POST, &path, Some(org), Some(&json!({})), Idempotent::Yes).await?;
        Ok(listed.result)
    }

    /// `POST /management/v1/projects/{id}/roles/_bulk`: adds `(key, display name)` roles.
    pub async fn add_project_roles(&self, org: &str, project: &str, roles: &[(&str, &str)]) -> Result<()> {
        const CALL: &str = "add project roles (POST /management/v1/projects/{id}/roles/_bulk)";
        let path = format!("/management/v1/projects/{project}/roles/_bulk");
        let roles: Vec<Value> = roles.iter().map(|(key, name)| json!({ "key": key, "displayName": name })).collect();
        self.call::<Value>(CALL, Method::POST, &path, Some(org), Some(&json!({ "roles": roles })), Idempotent::No)
            .await
            .map(|_| ())
    }

    // ----- the login app -----

    /// `POST /management/v1/projects/{id}/apps/_search` by exact name.
    pub async fn apps_named(&self, org: &str, project: &str, name: &str) -> Result<Vec<App>> {
        const CALL: &str = "search apps (POST /management/v1/projects/{id}/apps/_search)";
        let path = format!("/management/v1/projects/{project}/apps/_search");
        let body = json!({ "queries": [{ "nameQuery": equals(name) }] });
        let listed: Listed<AppWire> =
            self.call(CALL, Method::POST, &path, Some(org), Some(&body), Idempotent::Yes).await?;
        Ok(listed.result.into_iter().filter(|a| a.name == name).map(App::from).collect())
    }

    /// `GET /management/v1/projects/{p}/apps/{a}`; `None` when it is gone.
    pub async fn app(&self, org: &str, project: &str, app: &str) -> Result<Option<App>> {
        #[derive(Deserialize)]
        struct Answer {
            app: AppWire,
        }
        const CALL: &str = "read app (GET /management/v1/projects/{p}/apps/{a})";
        let path = format!("/management/v1/projects/{project}/apps/{app}");
        let answer: Option<Answer> =
            found(self.call(CALL, Method::GET, &path, Some(org), None, Idempotent::Yes).await)?;
        Ok(answer.map(|a| a.app.into()))
    }

    /// `POST /management/v1/projects/{id}/apps/oidc`: the login app (public PKCE client).
    pub async fn create_login_app(&self, org: &str, project: &str, name: &str, app: &LoginApp) -> Result<CreatedApp> {
        const CALL: &str = "create OIDC app (POST /management/v1/projects/{id}/apps/oidc)";
        let path = format!("/management/v1/projects/{project}/apps/oidc");
        let mut body = app.config();
        body["name"] = json!(name);
        self.call(CALL, Method::POST, &path, Some(org), Some(&body), Idempotent::No).await
    }

    /// `PUT /management/v1/projects/{p}/apps/{a}/oidc_config`: the same settings as at create
    /// (Zitadel answers 400 “No changes” when nothing differs, so callers compare first).
    pub async fn update_login_app(&self, org: &str, project: &str, app_id: &str, app: &LoginApp) -> Result<()> {
        const CALL: &str = "update OIDC app (PUT /management/v1/projects/{p}/apps/{a}/oidc_config)";
        let path = format!("/management/v1/projects/{project}/apps/{app_id}/oidc_config");
        self.call::<Value>(CALL, Method::PUT, &path, Some(org), Some(&app.config()), Idempotent::Yes).await.map(|_| ())
    }

    // ----- user grants -----

    /// `POST /management/v1/users/grants/_search`: `user`'s grants on `project`.
    pub async fn user_grants(&self, org: &str, user: &str, project: &str) -> Result<Vec<UserGrant>> {
        const CALL: &str = "search user grants (POST /management/v1/users/grants/_search)";
        let body = json!({ "queries": [{ "userIdQuery": { "userId": user } }, { "projectIdQuery": { "projectId": project } }] });
        let listed: Listed<UserGrant> = self
            .call(CALL, Method::POST, "/management/v1/users/grants/_search", Some(org), Some(&body), Idempotent::Yes)
            .await?;
        Ok(listed
            .result
            .into_iter()
            .filter(|g| g.user_id == user && (g.project_id.is_empty() || g.project_id == project))
            .collect())
    }

    /// `POST /management/v1/users/{id}/grants`: a new grant; answers its id.
    pub async fn add_user_grant(&self, org: &str, user: &str, project: &str, roles: &[&str]) -> Result<String> {
        const CALL: &str = "add user grant (POST /management/v1/users/{id}/grants)";
        let path = format!("/management/v1/users/{user}/grants");
        let body = json!({ "projectId": project, "roleKeys": roles });
        let answer: Value = self.call(CALL, Method::POST, &path, Some(org), Some(&body), Idempotent::No).await?;
        answer
            .get("userGrantId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| shape(CALL, "no userGrantId"))
    }

    /// `PUT /management/v1/users/{u}/grants/{g}`: replaces the grant's roles.
    pub async fn update_user_grant(&self, org: &str, user: &str, grant: &str, roles: &[&str]) -> Result<()> {
        const CALL: &str = "update user grant (PUT /management/v1/users/{u}/grants/{g})";
        let path = format!("/management/v1/users/{user}/grants/{grant}");
        self.call::<Value>(CALL, Method::PUT, &path, Some(org), Some(&json!({ "roleKeys": roles })), Idempotent::Yes)
            .await
            .map(|_| ())
    }

    /// `POST /management/v1/users/{u}/grants/{g}/_deactivate`: the user keeps their account but
    /// loses this project (never the user globally).
    pub async fn deactivate_user_grant(&self, org: &str, user: &str, grant: &str) -> Result<()> {
        const CALL: &str = "deactivate user grant (POST /management/v1/users/{u}/grants/{g}/_deactivate)";
        let path = format!("/management/v1/users/{user}/grants/{grant}/_deactivate");
        self.call::<Value>(CALL, Method::POST, &path, Some(org), Some(&json!({})), Idempotent::Yes).await.map(|_| ())
    }

    /// `POST /management/v1/users/{u}/grants/{g}/_reactivate`.
    pub async fn reactivate_user_grant(&self, org: &str, user: &str, grant: &str) -> Result<()> {
        const CALL: &str = "reactivate user grant (POST /management/v1/users/{u}/grants/{g}/_reactivate)";
        let path = format!("/management/v1/users/{user}/grants/{grant}/_reactivate");
        self.call::<Value>(CALL, Method::POST, &path, Some(org), Some(&json!({})), Idempotent::Yes).await.map(|_| ())
    }

    /// `DELETE /management/v1/users/{u}/grants/{g}`: `false` when it was already gone.
    pub async fn remove_user_grant(&self, org: &str, user: &str, grant: &str) -> Result<bool> {
        const CALL: &str = "remove user grant (DELETE /management/v1/users/{u}/grants/{g})";
        let path = format!("/management/v1/users/{user}/grants/{grant}");
        Ok(found(self.call::<Value>(CALL, Method::DELETE, &path, Some(org), None, Idempotent::Yes).await)?.is_some())
    }

    /// One grant per user and project, with exactly `roles`, active: creates it, or replaces
    /// the roles of the one there (a grant is never POSTed twice), reactivating it if needed.
    pub async fn ensure_user_grant(&self, org: &str, user: &str, project: &str, roles: &[&str]) -> Result<GrantChange> {
        let existing = self.user_grants(org, user, project).await?;
        let Some(grant) = existing.into_iter().next() else {
            return self.add_user_grant(org, user, project, roles).await.map(GrantChange::Created);
        };
        let mut wanted: Vec<&str> = roles.to_vec();
        wanted.sort_unstable();
        let mut have: Vec<&str> = grant.role_keys.iter().map(String::as_str).collect();
        have.sort_unstable();
        let mut changed = false;
        if have != wanted {
            self.update_user_grant(org, user, &grant.id, roles).await?;
            changed = true;
        }
        if !grant.is_active() {
            self.reactivate_user_grant(org, user, &grant.id).await?;
            changed = true;
        }
        Ok(if changed { GrantChange::Updated(grant.id) } else { GrantChange::Unchanged(grant.id) })
    }

    // ----- users -----

    /// `POST /management/v1/users/_search` in `org`: its users.
    pub async fn org_users(&self, org: &str) -> Result<Vec<OrgUser>> {
        const CALL: &str = "search users (POST /management/v1/users/_search)";
        let listed: Listed<UserWire> = self
            .call(CALL, Method::POST, "/management/v1/users/_search", Some(org), Some(&json!({})), Idempotent::Yes)
            .await?;
        Ok(listed
            .result
            .into_iter()
            .map(|u| OrgUser {
                email: u
                    .human
                    .as_ref()
                    .and_then(|h| h.pointer("/email/email"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                login_name: if u.preferred_login_name.is_empty() { u.user_name } else { u.preferred_login_name },
                user_id: u.id,
            })
            .collect())
    }

    // ----- the instance and machine keys -----

    /// `GET /admin/v1/instances/me`: a harmless call that needs IAM_OWNER (the rotation's probe).
    pub async fn instance(&self) -> Result<Instance> {
        #[derive(Deserialize)]
        struct Answer {
            instance: Instance,
        }
        const CALL: &str = "read instance (GET /admin/v1/instances/me)";
        let answer: Answer =
            self.call(CALL, Method::GET, "/admin/v1/instances/me", None, None, Idempotent::Yes).await?;
        Ok(answer.instance)
    }

    /// `POST /management/v1/users/{id}/keys`: a new JSON key for the machine user `user`,
    /// expiring at `expires`; answers the key (Zitadel shows the private part only here).
    pub async fn add_machine_key(&self, user: &str, expires: DateTime<Utc>) -> Result<ServiceAccountKey> {
        const CALL: &str = "add machine key (POST /management/v1/users/{id}/keys)";
        let path = format!("/management/v1/users/{user}/keys");
        let body = json!({ "type": "KEY_TYPE_JSON", "expirationDate": expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) });
        let answer: Value = self.call(CALL, Method::POST, &path, None, Some(&body), Idempotent::No).await?;
        let details = answer.get("keyDetails").and_then(Value::as_str).ok_or_else(|| shape(CALL, "no keyDetails"))?;
        let json = base64::engine::general_purpose::STANDARD
            .decode(details)
            .map_err(|_| shape(CALL, "keyDetails is not base64"))?;
        let json = String::from_utf8(json).map_err(|_| shape(CALL, "keyDetails is not text"))?;
        ServiceAccountKey::parse(&json).map_err(|e| shape(CALL, e.to_string()))
    }

    /// `POST /management/v1/users/{id}/keys/_search`: the machine user's keys.
    pub async fn machine_keys(&self, user: &str) -> Result<Vec<MachineKey>> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            id: String,
            #[serde(default)]
            expiration_date: Option<DateTime<Utc>>,
            #[serde(default)]
            details: Option<Value>,
        }
        const CALL: &str = "search machine keys (POST /management/v1/users/{id}/keys/_search)";
        let path = format!("/management/v1/users/{user}/keys/_search");
        let listed: Listed<Wire> =
            self.call(CALL, Method::POST, &path, None, Some(&json!({})), Idempotent::Yes).await?;
        Ok(listed
            .result
            .into_iter()
            .map(|k| MachineKey {
                created: k
                    .details
                    .as_ref()
                    .and_then(|d| d.get("creationDate"))
                    .and_then(Value::as_str)
                    .and_then(|d| DateTime::parse_from_rfc3339(d).ok())
                    .map(|d| d.with_timezone(&Utc)),
                id: k.id,
                expiration_date: k.expiration_date,
            })
            .collect())
    }

    /// `DELETE /management/v1/users/{u}/keys/{k}`: `false` when it was already gone.
    pub async fn remove_machine_key(&self, user: &str, key: &str) -> Result<bool> {
        const CALL: &str = "remove machine key (DELETE /management/v1/users/{u}/keys/{k})";
        let path = format!("/management/v1/users/{user}/keys/{key}");
        Ok(found(self.call::<Value>(CALL, Method::DELETE, &path, None, None, Idempotent::Yes).await)?.is_some())
    }
}
