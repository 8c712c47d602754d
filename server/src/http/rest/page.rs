//! One pagination style for every list route: `?limit=&offset=` (`limit` 1 to
//! [`MAX_LIST_LIMIT`], `offset` from 0; without `limit`, everything from `offset`), the whole
//! count in `X-Total-Count`, and RFC 8288 `Link: <…>; rel="next"` while more follow. The audit
//! log, an append-only history, pages by `cursor` instead (with the same `limit` and `Link`).

use std::collections::HashMap;

use app::{error::AppError, service::silo::kept::KeptList};
use axum::{
    Json,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;

/// Largest `limit` of a list route.
pub const MAX_LIST_LIMIT: i64 = 1000;

/// `name` as a whole number in `min..=max`, if given; else a message naming it.
pub fn integer_param(
    params: &HashMap<String, String>,
    name: &str,
    min: i64,
    max: i64,
) -> Result<Option<i64>, AppError> {
    let Some(raw) = params.get(name).map(|r| r.trim()).filter(|r| !r.is_empty()) else { return Ok(None) };
    match raw.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(AppError::field(name, format!("Must be a whole number from {min} to {max}."))),
    }
}

/// The requested window of a list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// At most this many (all when `None`).
    pub limit: Option<i64>,
    /// Skip this many.
    pub offset: i64,
}

impl Page {
    /// `?limit=&offset=`, checked.
    pub fn from_params(params: &HashMap<String, String>) -> Result<Self, AppError> {
        Ok(Self {
            limit: integer_param(params, "limit", 1, MAX_LIST_LIMIT)?,
            offset: integer_param(params, "offset", 0, i64::MAX)?.unwrap_or(0),
        })
    }

    /// This window of a list the service returned whole (the silo's lists are small), and the
    /// whole count.
    pub fn slice<T>(self, items: Vec<T>) -> (Vec<T>, i64) {
        let total = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let skip = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let take = self.limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        (items.into_iter().skip(skip).take(take).collect(), total)
    }

    /// The answer: `items` (this window of `total`), `X-Total-Count`, and `Link rel=next` to
    /// `path` with the other query parameters kept while more follow.
    pub fn respond<T: Serialize>(
        self,
        path: &str,
        params: &HashMap<String, String>,
        items: Vec<T>,
        total: i64,
    ) -> Response {
        let shown = i64::try_from(items.len()).unwrap_or(i64::MAX);
        self.with_headers(path, params, Json(items).into_response(), shown, total)
    }

    /// [`Page::respond`] with a kept answer (its JSON as written when it was read).
    pub fn respond_kept(self, path: &str, params: &HashMap<String, String>, list: &KeptList) -> Response {
        let body = ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], list.body.clone());
        self.with_headers(path, params, body.into_response(), list.shown, list.total)
    }

    fn with_headers(
        self,
        path: &str,
        params: &HashMap<String, String>,
        mut response: Response,
        shown: i64,
        total: i64,
    ) -> Response {
        response.headers_mut().insert("x-total-count", total.into());
        if let Some(limit) = self.limit
            && self.offset.saturating_add(shown) < total
        {
            let next = self.offset.saturating_add(shown.max(1));
            let link = format!("<{}>; rel=\"next\"", href(path, params, &[("limit", limit), ("offset", next)]));
            if let Ok(value) = HeaderValue::from_str(&link) {
                response.headers_mut().insert(header::LINK, value);
            }
        }
        response
    }
}

/// `path?query` with `params` (sorted, so the link is stable) and `set` replacing their namesakes.
pub fn href(path: &str, params: &HashMap<String, String>, set: &[(&str, i64)]) -> String {
    let mut keys: Vec<&String> = params.keys().filter(|k| !set.iter().any(|(s, _)| s == k)).collect();
    keys.sort();
    let mut query = form_urlencoded::Serializer::new(String::new());
    for key in keys {
        query.append_pair(key, &params[key]);
    }
    for (key, value) in set {
        query.append_pair(key, &value.to_string());
    }
    format!("/api/v1{path}?{}", query.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_window_of_a_list_links_to_the_next_one() {
        let page = Page::from_params(&params(&[("limit", "2"), ("offset", "1")])).unwrap();
        let (items, total) = page.slice(vec![1, 2, 3, 4]);
        assert_eq!((items.clone(), total), (vec![2, 3], 4));
        let response = page.respond("/groups", &params(&[("limit", "2"), ("offset", "1"), ("q", "a b")]), items, total);
        assert_eq!(response.headers()["x-total-count"], "4");
        assert_eq!(response.headers()[header::LINK], "</api/v1/groups?q=a+b&limit=2&offset=3>; rel=\"next\"");
        let (last, total) = Page { limit: Some(2), offset: 3 }.slice(vec![1, 2, 3, 4]);
        let response = Page { limit: Some(2), offset: 3 }.respond("/groups", &HashMap::new(), last, total);
        assert!(response.headers().get(header::LINK).is_none(), "nothing follows the last page");
    }

    #[test]
    fn bad_windows_are_named() {
        for (key, bad) in [("limit", "0"), ("limit", "1001"), ("offset", "-1"), ("offset", "x")] {
            let err = Page::from_params(&params(&[(key, bad)])).unwrap_err();
            assert!(err.field_errors().get(key).is_some(), "{key}={bad}");
        }
        assert_eq!(Page::from_params(&HashMap::new()).unwrap(), Page::default());
    }
}
