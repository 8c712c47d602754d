//! The identity step: the customer's own Zitadel organisation, so that its silo signs in its own
//! users. It holds a project `opencrane` with the roles `owner`, `admin` and `member`, a login
//! app (a public PKCE client, code flow) whose callbacks are the silo's canonical host and its
//! vanity host, and a grant of each active member's role (`owner`, `admin`, `member`); a
//! suspended member's grant is deactivated.
//!
//! [`wanted`] says what the organisation should look like (pure); [`IdentityPlane::converge`]
//! observes what Zitadel has under the stored ids and makes only what is missing or different:
//!
//! - *idempotent*: a converged pass only reads (zero writes, counted against the fake);
//! - *healing*: stored ids that Zitadel no longer knows are dropped and made again; a project or
//!   app that exists in the customer's own organisation under the managed name is adopted rather
//!   than duplicated (an organisation is never adopted by name: names are not proof of whose it
//!   is);
//! - *compensating*: if a later part fails on the pass that created the organisation, that
//!   organisation is deleted again (no half-made org is left behind) and the next attempt starts
//!   afresh; an organisation from an earlier pass is healed instead;
//! - every id is stored the moment Zitadel hands it out, so a crash loses nothing.
//!
//! Teardown follows the termination policy: `Delete` deletes the organisation (a 404 is fine);
//! `Retain` keeps it with the database (its users are the data's owners).

use opencrane_db::PgPool;
use opencrane_fleet_db::{
    cluster_tenants::{self, ZitadelIds},
    memberships,
};
use opencrane_zitadel::{Client, Error as ZitadelError, LoginApp};

use crate::{
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

/// The project holding the roles and the login app.
pub const PROJECT: &str = "opencrane";
/// The login app's name.
pub const LOGIN_APP: &str = "login";
/// The project's roles: (key, display name).
pub const ROLES: [(&str, &str); 3] = [("owner", "Owner"), ("admin", "Admin"), ("member", "Member")];
/// The path of the silo's OIDC callback.
pub const CALLBACK_PATH: &str = "/api/v1/auth/callback";

/// What the customer's organisation should look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// The organisation's name (what users see at sign-in).
    pub org_name: String,
    /// The login app's settings.
    pub login: LoginApp,
    /// The canonical callback (stored as the customer's redirect URI).
    pub canonical_redirect: String,
}

/// The wanted organisation of `desired` on the platform domain `base_domain`.
pub fn wanted(desired: &Desired, base_domain: &str) -> Wanted {
    let mut hosts = vec![format!("https://{}.{base_domain}", desired.name)];
    if let Some(vanity) = &desired.vanity_domain {
        hosts.push(format!("https://{vanity}"));
    }
    let redirect_uris: Vec<String> = hosts.iter().map(|h| format!("{h}{CALLBACK_PATH}")).collect();
    Wanted {
        org_name: org_name(desired),
        canonical_redirect: redirect_uris[0].clone(),
        login: LoginApp { redirect_uris, post_logout_redirect_uris: hosts.iter().map(|h| format!("{h}/")).collect() },
    }
}

/// The organisation's name: the display name with the customer's key, since Zitadel wants
/// organisation names unique in the instance and display names need not be.
pub fn org_name(desired: &Desired) -> String {
    if desired.display_name.eq_ignore_ascii_case(&desired.name) {
        desired.name.clone()
    } else {
        format!("{} ({})", desired.display_name, desired.name)
    }
}

/// Whether an app's registered URIs are the wanted ones (in any order).
pub fn uris_match(app: &opencrane_zitadel::App, wanted: &LoginApp) -> bool {
    let same = |a: &[String], b: &[String]| {
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        a.sort();
        b.sort();
        a == b
    };
    same(&app.redirect_uris, &wanted.redirect_uris)
        && same(&app.post_logout_redirect_uris, &wanted.post_logout_redirect_uris)
}

/// A Zitadel error as a step failure: what went wrong and what a person can do.
pub fn failure(err: &ZitadelError) -> StepFailure {
    let message = err.to_string();
    match err {
        ZitadelError::Key(_) | ZitadelError::TokenRefused { .. } => StepFailure::new(
            "ZitadelKeyRefused",
            message,
            "Rotate the fleet's service-account key on the Identity page; the step is retried after that.",
        ),
        ZitadelError::Status { status: 403, .. } => StepFailure::new(
            "ZitadelForbidden",
            message,
            "Give the fleet's service account the IAM_OWNER role in Zitadel, then Retry the step.",
        ),
        e if e.is_transient() => StepFailure::new(
            "ZitadelUnavailable",
            message,
            "Nothing to do if Zitadel is only briefly away: the step is retried automatically.",
        ),
        _ => StepFailure::new(
            "ZitadelRefused",
            message,
            "Fix what Zitadel refused (the message says), then Retry the step.",
        ),
    }
}

