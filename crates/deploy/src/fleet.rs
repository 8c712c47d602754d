//! `opencrane deploy fleet`: the cluster-wide infrastructure every silo reuses (ingress-nginx,
//! cert-manager, the CloudNativePG operator, external-dns), each from its upstream chart at a
//! pinned version unless told not to, then the fleet release in `opencrane-system`.

use std::{net::IpAddr, path::PathBuf};

use crate::{
    Error, HelmOptions, Secret, check_dns_label, check_dns_name, check_set_value, manifest, observe,
    plan::{Plan, Step, Tool},
    run::{self, Runner, Tools},
    silo::{json_list, push_helm_tail},
};

/// One upstream chart the fleet installs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// What it is for, for the plan.
    pub title: &'static str,
    /// Helm release name.
    pub release: &'static str,
    /// Chart name in the repository.
    pub chart: &'static str,
    /// Repository URL.
    pub repo: &'static str,
    /// Pinned chart version.
    pub version: &'static str,
    /// Namespace.
    pub namespace: &'static str,
}

/// ingress-nginx: the ingress controller every console is served through.
pub const INGRESS_NGINX: Upstream = Upstream {
    title: "ingress-nginx (cluster-wide ingress controller)",
    release: "ingress-nginx",
    chart: "ingress-nginx",
    repo: "https://kubernetes.github.io/ingress-nginx",
    version: "4.12.1",
    namespace: "ingress-nginx",
};

/// cert-manager: certificates for the platform, silo and vanity hosts.
pub const CERT_MANAGER: Upstream = Upstream {
    title: "cert-manager (certificates)",
    release: "cert-manager",
    chart: "cert-manager",
    repo: "https://charts.jetstack.io",
    version: "v1.17.2",
    namespace: "cert-manager",
};

/// The CloudNativePG operator: reconciles the fleet's and every silo's PostgreSQL `Cluster`.
pub const CNPG: Upstream = Upstream {
    title: "CloudNativePG operator (every silo's database)",
    release: "cnpg",
    chart: "cloudnative-pg",
    repo: "https://cloudnative-pg.github.io/charts",
    version: "0.23.2",
    namespace: "cnpg-system",
};

/// external-dns: publishes DNSEndpoint records (platform and silo hosts).
pub const EXTERNAL_DNS: Upstream = Upstream {
    title: "external-dns (DNS records from DNSEndpoint objects)",
    release: "external-dns",
    chart: "external-dns",
    repo: "https://kubernetes-sigs.github.io/external-dns/",
    version: "1.16.1",
    namespace: "external-dns",
};

/// Which cluster-wide components to install (`--no-…` turns one off, e.g. when already present).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Infrastructure {
    /// ingress-nginx.
    pub ingress_nginx: bool,
    /// cert-manager.
    pub cert_manager: bool,
    /// The CloudNativePG operator.
    pub cnpg: bool,
    /// external-dns (only with a DNS provider).
    pub external_dns: bool,
}

impl Default for Infrastructure {
    fn default() -> Self {
        Self { ingress_nginx: true, cert_manager: true, cnpg: true, external_dns: true }
    }
}

/// ACME (Let's Encrypt) certificates through a DNS-01 solver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acme {
    /// Account email (`--acme-email`).
    pub email: String,
    /// DNS-01 provider (`--dns01-provider`; only `clouddns`).
    pub dns01_provider: String,
    /// Google Cloud project of the zone (`--dns01-project`).
    pub project: Option<String>,
}

/// The fleet-manager's sign-in client.
#[derive(Clone, Debug, Default)]
pub struct Oidc {
    /// `--oidc-issuer-url`.
    pub issuer_url: Option<String>,
    /// `--oidc-client-id`.
    pub client_id: Option<String>,
    /// `--oidc-redirect-uri` (default `https://platform.<base>/api/v1/auth/callback`).
    pub redirect_uri: Option<String>,
    /// `--oidc-client-secret` (stored in a Secret, never in Helm values).
    pub client_secret: Option<Secret>,
}

