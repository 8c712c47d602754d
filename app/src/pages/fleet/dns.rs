//! `/dns` (platform operators): the platform's certificate issuer ([`IssuerCard`]: the
//! cert-manager ACME ClusterIssuer, its Ready condition, and a plain-post form to configure its
//! DNS-01 solver — the token is used and never shown again), then every customer's hosts — does the record resolve to the ingress
//! at the zone's authoritative nameservers, and which certificate does the host serve — as the
//! probes last saw them, each with *Check now* (a plain post). [`DnsHosts`] is the same table on
//! a customer's page.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    api::fleet::{get_dns_overview, get_platform_dns},
    components::{
        feedback::{Badge, ErrorView, Notice},
        form::{Field, PostButton, TextInput, described_by},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms::{self, Posted, PostedFields},
    model::fleet::dns::{DnsHostView, PLATFORM_DNS_PROVIDERS, PlatformDnsView},
};

/// The issuer form's DOM id.
const ISSUER_FORM: &str = "platform-dns";

/// The DNS page.
#[component]
pub fn DnsPage() -> impl IntoView {
    let checked = use_query_map().with_untracked(|q| q.get("checked"));
    let saved = use_query_map().with_untracked(|q| q.get("saved")).is_some_and(|s| s == "issuer");
    view! {
        <Title text="DNS and certificates" />
        <PageHeader
            title="DNS and certificates".to_owned()
            description="What the world sees of each customer: its record at the zone's authoritative nameservers and the certificate its host serves.".to_owned()
        />
        {checked.map(|name| view! { <Notice tone="ok">{format!("Checked {name} just now.")}</Notice> })}
        {saved.then(|| view! { <Notice tone="ok">"The certificate issuer was saved."</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading the issuer…"</p> }>
            {Suspend::new(async move {
                match get_platform_dns().await {
                    Ok(issuer) => view! { <IssuerCard view=issuer /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
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
        let form = format!("dns-check-{}", crate::model::href::url_encode(&cluster_tenant));
        let aria = format!("Check the DNS of {cluster_tenant} now");
        let posted = Posted::DnsRefresh { cluster_tenant: cluster_tenant.clone(), done };
        view! { <PostButton form posted label="Check now" aria /> }
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
            let issuance = h
                .issuance_text()
                .map(|(text, tone)| view! { <div class="small"><Badge text=text tone=tone /></div> });
            view! {
                <tr data-host=h.host.clone() data-record=h.record_state.clone() data-cert=h.cert_health.clone().unwrap_or_default()>
                    <td class="mono">{h.host.clone()}<div class="muted small">{h.kind.clone()}</div></td>
                    <td><Badge text=record tone=record_tone />{problem}</td>
                    <td class="small">{owner}</td>
                    <td><Badge text=cert tone=cert_tone /><div class="muted small">{issuer}</div>{issuance}</td>
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

/// The platform's issuer: what the cluster has, and the form when the fleet manages it.
#[component]
fn IssuerCard(view: PlatformDnsView) -> impl IntoView {
    let issuer = view.issuer.clone();
    let body = if !view.available {
        view! { <p class="muted">"This fleet-manager reaches no Kubernetes API server, so it has no certificate issuer to show (opencrane dev uses the local provisioner)."</p> }.into_any()
    } else {
        let (ready, tone) = view.ready_text();
        let token = match (issuer.secret_name.clone(), issuer.token_set, issuer.token_changed_at) {
            (Some(secret), true, Some(at)) => format!("set, last changed {} (Secret {secret})", timestamp(at)),
            (Some(secret), true, None) => format!("set (Secret {secret})"),
            (Some(secret), false, _) => format!("not set (Secret {secret} is missing)"),
            (None, _, _) => "none (the provider's credentials come from its configuration)".to_owned(),
        };
        let kind = if issuer.self_signed {
            "self-signed".to_owned()
        } else {
            issuer.provider.clone().unwrap_or_else(|| "–".into())
        };
        let managed = issuer.managed_by.clone().unwrap_or_else(|| "–".into());
        let problem = view.problem.clone().map(|p| view! { <Notice tone="bad">{p}</Notice> });
        let form = if issuer.editable {
            view! { <IssuerForm issuer=issuer.clone() /> }.into_any()
        } else {
            view! { <p class="muted" id="issuer-readonly">"The fleet chart creates this issuer. To configure it here, install the fleet with certManager.createIssuer=fleet (it grants the fleet exactly the rights this needs)."</p> }.into_any()
        };
        view! {
            {problem}
            <dl class="props" id="issuer">
                <dt>"Issuer"</dt>
                <dd class="mono">{format!("{} {}", issuer.issuer_kind, issuer.issuer_name)}</dd>
                <dt>"State"</dt>
                <dd><Badge text=ready tone=tone /></dd>
                <dt>"DNS-01 provider"</dt>
                <dd>{kind}</dd>
                <dt>"Zone"</dt>
                <dd class="mono">{issuer.zone.clone().unwrap_or_else(|| "–".into())}</dd>
                <dt>"ACME account"</dt>
                <dd>{issuer.email.clone().unwrap_or_else(|| "–".into())}</dd>
                <dt>"ACME server"</dt>
                <dd class="mono small">{issuer.server.clone().unwrap_or_else(|| "–".into())}</dd>
                <dt>"Token"</dt>
                <dd id="issuer-token">{token}</dd>
                <dt>"Managed by"</dt>
                <dd>{managed}</dd>
            </dl>
            {form}
        }
        .into_any()
    };
    view! {
        <section class="card" aria-labelledby="issuer-title">
            <h2 id="issuer-title">"Certificate issuer"</h2>
            <p class="muted">"Customers' certificates come from this cert-manager issuer: DNS-01 in the platform's zone, HTTP-01 for vanity hosts."</p>
            {body}
        </section>
    }
}

/// The issuer form: a plain post (works without the wasm); after a refused post it shows what was
/// typed (never the token) and each message under its field.
#[component]
fn IssuerForm(issuer: opencrane_types::platform_dns::IssuerSummary) -> impl IntoView {
    let echo = forms::echo(ISSUER_FORM);
    let value = |key: &str, current: Option<String>| {
        echo.as_ref().map_or_else(|| current.unwrap_or_default(), |e| e.value(key).unwrap_or_default())
    };
    let error = |key: &str| echo.as_ref().and_then(|e| e.errors.get(key).map(str::to_owned));
    let message = echo.as_ref().and_then(|e| e.message.clone()).map(|m| view! { <Notice tone="bad">{m}</Notice> });
    let provider = value("provider", issuer.provider.clone());
    let options = PLATFORM_DNS_PROVIDERS
        .iter()
        .map(|(wire, label)| view! { <option value=*wire selected=provider == *wire>{*label}</option> })
        .collect_view();
    let token_hint = if issuer.token_set {
        "Leave empty to keep the token on file. It is written to the solver Secret and never shown again."
    } else {
        "Written to the solver Secret (opencrane-dns01-<provider>) and never shown again."
    };
    let provider_error = error("provider");
    let provider_describe = described_by("issuer-provider", true, provider_error.is_some());
    let solver_error = error("solverConfig");
    let solver_describe = described_by("issuer-solver", true, solver_error.is_some());
    let token_error = error("apiToken");
    let token_describe = described_by("issuer-token-input", true, token_error.is_some());
    let solver = value("solverConfig", issuer.solver_config.as_ref().map(ToString::to_string));
    let input = |id: &'static str,
                 key: &'static str,
                 label: &'static str,
                 hint: &'static str,
                 current: Option<String>,
                 kind: &'static str,
                 required: bool| TextInput {
        id,
        key,
        label,
        hint,
        value: value(key, current),
        error: error(key),
        kind,
        required,
    };
    let zone = input(
        "issuer-zone",
        "zone",
        "Zone",
        "The platform's DNS zone (the base domain or a zone above it); only it is solved by DNS-01.",
        issuer.zone.clone(),
        "text",
        true,
    )
    .view();
    let email = input(
        "issuer-email",
        "email",
        "ACME account e-mail",
        "Let's Encrypt writes here about expiring certificates.",
        issuer.email.clone(),
        "email",
        true,
    )
    .view();
    let server = input(
        "issuer-server",
        "server",
        "ACME server",
        "Empty: Let's Encrypt production.",
        issuer.server.clone(),
        "url",
        false,
    )
    .view();
    view! {
        <form method="post" id=ISSUER_FORM class="form" novalidate>
            <PostedFields form=ISSUER_FORM posted=Posted::PlatformDns />
            {message}
            <Field id="issuer-provider" label="DNS-01 provider" hint="Where the platform's zone is hosted." required=true error=Signal::derive(move || provider_error.clone())>
                <select id="issuer-provider" name="provider" aria-describedby=provider_describe>
                    <option value="" selected=provider.is_empty()>"Choose…"</option>
                    {options}
                </select>
            </Field>
            {zone}
            {email}
            {server}
            <Field id="issuer-token-input" label="API token" hint=token_hint error=Signal::derive(move || token_error.clone())>
                <input id="issuer-token-input" name="apiToken" type="password" value="" autocomplete="new-password" aria-describedby=token_describe />
            </Field>
            <Field id="issuer-solver" label="Solver configuration (JSON, optional)" hint="The provider's solver block in cert-manager's field names, e.g. {\"region\": \"eu-west-1\"} for route53 or {\"project\": \"my-project\"} for clouddns." error=Signal::derive(move || solver_error.clone())>
                <textarea id="issuer-solver" name="solverConfig" rows="3" spellcheck="false" aria-describedby=solver_describe>{solver}</textarea>
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn primary">"Save the issuer"</button>
            </div>
        </form>
    }
}
