//! `opencrane deploy silo`: one silo release for one ClusterTenant, in `opencrane-<name>`.
//!
//! The silo reuses the cluster-wide singletons the fleet release installed, so the preflight
//! refuses to go on without the CloudNativePG CRD, and the plan never installs a singleton.
//! Fleet-managed silos (the default) get the fleet's URL, **their own customer's credential**
//! (`ocs_…`, minted by the fleet at provisioning; never the fleet's API token, which would make
//! whoever reads the silo's Secret an operator of the fleet) and `crds.install=false`. The
//! credential is either already in the silo namespace (the fleet's provisioner wrote it; the
//! preflight checks it is there and is a silo credential) or given with `--fleet-token-file`,
//! written into the Secret over stdin, never on a command line.

use std::{net::IpAddr, path::PathBuf};

use crate::{
    Error, HelmOptions, Secret, ValuesMode, check_dns_label, check_dns_name, check_set_value, manifest, observe,
    plan::{Plan, Step, Tool},
    run::{self, Runner, Tools},
};

/// The Secret in the silo namespace holding the silo's own credential for the fleet; the fleet-managed
/// profile (`charts/opencrane-silo/profiles/fleet-managed.yaml`) names the same Secret.
pub const FLEET_TOKEN_SECRET: &str = "opencrane-fleet-token";

/// The CRD external-dns reads; needed when the silo publishes its own DNS record.
pub const DNS_ENDPOINT_CRD: &str = "dnsendpoints.externaldns.k8s.io";

/// How a silo credential starts (the fleet's `opencrane_provision::credential::PREFIX`; this crate
/// does not depend on the provisioner).
pub const SILO_CREDENTIAL_PREFIX: &str = "ocs_";

/// How the silo relates to a fleet.
#[derive(Clone, Debug)]
pub enum SiloMode {
    /// Provisioned by (and pulling read-models from) the fleet release.
    FleetManaged {
        /// The fleet's in-cluster URL; `None` keeps the profile's default.
        fleet_internal_url: Option<String>,
        /// Where the token comes from.
        token: TokenSource,
    },
    /// No fleet: the silo installs the CRDs and generates its own token.
    Standalone,
}

/// Where a fleet-managed silo's token comes from.
#[derive(Clone, Debug)]
pub enum TokenSource {
    /// Given directly (a file, or a credential the fleet just minted): written into the silo's
    /// Secret, replacing what it held. Must be a silo credential (`ocs_…`).
    Value(Secret),
    /// Already in the silo's Secret (the fleet's provisioner installed it earlier): kept as is. A
    /// real run checks first that it is there and is a silo credential (`deploy silo` by hand).
    Existing,
    /// Written by the caller just before (the fleet's provisioner, which applied and checked it
    /// in the same pass): kept as is, not read again.
    Installed,
}

/// Everything `deploy silo` needs.
#[derive(Clone, Debug)]
pub struct SiloOptions {
    /// Chart directory, release, image tag and Helm behaviour.
    pub helm: HelmOptions,
    /// The platform base domain (`--base-domain`).
    pub base_domain: String,
    /// The ClusterTenant (`--cluster-tenant`).
    pub cluster_tenant: String,
    /// The namespace (`--namespace`; default `opencrane-<cluster-tenant>`).
    pub namespace: Option<String>,
    /// Publish `<cluster-tenant>.<base>` pointing at this address (`--ingress-ip`).
    pub ingress_ip: Option<IpAddr>,
    /// Fleet-managed or standalone.
    pub mode: SiloMode,
    /// The API server's CIDRs for the NetworkPolicy (`--kube-api-cidr`); empty: discovered.
    pub kube_api_cidrs: Vec<String>,
    /// Skip the read-only checks (`--skip-preflight`).
    pub skip_preflight: bool,
}

/// What the read-only checks learnt.
#[derive(Clone, Debug, Default)]
pub struct SiloObservations {
    /// API server CIDRs and ports (when discovered).
    pub api_server: Option<(Vec<String>, Vec<u16>)>,
    /// Whether the silo namespace already holds a silo credential (checked by a real run).
    pub credential_present: bool,
}

impl SiloOptions {
    /// The defaults: namespace `opencrane-<cluster-tenant>`, no DNS record, the API server
    /// discovered.
    pub fn new(
        helm: HelmOptions,
        base_domain: impl Into<String>,
        cluster_tenant: impl Into<String>,
        mode: SiloMode,
    ) -> Self {
        Self {
            helm,
            base_domain: base_domain.into(),
            cluster_tenant: cluster_tenant.into(),
            namespace: None,
            ingress_ip: None,
            mode,
            kube_api_cidrs: Vec::new(),
            skip_preflight: false,
        }
    }