/// Everything `deploy fleet` needs.
#[derive(Clone, Debug)]
pub struct FleetOptions {
    /// Chart directory, release, image tag and Helm behaviour.
    pub helm: HelmOptions,
    /// The platform base domain (`--base-domain`).
    pub base_domain: String,
    /// The fleet namespace (`--namespace`, default `opencrane-system`).
    pub namespace: String,
    /// The ingress controller's load-balancer address (`--ingress-ip`).
    pub ingress_ip: Option<IpAddr>,
    /// The first platform operator's verified email (`--platform-operator-seed-email`).
    pub operator_seed_email: Option<String>,
    /// Groups whose members are platform operators (`--platform-operator-groups`).
    pub operator_groups: Vec<String>,
    /// ACME certificates; `None`: a self-signed issuer.
    pub acme: Option<Acme>,
    /// The fleet-manager writes the issuer (`certManager.createIssuer=fleet`, `--manage-issuer`).
    pub manage_issuer: bool,
    /// The external-dns provider (`--dns-provider`, e.g. google); `None`: no external-dns.
    pub dns_provider: Option<String>,
    /// Which singletons to install.
    pub install: Infrastructure,
    /// Sign-in.
    pub oidc: Oidc,
    /// Skip the read-only checks (`--skip-preflight`).
    pub skip_preflight: bool,
}

/// The Secret holding the fleet's OIDC client secret, when `--oidc-client-secret` is given.
pub const OIDC_SECRET: &str = "opencrane-fleet-oidc";

impl FleetOptions {
    /// The defaults: namespace `opencrane-system`, every singleton, a self-signed issuer, no
    /// sign-in client, and the given operator seed email.
    pub fn new(helm: HelmOptions, base_domain: impl Into<String>, operator_seed_email: Option<String>) -> Self {
        Self {
            helm,
            base_domain: base_domain.into(),
            namespace: "opencrane-system".into(),
            ingress_ip: None,
            operator_seed_email,
            operator_groups: Vec::new(),
            acme: None,
            manage_issuer: false,
            dns_provider: None,
            install: Infrastructure::default(),
            oidc: Oidc::default(),
            skip_preflight: false,
        }
    }

    fn chart(&self) -> PathBuf {
        self.helm.charts_dir.join("opencrane-fleet")
    }

    /// The DNS provider external-dns uses: `--dns-provider`, else the one behind `--dns01-provider clouddns`.
    pub fn external_dns_provider(&self) -> Option<String> {
        self.dns_provider
            .clone()
            .or_else(|| self.acme.as_ref().filter(|a| a.dns01_provider == "clouddns").map(|_| "google".to_owned()))
    }