fn database(err: &opencrane_db::Error) -> StepFailure {
    StepFailure::new("DatabaseError", format!("storing the Zitadel ids failed: {err}"), "Retry the step.")
}

/// The step when no Zitadel is configured.
pub fn not_configured() -> StepSuccess {
    StepSuccess::skipped(
        "NotConfigured",
        "Zitadel is not configured on this fleet (ZITADEL_MGMT_API_URL): the silo signs in with the fallback client.",
    )
}

/// The fleet's link to Zitadel for the identity step.
#[derive(Clone, Debug)]
pub struct IdentityPlane {
    client: Client,
    base_domain: String,
}

/// The outcome of a converge: the ids now stored, and the step's row.
#[derive(Clone, Debug)]
pub struct Converged {
    /// The customer's ids.
    pub ids: ZitadelIds,
    /// The step's outcome.
    pub success: StepSuccess,
}

/// Stores `ids` when they differ from what is stored.
async fn store(pool: &PgPool, name: &str, stored: &mut ZitadelIds, ids: &ZitadelIds) -> Result<(), StepFailure> {
    if stored != ids {
        cluster_tenants::set_zitadel_ids(pool, name, ids).await.map_err(|e| database(&e))?;
        *stored = ids.clone();
    }
    Ok(())
}

impl IdentityPlane {
    /// The plane for the instance `client` talks to, with silos on `<name>.<base_domain>`.
    pub fn new(client: Client, base_domain: impl Into<String>) -> Self {
        Self { client, base_domain: base_domain.into() }
    }

    /// The client (shared with the rotation service: a swapped key applies here at once).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Converges the organisation of `desired`, starting from the `stored` ids. One customer's
    /// organisation is converged by one caller at a time (the worker's step and the reconcile
    /// pass), under a PostgreSQL advisory lock held on a connection of its own: a cancelled
    /// converge drops that connection, which releases the lock.
    pub async fn converge(
        &self,
        pool: &PgPool,
        desired: &Desired,
        stored: &ZitadelIds,
    ) -> Result<Converged, StepFailure> {
        let lock = format!("opencrane.identity:{}", desired.name);
        let lock_failed = |e: sqlx::Error| {
            StepFailure::new("DatabaseError", format!("locking the organisation failed: {e}"), "Retry the step.")
        };
        let mut conn = pool.acquire().await.map_err(lock_failed)?.detach();
        sqlx::query("SELECT pg_advisory_lock(hashtextextended($1, 0))")
            .bind(&lock)
            .execute(&mut conn)
            .await
            .map_err(lock_failed)?;
        // Another caller may have stored ids meanwhile: start from what is stored now.
        let stored = match cluster_tenants::get(pool, &desired.name).await {
            Ok(row) => ZitadelIds::of(&row),
            Err(_) => stored.clone(),
        };
        let result = self.converge_locked(pool, desired, &stored).await;
        let _ = sqlx::query("SELECT pg_advisory_unlock(hashtextextended($1, 0))").bind(&lock).execute(&mut conn).await;
        let _ = sqlx::Connection::close(conn).await;
        result
    }