    /// The namespace the release goes to.
    pub fn namespace(&self) -> String {
        self.namespace.clone().unwrap_or_else(|| format!("opencrane-{}", self.cluster_tenant))
    }

    fn chart(&self) -> PathBuf {
        self.helm.charts_dir.join("opencrane-silo")
    }

    /// Checks every option; the error names the flag.
    pub fn validate(&self) -> Result<(), Error> {
        check_dns_name("--base-domain", &self.base_domain)?;
        check_dns_label("--cluster-tenant", &self.cluster_tenant, 40)?;
        check_dns_label("--namespace", &self.namespace(), 63)?;
        check_dns_label("--release", &self.helm.release, 30)?;
        if let Some(tag) = &self.helm.image_tag {
            check_set_value("--image-tag", tag)?;
        }
        if let SiloMode::FleetManaged { fleet_internal_url: Some(url), .. } = &self.mode {
            check_set_value("--fleet-internal-url", url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(Error::Invalid(format!(
                    "--fleet-internal-url: “{url}” must start with http:// or https://"
                )));
            }
        }
        if let SiloMode::FleetManaged { token: TokenSource::Value(value), .. } = &self.mode
            && !value.expose().starts_with(SILO_CREDENTIAL_PREFIX)
        {
            return Err(Error::Invalid(format!(
                "--fleet-token-file: this is not a silo credential (they start with {SILO_CREDENTIAL_PREFIX}); \
                 a silo never holds the fleet's API token. Use the credential the fleet minted for this customer."
            )));
        }
        for cidr in &self.kube_api_cidrs {
            check_cidr("--kube-api-cidr", cidr)?;
        }
        if !self.chart().join("Chart.yaml").is_file() {
            return Err(Error::Invalid(format!(
                "--charts: {} holds no opencrane-silo chart (expected {}/Chart.yaml)",
                self.helm.charts_dir.display(),
                self.chart().display()
            )));
        }
        Ok(())
    }
}

fn check_cidr(flag: &str, cidr: &str) -> Result<(), Error> {
    let ok = cidr.split_once('/').is_some_and(|(ip, bits)| {
        ip.parse::<IpAddr>().is_ok_and(|ip| bits.parse::<u8>().is_ok_and(|b| b <= if ip.is_ipv4() { 32 } else { 128 }))
    });
    if ok { Ok(()) } else { Err(Error::Invalid(format!("{flag}: “{cidr}” is not a CIDR such as 10.0.0.1/32"))) }
}

