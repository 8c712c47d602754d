//! CSV for people's spreadsheets: RFC 4180 quoting (a field with a comma, a quote, CR or LF is
//! quoted, quotes doubled) and, for text, formula neutralising — a field that begins with `=`,
//! `+`, `-`, `@`, a tab or CR gets a leading apostrophe, so no spreadsheet runs a name someone
//! typed as a formula (OWASP's advice for CSV injection). Numbers the server formats itself are
//! written as they are (a credit's `-2.50` stays a number).

/// One text field.
pub fn text(value: &str) -> String {
    let neutral =
        if value.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{value}") } else { value.to_owned() };
    quoted(&neutral)
}

/// One field the server formatted (a number, a date): quoted only if it must be.
pub fn quoted(value: &str) -> String {
    if value.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// A line of already-encoded fields.
pub fn line(fields: &[String]) -> String {
    let mut out = fields.join(",");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_line_breaks_quoted() {
        assert_eq!(text("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(text("+1"), "'+1");
        assert_eq!(text("@sum"), "'@sum");
        assert_eq!(text("-x"), "'-x");
        assert_eq!(text("a\r\nb"), "\"a\r\nb\"");
        assert_eq!(text("fast"), "fast");
        assert_eq!(quoted("-2.50"), "-2.50", "a number the server wrote stays a number");
        assert_eq!(line(&[text("a,b"), quoted("1.00")]), "\"a,b\",1.00\n");
    }
}
