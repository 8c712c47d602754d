//! Progressive enhancement: every form works before and without the wasm bundle.
//!
//! Each form is a real `<form method="post">` to its own page, with named fields and one hidden
//! field, [`TARGET`], saying what it does ([`Posted`]). Without the wasm, the browser posts the
//! form, the server's form layer hands the fields to [`submit`], which runs the form's server
//! function, and answers with a redirect on success or with the same page rendered again, the
//! typed values kept and each error under its field ([`FormEcho`]). With the wasm, the island
//! intercepts the submit and sends **the same fields** in the background through one server
//! function ([`crate::api::forms::post_form`] → [`submit_in_background`]): the same code path,
//! so the same service, validation and authorisation, answered with where to go or the error the
//! island places under its fields. Islands also adopt what was typed before they hydrated
//! ([`typed`]).
//!
//! Leptos' `ActionForm` does the no-wasm post too, but answers a failure with a redirect to the
//! referring page that loses the typed values and places no error under its field, and needs
//! URL-encoded server-function inputs; these forms keep JSON server functions and the field errors.

use serde::{Deserialize, Serialize};

use crate::{error::FieldErrors, islands::silo::portal_form::FormTarget};

/// The hidden field naming what a form does (JSON of [`Posted`]).
pub const TARGET: &str = "_target";

/// The hidden field holding the form's DOM id (which form on the page the echo belongs to).
pub const FORM: &str = "_form";

/// What a posted form does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Posted {
    /// A described silo form: the fields' kinds say how each value is encoded.
    Portal {
        /// Where it goes.
        target: FormTarget,
        /// Where the browser goes afterwards.
        done: String,
        /// Each field's key and kind (options left out).
        kinds: Vec<(String, crate::islands::silo::portal_form::FieldKind)>,
        /// Fixed keys sent with the form.
        fixed: Vec<(String, String)>,
    },
    /// The customer form (`None` creates).
    ClusterTenant {
        /// The customer being edited.
        editing: Option<String>,
    },
    /// One's own billing account.
    BillingAccount,
    /// A new access token of the silo (its secret is shown once, on the page the post answers).
    Token,
    /// One action on one row of a silo table (the typed confirmation is a field).
    RowAction {
        /// What to do.
        action: crate::islands::silo::portal_form::RowAction,
        /// Where the browser goes afterwards.
        done: String,
    },
    /// Suspend (scale to zero, block sign-ins) or resume a customer's silo.
    SuspendClusterTenant {
        /// The customer.
        cluster_tenant: String,
        /// Suspended afterwards.
        suspended: bool,
    },
    /// Retry a customer's failed provisioning step (`None`: every failed step).
    RetryProvisioning {
        /// The customer.
        cluster_tenant: String,
        /// Which step.
        step: Option<crate::model::fleet::provisioning::StepId>,
    },
    /// Delete a customer: the typed name (`confirmation`) and what happens to its data
    /// (`termination-policy`) are fields.
    DeleteClusterTenant {
        /// The customer.
        cluster_tenant: String,
    },
    /// Suspend or reactivate one member.
    SuspendMember {
        /// The customer.
        cluster_tenant: String,
        /// The member.
        subject: String,
        /// Suspended afterwards.
        suspended: bool,
    },
    /// Remove one member (after the confirmation step of its disclosure).
    RemoveMember {
        /// The customer.
        cluster_tenant: String,
        /// The member.
        subject: String,
    },
    /// Revoke one of the silo's access tokens.
    RevokeToken {
        /// The token's id.
        id: String,
    },
    /// End sign-in sessions (this role's: the fleet's on the fleet, the silo's on a silo).
    RevokeSessions {
        /// Which.
        what: crate::model::session::RevokeSessions,
    },
    /// Add a member to a customer, or change a member's role, or invite a person by e-mail.
    Member {
        /// The customer.
        cluster_tenant: String,
    },
    /// Withdraw a pending invitation (the address is a field of the form).
    CancelInvitation {
        /// The customer.
        cluster_tenant: String,
    },
    /// Check a customer's DNS and certificates now.
    DnsRefresh {
        /// The customer.
        cluster_tenant: String,
        /// The page to go back to.
        done: String,
    },
    /// Configure the platform's certificate issuer (its token never echoes back).
    PlatformDns,
    /// Rotate the fleet's Zitadel key to an uploaded one (the key never echoes back).
    ZitadelKey,
    /// A step of a two-phase key rotation.
    ZitadelRotation {
        /// Which.
        action: crate::model::fleet::identity::RotationAction,
    },
    /// The Zitadel reconcile pass.
    ZitadelReconcile,
    /// Define a billing plan.
    BillingPlan,
    /// Put a customer on a plan (the plan and the day are fields).
    AssignPlan {
        /// The customer.
        cluster_tenant: String,
    },
    /// Run the migration from the shared database (the phase and the customer are fields).
    MigrationRun,
    /// Make a closed month's statement final.
    FinaliseStatement {
        /// The customer.
        cluster_tenant: String,
        /// `YYYY-MM`.
        month: String,
    },
}

