//! Model routing: provider credentials (sealed; the secret never comes back), deployments behind
//! public names (weighted), fallback chains and default models for the silo, groups and users.

use opencrane_db::Error as DbError;
use opencrane_portal::seal;
use opencrane_silo_db::{
    groups,
    models::{self as model_db, DefinitionFields},
    tenants::{self, TenantFilter},
};
use serde_json::json;
use uuid::Uuid;

use super::{admin_read, admin_write, conflict, finish, not_found, sync_view};
use crate::model::rules::dns_label;
use crate::{
    error::{AppError, FieldErrors},
    model::silo::{
        CredentialRequest, CredentialView, DefaultRequest, DefaultView, DeploymentRequest, DeploymentView,
        FallbackRequest, ModelsOverview, PROVIDERS,
    },
    service::{OrFail as _, db_failure, internal},
    state::{AppState, Caller},
};

fn credential_view(r: model_db::CredentialRow) -> CredentialView {
    CredentialView {
        id: r.id.to_string(),
        name: r.name,
        provider: r.provider,
        api_base: r.api_base,
        hint: r.hint,
        used_by: r.used_by,
        updated_at: r.updated_at,
        secret_ref: r.secret_ref,
        secret_status: r.secret_status,
        secret_checked_at: r.secret_checked_at,
    }
}

fn public_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 80
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._:/".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A provider key as pasted: at least 8 characters, no white space.
fn api_key_ok(key: &str) -> bool {
    key.len() >= 8 && !key.contains(char::is_whitespace)
}

/// `name` or `name/key`: a Secret name (a DNS subdomain) and an optional data key.
fn secret_ref_ok(reference: &str) -> bool {
    let (name, key) = reference.split_once('/').map_or((reference, None), |(n, k)| (n, Some(k)));
    let name_ok = (1..=253).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let key_ok = key.is_none_or(|k| {
        (1..=253).contains(&k.len()) && k.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    });
    name_ok && key_ok
}

/// Where a new or rotated credential's key is to be: pasted (sealed here) or in a Secret.
enum NewKey {
    Pasted(String),
    Secret(String),
}

/// Reads `apiKey` or `secretRef` (exactly one) from `req`; what is wrong goes into `errors` (the
/// answer is then not to be used).
fn new_key(req: &CredentialRequest, errors: &mut FieldErrors) -> NewKey {
    let key = req.api_key.trim().to_owned();
    let reference = req.secret_ref.as_deref().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned);
    match (key.is_empty(), reference) {
        (false, Some(_)) => {
            errors.add("secretRef", "Give either the key (apiKey) or the Secret holding it (secretRef), not both.");
            NewKey::Pasted(key)
        }
        (true, Some(r)) if secret_ref_ok(&r) => NewKey::Secret(r),
        (true, Some(_)) => {
            errors.add(
                "secretRef",
                "A Secret of this silo's namespace: name or name/key (a lowercase name; a key of letters, digits, -, _ or .).",
            );
            NewKey::Secret(String::new())
        }
        (_, None) if api_key_ok(&key) => NewKey::Pasted(key),
        (_, None) => {
            errors.add(
                "apiKey",
                "Paste the provider's API key (at least 8 characters, no spaces), or name the Secret holding it (secretRef).",
            );
            NewKey::Pasted(key)
        }
    }
}

