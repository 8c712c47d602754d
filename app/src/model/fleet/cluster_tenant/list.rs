//! The customers list: its query (`?q=&phase=&tier=&sort=&order=&page=&after=&before=`), sort
//! columns, page sizes and one page of rows. Numbered page links jump by offset; Next and Prev
//! carry a cursor (the neighbouring row's name and sort value), so stepping through the list is
//! keyset paging: as fast on page 150 as on page 1, and rows added meanwhile never repeat a row.

use serde::{Deserialize, Serialize};

use super::*;
use crate::model::href::Href;

/// Columns the list can be sorted by (URL spelling).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    /// Name.
    #[default]
    Name,
    /// Display name.
    DisplayName,
    /// Tier.
    Tier,
    /// Phase.
    Phase,
    /// Seat cap.
    SeatCap,
    /// Creation time.
    CreatedAt,
}

impl SortBy {
    /// Every sortable column.
    pub const ALL: [Self; 6] = [Self::Name, Self::DisplayName, Self::Tier, Self::Phase, Self::SeatCap, Self::CreatedAt];

    /// URL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::DisplayName => "displayName",
            Self::Tier => "tier",
            Self::Phase => "phase",
            Self::SeatCap => "seatCap",
            Self::CreatedAt => "createdAt",
        }
    }

    /// Parses the URL spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Largest page the list serves.
pub const MAX_PAGE_SIZE: i64 = 200;
/// Page size of the list page.
pub const DEFAULT_PAGE_SIZE: i64 = 50;

/// Which rows to list, from the list page's URL (`?q=&phase=&tier=&sort=&order=&page=`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListQuery {
    /// Case-insensitive substring of name or display name.
    pub search: Option<String>,
    /// Only this phase.
    pub phase: Option<Phase>,
    /// Only this tier.
    pub tier: Option<IsolationTier>,
    /// Sort column.
    pub sort: SortBy,
    /// Descending order.
    pub descending: bool,
    /// Rows per page, 1..=MAX_PAGE_SIZE.
    pub limit: i64,
    /// Rows to skip (the page number; with a cursor only what the page is numbered as).
    pub offset: i64,
    /// The page starts right after this row: a [`ClusterTenantPage::next`] cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The page ends right before this row: a [`ClusterTenantPage::previous`] cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            search: None,
            phase: None,
            tier: None,
            sort: SortBy::Name,
            descending: false,
            limit: DEFAULT_PAGE_SIZE,
            offset: 0,
            after: None,
            before: None,
        }
    }
}

impl ListQuery {
    /// Reads the list page's query parameters. Unknown values fall back to defaults, because a
    /// hand-edited URL should still show a page rather than an error.
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> Self {
        let page = get("page").and_then(|p| p.parse::<i64>().ok()).filter(|p| *p >= 1).unwrap_or(1);
        let limit = DEFAULT_PAGE_SIZE;
        Self {
            search: get("q").map(|q| q.trim().to_owned()).filter(|q| !q.is_empty()),
            phase: get("phase").and_then(|p| Phase::parse(&p)),
            tier: get("tier").and_then(|t| IsolationTier::parse(&t)),
            sort: get("sort").and_then(|s| SortBy::parse(&s)).unwrap_or_default(),
            descending: get("order").is_some_and(|o| o == "desc"),
            limit,
            offset: (page - 1).saturating_mul(limit),
            after: get("after").filter(|c| !c.is_empty()),
            before: get("before").filter(|c| !c.is_empty()),
        }
    }

    /// This query on the 1-based page `page`, reached by offset (no cursor).
    pub fn at_page(&mut self, page: i64) {
        self.offset = (page.max(1) - 1).saturating_mul(self.limit);
        self.after = None;
        self.before = None;
    }

    /// The 1-based page number.
    pub fn page(&self) -> i64 {
        self.offset / self.limit.max(1) + 1
    }

    /// The list page URL for this query with `change` applied.
    pub fn href(&self, change: impl FnOnce(&mut Self)) -> String {
        let mut q = self.clone();
        change(&mut q);
        Href::new("/cluster-tenants")
            .param("q", q.search.as_deref())
            .param("phase", q.phase.map(Phase::as_str))
            .param("tier", q.tier.map(IsolationTier::as_str))
            .param("sort", (q.sort != SortBy::Name).then(|| q.sort.as_str()))
            .param("order", q.descending.then_some("desc"))
            .param("page", (q.page() > 1).then(|| q.page().to_string()))
            .param("after", q.after.as_deref())
            .param("before", q.before.as_deref())
            .build()
    }
}

/// A customer as a row of the list shows it: only what the table's columns need (a whole
/// [`ClusterTenant`] per row cost the page a quarter of its server time in reading columns it
/// never shows).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantSummary {
    /// Name.
    pub name: String,
    /// Display name.
    pub display_name: String,
    /// Tier.
    pub isolation_tier: IsolationTier,
    /// Observed phase.
    pub phase: Phase,
    /// Observed status message.
    pub message: Option<String>,
    /// Seat cap; `None` = uncapped.
    pub seat_cap: Option<i32>,
    /// Active members (seats in use).
    pub seats_used: i64,
    /// What deletion does with the database.
    pub termination_policy: TerminationPolicy,
    /// Scaled to zero, sign-ins blocked.
    pub suspended: bool,
    /// Creation time.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// One page of the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterTenantPage {
    /// The rows.
    pub items: Vec<ClusterTenantSummary>,
    /// Rows matching the filter, on all pages.
    pub total: i64,
    /// The query that produced the page.
    pub query: ListQuery,
    /// The cursor of the next page (its `after`), when there are rows after this one.
    pub next: Option<String>,
    /// The cursor of the previous page (its `before`), when it is not the first page.
    pub previous: Option<String>,
}

impl ClusterTenantPage {
    /// The link of the next page, if any: keyset, after this page's last row.
    pub fn next_href(&self) -> Option<String> {
        let after = self.next.clone()?;
        Some(self.query.href(|q| {
            q.at_page(q.page() + 1);
            q.after = Some(after);
        }))
    }

    /// The link of the previous page, if any: keyset, before this page's first row (page 1 is
    /// the top of the list itself, so rows added there show).
    pub fn previous_href(&self) -> Option<String> {
        let page = self.query.page();
        let before = self.previous.clone()?;
        Some(self.query.href(|q| {
            q.at_page(page - 1);
            if page > 2 {
                q.before = Some(before);
            }
        }))
    }
}
