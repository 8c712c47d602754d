//! Table helpers: sortable column headers, pagination and empty states.

use leptos::prelude::*;

use super::format::thousands;

/// A column header that sorts by its column; shows the direction and sets `aria-sort`.
#[component]
pub fn SortHeader(
    label: &'static str,
    /// Whether the table is currently sorted by this column.
    active: bool,
    /// Whether the current sort is descending.
    descending: bool,
    /// Where clicking leads (the same list sorted by this column, toggled if active).
    href: String,
) -> impl IntoView {
    let aria = match (active, descending) {
        (false, _) => "none",
        (true, false) => "ascending",
        (true, true) => "descending",
    };
    let arrow = match (active, descending) {
        (false, _) => "",
        (true, false) => " ▲",
        (true, true) => " ▼",
    };
    view! {
        <th scope="col" aria-sort=aria>
            <a href=href class="sort">
                {label}
                <span aria-hidden="true">{arrow}</span>
            </a>
        </th>
    }
}

/// "1–50 of 10,240" and page links. `href(page)` builds the link of a 1-based page; `steps`,
/// when given, are the Prev and Next links themselves (a keyset list's cursor links, `None`
/// where there is no such page) instead of the numbered ones.
#[component]
pub fn Pagination(
    page: i64,
    per_page: i64,
    total: i64,
    href: impl Fn(i64) -> String + 'static,
    #[prop(optional_no_strip)] steps: Option<(Option<String>, Option<String>)>,
) -> impl IntoView {
    let pages = ((total + per_page - 1) / per_page).max(1);
    let first = if total == 0 { 0 } else { (page - 1) * per_page + 1 };
    let last = (page * per_page).min(total);
    let mut numbers: Vec<Option<i64>> = Vec::new();
    for p in 1..=pages {
        if p == 1 || p == pages || (p - page).abs() <= 2 {
            numbers.push(Some(p));
        } else if numbers.last().is_some_and(Option::is_some) {
            numbers.push(None);
        }
    }
    let links = numbers
        .into_iter()
        .map(|n| match n {
            Some(p) if p == page => view! { <li><span aria-current="page" class="current">{p}</span></li> }.into_any(),
            Some(p) => view! { <li><a href=href(p)>{p}</a></li> }.into_any(),
            None => view! { <li><span class="gap" aria-hidden="true">"…"</span></li> }.into_any(),
        })
        .collect_view();
    let (prev, next) = match steps {
        Some(steps) => steps,
        None => ((page > 1).then(|| href(page - 1)), (page < pages).then(|| href(page + 1))),
    };
    view! {
        <nav class="pagination" aria-label="Pages">
            <span class="range">{format!("{}–{} of {}", thousands(first), thousands(last), thousands(total))}</span>
            <ul>
                <li>
                    {match prev {
                        Some(h) => view! { <a href=h rel="prev">"‹ Prev"</a> }.into_any(),
                        None => view! { <span class="disabled">"‹ Prev"</span> }.into_any(),
                    }}
                </li>
                {links}
                <li>
                    {match next {
                        Some(h) => view! { <a href=h rel="next">"Next ›"</a> }.into_any(),
                        None => view! { <span class="disabled">"Next ›"</span> }.into_any(),
                    }}
                </li>
            </ul>
        </nav>
    }
}

/// What an empty table says, and the action that fills it.
#[component]
pub fn EmptyState(
    #[prop(into)] title: String,
    #[prop(into)] body: String,
    /// The action that fills the table.
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    view! {
        <div class="empty">
            <h2>{title}</h2>
            <p class="muted">{body}</p>
            {children.map(|a| a())}
        </div>
    }
}

/// A plain data table: a header row of labels (the last may be empty for an actions column) and
/// the rows as children.
#[component]
pub fn DataTable(headers: &'static [&'static str], children: Children) -> impl IntoView {
    let heads = headers
        .iter()
        .map(|h| match *h {
            "" => view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> }.into_any(),
            label => view! { <th scope="col">{label}</th> }.into_any(),
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="data">
                <thead>
                    <tr>{heads}</tr>
                </thead>
                <tbody>{children()}</tbody>
            </table>
        </div>
    }
}