    /// Checks every option; the error names the flag.
    pub fn validate(&self) -> Result<(), Error> {
        check_dns_name("--base-domain", &self.base_domain)?;
        check_dns_label("--namespace", &self.namespace, 63)?;
        check_dns_label("--release", &self.helm.release, 30)?;
        let seed = self.operator_seed_email.as_deref().filter(|e| !e.trim().is_empty());
        if seed.is_none() && self.operator_groups.iter().all(|g| g.trim().is_empty()) {
            return Err(Error::Invalid(
                "--platform-operator-seed-email or --platform-operator-groups is required: without one nobody can administer the platform".into(),
            ));
        }
        if let Some(email) = seed
            && !looks_like_email(email)
        {
            return Err(Error::Invalid(format!("--platform-operator-seed-email: “{email}” is not an email address")));
        }
        for group in &self.operator_groups {
            check_set_value("--platform-operator-groups", group)?;
        }
        if let Some(acme) = &self.acme {
            if !looks_like_email(&acme.email) {
                return Err(Error::Invalid(format!("--acme-email: “{}” is not an email address", acme.email)));
            }
            if acme.dns01_provider != "clouddns" {
                return Err(Error::Invalid(format!(
                    "--dns01-provider: “{}” is not supported (only clouddns)",
                    acme.dns01_provider
                )));
            }
            if acme.project.as_deref().is_none_or(str::is_empty) {
                return Err(Error::Invalid(
                    "--dns01-project is required with --dns01-provider clouddns (the Google Cloud project of the zone)"
                        .into(),
                ));
            }
        }
        if let Some(tag) = &self.helm.image_tag {
            check_set_value("--image-tag", tag)?;
        }
        let oidc = &self.oidc;
        if oidc.issuer_url.is_some() != oidc.client_id.is_some() {
            return Err(Error::Invalid(
                "--oidc-issuer-url and --oidc-client-id go together: give both or neither".into(),
            ));
        }
        for (flag, value) in [("--oidc-issuer-url", &oidc.issuer_url), ("--oidc-redirect-uri", &oidc.redirect_uri)] {
            if let Some(url) = value {
                check_set_value(flag, url)?;
                if !url.starts_with("https://") && !url.starts_with("http://") {
                    return Err(Error::Invalid(format!("{flag}: “{url}” must be an http(s) URL")));
                }
            }
        }
        if let Some(id) = &oidc.client_id {
            check_set_value("--oidc-client-id", id)?;
        }
        if !self.chart().join("Chart.yaml").is_file() {
            return Err(Error::Invalid(format!(
                "--charts: {} holds no opencrane-fleet chart (expected {}/Chart.yaml)",
                self.helm.charts_dir.display(),
                self.chart().display()
            )));
        }
        Ok(())
    }
}

fn looks_like_email(value: &str) -> bool {
    value.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !value.contains(char::is_whitespace)
    })
}

fn upstream_step(chart: &Upstream, extra: Vec<String>, timeout: &str) -> Step {
    let mut args: Vec<String> = vec![
        "upgrade".into(),
        "--install".into(),
        chart.release.into(),
        chart.chart.into(),
        "--repo".into(),
        chart.repo.into(),
        "--version".into(),
        chart.version.into(),
        "--namespace".into(),
        chart.namespace.into(),
        "--create-namespace".into(),
    ];
    args.extend(extra);
    args.extend(["--wait".into(), "--timeout".into(), timeout.into()]);
    Step::new(format!("{} {}", chart.title, chart.version), Tool::Helm, args)
}

