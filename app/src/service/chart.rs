//! Bar charts rendered on the server as SVG: the silo's spend per day, a customer's usage per day
//! and the fleet's billing trend per month. No script and no inline styles (the CSP forbids
//! them); labels are XML-escaped, though only numbers, dates and names the server holds go in.

use std::fmt::Write as _;

use chrono::{Duration, NaiveDate};

/// One bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bar {
    /// Its height, in the chart's unit (millionths, seats…).
    pub value: i64,
    /// The tooltip (`<title>`).
    pub title: String,
    /// The axis label under it, when it has one.
    pub tick: Option<String>,
    /// A forecast rather than a measurement: drawn hollow.
    pub projected: bool,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The chart of `bars`, scaled to the largest, with `aria` as its accessible name and the
/// largest value written with `format` in its corner.
pub fn bars(aria: &str, bars: &[Bar], format: impl Fn(i64) -> String) -> String {
    let (w, h, pad) = (620.0_f64, 160.0_f64, 24.0_f64);
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0).max(1);
    #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
    let width = (w - pad * 2.0) / bars.len().max(1) as f64;
    let mut svg = format!(
        r#"<svg class="bar-chart" viewBox="0 0 {w} {h}" role="img" aria-label="{}"><line x1="{pad}" y1="{}" x2="{}" y2="{}" stroke="currentColor" stroke-opacity="0.3"/>"#,
        escape(aria),
        h - pad,
        w - pad,
        h - pad
    );
    for (i, bar) in bars.iter().enumerate() {
        #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
        let height = (h - pad * 2.0) * bar.value.max(0) as f64 / max as f64;
        #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
        let x = pad + width * i as f64;
        let paint = if bar.projected {
            r#"fill="currentColor" fill-opacity="0.15" stroke="currentColor" stroke-dasharray="3 2" data-projected="true""#
        } else {
            r#"fill="currentColor" fill-opacity="0.7""#
        };
        let _ = write!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{height:.1}" {paint}><title>{}</title></rect>"#,
            h - pad - height,
            (width - 2.0).max(1.0),
            escape(&bar.title)
        );
        if let Some(tick) = &bar.tick {
            let _ = write!(
                svg,
                r#"<text x="{x:.1}" y="{}" font-size="10" fill="currentColor">{}</text>"#,
                h - 8.0,
                escape(tick)
            );
        }
    }
    let _ = write!(
        svg,
        r#"<text x="{pad}" y="14" font-size="10" fill="currentColor">max {}</text></svg>"#,
        escape(&format(max))
    );
    svg
}

/// A bar per day from `first`, `days` long, each day's value looked up in `values` (0 when
/// absent); ticks on the first day, the 15th and the last. `title` writes a day's tooltip.
pub fn daily(
    aria: &str,
    first: NaiveDate,
    days: usize,
    values: &[(NaiveDate, i64)],
    title: impl Fn(NaiveDate, i64) -> String,
    format: impl Fn(i64) -> String,
) -> String {
    let series: Vec<Bar> = (0..days)
        .map(|i| {
            let day = first + Duration::days(i64::try_from(i).unwrap_or(0));
            let value = values.iter().find(|(d, _)| *d == day).map_or(0, |(_, v)| *v);
            let tick = (i == 0 || i + 1 == days || day.format("%d").to_string() == "15")
                .then(|| day.format("%d %b").to_string());
            Bar { value, title: title(day, value), tick, projected: false }
        })
        .collect();
    bars(aria, &series, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_a_bar_each_and_escapes_its_labels() {
        let series = [
            Bar { value: 2, title: "a <b>".into(), tick: Some("Nov".into()), projected: false },
            Bar { value: 4, title: "forecast".into(), tick: None, projected: true },
        ];
        let svg = bars("Seats & spend", &series, |v| format!("{v} seats"));
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains(r#"aria-label="Seats &amp; spend""#), "{svg}");
        assert!(svg.contains("<title>a &lt;b&gt;</title>"));
        assert_eq!(svg.matches(r#"data-projected="true""#).count(), 1);
        assert!(svg.contains("max 4 seats"));
        assert!(!svg.contains("style="), "no inline styles (the CSP forbids them)");
    }
}
