//! Bring your own key, the quick way (see [`crate::model::silo::byok`]): the key is sealed into the
//! provider's own credential and the provider's default models are defined behind it. It is built
//! from the same service calls as the models page (so each step is validated, authorised and
//! audited as there), and it never touches what an admin defined: a public name that already has a
//! deployment is kept as it is, and removal takes only the deployments it would have defined.

use crate::{
    error::AppError,
    model::silo::{
        ByokOutcome, ByokRequest, ByokStatus, CredentialRequest, DeploymentRequest,
        byok::{BYOK_PROVIDERS, catalogue, credential_name},
    },
    state::{AppState, Caller},
};

use super::models;

fn no_quick_setup(provider: &str) -> AppError {
    AppError::NotFound {
        code: "BYOK_PROVIDER_UNKNOWN".into(),
        message: format!(
            "“{provider}” has no quick set-up; choose one of {}, or add a credential and define its models on the models page.",
            BYOK_PROVIDERS.join(", ")
        ),
    }
}

/// Every provider's quick set-up as it is now.
pub async fn status(state: &AppState, caller: &Caller) -> Result<Vec<ByokStatus>, AppError> {
    let credentials = models::list_credentials(state, caller).await?;
    let deployments = models::list_deployments(state, caller).await?;
    Ok(BYOK_PROVIDERS
        .iter()
        .map(|&provider| {
            let name = credential_name(provider);
            let credential = credentials.iter().find(|c| c.name == name);
            let seeds = catalogue(provider).unwrap_or_default();
            let models = seeds
                .iter()
                .filter(|(public, upstream)| {
                    deployments.iter().any(|d| {
                        d.public_name == *public
                            && d.upstream_model == *upstream
                            && d.credential.as_deref() == Some(&name)
                    })
                })
                .map(|(public, _)| (*public).to_owned())
                .collect();
            ByokStatus {
                provider: provider.to_owned(),
                configured: credential.is_some(),
                hint: credential.map(|c| c.hint.clone()),
                models,
                catalogue: seeds.iter().map(|(public, _)| (*public).to_owned()).collect(),
            }
        })
        .collect())
}

/// Stores (or replaces) the provider's key and defines its default models where no deployment
/// has their public name yet.
pub async fn set(state: &AppState, caller: &Caller, provider: &str, req: ByokRequest) -> Result<ByokOutcome, AppError> {
    let seeds = catalogue(provider).ok_or_else(|| no_quick_setup(provider))?;
    let name = credential_name(provider);
    let existing = models::list_credentials(state, caller).await?.into_iter().find(|c| c.name == name);
    let key = CredentialRequest {
        name: name.clone(),
        provider: provider.to_owned(),
        api_key: req.api_key,
        ..Default::default()
    };
    match existing {
        Some(c) => models::rotate_credential(state, caller, &c.id, key).await?,
        None => models::add_credential(state, caller, key).await?,
    };
    let deployments = models::list_deployments(state, caller).await?;
    let (mut seeded, mut kept) = (Vec::new(), Vec::new());
    for (public, upstream) in seeds {
        if deployments.iter().any(|d| d.public_name == *public) {
            kept.push((*public).to_owned());
            continue;
        }
        let model = DeploymentRequest {
            public_name: (*public).to_owned(),
            upstream_model: (*upstream).to_owned(),
            api_base: None,
            credential: Some(name.clone()),
            weight: None,
        };
        models::add_deployment(state, caller, model).await?;
        seeded.push((*public).to_owned());
    }
    Ok(ByokOutcome {
        provider: provider.to_owned(),
        credential: name,
        seeded,
        kept,
        removed: Vec::new(),
        left: Vec::new(),
    })
}

/// Removes what the quick set-up defined — its deployments, then its credential unless an
/// admin's own deployments use it too (then it stays, and the answer says which).
pub async fn remove(state: &AppState, caller: &Caller, provider: &str) -> Result<ByokOutcome, AppError> {
    let seeds = catalogue(provider).ok_or_else(|| no_quick_setup(provider))?;
    let name = credential_name(provider);
    let Some(credential) = models::list_credentials(state, caller).await?.into_iter().find(|c| c.name == name) else {
        return Err(AppError::NotFound {
            code: "BYOK_NOT_CONFIGURED".into(),
            message: format!("No key is set up for {provider}."),
        });
    };
    let mut removed = Vec::new();
    let mut left = Vec::new();
    for d in models::list_deployments(state, caller).await? {
        if d.credential.as_deref() != Some(&name) {
            continue;
        }
        if seeds.iter().any(|(public, upstream)| d.public_name == *public && d.upstream_model == *upstream) {
            models::delete_deployment(state, caller, &d.id).await?;
            removed.push(d.public_name);
        } else {
            left.push(d.public_name);
        }
    }
    if left.is_empty() {
        models::delete_credential(state, caller, &credential.id).await?;
    }
    Ok(ByokOutcome {
        provider: provider.to_owned(),
        credential: name,
        seeded: Vec::new(),
        kept: Vec::new(),
        removed,
        left,
    })
}