impl Posted {
    /// The value of the hidden [`TARGET`] field.
    pub fn hidden(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A DOM id made from words (an accessible name, a row's name): lowercase ASCII letters and
/// digits, everything else `-`, so it is a plain CSS selector too.
pub fn dom_id(words: &str) -> String {
    words.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// The two hidden fields every posted form carries: its DOM id (`form`) and what it does.
#[leptos::component]
pub fn PostedFields(#[prop(into)] form: String, posted: Posted) -> impl leptos::IntoView {
    use leptos::prelude::*;
    view! {
        <input type="hidden" name=FORM value=form />
        <input type="hidden" name=TARGET value=posted.hidden() />
    }
}

/// A form answered without wasm: the values as posted, the server's messages, and a sentence for
/// what no field shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormEcho {
    /// The form's DOM id.
    pub form: String,
    /// The posted fields, in order (a key repeats for checkboxes).
    pub values: Vec<(String, String)>,
    /// Messages by field key.
    pub errors: FieldErrors,
    /// The message for the whole form.
    pub message: Option<String>,
    /// A token just created: the page shows its secret, once (the answer is never cached).
    #[serde(default)]
    pub created_token: Option<crate::model::session::CreatedAccessToken>,
}

impl FormEcho {
    /// Why the post was refused, for a form with one field of its own: that field's message
    /// (it names what to type), else the form's sentence.
    #[must_use]
    pub fn reason(&self) -> String {
        self.errors.0.values().next().cloned().or_else(|| self.message.clone()).unwrap_or_default()
    }

    /// This echo, for the form `form`.
    #[must_use]
    pub fn named(self, form: &str) -> Self {
        Self { form: form.to_owned(), ..self }
    }

    /// The posted value of `key` (repeated keys joined by newlines), if it was posted.
    pub fn value(&self, key: &str) -> Option<String> {
        let all: Vec<&str> = self.values.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect();
        (!all.is_empty()).then(|| all.join("\n"))
    }
}

/// The echo of the form `form` when this page answers its failed post.
pub fn echo(form: &str) -> Option<FormEcho> {
    #[cfg(feature = "ssr")]
    {
        leptos::prelude::use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<FormEcho>().cloned())
            .filter(|echo| echo.form == form)
    }
    #[cfg(not(feature = "ssr"))]
    {
        let _ = form;
        None
    }
}

/// The sentence of a refused post of the form `form` (the form's, else its first field's), for a
/// form whose fields show no messages of their own (a button).
pub fn refusal(form: &str) -> Option<String> {
    echo(form).map(|e| e.message.or_else(|| e.errors.0.values().next().cloned()).unwrap_or_default())
}

/// Whether this page answers a failed post of the form `form` (a disclosure holding it opens).
pub fn echoed(form: &str) -> bool {
    echo(form).is_some()
}

/// `href` when it is a path on this server, else `/` (a posted `done` never sends the browser
/// elsewhere). Browsers drop tabs and newlines from URLs and read `\` as `/`, so `/\t/evil`
/// would become `//evil`: any control character, space or backslash is refused too.
pub fn local_path(href: &str) -> String {
    let local = href.starts_with('/')
        && !href.starts_with("//")
        && !href.chars().any(|c| c == '\\' || c.is_control() || c.is_whitespace());
    if local { href.to_owned() } else { "/".to_owned() }
}

/// `href` with `key=value` added to its query (the value URL-encoded).
pub fn with_query(href: &str, key: &str, value: &str) -> String {
    let sep = if href.contains('?') { '&' } else { '?' };
    format!("{href}{sep}{key}={}", crate::model::href::url_encode(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_posted_done_stays_on_this_server() {
        for good in ["/users", "/users/jane?tab=keys", "/cluster-tenants/acme/members"] {
            assert_eq!(local_path(good), good);
        }
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil.example",
            "/\t/evil.example",
            "/\n/evil",
            "/ /evil",
            "users",
            "",
        ] {
            assert_eq!(local_path(bad), "/", "{bad:?}");
        }
        assert_eq!(with_query("/users", "saved", "new user"), "/users?saved=new%20user");
        assert_eq!(with_query("/users?page=2", "saved", "x"), "/users?page=2&saved=x");
    }

    #[test]
    fn an_echo_joins_repeated_keys_and_knows_what_was_not_posted() {
        let echo = FormEcho {
            values: vec![("groups".into(), "a".into()), ("name".into(), "n".into()), ("groups".into(), "b".into())],
            ..FormEcho::default()
        };
        assert_eq!(echo.value("groups").as_deref(), Some("a\nb"));
        assert_eq!(echo.value("name").as_deref(), Some("n"));
        assert_eq!(echo.value("missing"), None);
    }
}

#[cfg(feature = "ssr")]
pub use self::server::{Outcome, preview, submit, submit_in_background};

#[cfg(feature = "ssr")]
mod server {
    use leptos::{
        prelude::provide_context,
        reactive::{computed::ScopedFuture, owner::Owner},
    };

    use super::{FORM, FormEcho, Posted, TARGET, local_path, with_query};
    use crate::{
        Role,
        api::{
            fleet::{
                assign_billing_plan, create_billing_plan, delete_cluster_tenant, finalise_billing_statement,
                identity_rotation, reconcile_identity, refresh_customer_dns, remove_member, retry_provisioning,
                revoke_fleet_sessions, rotate_zitadel_key, save_platform_dns, set_cluster_tenant_suspended,
                set_member_suspended, start_migration_run,
            },
            silo::{create_token, revoke_silo_sessions, revoke_token},
        },
        error::AppError,
        islands::{
            fleet::{billing_account, cluster_tenant_editor, members},
            silo::portal_form,
        },
        model::{
            fleet::{
                billing::{AssignPlanRequest, PlanRequest},
                cluster_tenant::{ClusterTenantForm, TerminationPolicy},
                dns::PlatformDnsForm,
                migrations::RunRequest,
            },
            href::url_encode,
            session::NewAccessTokenRequest,
            silo::WhatIf,
        },
        state::AppState,
    };

    /// The plan form's fields.
    const BILLING_PLAN_FIELDS: &[&str] =
        &["name", "currency", "seatPrice", "includedSeats", "markupPercent", "monthlyMinimum"];

    /// The issuer form's fields (a message for another field goes above the form).
    const PLATFORM_DNS_FIELDS: &[&str] = &["provider", "zone", "email", "server", "apiToken", "solverConfig"];

    /// A customer's page.
    fn customer_page(name: &str) -> String {
        format!("/cluster-tenants/{}", url_encode(name))
    }

    /// A customer's billing page.
    fn billing_page(name: &str) -> String {
        format!("/billing/{}", url_encode(name))
    }

    /// How a posted form was answered.
    pub enum Outcome {
        /// Done: send the browser here (303).
        Redirect(String),
        /// Render the page again with this echo, with this HTTP status: refused (the values and
        /// messages), or done with something shown once (a new token's secret).
        Render(Box<FormEcho>, u16),
    }

    /// A posted form, read: what it does, its DOM id, and its fields as posted (a secret kept
    /// apart, never echoed).
    struct Post {
        posted: Posted,
        echo: FormEcho,
        secret: String,
    }

    impl Post {
        /// The post's hidden fields read; `None` when it is not one of this role's forms.
        fn read(state: &AppState, values: Vec<(String, String)>) -> Option<Self> {
            let field = |name: &str| values.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let posted: Posted = serde_json::from_str(&field(TARGET)?).ok()?;
            let role_matches = match &posted {
                Posted::Portal { .. } | Posted::Token | Posted::RowAction { .. } | Posted::RevokeToken { .. } => {
                    state.role() == Role::Silo
                }
                Posted::RevokeSessions { .. } => true,
                Posted::ClusterTenant { .. }
                | Posted::BillingAccount
                | Posted::Member { .. }
                | Posted::CancelInvitation { .. }
                | Posted::DnsRefresh { .. }
                | Posted::PlatformDns
                | Posted::ZitadelKey
                | Posted::ZitadelRotation { .. }
                | Posted::ZitadelReconcile
                | Posted::BillingPlan
                | Posted::AssignPlan { .. }
                | Posted::FinaliseStatement { .. }
                | Posted::MigrationRun
                | Posted::SuspendClusterTenant { .. }
                | Posted::RetryProvisioning { .. }
                | Posted::DeleteClusterTenant { .. }
                | Posted::SuspendMember { .. }
                | Posted::RemoveMember { .. } => state.role() == Role::Fleet,
            };
            if !role_matches {
                return None;
            }
            let form = field(FORM).unwrap_or_default();
            // A posted key or token is a secret: it is used, never echoed back into the page.
            let secret_key = match posted {
                Posted::ZitadelKey => Some("serviceAccountKey"),
                Posted::PlatformDns => Some("apiToken"),
                _ => None,
            };
            let secret = secret_key.and_then(field).unwrap_or_default();
            let values =
                values.into_iter().filter(|(k, _)| !k.starts_with('_') && Some(k.as_str()) != secret_key).collect();
            Some(Self { posted, echo: FormEcho { form, values, ..FormEcho::default() }, secret })
        }

        /// Whether the form shows a message for `key` under a field of its own.
        fn shows(&self, key: &str) -> bool {
            match &self.posted {
                Posted::Portal { kinds, .. } => kinds.iter().any(|(k, _)| k == key),
                Posted::ClusterTenant { .. } => cluster_tenant_editor::shows(key),
                Posted::BillingAccount => billing_account::shows(key),
                Posted::Member { .. } => members::shows(key),
                Posted::CancelInvitation { .. } | Posted::DnsRefresh { .. } => false,
                Posted::Token => key == "name",
                Posted::RowAction { .. } => key == "confirmation",
                Posted::ZitadelKey => key == "serviceAccountKey",
                Posted::PlatformDns => PLATFORM_DNS_FIELDS.contains(&key),
                Posted::DeleteClusterTenant { .. } => matches!(key, "confirmation" | "termination-policy"),
                Posted::BillingPlan => BILLING_PLAN_FIELDS.contains(&key),
                Posted::AssignPlan { .. } => matches!(key, "plan" | "effectiveFrom"),
                Posted::MigrationRun => matches!(key, "until" | "customer" | "delta"),
                Posted::FinaliseStatement { .. }
                | Posted::ZitadelRotation { .. }
                | Posted::ZitadelReconcile
                | Posted::RevokeToken { .. }
                | Posted::RevokeSessions { .. }
                | Posted::SuspendClusterTenant { .. }
                | Posted::RetryProvisioning { .. }
                | Posted::SuspendMember { .. }
                | Posted::RemoveMember { .. } => false,
            }
        }
    }

    /// Runs a form posted without wasm. `None` when the post is not one of this role's forms.
    pub async fn submit(
        state: AppState,
        parts: http::request::Parts,
        values: Vec<(String, String)>,
    ) -> Option<Outcome> {
        let post = Post::read(&state, values)?;
        Some(match run(&post, state, parts).await {
            Ok(outcome) => outcome,
            Err(err) => {
                let status = err.status();
                let message = crate::islands::enhance::summary(&err, |key| post.shows(key));
                Outcome::Render(Box::new(FormEcho { errors: err.field_errors(), message, ..post.echo }), status)
            }
        })
    }

    /// Runs a form an island posted in the background ([`super::post_form`]): the same fields as
    /// the browser would post, the same code path; the answer is where to go next, or the error
    /// for the island to place under its fields.
    pub async fn submit_in_background(
        state: AppState,
        parts: http::request::Parts,
        values: Vec<(String, String)>,
    ) -> Result<String, AppError> {
        let post = Post::read(&state, values).ok_or_else(not_here)?;
        // A new token's secret is shown by the page the post answers; never sent in the background.
        if post.posted == Posted::Token {
            return Err(not_here());
        }
        match run(&post, state, parts).await? {
            Outcome::Redirect(href) => Ok(href),
            Outcome::Render(..) => Err(not_here()),
        }
    }

    /// What a described form's fields (as the browser would post them) would change, for the
    /// island's preview button; called inside its server function, so the context is there.
    pub async fn preview(state: &AppState, values: Vec<(String, String)>) -> Result<WhatIf, AppError> {
        match Post::read(state, values) {
            Some(Post { posted: Posted::Portal { target, kinds, fixed, .. }, echo, .. }) => {
                let body = portal_form::build_body(&kinds, &fixed, |key| echo.value(key).unwrap_or_default())
                    .map_err(|fields| AppError::Validation { fields })?;
                portal_form::preview(target, body).await
            }
            _ => Err(not_here()),
        }
    }

    /// The answer to a post that is none of this server's forms.
    fn not_here() -> AppError {
        AppError::BadRequest {
            code: "FORM_NOT_HERE".into(),
            message: "This form cannot be sent here. Reload the page and try again.".into(),
            field: None,
        }
    }

    /// What a post does, run by the server function it names.
    async fn run(post: &Post, state: AppState, parts: http::request::Parts) -> Result<Outcome, AppError> {
        let (form, fields, secret) = (post.echo.form.clone(), &post.echo.values, post.secret.clone());
        let lookup = |key: &str| post.echo.value(key).unwrap_or_default();

        // The server functions read the application state and the request from the reactive
        // context, exactly as when the island calls them.
        let owner = Owner::new();
        owner.with(|| {
            provide_context(state.clone());
            provide_context(parts.clone());
        });
        let redirect = |href: String| Outcome::Redirect(href);
        let run = async {
            match post.posted.clone() {
                Posted::Portal { target, done, kinds, fixed } => {
                    let body = portal_form::build_body(&kinds, &fixed, lookup)
                        .map_err(|fields| AppError::Validation { fields })?;
                    portal_form::submit(target, body).await?;
                    Ok(redirect(with_query(&local_path(&done), "saved", &form)))
                }
                Posted::ClusterTenant { editing } => {
                    let input =
                        ClusterTenantForm::default().with_pairs(fields.iter().map(|(k, v)| (k.as_str(), v.clone())));
                    cluster_tenant_editor::save(input, editing, &state.ui_context().validation).await.map(redirect)
                }
                Posted::BillingAccount => {
                    billing_account::save(lookup("displayName"), lookup("timeZone")).await.map(redirect)
                }
                Posted::Member { cluster_tenant } => {
                    members::save(cluster_tenant, lookup("subject"), lookup("email"), lookup("role"))
                        .await
                        .map(redirect)
                }
                Posted::DnsRefresh { cluster_tenant, done } => {
                    refresh_customer_dns(cluster_tenant.clone()).await?;
                    Ok(redirect(with_query(&local_path(&done), "checked", &cluster_tenant)))
                }
                Posted::CancelInvitation { cluster_tenant } => {
                    members::withdraw(cluster_tenant, lookup("email")).await.map(redirect)
                }
                Posted::PlatformDns => {
                    let form = PlatformDnsForm {
                        provider: lookup("provider"),
                        zone: lookup("zone"),
                        email: lookup("email"),
                        server: lookup("server"),
                        api_token: secret.clone(),
                        solver_config: lookup("solverConfig"),
                    };
                    save_platform_dns(form).await.map(|_| redirect("/dns?saved=issuer".to_owned()))
                }
                Posted::ZitadelKey => {
                    rotate_zitadel_key(secret).await.map(|_| redirect(with_query("/identity", "saved", &form)))
                }
                Posted::ZitadelRotation { action } => {
                    identity_rotation(action).await.map(|_| redirect(with_query("/identity", "saved", &form)))
                }
                Posted::ZitadelReconcile => {
                    let name = Some(lookup("name")).filter(|n| !n.trim().is_empty());
                    reconcile_identity(name).await.map(|_| redirect(with_query("/identity", "saved", &form)))
                }
                Posted::BillingPlan => {
                    let included = lookup("includedSeats");
                    let included_seats = match included.trim() {
                        "" => 0,
                        text => text
                            .parse()
                            .map_err(|_| AppError::field("includedSeats", "A whole number of seats, 0 or more."))?,
                    };
                    let request = PlanRequest {
                        name: lookup("name"),
                        currency: lookup("currency"),
                        seat_price: lookup("seatPrice"),
                        included_seats,
                        markup_percent: Some(lookup("markupPercent")).filter(|m| !m.trim().is_empty()),
                        monthly_minimum: Some(lookup("monthlyMinimum")).filter(|m| !m.trim().is_empty()),
                    };
                    let plan = create_billing_plan(request).await?;
                    Ok(redirect(with_query("/billing", "saved", &plan.name)))
                }
                Posted::AssignPlan { cluster_tenant } => {
                    let request = AssignPlanRequest {
                        plan: lookup("plan"),
                        effective_from: Some(lookup("effectiveFrom")).filter(|d| !d.trim().is_empty()),
                    };
                    assign_billing_plan(cluster_tenant.clone(), request).await?;
                    Ok(redirect(with_query(&billing_page(&cluster_tenant), "saved", "plan")))
                }
                Posted::MigrationRun => {
                    let request = RunRequest {
                        until: lookup("until"),
                        customer: Some(lookup("customer")).filter(|c| !c.trim().is_empty()),
                        delta: lookup("delta") == "on",
                    };
                    let id = start_migration_run(request).await?;
                    Ok(redirect(format!("/migrations?started={id}")))
                }
                Posted::FinaliseStatement { cluster_tenant, month } => {
                    finalise_billing_statement(cluster_tenant.clone(), month.clone()).await?;
                    let page = with_query(&billing_page(&cluster_tenant), "month", &month);
                    Ok(redirect(with_query(&page, "saved", "final")))
                }
                Posted::SuspendClusterTenant { cluster_tenant, suspended } => {
                    set_cluster_tenant_suspended(cluster_tenant.clone(), suspended).await?;
                    Ok(redirect(with_query(&customer_page(&cluster_tenant), "saved", &form)))
                }
                Posted::RetryProvisioning { cluster_tenant, step } => {
                    retry_provisioning(cluster_tenant.clone(), step).await?;
                    Ok(redirect(customer_page(&cluster_tenant)))
                }
                Posted::DeleteClusterTenant { cluster_tenant } => {
                    let policy = match lookup("termination-policy").as_str() {
                        "" => None,
                        chosen => Some(TerminationPolicy::parse(chosen).ok_or_else(|| {
                            AppError::field("termination-policy", "Choose whether the data is kept or deleted.")
                        })?),
                    };
                    delete_cluster_tenant(cluster_tenant.clone(), lookup("confirmation"), policy).await?;
                    Ok(redirect(with_query(&customer_page(&cluster_tenant), "deleting", "1")))
                }
                Posted::SuspendMember { cluster_tenant, subject, suspended } => {
                    set_member_suspended(cluster_tenant.clone(), subject, suspended).await?;
                    Ok(redirect(members::members_page(
                        &cluster_tenant,
                        if suspended { "member-suspended" } else { "member-reactivated" },
                    )))
                }
                Posted::RemoveMember { cluster_tenant, subject } => {
                    remove_member(cluster_tenant.clone(), subject).await?;
                    Ok(redirect(members::members_page(&cluster_tenant, "member-removed")))
                }
                Posted::RevokeToken { id } => {
                    revoke_token(id).await?;
                    Ok(redirect(with_query("/tokens", "saved", "revoked")))
                }
                Posted::RevokeSessions { what } => {
                    match state.role() {
                        Role::Fleet => revoke_fleet_sessions(what).await?,
                        Role::Silo => revoke_silo_sessions(what).await?,
                    };
                    Ok(redirect("/sessions".to_owned()))
                }
                Posted::RowAction { action, done } => {
                    portal_form::run(action, lookup("confirmation")).await?;
                    Ok(redirect(local_path(&done)))
                }
                // A new token is not redirected: the page shows its secret, once.
                Posted::Token => {
                    let request = NewAccessTokenRequest {
                        name: lookup("name"),
                        role: lookup("role"),
                        expires_in_days: lookup("expiresInDays").trim().parse().ok(),
                    };
                    let token = create_token(request).await?;
                    let shown = FormEcho { created_token: Some(token), ..FormEcho::default() }.named(&form);
                    Ok(Outcome::Render(Box::new(shown), 201))
                }
            }
        };
        owner.with(|| ScopedFuture::new_untracked(run)).await
    }
}
