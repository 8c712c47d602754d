//! Silo `/access`: everything that applies to one user — every model and why, the governing
//! policy and a domain check, every limit with the one that binds first, the route of a request
//! naming no model, and their live sign-in sessions — as enforcement computes it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::LimitTable;
use crate::{
    api::silo::{check_domain, list_users, load_effective_access},
    components::{
        feedback::{Badge, ErrorView, Notice},
        layout::PageHeader,
        table::DataTable,
    },
    error::AppError,
    islands::{
        silo::portal_form::{RowAction, RowActionButton},
        silo::portal_tools::{DomainCheckTool, RouteResult},
    },
    model::silo::{DomainCheck, EffectiveAccess, UserFilter},
};

/// `/access?user=` (and `&domain=`: the domain check's question).
#[component]
pub fn AccessPage() -> impl IntoView {
    let (user, domain) = use_query_map().with_untracked(|q| (q.get("user").unwrap_or_default(), q.get("domain")));
    view! {
        <Title text="Effective access" />
        <PageHeader title="Effective access" description="Pick a user to see every model, policy and limit that applies to them, and why — computed by the same rules that enforce them." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                let users = match list_users(UserFilter::default()).await {
                    Ok(list) => list.users,
                    Err(error) => return view! { <ErrorView error /> }.into_any(),
                };
                let picker = view! {
                    <form class="filters" method="get" action="/access">
                        <label>
                            "User "
                            <select name="user" id="access-user">
                                <option value="">"Choose…"</option>
                                {users.iter().map(|u| {
                                    let selected = u.name == user;
                                    view! { <option value=u.name.clone() selected=selected>{format!("{} ({})", u.display_name, u.name)}</option> }
                                }).collect_view()}
                            </select>
                        </label>
                        <button type="submit" class="btn">"Show"</button>
                    </form>
                };
                if user.is_empty() {
                    return view! { {picker} <p class="muted">"Choose a user."</p> }.into_any();
                }
                // The domain check's question, when it was asked (`&domain=`).
                let checked = match domain {
                    Some(domain) => Some((domain.clone(), check_domain(user.clone(), domain).await)),
                    None => None,
                };
                match load_effective_access(user.clone()).await {
                    Ok(access) => view! { {picker} <Effective access checked /> }.into_any(),
                    Err(error) => view! { {picker} <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Effective(access: EffectiveAccess, checked: Option<(String, Result<DomainCheck, AppError>)>) -> impl IntoView {
    let u = access.user.clone();
    let no_models = access.models.is_empty();
    let models = access
        .models
        .into_iter()
        .map(|m| {
            let badge = if m.allowed {
                view! { <Badge text="allowed" tone="ok" /> }
            } else {
                view! { <Badge text="denied" tone="bad" /> }
            };
            view! {
                <tr>
                    <td class="mono">{m.model.clone()}</td>
                    <td>{badge}</td>
                    <td>{m.why.clone()}</td>
                    <td class="muted small">{m.overridden.join("; ")}</td>
                </tr>
            }
        })
        .collect_view();
    let blocked = (!access.block_reasons.is_empty()).then(|| {
        view! { <Notice tone="bad">{format!("This user's key is blocked: {}.", access.block_reasons.join("; "))}</Notice> }
    });
    let policy = match access.policy {
        Some(p) => view! {
            <p>
                <strong>{p.policy.name.clone()}</strong>{format!(" — {}.", p.how)}
            </p>
            <p>{format!("Allowed: {}", if p.policy.allowed_domains.is_empty() { "nothing".to_owned() } else { p.policy.allowed_domains.join(", ") })}</p>
            <p>{format!("Denied: {}", if p.policy.denied_domains.is_empty() { "—".to_owned() } else { p.policy.denied_domains.join(", ") })}</p>
        }
        .into_any(),
        None => view! { <p class="muted">"No policy governs this user: nothing outside the silo is reachable."</p> }.into_any(),
    };
    let sessions = match access.active_sessions {
        0 => view! { <p class="muted">"No active sign-in sessions in this silo."</p> }.into_any(),
        n => view! {
            <p>
                {format!("{n} active sign-in session{} in this silo ", if n == 1 { "" } else { "s" })}
                <RowActionButton
                    action=RowAction::SignOutAll(u.subject.clone())
                    label="Sign out all".to_owned()
                    done=format!("/access?user={}", u.name)
                />
            </p>
        }
        .into_any(),
    };
    view! {
        <h2 class="access-user">{format!("{} ({}) · {}", u.display_name, u.name, u.email)}</h2>
        {blocked}
        <section>
            <h3>"Models"</h3>
            <p class="muted">{format!("Without a grant a model is {}ed.", access.default_model_access)}</p>
            {if no_models {
                view! { <p class="no-models">"No models are defined in this silo yet. " <a href="/models">"Define one"</a></p> }.into_any()
            } else {
                view! { <DataTable headers=&["Model", "Access", "Why", "Also applied (lost)"]>{models}</DataTable> }.into_any()
            }}
        </section>
        <section class="effective-limits">
            <h3>"Limits"</h3>
            <p class="muted">"Every limit that covers this user; the first one binds first. Periods are calendar periods in the silo's time zone and reset at its midnight."</p>
            <LimitTable limits=access.limits show_binding=true />
        </section>
        <section>
            <h3>"Default route"</h3>
            <p class="muted">"Where a request that names no model goes."</p>
            <RouteResult route=access.default_route />
        </section>
        <section>
            <h3>"Policy"</h3>
            {policy}
            <DomainCheckTool user=u.name.clone() answer=checked />
        </section>
        <section class="access-sessions">
            <h3>"Sessions"</h3>
            {sessions}
            <p class="muted small">"Suspending the user also ends them. " <a href="/sessions">"All sessions"</a></p>
        </section>
    }
}