/// Builds the plan (pure): the namespace (and token Secret) first, then the release.
pub fn build(opts: &SiloOptions, seen: &SiloObservations) -> Plan {
    let ns = opts.namespace();
    let ct = opts.cluster_tenant.as_str();
    let mut notes = Vec::new();
    let mut objects = vec![manifest::plain(manifest::namespace(&ns, "silo", &[("opencrane.io/cluster-tenant", ct)]))];
    let mut title = format!("Namespace {ns} (restricted Pod Security)");
    if let SiloMode::FleetManaged { token, .. } = &opts.mode {
        match token {
            TokenSource::Value(value) => {
                objects.push(manifest::secret(&ns, FLEET_TOKEN_SECRET, "token", value, "silo"));
                title.push_str(" and the silo credential Secret");
            }
            // The fleet's provisioner installed it (a real run checked it is there): leave it alone.
            TokenSource::Installed => {}
            TokenSource::Existing if seen.credential_present => {}
            TokenSource::Existing => notes.push(format!(
                "The silo uses the credential the fleet minted for {ct}, in Secret {ns}/{FLEET_TOKEN_SECRET} \
                 (a real run checks it is there)."
            )),
        }
    }
    let apply_args = ["apply", "--server-side", "--field-manager=opencrane-deploy", "-f", "-"].map(String::from).into();
    let apply = Step::new(title, Tool::Kubectl, apply_args).with_stdin(manifest::documents(&objects));

    let chart = opts.chart();
    let mut args: Vec<String> = vec![
        "upgrade".into(),
        "--install".into(),
        opts.helm.release.clone(),
        chart.display().to_string(),
        "--namespace".into(),
        ns.clone(),
    ];
    let profile = match opts.mode {
        SiloMode::FleetManaged { .. } => "fleet-managed",
        SiloMode::Standalone => "standalone",
    };
    args.extend(["--values".into(), chart.join("profiles").join(format!("{profile}.yaml")).display().to_string()]);
    for file in &opts.helm.values_files {
        args.extend(["--values".into(), file.display().to_string()]);
    }
    let mut set_string = vec![format!("clusterTenant.name={ct}"), format!("ingress.domain={}", opts.base_domain)];
    if let SiloMode::FleetManaged { fleet_internal_url, .. } = &opts.mode {
        set_string.push(format!("clustertenantManager.fleetApiTokenExistingSecret={FLEET_TOKEN_SECRET}"));
        if let Some(url) = fleet_internal_url {
            set_string.push(format!("clustertenantManager.fleetInternalUrl={url}"));
        }
    }
    if let Some(tag) = &opts.helm.image_tag {
        set_string.push(format!("clustertenantManager.image.tag={tag}"));
    }
    if let Some(ip) = opts.ingress_ip {
        set_string.push(format!("ingress.externalIp={ip}"));
    }
    for value in set_string {
        args.extend(["--set-string".into(), value]);
    }
    let (cidrs, ports) = match (&opts.kube_api_cidrs, &seen.api_server) {
        (given, _) if !given.is_empty() => (given.clone(), Vec::new()),
        (_, Some((cidrs, ports))) => (cidrs.clone(), ports.clone()),
        _ => {
            notes.push(
                "the API server's address was not discovered (--skip-preflight): the silo operator's egress to it stays closed until networkPolicy.kubeApiServer.cidrs is set".into(),
            );
            (Vec::new(), Vec::new())
        }
    };
    if !cidrs.is_empty() {
        args.extend(["--set-json".into(), format!("networkPolicy.kubeApiServer.cidrs={}", json_list(&cidrs))]);
    }
    if !ports.is_empty() {
        args.extend(["--set-json".into(), format!("networkPolicy.kubeApiServer.ports={}", json_list(&ports))]);
    }
    push_helm_tail(&mut args, &opts.helm);
    let release = Step::new(format!("Silo release {} for ClusterTenant {ct}", opts.helm.release), Tool::Helm, args);
    Plan {
        summary: format!("opencrane silo {ct} ({profile}) in namespace {ns}, answering on {ct}.{}", opts.base_domain),
        steps: vec![apply, release],
        notes,
    }
}

