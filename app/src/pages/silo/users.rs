//! Silo `/users` and `/users/:name`: the silo's users with search and filters, creating, editing,
//! suspending and deleting them.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::EnforcementBanner;
use crate::{
    api::silo::list_users,
    components::{
        feedback::{Badge, ErrorView},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState, Pagination},
    },
    forms,
    islands::silo::portal_form::{FieldKind, FormField, FormTarget, PortalForm, RowAction, RowActionButton, options},
    model::silo::{USERS_PER_PAGE, UserFilter, UserView},
};

/// The user form's fields, filled from `user` when editing.
fn user_fields(user: Option<&UserView>, policies: &[String]) -> Vec<FormField> {
    let v = |f: fn(&UserView) -> String| user.map(f).unwrap_or_default();
    let mut policy_options = vec![(String::new(), "(none: selected by labels)".to_owned())];
    policy_options.extend(options(policies));
    let mut fields = Vec::new();
    if user.is_none() {
        fields.push(
            FormField::new("name", "Name", FieldKind::Text)
                .required()
                .hint("Lowercase letters, digits and hyphens, e.g. jane-doe. Cannot be changed later."),
        );
    }
    fields.extend([
        FormField::new("displayName", "Display name", FieldKind::Text).required().value(v(|u| u.display_name.clone())),
        FormField::new("email", "E-mail", FieldKind::Text).required().value(v(|u| u.email.clone())),
        FormField::new("subject", "Subject", FieldKind::Text)
            .required()
            .hint("The person's id at the identity provider (the token's sub claim).")
            .value(v(|u| u.subject.clone())),
        FormField::new("team", "Team", FieldKind::Text)
            .hint("A label; access policies can select users by team.")
            .value(v(|u| u.team.clone().unwrap_or_default())),
        FormField::new("policyRef", "Access policy", FieldKind::Select(policy_options))
            .value(v(|u| u.policy_ref.clone().unwrap_or_default())),
        FormField::new("monthlyBudgetUsd", "Monthly limit", FieldKind::Text)
            .hint("The user's own limit per calendar month in the silo currency; empty for none. Other limits (silo, groups) apply too.")
            .value(v(|u| u.own_limit.as_deref().and_then(|l| l.split_whitespace().next()).unwrap_or_default().to_owned())),
        FormField::new("resources.cpu", "CPU", FieldKind::Text).hint("e.g. 500m or 1").value(v(|u| u.resources.cpu.clone().unwrap_or_default())),
        FormField::new("resources.memory", "Memory", FieldKind::Text).hint("e.g. 1Gi").value(v(|u| u.resources.memory.clone().unwrap_or_default())),
    ]);
    fields
}

/// The runtime (Kubernetes mode): the Tenant resource's phase, and drift from this record.
fn runtime_cell(user: &UserView) -> AnyView {
    match (&user.phase, &user.resource_drift) {
        (_, Some(drift)) => view! { <Badge text=format!("resource drift: {drift}") tone="warn" /> }.into_any(),
        (Some(phase), None) => view! { <Badge text=phase.clone() /> }.into_any(),
        (None, None) => view! { <span class="muted">"—"</span> }.into_any(),
    }
}

fn key_cell(user: &UserView) -> AnyView {
    match &user.key {
        None => view! { <span class="muted">"—"</span> }.into_any(),
        Some(k) if k.drift.is_some() => {
            view! { <Badge text=format!("drift: {}", k.drift.clone().unwrap_or_default()) tone="warn" /> }.into_any()
        }
        Some(k) if k.revoke_requested_at.is_some() => view! { <Badge text="revoking" tone="warn" /> }.into_any(),
        Some(k) if k.blocked => view! { <Badge text="blocked" tone="bad" /> }.into_any(),
        Some(_) => view! { <Badge text="active" tone="ok" /> }.into_any(),
    }
}

/// The user's LiteLLM key on their page: what it carries, and *Revoke key* (for a leaked key
/// or a lost device: LiteLLM refuses it from the next pass on and the user gets a new one).
#[component]
fn KeyCard(user: UserView) -> impl IntoView {
    let body = match &user.key {
        None => view! { <p class="muted">"No key yet: the next pass over LiteLLM issues one."</p> }.into_any(),
        Some(k) => {
            let models = if k.models.is_empty() { "none".to_owned() } else { k.models.join(", ") };
            let state = match &k.revoke_requested_at {
                Some(at) => {
                    format!("Revoked at {}; the next pass deletes it in LiteLLM and issues a new key.", timestamp(*at))
                }
                None if k.blocked => "Blocked (a limit is reached or the user is suspended).".to_owned(),
                None => "Active.".to_owned(),
            };
            view! {
                <dl class="props">
                    <dt>"State"</dt>
                    <dd>{state}</dd>
                    <dt>"Issued"</dt>
                    <dd>{timestamp(k.issued_at)}</dd>
                    <dt>"Models"</dt>
                    <dd>{models}</dd>
                    <dt>"Budget on the key"</dt>
                    <dd>{k.max_budget.clone().unwrap_or_else(|| "none".into())}</dd>
                    <dt>"Last checked"</dt>
                    <dd class="muted">{k.synced_at.map_or_else(|| "not yet".to_owned(), timestamp)}</dd>
                </dl>
                <div class="actions">
                    <RowActionButton action=RowAction::RevokeKey(user.name.clone()) label="Revoke key".to_owned() done=format!("/users/{}", user.name) of=format!("of {}", user.name) />
                </div>
            }
            .into_any()
        }
    };
    view! {
        <section class="card" id="llm-key">
            <h2>"LLM key"</h2>
            {body}
        </section>
    }
}

