//! `/cluster-tenants`: every customer in a sortable, filterable, paginated table. Filtering,
//! sorting and paging are plain links and a GET form, so the page works without WebAssembly and
//! every view has a shareable URL. Prev and Next are keyset links (see the list model).

use std::sync::Arc;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    api::fleet::list_cluster_tenants,
    components::{
        feedback::{ErrorView, Notice, PhaseBadge},
        format::{age, age_parts, thousands},
        layout::PageHeader,
        table::{EmptyState, Pagination, SortHeader},
    },
    model::fleet::cluster_tenant::{ClusterTenantPage, ClusterTenantSummary, IsolationTier, ListQuery, Phase, SortBy},
};

/// The customers list page.
#[component]
pub fn ClusterTenantList() -> impl IntoView {
    let params = use_query_map();
    let query = params.with_untracked(|p| ListQuery::from_params(|k| p.get(k)));
    let deleted = params.with_untracked(|p| p.get("deleted"));
    view! {
        <Title text="Customers" />
        <PageHeader
            title="Customers"
            description="Every customer (ClusterTenant) on this platform, with the phase of its silo. Creating one provisions its silo."
        >
            <a class="btn primary" href="/cluster-tenants/new">"+ New customer"</a>
        </PageHeader>
        {deleted.map(|name| view! { <Notice tone="ok">{format!("Customer “{name}” was deleted.")}</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match list_cluster_tenants(query).await {
                    Ok(page) => view! { <ListBody page /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Filters(query: ListQuery) -> impl IntoView {
    let phase_options = Phase::ALL
        .into_iter()
        .map(|p| view! { <option value=p.as_str() selected=query.phase == Some(p)>{p.label()}</option> })
        .collect_view();
    let tier_options = IsolationTier::ALL
        .into_iter()
        .map(|t| view! { <option value=t.as_str() selected=query.tier == Some(t)>{t.label()}</option> })
        .collect_view();
    let filtered = query.search.is_some() || query.phase.is_some() || query.tier.is_some();
    view! {
        <form class="filters" method="get" action="/cluster-tenants" role="search">
            <label>
                "Search"
                <input type="search" name="q" value=query.search.clone().unwrap_or_default() placeholder="name or display name" />
            </label>
            <label>
                "Phase"
                <select name="phase">
                    <option value="">"All"</option>
                    {phase_options}
                </select>
            </label>
            <label>
                "Tier"
                <select name="tier">
                    <option value="">"All"</option>
                    {tier_options}
                </select>
            </label>
            {(query.sort != SortBy::Name).then(|| view! { <input type="hidden" name="sort" value=query.sort.as_str() /> })}
            {query.descending.then(|| view! { <input type="hidden" name="order" value="desc" /> })}
            <button type="submit" class="btn">"Apply"</button>
            {filtered.then(|| view! { <a class="btn ghost" href="/cluster-tenants">"Clear"</a> })}
        </form>
    }
}

#[component]
fn ListBody(page: ClusterTenantPage) -> impl IntoView {
    let steps = Some((page.previous_href(), page.next_href()));
    let ClusterTenantPage { items, total, query, .. } = page;
    let filtered = query.search.is_some() || query.phase.is_some() || query.tier.is_some();
    if total == 0 && !filtered {
        return view! {
            <EmptyState
                title="No customers yet"
                body="A customer (ClusterTenant) gets its own namespace, database and console. Create the first one to get started."
            >
                <a class="btn primary" href="/cluster-tenants/new">"Create the first customer"</a>
            </EmptyState>
        }
        .into_any();
    }
    let header = |label: &'static str, key: SortBy| {
        let active = query.sort == key;
        let descending = query.descending;
        let href = query.href(|q| {
            q.descending = active && !descending;
            q.sort = key;
            q.at_page(1);
        });
        view! { <SortHeader label active descending href /> }
    };
    let empty = items.is_empty();
    let rows = rows_html(items, chrono::Utc::now());
    let pager_query = query.clone();
    view! {
        <Filters query=query.clone() />
        {if empty {
            view! {
                <EmptyState title="No customers match these filters" body="Change the search or filters, or clear them." />
            }
                .into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data">
                        <caption class="visually-hidden">{format!("Customers, {} in total", thousands(total))}</caption>
                        <thead>
                            <tr>
                                {header("Name", SortBy::Name)}
                                {header("Display name", SortBy::DisplayName)}
                                {header("Tier", SortBy::Tier)}
                                {header("Phase", SortBy::Phase)}
                                {header("Seats", SortBy::SeatCap)}
                                <th scope="col" title="What deletion does with the database">"Retention"</th>
                                {header("Age", SortBy::CreatedAt)}
                            </tr>
                        </thead>
                        <tbody inner_html=rows></tbody>
                    </table>
                </div>
                <Pagination
                    page=query.page()
                    per_page=query.limit
                    total
                    href=move |p| pager_query.href(|q| q.at_page(p))
                    steps
                />
            }
                .into_any()
        }}
    }
    .into_any()
}

/// What the table's rows show: the rows, and each one's age as it reads now.
pub type RowsShown = (Vec<ClusterTenantSummary>, Vec<(i64, char)>);

/// The table's rows as HTML. Rendering them was a third of the page's server time, and the same
/// rows at the same ages render the same, so the server keeps the last few it rendered
/// ([`crate::service::kept::KeptHtml`], compared row by row and age by age).
fn rows_html(items: Vec<ClusterTenantSummary>, now: chrono::DateTime<chrono::Utc>) -> Arc<str> {
    let render =
        |(items, _): &RowsShown| items.iter().map(|ct| view! { <Row ct=ct.clone() now /> }).collect_view().to_html();
    let ages = items.iter().map(|ct| age_parts(ct.created_at, now)).collect();
    #[cfg(feature = "ssr")]
    if let Some(state) = use_context::<crate::state::AppState>()
        && let Ok(fleet) = state.fleet()
    {
        return fleet.kept_rows.html((items, ages), render);
    }
    render(&(items, ages)).into()
}

#[component]
fn Row(ct: ClusterTenantSummary, now: chrono::DateTime<chrono::Utc>) -> impl IntoView {
    let href = format!("/cluster-tenants/{}", ct.name);
    let seats = match ct.seat_cap {
        Some(cap) => format!("{} / {cap}", ct.seats_used),
        None => format!("{} / ∞", ct.seats_used),
    };
    view! {
        <tr>
            <td>
                <a href=href class="mono">{ct.name}</a>
            </td>
            <td>{ct.display_name}</td>
            <td>{ct.isolation_tier.label()}</td>
            <td>
                <PhaseBadge phase=ct.phase />
                {ct.message.map(|m| view! { <span class="cell-note">{m}</span> })}
            </td>
            <td class="num">{seats}</td>
            <td>
                {ct.termination_policy.as_str()}
                {ct.suspended.then(|| view! { <span class="cell-note">"suspended"</span> })}
            </td>
            <td title=crate::components::format::timestamp(ct.created_at)>{age(ct.created_at, now)}</td>
        </tr>
    }
}
