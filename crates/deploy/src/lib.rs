//! Installing OpenCrane on a cluster: the fleet release (once per cluster, with the cluster-wide
//! infrastructure) and one silo release per ClusterTenant.
//!
//! Everything that decides *what* to do is pure: options are validated ([`fleet::FleetOptions`],
//! [`silo::SiloOptions`]), read-only observations of the cluster are gathered by thin calls
//! ([`observe`]), and a [`plan::Plan`] of `kubectl`/`helm` invocations is built from both. The
//! [`run`] module is the only place that starts processes, so the CLI (`opencrane deploy`), its
//! `--dry-run` and the fleet's provisioner share one code path.

pub mod fake;
pub mod fleet;
pub mod manifest;
pub mod observe;
pub mod plan;
pub mod run;
pub mod silo;

pub use plan::{Plan, Step, Tool};
pub use run::{Output, ProcessRunner, Runner, Tools};

/// Why a deploy did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An option is missing or malformed; the message names the flag.
    #[error("{0}")]
    Invalid(String),
    /// A read-only check of the cluster found it not ready for this release.
    #[error("preflight: {0}")]
    Preflight(String),
    /// A tool could not be found or started.
    #[error("{0}")]
    Tool(String),
    /// A step of the plan failed; `output` is the tool's trimmed error output.
    #[error("step {index} ({title}) failed: {output}")]
    Step {
        /// 1-based position in the plan.
        index: usize,
        /// The step's title.
        title: String,
        /// What the tool said (trimmed, secrets never included).
        output: String,
    },
}

/// A value that must never be printed: `Debug` and `Display` show `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that must send it (a manifest on stdin).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Options both releases share: which tools, which chart directory, how to call Helm.
#[derive(Clone, Debug, Default)]
pub struct HelmOptions {
    /// Directory holding `opencrane-fleet/` and `opencrane-silo/`.
    pub charts_dir: std::path::PathBuf,
    /// Helm release name.
    pub release: String,
    /// Image tag of the opencrane image (empty: the chart's appVersion).
    pub image_tag: Option<String>,
    /// Extra values files, in order.
    pub values_files: Vec<std::path::PathBuf>,
    /// Extra `--set key=value` pairs, in order (applied last, so they win).
    pub set: Vec<String>,
    /// Extra arguments passed to `helm upgrade` verbatim.
    pub helm_args: Vec<String>,
    /// How an upgrade treats the values of the installed release.
    pub values_mode: ValuesMode,
    /// How long Helm waits for the release to become ready.
    pub timeout: String,
}

impl HelmOptions {
    /// Release `opencrane`, a 10-minute wait, no extra values: what `opencrane deploy` uses
    /// unless told otherwise.
    pub fn for_charts(charts_dir: impl Into<std::path::PathBuf>) -> Self {
        Self { charts_dir: charts_dir.into(), release: "opencrane".into(), timeout: "10m".into(), ..Self::default() }
    }
}

/// How `helm upgrade` treats the values of the release already installed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ValuesMode {
    /// The command describes the release completely: chart defaults plus this command's values.
    #[default]
    Replace,
    /// Keep the installed release's values and apply only this command's overrides.
    Reuse,
}

/// A lowercase DNS name (the vocabulary's domain rule). Used where the CLI's own parsing may
/// have been bypassed (library callers).
pub(crate) fn check_dns_name(flag: &str, value: &str) -> Result<(), Error> {
    opencrane_types::rules::domain_name(value).map_err(|why| Error::Invalid(format!("{flag}: “{value}”: {why}")))
}

/// An RFC 1123 label (a namespace or ClusterTenant name).
pub(crate) fn check_dns_label(flag: &str, value: &str, max: usize) -> Result<(), Error> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && value.as_bytes()[0].is_ascii_lowercase()
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{flag}: “{value}” must be 1–{max} lowercase letters, digits or hyphens, starting with a letter"
        )))
    }
}

/// A value passed through `helm --set-string key=value`: Helm splits on commas, so refuse them
/// rather than install something else than asked.
pub(crate) fn check_set_value(flag: &str, value: &str) -> Result<(), Error> {
    if value.contains(',') || value.contains('\n') {
        Err(Error::Invalid(format!("{flag}: commas and line breaks are not allowed (“{value}”)")))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "<redacted>");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn names_are_checked_and_errors_name_the_flag() {
        assert!(check_dns_name("--base-domain", "example.com").is_ok());
        assert!(check_dns_name("--base-domain", "a-b.example.co").is_ok());
        for bad in ["Example.com", "example", "-a.com", "a..com", "a.c0m", "a_b.com", ""] {
            let err = check_dns_name("--base-domain", bad).unwrap_err().to_string();
            assert!(err.starts_with("--base-domain:"), "{bad}: {err}");
        }
        assert!(check_dns_label("--cluster-tenant", "acme-2", 40).is_ok());
        for bad in ["", "2acme", "acme-", "Acme", "a".repeat(41).as_str()] {
            assert!(check_dns_label("--cluster-tenant", bad, 40).unwrap_err().to_string().contains("--cluster-tenant"));
        }
        assert!(check_set_value("--image-tag", "1.2,3").is_err());
        assert!(check_set_value("--image-tag", "1.2.3").is_ok());
    }
}