/// `/users`.
#[component]
pub fn UsersPage() -> impl IntoView {
    let filter = use_query_map().with_untracked(|q| UserFilter {
        q: q.get("q"),
        team: q.get("team"),
        phase: q.get("phase"),
        suspended: q.get("suspended").and_then(|s| match s.as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }),
        page: Some(q.get("page").and_then(|p| p.parse::<i64>().ok()).filter(|p| *p >= 1).unwrap_or(1)),
    });
    view! {
        <Title text="Users" />
        <PageHeader title="Users" description="The people using this silo's assistants. Each has a LiteLLM key carrying their allowed models and limits." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match list_users(filter.clone()).await {
                    Ok(list) => {
                        let form_fields = user_fields(None, &list.policies);
                        let teams = list.teams.clone();
                        view! {
                            <EnforcementBanner sync=list.enforcement.clone() />
                            <details class="card" open=(list.users.is_empty() && filter.q.is_none()) || forms::echoed("new-user")>
                                <summary>"New user"</summary>
                                <PortalForm id="new-user".to_owned() fields=form_fields target=FormTarget::CreateUser submit_label="Create user".to_owned() done="/users".to_owned() />
                            </details>
                            <UserFilters filter=filter.clone() teams=teams />
                            <UserTable users=list.users />
                            <Pagination page=filter.page.unwrap_or(1) per_page=USERS_PER_PAGE total=list.total href=move |p| filter.href(p) />
                        }
                        .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// Server-side filters as a plain GET form (works without WASM).
#[component]
fn UserFilters(filter: UserFilter, teams: Vec<String>) -> impl IntoView {
    let team = filter.team.clone().unwrap_or_default();
    let suspended = filter.suspended.map(|s| s.to_string()).unwrap_or_default();
    view! {
        <form class="filters" method="get" action="/users" role="search">
            <label>"Search "<input type="search" name="q" value=filter.q.clone().unwrap_or_default() placeholder="name, display name or e-mail" /></label>
            <label>
                "Team "
                <select name="team">
                    <option value="">"All"</option>
                    {teams.into_iter().map(|t| { let sel = t == team; view! { <option value=t.clone() selected=sel>{t.clone()}</option> } }).collect_view()}
                </select>
            </label>
            <label>
                "State "
                <select name="suspended">
                    <option value="" selected=suspended.is_empty()>"All"</option>
                    <option value="false" selected=suspended == "false">"Active"</option>
                    <option value="true" selected=suspended == "true">"Suspended"</option>
                </select>
            </label>
            <button type="submit" class="btn">"Filter"</button>
        </form>
    }
}

#[component]
fn UserTable(users: Vec<UserView>) -> impl IntoView {
    if users.is_empty() {
        return view! { <EmptyState title="No users match" body="Create one above, or change the filters." /> }
            .into_any();
    }
    let rows = users
        .into_iter()
        .map(|u| {
            let key = key_cell(&u);
            let runtime = runtime_cell(&u);
            let state = if u.suspended { view! { <Badge text="suspended" tone="warn" /> }.into_any() } else { view! { <Badge text="active" tone="ok" /> }.into_any() };
            let suspend = RowAction::SuspendUser(u.name.clone(), !u.suspended);
            let suspend_label = if u.suspended { "Resume" } else { "Suspend" };
            view! {
                <tr>
                    <td class="nowrap"><a href=format!("/users/{}", u.name)>{u.name.clone()}</a></td>
                    <td>{u.display_name.clone()}</td>
                    <td>{u.email.clone()}</td>
                    <td>{u.team.clone().unwrap_or_default()}</td>
                    <td>{u.groups.join(", ")}</td>
                    <td>{u.policy_ref.clone().unwrap_or_default()}</td>
                    <td>{u.own_limit.clone().unwrap_or_else(|| "—".into())}</td>
                    <td>{key}</td>
                    <td>{runtime}</td>
                    <td>{state}</td>
                    <td class="actions">
                        <a class="btn small" href=format!("/access?user={}", u.name)>"Access"</a>
                        <RowActionButton action=suspend label=suspend_label.to_owned() done="/users".to_owned() of=format!("user {}", u.name) />
                        <RowActionButton action=RowAction::DeleteUser(u.name.clone()) label="Delete".to_owned() done="/users".to_owned() of=format!("user {}", u.name) />
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable headers=&["Name", "Display name", "E-mail", "Team", "Groups", "Policy", "Own limit", "Key", "Runtime", "State", ""]>{rows}</DataTable>
    }
    .into_any()
}

/// `/users/:name`: edit one user.
#[component]
pub fn UserPage() -> impl IntoView {
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    view! {
        <Title text=name.clone() />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                let found = list_users(UserFilter::default()).await.and_then(|list| {
                    let user = list.users.into_iter().find(|u| u.name == name).ok_or_else(|| crate::error::AppError::NotFound {
                        code: "TENANT_NOT_FOUND".into(),
                        message: format!("No user named “{name}” exists in this silo."),
                    })?;
                    Ok((user, list.policies))
                });
                match found {
                    Ok((user, policies)) => {
                        let fields = user_fields(Some(&user), &policies);
                        let access_href = format!("/access?user={}", user.name);
                        view! {
                            <PageHeader title=format!("{} ({})", user.display_name, user.name) description=format!("Created by {} · subject {}", user.origin, user.subject)>
                                <a class="btn" href=access_href>"Effective access"</a>
                            </PageHeader>
                            <PortalForm id="edit-user".to_owned() fields target=FormTarget::UpdateUser(user.name.clone()) submit_label="Save changes".to_owned() done=format!("/users/{}", user.name) />
                            <KeyCard user=user.clone() />
                        }
                        .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
