//! The thin I/O of the platform's issuer: observe (the ClusterIssuer, the solver Secret's
//! metadata), apply (server-side apply, the Secret before the issuer) and read back. Tested
//! against `opencrane-fake-kube`; the RBAC it needs is the fleet chart's `platform-dns` rules
//! (get/create/patch on the one ClusterIssuer and the `opencrane-dns01-*` Secrets).

use chrono::{DateTime, Utc};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use serde_json::Value;

use super::{Error, IssuerRequest, IssuerSettings, IssuerSummary, TOKEN_KEY, build, secret_name, summarise, validate};
use crate::build::FIELD_MANAGER;

/// The platform issuer on a cluster.
#[derive(Clone)]
pub struct PlatformDns {
    client: Client,
    settings: IssuerSettings,
}

impl std::fmt::Debug for PlatformDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformDns").field("settings", &self.settings).finish_non_exhaustive()
    }
}

fn sentence(what: &str, e: &kube::Error) -> Error {
    Error::Cluster(match e {
        kube::Error::Api(status) if status.code == 403 => format!(
            "{what}: the API server refused it (403 {}). The fleet chart grants this with certManager.createIssuer=fleet.",
            status.message
        ),
        kube::Error::Api(status) if status.code == 404 => format!(
            "{what}: the API server answered 404 ({}). Is cert-manager installed (its CRDs and the namespace)?",
            status.message
        ),
        kube::Error::Api(status) => format!("{what}: the API server answered {} ({})", status.code, status.message),
        other => format!("{what}: the Kubernetes API server could not be reached ({other})"),
    })
}

fn issuer_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cert-manager.io", "v1", "ClusterIssuer"),
        "clusterissuers",
    )
}

fn secret_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Secret"), "secrets")
}

impl PlatformDns {
    /// The issuer of `settings` on `client`.
    pub fn new(client: Client, settings: IssuerSettings) -> Self {
        Self { client, settings }
    }

    /// The settings.
    pub fn settings(&self) -> &IssuerSettings {
        &self.settings
    }

    fn issuers(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &issuer_resource())
    }

    fn secrets(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.settings.cert_manager_namespace, &secret_resource())
    }

    async fn read(api: &Api<DynamicObject>, name: &str, what: &str) -> Result<Option<Value>, Error> {
        match api.get_opt(name).await {
            Ok(object) => Ok(object.map(|o| serde_json::to_value(o).unwrap_or_default())),
            Err(e) => Err(sentence(what, &e)),
        }
    }

    /// The solver Secret of `provider` with its values blanked (only which keys it has).
    async fn secret_metadata(&self, provider: &str) -> Result<Option<Value>, Error> {
        let name = secret_name(provider);
        let mut secret = Self::read(&self.secrets(), &name, &format!("reading Secret {name}")).await?;
        if let Some(Value::Object(data)) = secret.as_mut().and_then(|s| s.get_mut("data")) {
            for value in data.values_mut() {
                *value = Value::Bool(true);
            }
        }
        Ok(secret)
    }

    /// The issuer as the cluster has it.
    pub async fn status(&self) -> Result<IssuerSummary, Error> {
        let name = &self.settings.issuer_name;
        let issuer = Self::read(&self.issuers(), name, &format!("reading ClusterIssuer {name}")).await?;
        let first = summarise(issuer.as_ref(), None, &self.settings);
        let Some(provider) = first.provider.clone() else { return Ok(first) };
        let secret = self.secret_metadata(&provider).await?;
        Ok(summarise(issuer.as_ref(), secret.as_ref(), &self.settings))
    }

    /// Validates `request`, writes the solver Secret (when a token is given) and the issuer, and
    /// answers the issuer as the cluster then has it.
    pub async fn configure(&self, request: &IssuerRequest, now: DateTime<Utc>) -> Result<IssuerSummary, Error> {
        let valid = validate(request, &self.settings)?;
        let name = &self.settings.issuer_name;
        if !self.settings.managed {
            return Err(Error::NotManaged(format!(
                "The fleet chart creates the issuer {name} (certManager.createIssuer); set certManager.createIssuer=fleet to configure it here."
            )));
        }
        let existing = Self::read(&self.issuers(), name, &format!("reading ClusterIssuer {name}")).await?;
        if existing
            .as_ref()
            .and_then(|i| i.pointer("/metadata/labels/app.kubernetes.io~1managed-by"))
            .and_then(Value::as_str)
            == Some("Helm")
        {
            return Err(Error::NotManaged(format!(
                "The ClusterIssuer {name} belongs to a Helm release; remove it from the chart (certManager.createIssuer=fleet) before configuring it here."
            )));
        }
        let on_file = !valid.has_token()
            && self
                .secret_metadata(valid.provider())
                .await?
                .is_some_and(|s| s.pointer(&format!("/data/{TOKEN_KEY}")).is_some());
        let plan = build(&valid, &self.settings, on_file, now)?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        if let Some(secret) = &plan.secret {
            let secret_name = secret_name(valid.provider());
            self.secrets()
                .patch(&secret_name, &params, &Patch::Apply(secret))
                .await
                .map_err(|e| sentence(&format!("writing Secret {secret_name}"), &e))?;
        }
        self.issuers()
            .patch(name, &params, &Patch::Apply(&plan.issuer))
            .await
            .map_err(|e| sentence(&format!("writing ClusterIssuer {name}"), &e))?;
        self.status().await
    }
}