/// `[a,b]` as JSON for `helm --set-json`.
pub(crate) fn json_list<T: serde::Serialize>(items: &[T]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

/// The arguments every release upgrade ends with: user `--set`s (last, so they win), the values
/// mode, waiting, and verbatim extras.
pub(crate) fn push_helm_tail(args: &mut Vec<String>, helm: &HelmOptions) {
    for value in &helm.set {
        args.extend(["--set".into(), value.clone()]);
    }
    if helm.values_mode == ValuesMode::Reuse {
        args.push("--reuse-values".into());
    }
    args.extend(["--wait".into(), "--timeout".into(), helm.timeout.clone()]);
    args.extend(helm.helm_args.iter().cloned());
}

/// Validates, checks the cluster (read-only), builds the plan and, unless `dry_run`, executes it.
/// Returns the plan (executed or not).
pub fn deploy(
    opts: &SiloOptions,
    tools: &Tools,
    runner: &mut dyn Runner,
    dry_run: bool,
    progress: &mut dyn FnMut(usize, &str),
) -> Result<Plan, Error> {
    opts.validate()?;
    let mut seen = SiloObservations::default();
    if !opts.skip_preflight {
        observe::cnpg_installed(runner, tools)?;
        if opts.ingress_ip.is_some() {
            observe::crd_installed(
                runner,
                tools,
                DNS_ENDPOINT_CRD,
                "external-dns not found, but --ingress-ip publishes a DNSEndpoint",
                "Deploy the fleet with --dns-provider, or omit --ingress-ip.",
            )?;
        }
        if opts.kube_api_cidrs.is_empty() {
            seen.api_server = Some(observe::api_server(runner, tools)?);
        }
    }
    if !dry_run && let SiloMode::FleetManaged { token: TokenSource::Existing, .. } = &opts.mode {
        let ns = opts.namespace();
        let found = observe::secret_value(runner, tools, &ns, FLEET_TOKEN_SECRET, "token").map_err(|_| {
            Error::Preflight(format!(
                "Secret {ns}/{FLEET_TOKEN_SECRET} holds no silo credential. Create the customer {} on the fleet \
                 first (its provisioner mints the silo's own credential and writes it there), or pass \
                 --fleet-token-file with that credential.",
                opts.cluster_tenant
            ))
        })?;
        if !found.expose().starts_with(SILO_CREDENTIAL_PREFIX) {
            return Err(Error::Preflight(format!(
                "Secret {ns}/{FLEET_TOKEN_SECRET} does not hold a silo credential (they start with \
                 {SILO_CREDENTIAL_PREFIX}); a silo never holds the fleet's API token. Rotate the customer's \
                 credential on the fleet (POST /api/v1/cluster-tenants/{}/silo-credential/rotate).",
                opts.cluster_tenant
            )));
        }
        seen.credential_present = true;
    }
    let plan = build(opts, &seen);
    if !dry_run {
        run::execute(&plan, runner, tools, progress)?;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn charts() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../charts")
    }

    fn options(mode: SiloMode) -> SiloOptions {
        SiloOptions {
            helm: HelmOptions {
                charts_dir: charts(),
                release: "opencrane".into(),
                timeout: "10m".into(),
                ..Default::default()
            },
            base_domain: "example.com".into(),
            cluster_tenant: "acme".into(),
            namespace: None,
            ingress_ip: None,
            mode,
            kube_api_cidrs: Vec::new(),
            skip_preflight: false,
        }
    }

    fn fleet_managed() -> SiloMode {
        SiloMode::FleetManaged { fleet_internal_url: None, token: TokenSource::Value(Secret::new("ocs_tok-123")) }
    }

    fn flag_pairs(args: &[String], flag: &str) -> Vec<String> {
        args.windows(2).filter(|w| w[0] == flag).map(|w| w[1].clone()).collect()
    }

    #[test]
    fn fleet_managed_plan_wires_the_fleet_and_skips_crds() {
        let seen =
            SiloObservations { api_server: Some((vec!["10.0.0.1/32".into()], vec![6443])), credential_present: false };
        let plan = build(&options(fleet_managed()), &seen);
        assert_eq!(plan.steps.len(), 2);
        let apply = &plan.steps[0];
        let stdin = apply.stdin.as_ref().unwrap();
        assert!(stdin.text.contains("name: opencrane-acme") && stdin.text.contains("tok-123"));
        assert!(!stdin.printable.contains("tok-123"));
        let helm = &plan.steps[1];
        assert_eq!(helm.tool, Tool::Helm);
        assert_eq!(&helm.args[..3], ["upgrade", "--install", "opencrane"]);
        assert_eq!(flag_pairs(&helm.args, "--namespace"), ["opencrane-acme"]);
        assert!(flag_pairs(&helm.args, "--values")[0].ends_with("opencrane-silo/profiles/fleet-managed.yaml"));
        let strings = flag_pairs(&helm.args, "--set-string");
        assert!(strings.contains(&"clusterTenant.name=acme".to_owned()));
        assert!(strings.contains(&"ingress.domain=example.com".to_owned()));
        assert!(strings.contains(&format!("clustertenantManager.fleetApiTokenExistingSecret={FLEET_TOKEN_SECRET}")));
        assert_eq!(
            flag_pairs(&helm.args, "--set-json"),
            ["networkPolicy.kubeApiServer.cidrs=[\"10.0.0.1/32\"]", "networkPolicy.kubeApiServer.ports=[6443]"]
        );
        assert!(!helm.args.iter().any(|a| a.contains("tok-123")), "the token never reaches a command line");
        assert!(!helm.args.contains(&"--reuse-values".to_owned()));
        assert!(plan.notes.is_empty());
    }

    #[test]
    fn the_profile_file_names_the_token_secret_the_plan_creates() {
        let profile = std::fs::read_to_string(charts().join("opencrane-silo/profiles/fleet-managed.yaml")).unwrap();
        let profile: serde_yaml_ng::Value = serde_yaml_ng::from_str(&profile).unwrap();
        assert_eq!(profile["clustertenantManager"]["fleetApiTokenExistingSecret"].as_str(), Some(FLEET_TOKEN_SECRET));
        assert_eq!(profile["crds"]["install"].as_bool(), Some(false));
        assert_eq!(profile["deploymentMode"].as_str(), Some("fleet-managed"));
    }

    #[test]
    fn standalone_reuse_and_overrides() {
        let mut opts = options(SiloMode::Standalone);
        opts.namespace = Some("customer-acme".into());
        opts.helm.values_mode = ValuesMode::Reuse;
        opts.helm.image_tag = Some("1.2.3".into());
        opts.helm.set = vec!["litellm.enabled=false".into()];
        opts.ingress_ip = Some("203.0.113.7".parse().unwrap());
        opts.kube_api_cidrs = vec!["192.168.1.1/32".into()];
        let plan = build(&opts, &SiloObservations::default());
        assert!(
            plan.steps[0].stdin.as_ref().unwrap().text.matches("kind: ").count() == 1,
            "no token Secret when standalone"
        );
        let args = &plan.steps[1].args;
        assert!(flag_pairs(args, "--values")[0].ends_with("standalone.yaml"));
        assert_eq!(flag_pairs(args, "--namespace"), ["customer-acme"]);
        let strings = flag_pairs(args, "--set-string");
        assert!(strings.contains(&"clustertenantManager.image.tag=1.2.3".to_owned()));
        assert!(strings.contains(&"ingress.externalIp=203.0.113.7".to_owned()));
        assert_eq!(flag_pairs(args, "--set"), ["litellm.enabled=false"]);
        assert!(args.contains(&"--reuse-values".to_owned()));
        assert_eq!(flag_pairs(args, "--set-json"), ["networkPolicy.kubeApiServer.cidrs=[\"192.168.1.1/32\"]"]);
    }

    #[test]
    fn a_dry_run_plan_says_the_silo_uses_its_own_credential() {
        let mut opts = options(SiloMode::FleetManaged { fleet_internal_url: None, token: TokenSource::Existing });
        opts.skip_preflight = true;
        let plan = build(&opts, &SiloObservations::default());
        let stdin = &plan.steps[0].stdin.as_ref().unwrap();
        assert_eq!(stdin.text.matches("kind: ").count(), 1, "no Secret is written: {}", stdin.printable);
        assert!(
            plan.notes.iter().any(|n| n.contains("credential the fleet minted for acme")
                && n.contains(&format!("opencrane-acme/{FLEET_TOKEN_SECRET}"))),
            "{:?}",
            plan.notes
        );
        let checked = build(&opts, &SiloObservations { credential_present: true, ..Default::default() });
        assert!(!checked.notes.iter().any(|n| n.contains("credential")), "{:?}", checked.notes);
    }

    /// The fleet's API token (or anything but a silo credential) is never written into a silo:
    /// before, `deploy silo` copied the fleet's token Secret into every hand-deployed silo.
    #[test]
    fn a_token_that_is_not_a_silo_credential_is_refused() {
        let opts = options(SiloMode::FleetManaged {
            fleet_internal_url: None,
            token: TokenSource::Value(Secret::new("fleet-api-token-value")),
        });
        let err = opts.validate().unwrap_err().to_string();
        assert!(err.starts_with("--fleet-token-file: this is not a silo credential"), "{err}");
        assert!(!err.contains("fleet-api-token-value"), "the value is never echoed: {err}");
    }

    /// A flag and a change that makes it invalid.
    type Case = (&'static str, fn(&mut SiloOptions));

    #[test]
    fn bad_options_name_their_flag() {
        let cases: [Case; 7] = [
            ("--base-domain", |o| o.base_domain = "Example".into()),
            ("--cluster-tenant", |o| o.cluster_tenant = "Acme".into()),
            ("--namespace", |o| o.namespace = Some("bad_ns".into())),
            ("--image-tag", |o| o.helm.image_tag = Some("a,b".into())),
            ("--kube-api-cidr", |o| o.kube_api_cidrs = vec!["10.0.0.1".into()]),
            ("--fleet-internal-url", |o| {
                o.mode = SiloMode::FleetManaged {
                    fleet_internal_url: Some("fleet:8080".into()),
                    token: TokenSource::Value(Secret::new("ocs_x")),
                }
            }),
            ("--charts", |o| o.helm.charts_dir = PathBuf::from("/nonexistent")),
        ];
        for (flag, mutate) in cases {
            let mut opts = options(fleet_managed());
            mutate(&mut opts);
            let err = opts.validate().unwrap_err().to_string();
            assert!(err.starts_with(flag), "{flag}: {err}");
        }
        assert!(options(fleet_managed()).validate().is_ok());
    }
}