/// Runs `write` with where the key is to be: sealed under the credential's `name`, or the Secret.
async fn with_source<T>(
    silo: &crate::state::SiloSettings,
    caller: &Caller,
    name: &str,
    key: &NewKey,
    write: impl AsyncFnOnce(&model_db::KeySource<'_>) -> Result<T, AppError>,
) -> Result<T, AppError> {
    match key {
        NewKey::Secret(reference) => write(&model_db::KeySource::SecretRef(reference)).await,
        NewKey::Pasted(key) => {
            let secrets = silo.portal.secrets.as_ref().ok_or_else(secrets_missing)?;
            let sealed =
                secrets.seal(key.as_bytes(), &format!("credential:{name}")).map_err(|e| internal(caller, &e))?;
            write(&model_db::KeySource::Sealed(&sealed, &seal::hint(key))).await
        }
    }
}

fn api_base_ok(base: &str) -> bool {
    (base.starts_with("https://") || base.starts_with("http://"))
        && base.len() > 8
        && !base.contains(char::is_whitespace)
}

/// Every provider credential (never a secret).
pub async fn list_credentials(state: &AppState, caller: &Caller) -> Result<Vec<CredentialView>, AppError> {
    admin_read(state, caller)?;
    Ok(model_db::credentials(&state.pool).await.or_fail(caller)?.into_iter().map(credential_view).collect())
}

/// Every deployment with its share of its public name's traffic.
pub async fn list_deployments(state: &AppState, caller: &Caller) -> Result<Vec<DeploymentView>, AppError> {
    admin_read(state, caller)?;
    let rows = model_db::definitions(&state.pool).await.or_fail(caller)?;
    Ok(rows
        .iter()
        .map(|d| {
            let total: i64 = rows.iter().filter(|o| o.public_name == d.public_name).map(|o| i64::from(o.weight)).sum();
            DeploymentView {
                id: d.id.to_string(),
                public_name: d.public_name.clone(),
                upstream_model: d.upstream_model.clone(),
                api_base: d.api_base.clone(),
                credential: d.credential_name.clone(),
                weight: d.weight,
                share_percent: u32::try_from((i64::from(d.weight) * 100).checked_div(total).unwrap_or(0)).unwrap_or(0),
            }
        })
        .collect())
}

/// Default models and fallback chains.
pub async fn list_routing(
    state: &AppState,
    caller: &Caller,
) -> Result<(Vec<DefaultView>, Vec<(String, Vec<String>)>), AppError> {
    admin_read(state, caller)?;
    let db = |e| db_failure(caller, e);
    let defaults = model_db::defaults(&state.pool)
        .await
        .map_err(db)?
        .into_iter()
        .map(|d| DefaultView {
            id: d.id.to_string(),
            target: match d.scope.as_str() {
                "silo" => "the whole silo".into(),
                "group" => format!("group “{}”", d.group_name.unwrap_or_default()),
                _ => format!("user {}", d.tenant.unwrap_or_default()),
            },
            scope: d.scope,
            model: d.model,
        })
        .collect();
    Ok((defaults, model_db::fallbacks(&state.pool).await.map_err(db)?))
}

/// The models page.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<ModelsOverview, AppError> {
    let silo = admin_read(state, caller)?;
    let db = |e| db_failure(caller, e);
    let deployments = list_deployments(state, caller).await?;
    let mut public_names: Vec<String> = deployments.iter().map(|d| d.public_name.clone()).collect();
    public_names.dedup();
    let (defaults, fallbacks) = list_routing(state, caller).await?;
    Ok(ModelsOverview {
        credentials: list_credentials(state, caller).await?,
        deployments,
        fallbacks,
        defaults,
        public_names,
        users: tenants::list(&state.pool, &TenantFilter::default())
            .await
            .map_err(db)?
            .into_iter()
            .map(|t| t.name)
            .collect(),
        groups: groups::names(&state.pool).await.map_err(db)?.into_iter().map(|g| (g.id.to_string(), g.name)).collect(),
        credentials_enabled: silo.portal.secrets.is_some(),
        enforcement: sync_view(state, caller).await?,
    })
}

fn secrets_missing() -> AppError {
    AppError::Unprocessable {
        code: "CREDENTIALS_KEY_MISSING".into(),
        message: "Provider keys cannot be stored: this silo has no credentials key (OPENCRANE_CREDENTIALS_KEY).".into(),
        field: Some("apiKey".into()),
    }
}

fn credential_not_found(id: &str) -> AppError {
    not_found("CREDENTIAL_NOT_FOUND", format!("No credential with id “{id}” exists in this silo."))
}

