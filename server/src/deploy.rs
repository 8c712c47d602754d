//! `opencrane deploy fleet|silo`: turns the command line into the deploy crate's options, runs
//! the one deploy code path (which the fleet's provisioner shares) and prints the plan or the
//! progress.

use std::{fs, path::Path};

use anyhow::Context as _;
use opencrane_deploy::{
    HelmOptions, Plan, ProcessRunner, Secret, Tools, ValuesMode,
    fleet::{self, Acme, FleetOptions, Infrastructure, Oidc},
    silo::{self, SiloMode, SiloOptions, TokenSource},
};

use crate::cli::{DeployArgs, DeployCommonArgs, DeployFleetArgs, DeploySiloArgs, DeployTarget, PlanFormat};

/// Runs `deploy`; the plan goes to stdout for `--dry-run`, progress to stderr otherwise.
pub fn run(args: DeployArgs) -> anyhow::Result<()> {
    let (result, common) = match args.target {
        DeployTarget::Fleet(args) => {
            let opts = fleet_options(&args)?;
            let tools = tools(&args.common);
            (fleet::deploy(&opts, &tools, &mut ProcessRunner, args.common.dry_run, &mut progress), args.common)
        }
        DeployTarget::Silo(args) => {
            let opts = silo_options(&args)?;
            let tools = tools(&args.common);
            (silo::deploy(&opts, &tools, &mut ProcessRunner, args.common.dry_run, &mut progress), args.common)
        }
    };
    let plan = result?;
    report(&plan, &common);
    Ok(())
}

fn progress(index: usize, title: &str) {
    eprintln!("[{index}] {title}");
}

fn report(plan: &Plan, common: &DeployCommonArgs) {
    if common.dry_run {
        match common.plan_format {
            PlanFormat::Shell => print!("{}", plan.to_shell()),
            PlanFormat::Json => println!("{}", plan.to_json()),
        }
    } else {
        for note in &plan.notes {
            eprintln!("note: {note}");
        }
        eprintln!("done: {}", plan.summary);
    }
}

fn tools(common: &DeployCommonArgs) -> Tools {
    Tools::resolve(common.kubectl.clone(), common.helm.clone(), common.kube_context.clone())
}

fn helm_options(common: &DeployCommonArgs) -> HelmOptions {
    HelmOptions {
        charts_dir: common.charts_dir.clone(),
        release: common.release.clone(),
        image_tag: common.image_tag.clone(),
        values_files: common.values.clone(),
        set: common.set.clone(),
        helm_args: common.helm_args.clone(),
        values_mode: if common.reuse_values { ValuesMode::Reuse } else { ValuesMode::Replace },
        timeout: common.timeout.clone(),
    }
}

fn read_secret(flag: &str, path: &Path) -> anyhow::Result<Secret> {
    let text = fs::read_to_string(path).with_context(|| format!("{flag}: reading {}", path.display()))?;
    let value = text.trim();
    anyhow::ensure!(!value.is_empty(), "{flag}: {} is empty", path.display());
    Ok(Secret::new(value))
}

/// The fleet deploy's options from its flags.
pub fn fleet_options(args: &DeployFleetArgs) -> anyhow::Result<FleetOptions> {
    let client_secret =
        args.oidc_client_secret_file.as_deref().map(|p| read_secret("--oidc-client-secret-file", p)).transpose()?;
    Ok(FleetOptions {
        helm: helm_options(&args.common),
        base_domain: args.common.base_domain.clone(),
        namespace: args.namespace.clone(),
        ingress_ip: args.common.ingress_ip,
        operator_seed_email: args.platform_operator_seed_email.clone(),
        operator_groups: args.platform_operator_groups.clone(),
        acme: match (&args.acme_email, &args.dns01_provider) {
            (Some(email), Some(provider)) => Some(Acme {
                email: email.clone(),
                dns01_provider: provider.clone(),
                project: args.dns01_project.clone(),
            }),
            _ => None,
        },
        manage_issuer: args.manage_issuer,
        dns_provider: args.dns_provider.clone(),
        install: Infrastructure {
            ingress_nginx: !args.no_ingress_nginx,
            cert_manager: !args.no_cert_manager,
            cnpg: !args.no_db_operator,
            external_dns: !args.no_external_dns,
        },
        oidc: Oidc {
            issuer_url: args.oidc_issuer_url.clone(),
            client_id: args.oidc_client_id.clone(),
            redirect_uri: args.oidc_redirect_uri.clone(),
            client_secret,
        },
        skip_preflight: args.common.skip_preflight,
    })
}

/// The silo deploy's options from its flags.
pub fn silo_options(args: &DeploySiloArgs) -> anyhow::Result<SiloOptions> {
    let mode = if args.standalone {
        SiloMode::Standalone
    } else {
        let token = match &args.fleet_token_file {
            Some(path) => TokenSource::Value(read_secret("--fleet-token-file", path)?),
            None => TokenSource::Existing,
        };
        SiloMode::FleetManaged { fleet_internal_url: args.fleet_internal_url.clone(), token }
    };
    Ok(SiloOptions {
        helm: helm_options(&args.common),
        base_domain: args.common.base_domain.clone(),
        cluster_tenant: args.cluster_tenant.clone(),
        namespace: args.namespace.clone(),
        ingress_ip: args.common.ingress_ip,
        mode,
        kube_api_cidrs: args.kube_api_cidrs.clone(),
        skip_preflight: args.common.skip_preflight,
    })
}
