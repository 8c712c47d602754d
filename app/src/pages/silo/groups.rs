//! Silo `/groups`: scoped groups of users; grants, limits and default models can target them.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::silo::{list_groups, list_users},
    components::{
        feedback::{Badge, ErrorView},
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms,
    islands::silo::portal_form::{FieldKind, FormField, FormTarget, PortalForm, RowAction, RowActionButton, options},
    model::silo::{GROUP_SCOPES, GroupView, UserFilter},
};

fn group_fields(group: Option<&GroupView>, users: &[String]) -> Vec<FormField> {
    let scopes: Vec<String> = GROUP_SCOPES.iter().map(|s| (*s).to_owned()).collect();
    vec![
        FormField::new("name", "Name", FieldKind::Text)
            .required()
            .hint("e.g. engineering")
            .value(group.map(|g| g.name.clone()).unwrap_or_default()),
        FormField::new("scope", "Scope", FieldKind::Select(options(&scopes)))
            .value(group.map_or_else(|| "team".to_owned(), |g| g.scope.clone())),
        FormField::new("description", "Description", FieldKind::Text)
            .value(group.map(|g| g.description.clone()).unwrap_or_default()),
        FormField::new("members", "Members", FieldKind::Multi(options(users)))
            .value(group.map(|g| g.members.join("\n")).unwrap_or_default()),
    ]
}

/// `/groups`.
#[component]
pub fn GroupsPage() -> impl IntoView {
    view! {
        <Title text="Groups" />
        <PageHeader title="Groups" description="Sets of users by organisation, department, team, project or person. Groups from the identity provider's groups claim are mirrored at sign-in." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                let loaded = async { Ok::<_, crate::error::AppError>((list_groups().await?, list_users(UserFilter::default()).await?)) }.await;
                match loaded {
                    Ok((groups, users)) => {
                        let names: Vec<String> = users.users.iter().map(|u| u.name.clone()).collect();
                        view! {
                            <details class="card" open=groups.is_empty() || forms::echoed("new-group")>
                                <summary>"New group"</summary>
                                <PortalForm id="new-group".to_owned() fields=group_fields(None, &names) target=FormTarget::CreateGroup submit_label="Create group".to_owned() done="/groups".to_owned() />
                            </details>
                            <GroupTable groups users=names />
                        }
                        .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn GroupTable(groups: Vec<GroupView>, users: Vec<String>) -> impl IntoView {
    if groups.is_empty() {
        return view! { <EmptyState title="No groups yet" body="Create one above." /> }.into_any();
    }
    let rows = groups
        .into_iter()
        .map(|g| {
            let fields = group_fields(Some(&g), &users);
            let form_id = format!("edit-group-{}", g.id);
            let reopen = forms::echoed(&form_id);
            view! {
                <tr>
                    <td>{g.name.clone()}</td>
                    <td>{g.scope.clone()}</td>
                    <td>{if g.source == "idp" { view! { <Badge text="identity provider" /> }.into_any() } else { view! { <span>"local"</span> }.into_any() }}</td>
                    <td>{g.description.clone()}</td>
                    <td>{if g.members.is_empty() { "—".to_owned() } else { g.members.join(", ") }}</td>
                    <td class="actions">
                        <details open=reopen>
                            <summary class="btn small">"Edit"</summary>
                            <PortalForm id=form_id fields target=FormTarget::UpdateGroup(g.id.clone()) submit_label="Save group".to_owned() done="/groups".to_owned() />
                        </details>
                        <RowActionButton action=RowAction::DeleteGroup(g.id.clone()) label="Delete".to_owned() done="/groups".to_owned() of=format!("group {}", g.name) />
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! { <DataTable headers=&["Name", "Scope", "Source", "Description", "Members", ""]>{rows}</DataTable> }
        .into_any()
}