/// Stores a provider credential: its key sealed, or a reference to the Secret holding it.
pub async fn add_credential(
    state: &AppState,
    caller: &Caller,
    req: CredentialRequest,
) -> Result<CredentialView, AppError> {
    let provider = req.provider.trim().to_owned();
    // The original's clients send no name: a credential is named after its provider then.
    let name = Some(req.name.trim()).filter(|n| !n.is_empty()).unwrap_or(&provider).to_owned();
    let silo = admin_write(state, caller, "credential.create", &name).await?;
    let mut errors = FieldErrors::new();
    errors.check("name", dns_label("Name", &name));
    if !PROVIDERS.contains(&provider.as_str()) {
        errors.add("provider", format!("Choose one of {}.", PROVIDERS.join(", ")));
    }
    let key = new_key(&req, &mut errors);
    let base = req.api_base.as_deref().map(str::trim).filter(|b| !b.is_empty()).map(str::to_owned);
    if base.as_deref().is_some_and(|b| !api_base_ok(b)) {
        errors.add("apiBase", "An http(s):// URL, or empty for the provider's default.");
    }
    if provider == "openai-compatible" && base.is_none() {
        errors.add("apiBase", "An OpenAI-compatible provider needs its URL.");
    }
    let key = errors.into_result(key).map_err(|fields| AppError::Validation { fields })?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let id = with_source(silo, caller, &name, &key, async |source| {
        model_db::insert_credential(&mut *tx, &name, &provider, base.as_deref(), source).await.map_err(|e| match e {
            DbError::UniqueViolation { .. } => {
                conflict("CREDENTIAL_EXISTS", "name", "A credential with this name exists.".into())
            }
            other => db_failure(caller, other),
        })
    })
    .await?;
    // Metadata only: the key never reaches the log.
    let reference = match &key {
        NewKey::Secret(r) => Some(r.as_str()),
        NewKey::Pasted(_) => None,
    };
    let meta = json!({ "id": id, "provider": provider, "secretRef": reference });
    finish(tx, silo, caller, "credential.create", &name, meta).await?;
    credential(state, caller, id).await
}

async fn credential(state: &AppState, caller: &Caller, id: Uuid) -> Result<CredentialView, AppError> {
    model_db::credentials(&state.pool)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|c| c.id == id)
        .map(credential_view)
        .ok_or_else(|| credential_not_found(&id.to_string()))
}

/// Replaces a credential's key (rotation), or moves it between a sealed key and a Secret
/// reference; deployments using it switch on the next pass.
pub async fn rotate_credential(
    state: &AppState,
    caller: &Caller,
    id: &str,
    req: CredentialRequest,
) -> Result<CredentialView, AppError> {
    let silo = admin_write(state, caller, "credential.rotate", id).await?;
    let uuid = Uuid::parse_str(id.trim()).map_err(|_| credential_not_found(id))?;
    let mut errors = FieldErrors::new();
    let key = new_key(&req, &mut errors);
    let key = errors.into_result(key).map_err(|fields| AppError::Validation { fields })?;
    let current = credential(state, caller, uuid).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let found = with_source(silo, caller, &current.name, &key, async |source| {
        model_db::rotate_credential(&mut *tx, uuid, source).await.or_fail(caller)
    })
    .await?;
    if !found {
        return Err(credential_not_found(id));
    }
    finish(tx, silo, caller, "credential.rotate", &current.name, json!({ "id": uuid })).await?;
    credential(state, caller, uuid).await
}

/// Deletes a credential no deployment uses.
pub async fn delete_credential(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "credential.delete", id).await?;
    let uuid = Uuid::parse_str(id.trim()).map_err(|_| credential_not_found(id))?;
    let current = credential(state, caller, uuid).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    model_db::delete_credential(&mut *tx, uuid).await.map_err(|e| match e {
        DbError::ForeignKeyViolation { .. } => AppError::Conflict {
            code: "CREDENTIAL_IN_USE".into(),
            message: format!(
                "{} deployment(s) use “{}”; remove them or move them to another credential first.",
                current.used_by, current.name
            ),
            field: None,
        },
        other => db_failure(caller, other),
    })?;
    finish(tx, silo, caller, "credential.delete", &current.name, json!({ "id": uuid })).await?;
    Ok(())
}

/// A deployment request, checked.
struct ValidDeployment {
    public: String,
    upstream: String,
    base: Option<String>,
    credential_id: Option<Uuid>,
    weight: i32,
}

impl ValidDeployment {
    fn fields(&self) -> DefinitionFields<'_> {
        DefinitionFields {
            public_name: &self.public,
            upstream_model: &self.upstream,
            api_base: self.base.as_deref(),
            credential_id: self.credential_id,
            weight: self.weight,
        }
    }
}

