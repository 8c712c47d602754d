//! Read-only questions asked of the cluster before a plan is built: is it reachable, is the
//! CloudNativePG operator installed, where does the API server listen, what is the fleet's token.
//! Each is one `kubectl` call; the parsing is pure and tested on its own.

use crate::{
    Error, Secret,
    plan::Tool,
    run::{Output, Runner, Tools, query},
};

/// The CRD whose presence proves the fleet release (and its CloudNativePG operator) is installed.
pub const CNPG_CRD: &str = "clusters.postgresql.cnpg.io";

/// What a failed query said, in one line: kubectl's last line is its summary (the lines before
/// are client-side retries).
fn said(out: &Output) -> String {
    let text = if out.stderr.trim().is_empty() { &out.stdout } else { &out.stderr };
    text.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output").chars().take(500).collect()
}

/// Fails unless the cluster answers.
pub fn cluster_reachable(runner: &mut dyn Runner, tools: &Tools) -> Result<(), Error> {
    let out = query(runner, tools, Tool::Kubectl, &["get".into(), "--raw".into(), "/readyz".into()])?;
    if out.success { Ok(()) } else { Err(Error::Preflight(format!("cannot reach the cluster: {}", said(&out)))) }
}

/// Fails unless the CloudNativePG CRD exists, with a message saying to install the fleet first.
pub fn cnpg_installed(runner: &mut dyn Runner, tools: &Tools) -> Result<(), Error> {
    crd_installed(
        runner,
        tools,
        CNPG_CRD,
        "CloudNativePG operator not found",
        "Install the fleet release first (opencrane deploy fleet --base-domain …): it installs the cluster-wide \
         singletons every silo reuses.",
    )
}

/// Fails unless the CRD `name` exists; `what` says what its absence means and `todo` what to do.
pub fn crd_installed(runner: &mut dyn Runner, tools: &Tools, name: &str, what: &str, todo: &str) -> Result<(), Error> {
    let out =
        query(runner, tools, Tool::Kubectl, &["get".into(), "crd".into(), name.into(), "-o".into(), "name".into()])?;
    if out.success {
        return Ok(());
    }
    let message = said(&out);
    if message.contains("NotFound") || message.contains("not found") {
        Err(Error::Preflight(format!("{what} (CRD {name} absent). {todo} Nothing was changed.")))
    } else {
        Err(Error::Preflight(format!("could not check for CRD {name}: {message}")))
    }
}

/// The API server's addresses (as /32 or /128 CIDRs) and ports, from the `kubernetes`
/// EndpointSlices in `default`: the silo operator's only way out of its namespace.
pub fn api_server(runner: &mut dyn Runner, tools: &Tools) -> Result<(Vec<String>, Vec<u16>), Error> {
    let args: Vec<String> =
        ["get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes", "-o", "json"]
            .map(String::from)
            .into();
    let out = query(runner, tools, Tool::Kubectl, &args)?;
    if !out.success {
        return Err(Error::Preflight(format!("could not read the API server's addresses: {}", said(&out))));
    }
    parse_endpoint_slices(&out.stdout)
}

/// Parses `kubectl get endpointslices -o json` into CIDRs and ports.
pub fn parse_endpoint_slices(json: &str) -> Result<(Vec<String>, Vec<u16>), Error> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Error::Preflight(format!("unexpected EndpointSlice list: {e}")))?;
    let mut cidrs = Vec::new();
    let mut ports = Vec::new();
    for slice in value["items"].as_array().into_iter().flatten() {
        for address in slice["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
        {
            let ip: std::net::IpAddr = address
                .as_str()
                .and_then(|a| a.parse().ok())
                .ok_or_else(|| Error::Preflight(format!("unexpected API server address {address}")))?;
            let cidr = if ip.is_ipv4() { format!("{ip}/32") } else { format!("{ip}/128") };
            if !cidrs.contains(&cidr) {
                cidrs.push(cidr);
            }
        }
        for port in slice["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_u64()) {
            if let Ok(port) = u16::try_from(port)
                && !ports.contains(&port)
            {
                ports.push(port);
            }
        }
    }
    if cidrs.is_empty() {
        return Err(Error::Preflight("the kubernetes EndpointSlices in default list no address".into()));
    }
    Ok((cidrs, ports))
}

/// Reads one key of a Secret (decoded by kubectl, never echoed).
pub fn secret_value(
    runner: &mut dyn Runner,
    tools: &Tools,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<Secret, Error> {
    let template = format!("go-template={{{{index .data \"{key}\" | base64decode}}}}");
    let args: Vec<String> =
        vec!["get".into(), "secret".into(), name.into(), "-n".into(), namespace.into(), "-o".into(), template];
    let out = query(runner, tools, Tool::Kubectl, &args)?;
    let value = out.stdout.trim();
    if !out.success || value.is_empty() || value == "<no value>" {
        return Err(Error::Preflight(format!(
            "could not read key {key} of Secret {namespace}/{name}{}",
            if out.success { String::new() } else { format!(": {}", said(&out)) }
        )));
    }
    Ok(Secret::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_slices_become_host_cidrs_and_ports() {
        let json = r#"{"items":[{"endpoints":[{"addresses":["10.0.0.2"]},{"addresses":["10.0.0.3","10.0.0.2"]}],
            "ports":[{"name":"https","port":6443}]},{"endpoints":[{"addresses":["fd00::1"]}],"ports":[{"port":6443}]}]}"#;
        let (cidrs, ports) = parse_endpoint_slices(json).unwrap();
        assert_eq!(cidrs, ["10.0.0.2/32", "10.0.0.3/32", "fd00::1/128"]);
        assert_eq!(ports, [6443]);
        assert!(parse_endpoint_slices(r#"{"items":[]}"#).unwrap_err().to_string().contains("no address"));
        assert!(parse_endpoint_slices("not json").is_err());
        assert!(parse_endpoint_slices(r#"{"items":[{"endpoints":[{"addresses":["nope"]}]}]}"#).is_err());
    }
}
