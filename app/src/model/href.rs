//! Page links with query strings, built one way: parameters in the order given, empty ones left
//! out, values percent-encoded. Every list page (customers, users, audit) builds its links here.

/// Percent-encodes a query-string value (RFC 3986 unreserved characters stay as they are).
pub fn url_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(char::from(b)),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A link under construction: a path and its query parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Href {
    path: String,
    query: Vec<String>,
}

impl Href {
    /// A link to `path` (no query yet).
    pub fn new(path: impl Into<String>) -> Self {
        Self { path: path.into(), query: Vec::new() }
    }

    /// Adds `key=value` when there is a non-empty value.
    pub fn param<V: AsRef<str>>(mut self, key: &str, value: Option<V>) -> Self {
        if let Some(value) = value.as_ref().map(AsRef::as_ref).filter(|v| !v.is_empty()) {
            self.query.push(format!("{key}={}", url_encode(value)));
        }
        self
    }

    /// The link (`path` alone when no parameter was added).
    pub fn build(self) -> String {
        if self.query.is_empty() { self.path } else { format!("{}?{}", self.path, self.query.join("&")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_are_left_out_and_the_rest_encoded() {
        assert_eq!(Href::new("/users").param("q", Some("")).param::<&str>("team", None).build(), "/users");
        let link = Href::new("/audit").param("before", Some("7")).param("actor", Some("ana b&c")).build();
        assert_eq!(link, "/audit?before=7&actor=ana%20b%26c");
        assert_eq!(url_encode("ä/?"), "%C3%A4%2F%3F");
    }
}