async fn validate_deployment(
    state: &AppState,
    caller: &Caller,
    req: &DeploymentRequest,
) -> Result<ValidDeployment, AppError> {
    let public = req.public_name.trim().to_owned();
    let mut errors = FieldErrors::new();
    if !public_name_ok(&public) {
        errors.add("publicName", "Use lowercase letters, digits and - . _ : / (starting and ending with a letter or digit), up to 80 characters.");
    }
    let upstream = req.upstream_model.trim().to_owned();
    if upstream.is_empty() || upstream.len() > 200 || upstream.contains(char::is_whitespace) {
        errors.add("upstreamModel", "Name the provider's model, e.g. openai/gpt-4o-mini.");
    }
    let base = req.api_base.as_deref().map(str::trim).filter(|b| !b.is_empty()).map(str::to_owned);
    if base.as_deref().is_some_and(|b| !api_base_ok(b)) {
        errors.add("apiBase", "An http(s):// URL, or empty.");
    }
    let weight = req.weight.unwrap_or(1);
    if !(1..=1000).contains(&weight) {
        errors.add("weight", "A whole number from 1 to 1000: its share of this name's traffic.");
    }
    let credential_id = match req.credential.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => {
            let all = model_db::credentials(&state.pool).await.or_fail(caller)?;
            match all.iter().find(|x| x.id.to_string() == c || x.name == c) {
                Some(x) => Some(x.id),
                None => {
                    errors.add("credential", format!("No credential named “{c}”."));
                    None
                }
            }
        }
    };
    errors
        .into_result(ValidDeployment { public, upstream, base, credential_id, weight })
        .map_err(|fields| AppError::Validation { fields })
}

fn deployment_clash(caller: &Caller, e: DbError) -> AppError {
    match e {
        DbError::UniqueViolation { .. } => conflict(
            "MODEL_EXISTS",
            "upstreamModel",
            "This public name already has a deployment of this upstream model.".into(),
        ),
        other => db_failure(caller, other),
    }
}

/// One deployment.
pub async fn get_deployment(state: &AppState, caller: &Caller, id: &str) -> Result<DeploymentView, AppError> {
    list_deployments(state, caller).await?.into_iter().find(|d| d.id == id.trim()).ok_or_else(|| model_not_found(id))
}

/// Adds a deployment behind a public name.
pub async fn add_deployment(
    state: &AppState,
    caller: &Caller,
    req: DeploymentRequest,
) -> Result<DeploymentView, AppError> {
    let silo = admin_write(state, caller, "model.create", req.public_name.trim()).await?;
    let v = validate_deployment(state, caller, &req).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let id = model_db::insert_definition(&mut *tx, &v.fields()).await.map_err(|e| deployment_clash(caller, e))?;
    let meta = json!({ "id": id, "upstreamModel": v.upstream, "weight": v.weight });
    finish(tx, silo, caller, "model.create", &v.public, meta).await?;
    get_deployment(state, caller, &id.to_string()).await
}

/// Changes a deployment (its public name, upstream model, API base, credential or weight).
pub async fn update_deployment(
    state: &AppState,
    caller: &Caller,
    id: &str,
    req: DeploymentRequest,
) -> Result<DeploymentView, AppError> {
    let silo = admin_write(state, caller, "model.update", id).await?;
    let uuid = Uuid::parse_str(id.trim()).map_err(|_| model_not_found(id))?;
    let before = get_deployment(state, caller, id).await?;
    let v = validate_deployment(state, caller, &req).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let found =
        model_db::update_definition(&mut *tx, uuid, &v.fields()).await.map_err(|e| deployment_clash(caller, e))?;
    if !found {
        return Err(model_not_found(id));
    }
    let before = json!({
        "publicName": before.public_name, "upstreamModel": before.upstream_model, "apiBase": before.api_base,
        "credential": before.credential, "weight": before.weight,
    });
    let meta = json!({ "id": uuid, "upstreamModel": v.upstream, "weight": v.weight, "before": before });
    finish(tx, silo, caller, "model.update", &v.public, meta).await?;
    get_deployment(state, caller, id).await
}

fn model_not_found(id: &str) -> AppError {
    not_found("MODEL_NOT_FOUND", format!("No deployment with id “{id}” exists in this silo."))
}

/// Removes a deployment.
pub async fn delete_deployment(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "model.delete", id).await?;
    let uuid = Uuid::parse_str(id.trim()).map_err(|_| model_not_found(id))?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = model_db::definitions(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|d| d.id == uuid)
        .ok_or_else(|| model_not_found(id))?;
    model_db::delete_definition(&mut *tx, uuid).await.or_fail(caller)?;
    let before = json!({
        "publicName": before.public_name, "upstreamModel": before.upstream_model, "apiBase": before.api_base,
        "credential": before.credential_name, "weight": before.weight,
    });
    finish(tx, silo, caller, "model.delete", id, json!({ "before": before })).await?;
    Ok(())
}

