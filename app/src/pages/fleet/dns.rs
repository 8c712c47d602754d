//! `/dns` (platform operators): every customer's hosts — does the record resolve to the ingress
//! at the zone's authoritative nameservers, and which certificate does the host serve — as the
//! probes last saw them, each with *Check now* (a plain post). [`DnsHosts`] is the same table on
//! a customer's page.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    api::fleet::get_dns_overview,
    components::{
        feedback::{Badge, ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms::{self, Posted},
    model::fleet::dns::DnsHostView,
};

/// The DNS page.
#[component]
pub fn DnsPage() -> impl IntoView {
    let checked = use_query_map().with_untracked(|q| q.get("checked"));
    view! {
        <Title text="DNS and certificates" />
        <PageHeader
            title="DNS and certificates".to_owned()
            description="What the world sees of each customer: its record at the zone's authoritative nameservers and the certificate its host serves.".to_owned()
        />
        {checked.map(|name| view! { <Notice tone="ok">{format!("Checked {name} just now.")}</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                let overview = match get_dns_overview().await {
                    Ok(o) => o,
                    Err(error) => return view! { <ErrorView error /> }.into_any(),
                };
                let setup = if overview.probing {
                    let servers = if overview.nameservers.is_empty() {
                        "the base domain's authoritative nameservers (its NS records)".to_owned()
                    } else {
                        overview.nameservers.join(", ")
                    };
                    format!(
                        "Records should point at {}; asked of {servers}. Checked in the background every few minutes.",
                        overview.ingress_ip.unwrap_or_default()
                    )
                } else {
                    "DNS is not checked: the fleet needs the platform base domain and the ingress address (--ingress-ip, OPENCRANE_INGRESS_IP).".to_owned()
                };
                let rows = overview
                    .customers
                    .into_iter()
                    .map(|c| {
                        let href = format!("/cluster-tenants/{}", crate::model::href::url_encode(&c.name));
                        view! {
                            <section class="card" aria-label=format!("DNS of {}", c.display_name)>
                                <h2><a href=href>{c.display_name.clone()}</a>" "<span class="muted mono">{c.name.clone()}</span></h2>
                                <DnsHosts hosts=c.hosts cluster_tenant=c.name done="/dns".to_owned() probing=overview.probing />
                            </section>
                        }
                    })
                    .collect_view();
                view! {
                    <p class="muted" id="dns-setup">{setup}</p>
                    {rows}
                }
                .into_any()
            })}
        </Suspense>
    }
}

/// A customer's hosts with their record and certificate, and *Check now* (a plain post that
/// works without wasm) when the probes run.
#[component]
pub fn DnsHosts(hosts: Vec<DnsHostView>, cluster_tenant: String, done: String, probing: bool) -> impl IntoView {
    let check = probing.then(|| {
        let form_id = format!("dns-check-{}", crate::model::href::url_encode(&cluster_tenant));
        let form_field = form_id.clone();
        let posted = Posted::DnsRefresh { cluster_tenant: cluster_tenant.clone(), done }.hidden();
        let label = format!("Check the DNS of {cluster_tenant} now");
        view! {
            <form class="row-action" id=form_id method="post">
                <input type="hidden" name=forms::FORM value=form_field />
                <input type="hidden" name=forms::TARGET value=posted />
                <button type="submit" class="btn small" aria-label=label>"Check now"</button>
            </form>
        }
    });
    if hosts.is_empty() {
        let body = if probing { "Not checked yet." } else { "DNS is not checked on this fleet." };
        return view! { <EmptyState title="No DNS check yet" body=body /> {check} }.into_any();
    }
    let rows = hosts
        .into_iter()
        .map(|h| {
            let (record, record_tone) = h.record_text();
            let (cert, cert_tone) = h.certificate_text();
            let owner = h.ownership.clone().map_or_else(|| "–".to_owned(), |o| o.replace(',', ", "));
            let issuer = h.cert_issuer.clone().unwrap_or_else(|| "–".into());
            let problem = h.problem.clone().map(|p| view! { <div class="muted small">{p}</div> });
            view! {
                <tr data-host=h.host.clone() data-record=h.record_state.clone() data-cert=h.cert_health.clone().unwrap_or_default()>
                    <td class="mono">{h.host.clone()}<div class="muted small">{h.kind.clone()}</div></td>
                    <td><Badge text=record tone=record_tone />{problem}</td>
                    <td class="small">{owner}</td>
                    <td><Badge text=cert tone=cert_tone /><div class="muted small">{issuer}</div></td>
                    <td>{timestamp(h.checked_at)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable headers=&["Host", "Record", "Ownership (external-dns)", "Served certificate", "Checked"]>{rows}</DataTable>
        {check}
    }
    .into_any()
}