/// Builds the plan (pure).
pub fn build(opts: &FleetOptions) -> Plan {
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    let timeout = opts.helm.timeout.as_str();
    let dns_provider = opts.external_dns_provider();

    if opts.install.ingress_nginx {
        let mut extra = Vec::new();
        if let Some(ip) = opts.ingress_ip {
            extra.extend(["--set-string".into(), format!("controller.service.loadBalancerIP={ip}")]);
        }
        steps.push(upstream_step(&INGRESS_NGINX, extra, timeout));
    } else {
        notes.push(
            "ingress-nginx not installed (--no-ingress-nginx): an ingress controller of class nginx must exist".into(),
        );
    }
    if opts.install.cert_manager {
        steps.push(upstream_step(&CERT_MANAGER, vec!["--set".into(), "crds.enabled=true".into()], timeout));
    } else {
        notes.push("cert-manager not installed (--no-cert-manager): it must already run in the cluster".into());
    }
    if opts.install.cnpg {
        steps.push(upstream_step(&CNPG, Vec::new(), timeout));
    } else {
        notes.push("CloudNativePG not installed (--no-db-operator): it must already run in the cluster".into());
    }
    match (&dns_provider, opts.install.external_dns) {
        (Some(provider), true) => steps.push(upstream_step(
            &EXTERNAL_DNS,
            vec![
                "--set-string".into(),
                format!("provider.name={provider}"),
                "--set-json".into(),
                format!("domainFilters={}", json_list(&[&opts.base_domain])),
                "--set-json".into(),
                r#"sources=["crd","ingress"]"#.into(),
                "--set-string".into(),
                "policy=upsert-only".into(),
                "--set-string".into(),
                format!("txtOwnerId=opencrane-{}", opts.namespace),
            ],
            timeout,
        )),
        (Some(_), false) => {
            notes.push("external-dns not installed (--no-external-dns): it must already run with the crd source".into())
        }
        (None, _) => {
            notes.push("external-dns not installed: no --dns-provider given, so DNS records are yours to create".into())
        }
    }

    let mut objects = vec![manifest::plain(manifest::namespace(&opts.namespace, "fleet", &[]))];
    let mut title = format!("Namespace {} (restricted Pod Security)", opts.namespace);
    if let Some(secret) = &opts.oidc.client_secret {
        objects.push(manifest::secret(&opts.namespace, OIDC_SECRET, "client-secret", secret, "fleet"));
        title.push_str(" and the OIDC client Secret");
    }
    steps.push(
        Step::new(
            title,
            Tool::Kubectl,
            ["apply", "--server-side", "--field-manager=opencrane-deploy", "-f", "-"].map(String::from).into(),
        )
        .with_stdin(manifest::documents(&objects)),
    );

    let chart = opts.chart();
    // Helm installs a chart's crds/ once and never upgrades them: apply the current ones first
    // (server-side, taking over the fields Helm's first install owned).
    steps.push(Step::new(
        "CustomResourceDefinitions opencrane.io (server-side apply: Helm never upgrades crds/)",
        Tool::Kubectl,
        vec![
            "apply".into(),
            "--server-side".into(),
            "--force-conflicts".into(),
            "--field-manager=opencrane-deploy".into(),
            "-f".into(),
            chart.join("crds").join("opencrane.io.yaml").display().to_string(),
        ],
    ));
    let mut args: Vec<String> = vec![
        "upgrade".into(),
        "--install".into(),
        opts.helm.release.clone(),
        chart.display().to_string(),
        "--namespace".into(),
        opts.namespace.clone(),
    ];
    for file in &opts.helm.values_files {
        args.extend(["--values".into(), file.display().to_string()]);
    }
    let mut strings = vec![
        format!("ingress.domain={}", opts.base_domain),
        "fleetManager.clusterTenantApi.enabled=true".into(),
        "billing.enabled=true".into(),
        "ingress.tls.enabled=true".into(),
        format!(
            "certManager.createIssuer={}",
            match (&opts.acme, opts.manage_issuer) {
                (Some(_), _) => "acme",
                (None, true) => "fleet",
                (None, false) => "selfSigned",
            }
        ),
        format!("externalDns.enabled={}", dns_provider.is_some()),
    ];
    if let Some(acme) = &opts.acme {
        strings.push(format!("certManager.acme.email={}", acme.email));
        strings.push(format!("certManager.acme.dns01.provider={}", acme.dns01_provider));
        if let Some(project) = &acme.project {
            strings.push(format!("certManager.acme.dns01.project={project}"));
        }
    }
    if let Some(email) = opts.operator_seed_email.as_deref().filter(|e| !e.trim().is_empty()) {
        strings.push(format!("fleetManager.oidc.platformOperatorSeedEmail={email}"));
    }
    if let Some(tag) = &opts.helm.image_tag {
        strings.push(format!("fleetManager.image.tag={tag}"));
    }
    if let Some(ip) = opts.ingress_ip {
        strings.push(format!("ingress.externalIp={ip}"));
    }
    if let Some(issuer) = &opts.oidc.issuer_url {
        strings.push(format!("fleetManager.oidc.issuerUrl={issuer}"));
    }
    if let Some(id) = &opts.oidc.client_id {
        strings.push(format!("fleetManager.oidc.clientId={id}"));
    }
    if let Some(uri) = &opts.oidc.redirect_uri {
        strings.push(format!("fleetManager.oidc.redirectUri={uri}"));
    }
    if opts.oidc.client_secret.is_some() {
        strings.push(format!("fleetManager.oidc.existingSecret={OIDC_SECRET}"));
    }
    for value in strings {
        args.extend(["--set-string".into(), value]);
    }
    let groups: Vec<&str> = opts.operator_groups.iter().map(|g| g.trim()).filter(|g| !g.is_empty()).collect();
    if !groups.is_empty() {
        args.extend(["--set-json".into(), format!("fleetManager.oidc.platformOperatorGroups={}", json_list(&groups))]);
    }
    push_helm_tail(&mut args, &opts.helm);
    steps.push(Step::new(
        format!("Fleet release {} (fleet-manager, registry database, CRDs)", opts.helm.release),
        Tool::Helm,
        args,
    ));

    Plan {
        summary: format!("opencrane fleet in namespace {}, console on platform.{}", opts.namespace, opts.base_domain),
        steps,
        notes,
    }
}

