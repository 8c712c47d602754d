//! Silo `/policies`: access policies (domains, egress, who they govern) and grants (allow or deny
//! a model or tool to a user, tenant or group), each with a what-if preview before saving.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::silo::load_policies,
    components::{
        feedback::{Badge, ErrorView},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms,
    islands::silo::portal_form::{FieldKind, FormField, FormTarget, PortalForm, RowAction, RowActionButton, options},
    model::silo::{GrantView, PoliciesOverview, PolicyView},
};

fn policy_fields(p: Option<&PolicyView>) -> Vec<FormField> {
    let mut fields = Vec::new();
    if p.is_none() {
        fields.push(
            FormField::new("name", "Name", FieldKind::Text).required().hint("Lowercase letters, digits and hyphens."),
        );
    }
    fields.extend([
        FormField::new("description", "Description", FieldKind::Text)
            .value(p.map(|p| p.description.clone()).unwrap_or_default()),
        FormField::new("tenantSelector", "Selects users with labels", FieldKind::Pairs)
            .hint("key=value per line, e.g. team=eng. Users naming a policy on their record use that one instead.")
            .value(
                p.map(|p| p.tenant_selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("\n"))
                    .unwrap_or_default(),
            ),
        FormField::new("allowedDomains", "Allowed domains", FieldKind::Lines)
            .hint("One per line; *.example.com covers its subdomains. Everything else is denied.")
            .value(p.map(|p| p.allowed_domains.join("\n")).unwrap_or_default()),
        FormField::new("deniedDomains", "Denied domains", FieldKind::Lines)
            .hint("Always blocked, even when an allowed pattern matches.")
            .value(p.map(|p| p.denied_domains.join("\n")).unwrap_or_default()),
        FormField::new("egressRules", "Network egress", FieldKind::Egress)
            .hint("CIDR and ports per line, e.g. 10.20.0.0/16 443,8443 (443 when no port is given).")
            .value(
                p.map(|p| {
                    p.egress_rules
                        .iter()
                        .map(|r| {
                            format!("{} {}", r.cidr, r.ports.iter().map(u16::to_string).collect::<Vec<_>>().join(","))
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default(),
            ),
    ]);
    fields
}

fn grant_fields(o: &PoliciesOverview) -> Vec<FormField> {
    let mut payloads = vec![("*".to_owned(), "* (every model)".to_owned())];
    payloads.extend(options(&o.models));
    let mut recipients: Vec<(String, String)> = o.users.iter().map(|u| (u.clone(), format!("user {u}"))).collect();
    recipients.extend(o.groups.iter().map(|(id, name)| (id.clone(), format!("group {name}"))));
    vec![
        FormField::new("payloadId", "Model", FieldKind::Select(payloads)).value("*"),
        FormField::new(
            "subjectType",
            "To a",
            FieldKind::Select(vec![
                ("tenant".into(), "user (by name)".into()),
                ("group".into(), "group".into()),
                ("user".into(), "person (by subject)".into()),
            ]),
        )
        .value("tenant"),
        FormField::new("subjectId", "Who", FieldKind::Text).required().hint(&format!(
            "A user's name, a group's name, or a person's subject. Known: {}",
            recipients.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>().join(", ")
        )),
        FormField::new(
            "access",
            "Access",
            FieldKind::Select(vec![("allow".into(), "allow".into()), ("deny".into(), "deny".into())]),
        )
        .value("allow"),
        FormField::new("priority", "Priority", FieldKind::Number)
            .value("0")
            .hint("Higher wins; at equal priority deny beats allow; then the newer grant."),
        FormField::new("note", "Note", FieldKind::Text),
    ]
}

/// `/policies`.
#[component]
pub fn PoliciesPage() -> impl IntoView {
    view! {
        <Title text="Policies" />
        <PageHeader title="Policies and grants" description="What users' assistants may reach (policies) and which models they may use (grants)." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match load_policies().await {
                    Ok(o) => {
                        let grant_form = grant_fields(&o);
                        view! {
                            <section>
                                <h2>"Access policies"</h2>
                                <p class="muted" id="domain-enforcement">{o.domain_enforcement.clone()}</p>
                                <details class="card" open=o.policies.is_empty() || forms::echoed("new-policy")>
                                    <summary>"New policy"</summary>
                                    <PortalForm id="new-policy".to_owned() fields=policy_fields(None) target=FormTarget::SavePolicy(true) submit_label="Create policy".to_owned() done="/policies".to_owned() />
                                </details>
                                <PolicyTable policies=o.policies.clone() />
                            </section>
                            <section>
                                <h2>"Grants"</h2>
                                <p class="muted">{format!("Without a grant, a model is {}ed (silo setting on Budgets).", o.default_model_access)}</p>
                                <details class="card" open=forms::echoed("new-grant")>
                                    <summary>"New grant"</summary>
                                    <PortalForm
                                        id="new-grant".to_owned()
                                        fields=grant_form
                                        target=FormTarget::CreateGrant
                                        submit_label="Create grant".to_owned()
                                        done="/policies".to_owned()
                                        fixed=vec![("payloadType".to_owned(), "model".to_owned())]
                                    />
                                </details>
                                <GrantTable grants=o.grants />
                            </section>
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
fn PolicyTable(policies: Vec<PolicyView>) -> impl IntoView {
    if policies.is_empty() {
        return view! { <EmptyState title="No policies yet" body="Without a policy, nothing outside the silo is reachable." /> }.into_any();
    }
    let rows = policies
        .into_iter()
        .map(|p| {
            let fields = {
                let mut f = policy_fields(Some(&p));
                f.insert(0, FormField::new("name", "Name", FieldKind::Text).value(p.name.clone()).hint("The policy being edited."));
                f
            };
            let selector = p.tenant_selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ");
            view! {
                <tr>
                    <td>
                        {p.name.clone()}
                        {p.resource_drift.clone().map(|d| view! { " " <Badge text=format!("repaired: {d}") tone="warn" /> })}
                    </td>
                    <td>{if selector.is_empty() { "—".to_owned() } else { selector }}</td>
                    <td>{p.allowed_domains.join(", ")}</td>
                    <td>{p.denied_domains.join(", ")}</td>
                    <td>{p.egress_rules.iter().map(|r| r.cidr.clone()).collect::<Vec<_>>().join(", ")}</td>
                    <td>{p.used_by.join(", ")}</td>
                    <td class="actions">
                        <details open=forms::echoed(&format!("edit-policy-{}", p.name))>
                            <summary class="btn small">"Edit"</summary>
                            <PortalForm id=format!("edit-policy-{}", p.name) fields target=FormTarget::SavePolicy(false) submit_label="Save policy".to_owned() done="/policies".to_owned() />
                        </details>
                        <RowActionButton action=RowAction::DeletePolicy(p.name.clone()) label="Delete".to_owned() done="/policies".to_owned() of=format!("policy {}", p.name) />
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! { <DataTable headers=&["Name", "Selector", "Allowed", "Denied", "Egress", "Named by", ""]>{rows}</DataTable> }
        .into_any()
}

#[component]
fn GrantTable(grants: Vec<GrantView>) -> impl IntoView {
    if grants.is_empty() {
        return view! { <EmptyState title="No grants" body="Every user gets the default access to every model." /> }
            .into_any();
    }
    let rows = grants
        .into_iter()
        .map(|g| {
            let tone = if g.access == "deny" { "bad" } else { "ok" };
            view! {
                <tr>
                    <td><Badge text=g.access.clone() tone=tone /></td>
                    <td>{format!("{} {}", g.payload_type, g.payload_id)}</td>
                    <td>{format!("{} {}", g.subject_type, g.subject_label)}</td>
                    <td>{g.priority}</td>
                    <td>{g.note.clone()}</td>
                    <td class="nowrap">{format!("{} by {}", timestamp(g.created_at), g.created_by)}</td>
                    <td class="actions"><RowActionButton action=RowAction::DeleteGrant(g.id.clone()) label="Delete".to_owned() done="/policies".to_owned() of=format!("grant {} {} for {} {}", g.access, g.payload_id, g.subject_type, g.subject_label) /></td>
                </tr>
            }
        })
        .collect_view();
    view! { <DataTable headers=&["Access", "On", "To", "Priority", "Note", "Created (UTC)", ""]>{rows}</DataTable> }
        .into_any()
}
