//! `/sessions` on either role: the caller's signed-in sessions (and, for a silo's owners and
//! admins, every member's), with buttons to end one, all of a member's, or all of one's others.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    Role,
    components::{
        feedback::{ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    current_principal,
    islands::session_actions::RevokeButton,
    model::session::{RevokeSessions, SessionView},
};

async fn fetch(role: Role) -> Result<Vec<SessionView>, crate::error::AppError> {
    match role {
        Role::Fleet => crate::api::fleet::list_fleet_sessions().await,
        Role::Silo => crate::api::silo::list_silo_sessions().await,
    }
}

/// The sessions page of `role`.
#[component]
pub fn SessionsPage(role: Role) -> impl IntoView {
    let me = current_principal().map(|p| p.subject).unwrap_or_default();
    let description = match role {
        Role::Fleet => "Where you are signed in to the fleet console.",
        Role::Silo => "Where you are signed in; owners and admins also see their members' sessions.",
    };
    view! {
        <Title text="Sessions" />
        <PageHeader title="Sessions" description=description>
            <RevokeButton what=RevokeSessions::MyOthers label="Sign out my other sessions".to_owned() />
        </PageHeader>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match fetch(role).await {
                    Ok(sessions) if sessions.is_empty() => {
                        view! {
                            <EmptyState
                                title="No browser sessions"
                                body="Sessions appear here when people sign in through the identity provider (the development identity and API tokens have none)."
                            />
                        }
                            .into_any()
                    }
                    Ok(sessions) => view! { <SessionTable role sessions me /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn SessionTable(role: Role, sessions: Vec<SessionView>, me: String) -> impl IntoView {
    let others = sessions.iter().any(|s| s.subject != me);
    let rows = sessions
        .into_iter()
        .map(|s| {
            let action = if s.current {
                view! { <span class="badge ok">"This session"</span> }.into_any()
            } else {
                view! {
                    <RevokeButton
                        what=RevokeSessions::One { handle: s.handle.clone() }
                        label="Sign out".to_owned()
                        aria=format!("Sign out {} on {}", s.display_name, s.ip)
                    />
                }
                .into_any()
            };
            let everywhere = (s.subject != me && role == Role::Silo).then(|| {
                view! {
                    <RevokeButton
                        what=RevokeSessions::AllOf { subject: s.subject.clone() }
                        label="Sign out everywhere".to_owned()
                        aria=format!("Sign out {} everywhere", s.display_name)
                    />
                }
            });
            view! {
                <tr>
                    <td>
                        {s.display_name.clone()}
                        <span class="cell-note">{s.email.clone().unwrap_or_else(|| s.subject.clone())}</span>
                    </td>
                    <td class="small">{s.user_agent.clone()}</td>
                    <td class="mono small">{s.ip.clone()}</td>
                    <td class="nowrap">{timestamp(s.created_at)}</td>
                    <td class="nowrap">{timestamp(s.last_seen_at)}</td>
                    <td class="nowrap">{timestamp(s.expires_at)}</td>
                    <td class="actions-cell">{action} {everywhere}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        {others.then(|| view! { <Notice tone="info">"You are seeing your members' sessions as an owner or admin."</Notice> })}
        <DataTable headers=&["Who", "Browser", "Address", "Signed in (UTC)", "Last seen", "Ends at the latest", ""]>{rows}</DataTable>
    }
}