/// Validates, checks the cluster answers (read-only), builds the plan and, unless `dry_run`,
/// executes it.
pub fn deploy(
    opts: &FleetOptions,
    tools: &Tools,
    runner: &mut dyn Runner,
    dry_run: bool,
    progress: &mut dyn FnMut(usize, &str),
) -> Result<Plan, Error> {
    opts.validate()?;
    if !opts.skip_preflight {
        observe::cluster_reachable(runner, tools)?;
    }
    let plan = build(opts);
    if !dry_run {
        run::execute(&plan, runner, tools, progress)?;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> FleetOptions {
        let helm = HelmOptions::for_charts(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../charts"));
        FleetOptions::new(helm, "example.com", Some("ops@example.com".into()))
    }

    fn pairs(args: &[String], flag: &str) -> Vec<String> {
        args.windows(2).filter(|w| w[0] == flag).map(|w| w[1].clone()).collect()
    }

    #[test]
    fn default_plan_installs_the_singletons_then_the_fleet() {
        let plan = build(&options());
        let titles: Vec<&str> = plan.steps.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(titles.len(), 6, "{titles:?}");
        assert!(
            titles[0].starts_with("ingress-nginx")
                && titles[1].starts_with("cert-manager")
                && titles[2].starts_with("CloudNativePG")
        );
        assert!(titles[3].starts_with("Namespace opencrane-system"));
        // The CRDs are applied before the release, from the chart's crds/ (Helm never upgrades them).
        let crds = &plan.steps[4];
        assert!(crds.title.starts_with("CustomResourceDefinitions"));
        assert_eq!(crds.args[..3], ["apply", "--server-side", "--force-conflicts"]);
        assert!(crds.args.last().unwrap().ends_with("charts/opencrane-fleet/crds/opencrane.io.yaml"));
        let cnpg = &plan.steps[2].args;
        assert_eq!(pairs(cnpg, "--repo"), [CNPG.repo]);
        assert_eq!(pairs(cnpg, "--version"), [CNPG.version]);
        assert_eq!(pairs(cnpg, "--namespace"), ["cnpg-system"]);
        let fleet = &plan.steps[5].args;
        assert!(fleet[3].ends_with("charts/opencrane-fleet"));
        let strings = pairs(fleet, "--set-string");
        for expected in [
            "ingress.domain=example.com",
            "fleetManager.clusterTenantApi.enabled=true",
            "billing.enabled=true",
            "certManager.createIssuer=selfSigned",
            "externalDns.enabled=false",
            "fleetManager.oidc.platformOperatorSeedEmail=ops@example.com",
        ] {
            assert!(strings.contains(&expected.to_owned()), "{expected} in {strings:?}");
        }
        assert!(plan.notes.iter().any(|n| n.contains("external-dns not installed")));
    }

    #[test]
    fn manage_issuer_hands_the_issuer_to_the_fleet() {
        let mut opts = options();
        opts.manage_issuer = true;
        opts.validate().unwrap();
        let plan = build(&opts);
        let strings = pairs(&plan.steps.last().unwrap().args, "--set-string");
        assert!(strings.contains(&"certManager.createIssuer=fleet".to_owned()), "{strings:?}");
    }

    #[test]
    fn acme_dns_and_skips() {
        let mut opts = options();
        opts.acme = Some(Acme {
            email: "ops@example.com".into(),
            dns01_provider: "clouddns".into(),
            project: Some("proj".into()),
        });
        opts.install.ingress_nginx = false;
        opts.install.cnpg = false;
        opts.ingress_ip = Some("203.0.113.9".parse().unwrap());
        opts.operator_seed_email = None;
        opts.operator_groups = vec!["platform-ops".into(), " ".into()];
        opts.oidc = Oidc {
            issuer_url: Some("https://id.example.com".into()),
            client_id: Some("312345678901234567".into()),
            redirect_uri: None,
            client_secret: Some(Secret::new("cs-secret")),
        };
        opts.validate().unwrap();
        let plan = build(&opts);
        let titles: Vec<&str> = plan.steps.iter().map(|s| s.title.as_str()).collect();
        assert!(titles[0].starts_with("cert-manager") && titles[1].starts_with("external-dns"), "{titles:?}");
        assert!(pairs(&plan.steps[1].args, "--set-string").contains(&"provider.name=google".to_owned()));
        let fleet = &plan.steps.last().unwrap().args;
        let strings = pairs(fleet, "--set-string");
        assert!(strings.contains(&"certManager.createIssuer=acme".to_owned()));
        assert!(strings.contains(&"certManager.acme.dns01.project=proj".to_owned()));
        assert!(strings.contains(&"externalDns.enabled=true".to_owned()));
        assert!(strings.contains(&"ingress.externalIp=203.0.113.9".to_owned()));
        assert!(
            strings.contains(&"fleetManager.oidc.clientId=312345678901234567".to_owned()),
            "a numeric id stays a string"
        );
        assert!(strings.contains(&format!("fleetManager.oidc.existingSecret={OIDC_SECRET}")));
        assert_eq!(pairs(fleet, "--set-json"), [r#"fleetManager.oidc.platformOperatorGroups=["platform-ops"]"#]);
        assert!(!plan.to_json().contains("cs-secret") && !plan.to_shell().contains("cs-secret"));
        assert!(plan.steps.iter().any(|s| s.stdin.as_ref().is_some_and(|i| i.text.contains("cs-secret"))));
        assert_eq!(plan.notes.len(), 2);
    }

    /// A flag and a change that makes it invalid.
    type Case = (&'static str, fn(&mut FleetOptions));

    #[test]
    fn bad_options_name_their_flag() {
        let cases: [Case; 7] = [
            ("--base-domain", |o| o.base_domain = "localhost".into()),
            ("--platform-operator-seed-email or --platform-operator-groups", |o| {
                o.operator_seed_email = Some(" ".into())
            }),
            ("--platform-operator-seed-email:", |o| o.operator_seed_email = Some("nobody".into())),
            ("--acme-email", |o| {
                o.acme = Some(Acme { email: "x".into(), dns01_provider: "clouddns".into(), project: Some("p".into()) })
            }),
            ("--dns01-provider", |o| {
                o.acme = Some(Acme { email: "a@b.co".into(), dns01_provider: "route53".into(), project: None })
            }),
            ("--dns01-project", |o| {
                o.acme = Some(Acme { email: "a@b.co".into(), dns01_provider: "clouddns".into(), project: None })
            }),
            ("--oidc-issuer-url and --oidc-client-id", |o| o.oidc.issuer_url = Some("https://id.example.com".into())),
        ];
        for (flag, mutate) in cases {
            let mut opts = options();
            mutate(&mut opts);
            let err = opts.validate().unwrap_err().to_string();
            assert!(err.starts_with(flag), "{flag}: {err}");
        }
    }
}