    async fn converge_locked(
        &self,
        pool: &PgPool,
        desired: &Desired,
        stored: &ZitadelIds,
    ) -> Result<Converged, StepFailure> {
        let wanted = wanted(desired, &self.base_domain);
        let mut saved = stored.clone();
        let mut ids = stored.clone();
        let c = &self.client;
        let taken = |e: ZitadelError| {
            if e.is_already_exists() {
                StepFailure::new(
                    "OrganisationNameTaken",
                    format!(
                        "Zitadel already has an organisation named “{}” that is not this customer's.",
                        wanted.org_name
                    ),
                    "Change the customer's display name, or rename that organisation in Zitadel; then Retry the step.",
                )
            } else {
                failure(&e)
            }
        };
        if let Some(org) = &ids.org_id {
            match c.organization(org).await.map_err(|e| failure(&e))? {
                None => {
                    tracing::warn!(cluster_tenant = %desired.name, org, "the stored Zitadel organisation is gone; making it again");
                    ids = ZitadelIds::default();
                }
                // The name follows the display name (what users see at sign-in).
                Some(found) if found.name != wanted.org_name => {
                    c.rename_organization(org, &wanted.org_name).await.map_err(taken)?;
                }
                Some(_) => {}
            }
        }
        let mut created = None;
        if ids.org_id.is_none() {
            let org = c.create_organization(&wanted.org_name).await.map_err(taken)?;
            tracing::info!(cluster_tenant = %desired.name, org, "Zitadel organisation created");
            ids.org_id = Some(org.clone());
            store(pool, &desired.name, &mut saved, &ids).await?;
            created = Some(org);
        }
        match self.converge_inside(pool, desired, &wanted, &mut saved, &mut ids).await {
            Ok(success) => Ok(Converged { ids, success }),
            Err(mut failed) => {
                let Some(org) = created else { return Err(failed) };
                match c.delete_organization(&org).await {
                    Ok(_) => {
                        store(pool, &desired.name, &mut saved, &ZitadelIds::default()).await?;
                        failed.message.push_str(
                            " The organisation made on this attempt was deleted again; the next attempt starts afresh.",
                        );
                    }
                    Err(e) => {
                        tracing::warn!(cluster_tenant = %desired.name, org, error = %e, "compensation failed; the organisation is healed on the next attempt");
                    }
                }
                Err(failed)
            }
        }
    }

    /// Project, roles, login app and grants inside the (existing) organisation.
    async fn converge_inside(
        &self,
        pool: &PgPool,
        desired: &Desired,
        wanted: &Wanted,
        saved: &mut ZitadelIds,
        ids: &mut ZitadelIds,
    ) -> Result<StepSuccess, StepFailure> {
        let c = &self.client;
        let name = desired.name.as_str();
        let org = ids.org_id.clone().unwrap_or_default();
        let z = |e: ZitadelError| failure(&e);

        // The project: the stored one, else the managed one in this organisation, else a new one.
        if let Some(project) = &ids.project_id
            && c.project(&org, project).await.map_err(z)?.is_none()
        {
            (ids.project_id, ids.app_id, ids.client_id) = (None, None, None);
        }
        if ids.project_id.is_none() {
            let project = match c.projects_named(&org, PROJECT).await.map_err(z)?.into_iter().next() {
                Some(adopted) => adopted.id,
                None => c.create_project(&org, PROJECT).await.map_err(z)?,
            };
            ids.project_id = Some(project);
            store(pool, name, saved, ids).await?;
        }
        let project = ids.project_id.clone().unwrap_or_default();

        let have: Vec<String> = c.project_roles(&org, &project).await.map_err(z)?.into_iter().map(|r| r.key).collect();
        let missing: Vec<(&str, &str)> = ROLES.into_iter().filter(|(key, _)| !have.iter().any(|h| h == key)).collect();
        if !missing.is_empty() {
            c.add_project_roles(&org, &project, &missing).await.map_err(z)?;
        }

        // The login app, with the wanted callbacks.
        let mut app = match &ids.app_id {
            Some(app) => c.app(&org, &project, app).await.map_err(z)?,
            None => None,
        };
        if app.is_none() {
            app = c.apps_named(&org, &project, LOGIN_APP).await.map_err(z)?.into_iter().next();
        }
        match app {
            Some(app) => {
                if !uris_match(&app, &wanted.login) {
                    c.update_login_app(&org, &project, &app.id, &wanted.login).await.map_err(z)?;
                }
                (ids.app_id, ids.client_id) = (Some(app.id), Some(app.client_id));
            }
            None => {
                let made = c.create_login_app(&org, &project, LOGIN_APP, &wanted.login).await.map_err(z)?;
                (ids.app_id, ids.client_id) = (Some(made.app_id), Some(made.client_id));
            }
        }
        ids.redirect_uri = Some(wanted.canonical_redirect.clone());
        store(pool, name, saved, ids).await?;

        // Every active member holds their role on the project (one grant per user and project);
        // a suspended member's grant is deactivated (their Zitadel account stays untouched).
        let members = memberships::list(pool, name).await.map_err(|e| database(&e))?;
        let org_owners: Vec<String> = if members.iter().any(|m| m.role == "owner" && m.status == "active") {
            let listed = c.org_members(&org).await.map_err(z)?;
            listed.into_iter().filter(|m| m.roles.iter().any(|r| r == "ORG_OWNER")).map(|m| m.user_id).collect()
        } else {
            Vec::new()
        };
        let (mut owners, mut others, mut suspended, mut unknown) = (0, 0, 0, Vec::new());
        for member in &members {
            let subject = member.subject.as_str();
            if member.status != "active" {
                suspended += 1;
                for grant in c.user_grants(&org, subject, &project).await.map_err(z)? {
                    if grant.is_active() {
                        c.deactivate_user_grant(&org, subject, &grant.id).await.map_err(z)?;
                    }
                }
                continue;
            }
            match c.ensure_user_grant(&org, subject, &project, &[member.role.as_str()]).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {
                    unknown.push(member.subject.clone());
                    continue;
                }
                Err(e) => return Err(failure(&e)),
            }
            if member.role == "owner" {
                owners += 1;
                // Owners also administer the organisation in Zitadel's console (its users, its MFA).
                if !org_owners.iter().any(|o| o == subject) {
                    c.add_org_owner(&org, subject).await.map_err(z)?;
                }
            } else {
                others += 1;
            }
        }
        let client = ids.client_id.as_deref().unwrap_or_default();
        let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut message = format!("Organisation {org} with the login app {client}");
        if owners + others == 0 && unknown.is_empty() {
            message.push_str("; no member yet to grant");
        } else {
            message.push_str(&format!(
                "; {} and {} granted",
                plural(owners, "Owner", "Owners"),
                plural(others, "other member", "other members")
            ));
        }
        if suspended > 0 {
            message
                .push_str(&format!("; {} without access", plural(suspended, "suspended member", "suspended members")));
        }
        if !unknown.is_empty() {
            message.push_str(&format!(
                "; Zitadel does not know the subject{} {}, so no grant was made for {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown.join(", "),
                if unknown.len() == 1 { "it" } else { "them" },
            ));
        }
        message.push('.');
        Ok(StepSuccess::done("OrganisationReady", message))
    }

    /// Tears the organisation down (`delete`) or keeps it.
    pub async fn teardown(&self, ids: &ZitadelIds, delete: bool) -> Result<Teardown, StepFailure> {
        let Some(org) = &ids.org_id else { return Ok(Teardown::Removed("No Zitadel organisation was made.".into())) };
        if !delete {
            return Ok(retained(org));
        }
        match self.client.delete_organization(org).await {
            Ok(true) => Ok(Teardown::Removed(format!("Zitadel organisation {org} deleted."))),
            Ok(false) => Ok(Teardown::Removed(format!("Zitadel organisation {org} was already gone."))),
            Err(e) => Err(failure(&e)),
        }
    }
}