/// Sets the fallback chain of a public name.
pub async fn set_fallbacks(
    state: &AppState,
    caller: &Caller,
    req: FallbackRequest,
) -> Result<Vec<(String, Vec<String>)>, AppError> {
    let public = req.public_name.trim().to_owned();
    let silo = admin_write(state, caller, "model.fallbacks", &public).await?;
    let names: Vec<String> =
        model_db::definitions(&state.pool).await.or_fail(caller)?.into_iter().map(|d| d.public_name).collect();
    let mut errors = FieldErrors::new();
    if !names.contains(&public) {
        errors.add("publicName", format!("No model named “{public}” is defined."));
    }
    let chain: Vec<String> = req.chain.iter().map(|c| c.trim().to_owned()).filter(|c| !c.is_empty()).collect();
    if chain.len() > 10 {
        errors.add("chain", "At most 10 fallbacks.");
    }
    for (i, c) in chain.iter().enumerate() {
        if *c == public {
            errors.add("chain", "A model cannot fall back to itself.");
        } else if !names.contains(c) {
            errors.add("chain", format!("No model named “{c}” is defined."));
        } else if chain[..i].contains(c) {
            errors.add("chain", format!("“{c}” appears twice."));
        }
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = model_db::fallbacks(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find_map(|(name, chain)| (name == public).then_some(chain))
        .unwrap_or_default();
    model_db::set_fallbacks(&mut tx, &public, &chain).await.or_fail(caller)?;
    finish(tx, silo, caller, "model.fallbacks", &public, json!({ "chain": chain, "before": { "chain": before } }))
        .await?;
    model_db::fallbacks(&state.pool).await.or_fail(caller)
}

/// Sets the default model of the silo, a group or a user.
pub async fn set_default(state: &AppState, caller: &Caller, req: DefaultRequest) -> Result<DefaultView, AppError> {
    let silo = admin_write(state, caller, "model.default", req.scope.trim()).await?;
    let mut errors = FieldErrors::new();
    let scope = req.scope.trim();
    let target = req.target.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let (mut group, mut tenant) = (None, None);
    match scope {
        "silo" => {}
        "group" => {
            let all = groups::names(&state.pool).await.or_fail(caller)?;
            match target.and_then(|t| all.iter().find(|g| g.id.to_string() == t || g.name == t)) {
                Some(g) => group = Some((g.id, g.name.clone())),
                None => errors.add("target", "Choose a group."),
            }
        }
        "user" => match target {
            Some(t) if tenants::get(&state.pool, t).await.or_fail(caller)?.is_some() => tenant = Some(t.to_owned()),
            _ => errors.add("target", "Choose a user."),
        },
        _ => errors.add("scope", "Choose silo, group or user."),
    }
    let model = req.model.trim().to_owned();
    let names: Vec<String> =
        model_db::definitions(&state.pool).await.or_fail(caller)?.into_iter().map(|d| d.public_name).collect();
    if !names.contains(&model) {
        errors.add(
            "model",
            if model.is_empty() {
                "Choose a model.".to_owned()
            } else {
                format!("No model named “{model}” is defined.")
            },
        );
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = model_db::defaults(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|d| d.scope == scope && d.group_id == group.as_ref().map(|g| g.0) && d.tenant == tenant)
        .map(|d| json!({ "model": d.model }));
    let id = model_db::put_default(&mut tx, scope, group.as_ref().map(|g| g.0), tenant.as_deref(), &model)
        .await
        .or_fail(caller)?;
    let target_label = match (scope, &group, &tenant) {
        ("group", Some((_, name)), _) => format!("group “{name}”"),
        ("user", _, Some(t)) => format!("user {t}"),
        _ => "the whole silo".into(),
    };
    let meta = json!({ "model": model, "scope": scope, "before": before });
    finish(tx, silo, caller, "model.default", &target_label, meta).await?;
    Ok(DefaultView { id: id.to_string(), scope: scope.to_owned(), target: target_label, model })
}

/// Removes a default.
pub async fn delete_default(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "model.default.delete", id).await?;
    let missing = || not_found("DEFAULT_NOT_FOUND", format!("No default with id “{id}” exists in this silo."));
    let uuid = Uuid::parse_str(id.trim()).map_err(|_| missing())?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before =
        model_db::defaults(&mut *tx).await.or_fail(caller)?.into_iter().find(|d| d.id == uuid).ok_or_else(missing)?;
    model_db::delete_default(&mut *tx, uuid).await.or_fail(caller)?;
    let before =
        json!({ "scope": before.scope, "group": before.group_name, "user": before.tenant, "model": before.model });
    finish(tx, silo, caller, "model.default.delete", id, json!({ "before": before })).await?;
    Ok(())
}