/// What a reconcile pass did (the original's `{reconciled, skipped, failed, memberAdoption,
/// memberAdoptionFailed}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HealReport {
    /// Customers whose organisation was made or healed.
    pub reconciled: Vec<String>,
    /// Customers left alone: (name, reason).
    pub skipped: Vec<(String, String)>,
    /// Customers that could not be healed: (name, error).
    pub failed: Vec<(String, String)>,
    /// Members adopted: (name, adopted, skipped).
    pub adopted: Vec<(String, i64, i64)>,
    /// Customers whose users could not be listed: (name, error).
    pub adoption_failed: Vec<(String, String)>,
}

impl IdentityPlane {
    /// The reconcile pass (on demand and every few hours): heals every customer (or `only`)
    /// whose ids are incomplete — the release then runs again with them — and adopts the users
    /// of each organisation that have no membership yet as `member`s (never changing an existing
    /// membership, and only while a seat is free).
    pub async fn heal(&self, pool: &PgPool, only: Option<&str>) -> Result<HealReport, opencrane_db::Error> {
        let mut report = HealReport::default();
        let names = match only {
            Some(name) => vec![name.to_owned()],
            None => opencrane_fleet_db::provisioning::live_names(pool).await?,
        };
        for name in names {
            let row = match cluster_tenants::get(pool, &name).await {
                Ok(row) => row,
                Err(opencrane_db::Error::NotFound) => {
                    report.skipped.push((name, "not-found".into()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if row.deletion_requested_at.is_some() {
                report.skipped.push((name, "deleting".into()));
                continue;
            }
            let ids = ZitadelIds::of(&row);
            // The organisation whose users are adopted (the stored one, the healed one, or what a
            // failed heal left stored).
            let org = if ids.is_complete() {
                report.skipped.push((name.clone(), "already-provisioned".into()));
                ids.org_id.clone()
            } else {
                match Desired::from_row(&row) {
                    Err(invalid) => {
                        report.failed.push((name.clone(), format!("the desired state is invalid: {invalid}")));
                        ids.org_id.clone()
                    }
                    Ok(desired) => match self.converge(pool, &desired, &ids).await {
                        Ok(converged) => {
                            let release = crate::StepId::Release.as_str();
                            opencrane_fleet_db::provisioning::rerun_step(pool, &name, release).await?;
                            opencrane_fleet_db::provisioning::notify(pool, &name).await?;
                            report.reconciled.push(name.clone());
                            converged.ids.org_id
                        }
                        Err(failure) => {
                            report.failed.push((name.clone(), failure.message));
                            cluster_tenants::get(pool, &name).await.ok().and_then(|row| row.zitadel_org_id)
                        }
                    },
                }
            };
            if let Some(org) = org {
                match self.adopt_members(pool, &name, &org).await {
                    Ok((adopted, skipped)) => {
                        if adopted > 0 {
                            // The adopted members get their `member` grant from the identity step.
                            let identity = crate::StepId::Identity.as_str();
                            opencrane_fleet_db::provisioning::rerun_step(pool, &name, identity).await?;
                            opencrane_fleet_db::provisioning::notify(pool, &name).await?;
                        }
                        report.adopted.push((name, adopted, skipped));
                    }
                    Err(e) => report.adoption_failed.push((name, e)),
                }
            }
        }
        Ok(report)
    }

    /// Adopts the organisation's users without a membership as `member`s while seats are free.
    async fn adopt_members(&self, pool: &PgPool, name: &str, org: &str) -> Result<(i64, i64), String> {
        let users = self.client.org_users(org).await.map_err(|e| e.to_string())?;
        let db = |e: &dyn std::fmt::Display| format!("the fleet database: {e}");
        let (mut adopted, mut skipped) = (0, 0);
        for user in users {
            let mut tx = pool.begin().await.map_err(|e| db(&e))?;
            if memberships::find(&mut tx, name, &user.user_id).await.map_err(|e| db(&e))?.is_some() {
                skipped += 1;
                continue;
            }
            match memberships::add_or_change(&mut tx, name, &user.user_id, "member").await {
                Ok(_) => {
                    tx.commit().await.map_err(|e| db(&e))?;
                    adopted += 1;
                }
                Err(memberships::MembershipError::SeatCapExceeded { .. }) => skipped += 1,
                Err(e) => return Err(format!("adopting a member failed: {e}")),
            }
        }
        Ok((adopted, skipped))
    }
}

fn retained(org: &str) -> Teardown {
    Teardown::Retained(format!("Zitadel organisation {org} (its users and their sign-ins) is kept with the data."))
}

/// Teardown without a configured Zitadel: nothing can be deleted, so an organisation that was
/// made stays (and says so).
pub fn teardown_unconfigured(ids: &ZitadelIds) -> Teardown {
    match &ids.org_id {
        None => Teardown::Removed("No Zitadel organisation was made.".into()),
        Some(org) => Teardown::Retained(format!(
            "Zitadel organisation {org} was left in Zitadel: Zitadel is not configured on this fleet."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(vanity: Option<&str>) -> Desired {
        Desired { display_name: "Acme Corp".into(), vanity_domain: vanity.map(str::to_owned), ..Desired::example() }
    }

    #[test]
    fn the_login_app_calls_back_to_the_canonical_host_and_the_vanity_host() {
        let w = wanted(&desired(None), "opencrane.example");
        assert_eq!(w.org_name, "Acme Corp (acme)");
        assert_eq!(org_name(&Desired { display_name: "ACME".into(), ..desired(None) }), "acme");
        assert_eq!(w.login.redirect_uris, ["https://acme.opencrane.example/api/v1/auth/callback"]);
        assert_eq!(w.canonical_redirect, w.login.redirect_uris[0]);
        let w = wanted(&desired(Some("portal.acme.io")), "opencrane.example");
        assert_eq!(
            w.login.redirect_uris,
            ["https://acme.opencrane.example/api/v1/auth/callback", "https://portal.acme.io/api/v1/auth/callback"]
        );
        assert_eq!(w.login.post_logout_redirect_uris, ["https://acme.opencrane.example/", "https://portal.acme.io/"]);
    }

    #[test]
    fn uris_compare_as_sets() {
        let w = wanted(&desired(Some("portal.acme.io")), "b.example").login;
        let mut app = opencrane_zitadel::App {
            id: "1".into(),
            name: LOGIN_APP.into(),
            client_id: "c".into(),
            redirect_uris: w.redirect_uris.iter().rev().cloned().collect(),
            post_logout_redirect_uris: w.post_logout_redirect_uris.clone(),
        };
        assert!(uris_match(&app, &w));
        app.redirect_uris.pop();
        assert!(!uris_match(&app, &w));
    }
}
