//! The OpenID Connect relying party: discovery, the authorization-code flow with PKCE (S256),
//! `state` and `nonce`, full ID-token validation (issuer, audience, expiry, nonce, signature and
//! algorithm, with one rate-limited JWKS refetch when a token names an unknown key), the UserInfo
//! merge, and the sign-in policy (verified email, allow-lists, operator rules).
//!
//! Everything provider-specific is configuration; the only network calls are to the issuer's
//! documented endpoints. Several clients share one provider: the fleet's, and on a silo the
//! organisation's public PKCE client beside the fallback client.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use openidconnect::{
    AccessTokenHash, AdditionalClaims, AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, StandardErrorResponse,
    StandardTokenResponse, TokenResponse, UserInfoClaims,
    core::{
        CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
        CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreResponseType, CoreRevocableToken,
        CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
    },
    url::Url,
};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, RwLock};

/// Claims beyond the standard ones, kept as JSON so the groups and roles claims can be read
/// whatever they are named.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ExtraClaims {
    /// Every claim, by name.
    #[serde(flatten)]
    pub claims: serde_json::Map<String, serde_json::Value>,
}

impl AdditionalClaims for ExtraClaims {}

type ProviderMetadata = openidconnect::ProviderMetadataWithLogout;
type TokenFields = IdTokenFields<
    ExtraClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
type Tokens = StandardTokenResponse<TokenFields, CoreTokenType>;
type OidcClient = openidconnect::Client<
    ExtraClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// One registered client of the provider.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client; `None` for a public PKCE client.
    pub client_secret: Option<String>,
    /// Scopes beyond `openid email profile` (e.g. Zitadel's org-restricting scope).
    pub extra_scopes: Vec<String>,
}

/// Who may sign in, and who is a platform operator.
#[derive(Clone, Debug, Default)]
pub struct SignInPolicy {
    /// Scopes always requested.
    pub scopes: Vec<String>,
    /// Claim holding groups.
    pub groups_claim: String,
    /// Claim holding roles (merged into groups).
    pub roles_claim: String,
    /// If non-empty, the email's domain must be one of these.
    pub allowed_email_domains: Vec<String>,
    /// If non-empty (and the domain did not match), the email must be one of these.
    pub allowed_emails: Vec<String>,
    /// Members of any of these groups are platform operators.
    pub operator_groups: Vec<String>,
    /// The person with this verified email is a platform operator.
    pub operator_seed_email: Option<String>,
}

/// A verified sign-in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifiedUser {
    /// IdP subject.
    pub subject: String,
    /// The issuer that vouched for it.
    pub issuer: String,
    /// Email, if any.
    pub email: Option<String>,
    /// Whether the provider verified the email.
    pub email_verified: Option<bool>,
    /// Display name.
    pub name: Option<String>,
    /// Groups ∪ roles.
    pub groups: Vec<String>,
    /// Derived from groups or the seed email.
    pub is_platform_operator: bool,
    /// The raw ID token, kept for `id_token_hint` at sign-out.
    pub id_token: String,
}

/// Why a sign-in failed. The browser only ever learns the [`LoginError::public`] sentence.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The provider could not be reached or answered nonsense.
    #[error("identity provider unavailable: {0}")]
    Provider(String),
    /// The token exchange failed (bad code, bad verifier, reused code…).
    #[error("code exchange failed: {0}")]
    Exchange(String),
    /// The ID token did not validate.
    #[error("ID token rejected: {0}")]
    IdToken(String),
    /// Policy refused the person.
    #[error("sign-in refused: {0}")]
    Refused(&'static str),
}

impl LoginError {
    /// What the person is told.
    pub fn public(&self) -> &'static str {
        match self {
            Self::Provider(_) => "The identity provider is not reachable. Try again in a moment.",
            Self::Exchange(_) | Self::IdToken(_) => "Sign-in could not be completed. Please try again.",
            Self::Refused(why) => why,
        }
    }
}

struct ProviderState {
    metadata: ProviderMetadata,
    jwks_fetched: Instant,
}

/// The identity provider, discovered lazily and cached (so the server starts when the provider
/// is briefly down, and a key rotation is picked up).
pub struct Provider {
    issuer: IssuerUrl,
    http: openidconnect::reqwest::Client,
    state: RwLock<Option<ProviderState>>,
    refresh: Mutex<()>,
    /// Minimum time between two JWKS refetches (rate limit against unknown-`kid` floods).
    jwks_refetch_interval: Duration,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("issuer", &self.issuer.as_str()).finish_non_exhaustive()
    }
}

impl Provider {
    /// A provider at `issuer` (not contacted until first use); an ID token naming an unknown key
    /// makes it refetch the JWKS at most once per `jwks_refetch_interval`.
    pub fn new(issuer: &str, jwks_refetch_interval: Duration) -> Result<Arc<Self>, String> {
        let issuer =
            IssuerUrl::new(issuer.trim_end_matches('/').to_owned()).map_err(|e| format!("OIDC_ISSUER_URL: {e}"))?;
        let http = openidconnect::reqwest::ClientBuilder::new()
            // Following redirects would open the door to SSRF.
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        Ok(Arc::new(Self { issuer, http, state: RwLock::new(None), refresh: Mutex::new(()), jwks_refetch_interval }))
    }

    /// The issuer URL.
    pub fn issuer(&self) -> &str {
        self.issuer.as_str()
    }

    async fn metadata(&self) -> Result<ProviderMetadata, LoginError> {
        if let Some(state) = self.state.read().await.as_ref() {
            return Ok(state.metadata.clone());
        }
        let _guard = self.refresh.lock().await;
        if let Some(state) = self.state.read().await.as_ref() {
            return Ok(state.metadata.clone());
        }
        let metadata = ProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|e| LoginError::Provider(format!("discovery: {e}")))?;
        *self.state.write().await = Some(ProviderState { metadata: metadata.clone(), jwks_fetched: Instant::now() });
        Ok(metadata)
    }

    /// Refetches the JWKS unless that happened less than `jwks_refetch_interval` ago; returns
    /// whether it did.
    async fn refresh_jwks(&self) -> bool {
        let _guard = self.refresh.lock().await;
        let Some(jwks_uri) = self.state.read().await.as_ref().and_then(|s| {
            (s.jwks_fetched.elapsed() >= self.jwks_refetch_interval).then(|| s.metadata.jwks_uri().clone())
        }) else {
            return false;
        };
        match openidconnect::JsonWebKeySet::fetch_async(&jwks_uri, &self.http).await {
            Ok(jwks) => {
                if let Some(state) = self.state.write().await.as_mut() {
                    state.metadata = state.metadata.clone().set_jwks(jwks);
                    state.jwks_fetched = Instant::now();
                }
                true
            }
            Err(err) => {
                tracing::warn!(error = %err, "JWKS refetch failed");
                false
            }
        }
    }

    fn client(metadata: ProviderMetadata, client: &ClientConfig, redirect: &str) -> Result<OidcClient, LoginError> {
        let redirect =
            RedirectUrl::new(redirect.to_owned()).map_err(|e| LoginError::Provider(format!("redirect URI: {e}")))?;
        Ok(OidcClient::from_provider_metadata(
            metadata,
            ClientId::new(client.client_id.clone()),
            client.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: the provider URL to send the browser to, and the transaction secrets
    /// (state, nonce, PKCE verifier) the callback needs.
    pub async fn begin(
        &self,
        client: &ClientConfig,
        redirect: &str,
        policy: &SignInPolicy,
    ) -> Result<(Url, LoginSecrets), LoginError> {
        let metadata = self.metadata().await?;
        let oidc = Self::client(metadata, client, redirect)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = oidc.authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in policy.scopes.iter().chain(&client.extra_scopes).filter(|s| s.as_str() != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok((
            url,
            LoginSecrets {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                verifier: verifier.secret().clone(),
            },
        ))
    }

    /// Finishes a sign-in: exchanges the code with the PKCE verifier, validates the ID token
    /// (refetching the JWKS once, rate-limited, if it names an unknown key), merges UserInfo and
    /// applies the policy.
    pub async fn finish(
        &self,
        client: &ClientConfig,
        redirect: &str,
        code: &str,
        secrets: &LoginSecrets,
        policy: &SignInPolicy,
    ) -> Result<VerifiedUser, LoginError> {
        let metadata = self.metadata().await?;
        let oidc = Self::client(metadata, client, redirect)?;
        let tokens = oidc
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| LoginError::Provider(format!("token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(secrets.verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| LoginError::Exchange(e.to_string()))?;
        let id_token = tokens.id_token().ok_or_else(|| LoginError::IdToken("no ID token in the response".into()))?;
        let nonce = Nonce::new(secrets.nonce.clone());
        let claims = match id_token.claims(&oidc.id_token_verifier(), &nonce) {
            Ok(claims) => claims.clone(),
            Err(openidconnect::ClaimsVerificationError::SignatureVerification(
                openidconnect::SignatureVerificationError::NoMatchingKey,
            )) if self.refresh_jwks().await => {
                let metadata = self.metadata().await?;
                let oidc = Self::client(metadata, client, redirect)?;
                id_token
                    .claims(&oidc.id_token_verifier(), &nonce)
                    .map_err(|e| LoginError::IdToken(e.to_string()))?
                    .clone()
            }
            Err(err) => return Err(LoginError::IdToken(err.to_string())),
        };
        // The access token must be the one the ID token was issued with.
        if let Some(expected) = claims.access_token_hash() {
            let verifier = oidc.id_token_verifier();
            let alg = id_token.signing_alg().map_err(|e| LoginError::IdToken(e.to_string()))?;
            let key = id_token.signing_key(&verifier).map_err(|e| LoginError::IdToken(e.to_string()))?;
            let actual = AccessTokenHash::from_token(tokens.access_token(), alg, key)
                .map_err(|e| LoginError::IdToken(e.to_string()))?;
            if actual != *expected {
                return Err(LoginError::IdToken("access token hash mismatch".into()));
            }
        }

        let mut user = VerifiedUser {
            subject: claims.subject().to_string(),
            issuer: claims.issuer().to_string(),
            email: claims.email().map(|e| e.to_string()),
            email_verified: claims.email_verified(),
            name: claims.name().and_then(|n| n.get(None)).map(|n| n.to_string()),
            groups: group_claims(&claims.additional_claims().claims, policy),
            is_platform_operator: false,
            id_token: id_token.to_string(),
        };
        if let Ok(request) = oidc.user_info(tokens.access_token().clone(), Some(claims.subject().clone())) {
            let info: Result<UserInfoClaims<ExtraClaims, CoreGenderClaim>, _> = request.request_async(&self.http).await;
            match info {
                Ok(info) => {
                    user.email = user.email.or_else(|| info.email().map(|e| e.to_string()));
                    user.email_verified = user.email_verified.or(info.email_verified());
                    user.name = user.name.or_else(|| info.name().and_then(|n| n.get(None)).map(|n| n.to_string()));
                    for group in group_claims(&info.additional_claims().claims, policy) {
                        if !user.groups.contains(&group) {
                            user.groups.push(group);
                        }
                    }
                }
                // UserInfo is an enrichment; a subject mismatch, however, is an attack.
                Err(openidconnect::UserInfoError::ClaimsVerification(e)) => {
                    return Err(LoginError::IdToken(format!("userinfo: {e}")));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "userinfo request failed; continuing with the ID token's claims")
                }
            }
        }
        apply_policy(&mut user, policy)?;
        Ok(user)
    }

    /// The RP-initiated logout URL, if the provider has one.
    pub async fn end_session_url(
        &self,
        id_token: &str,
        client_id: &str,
        post_logout_redirect: Option<&str>,
    ) -> Option<String> {
        let metadata = self.metadata().await.ok()?;
        let endpoint = metadata.additional_metadata().end_session_endpoint.clone()?;
        let mut url = endpoint.url().clone();
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("id_token_hint", id_token).append_pair("client_id", client_id);
            if let Some(redirect) = post_logout_redirect {
                query.append_pair("post_logout_redirect_uri", redirect);
            }
        }
        Some(url.to_string())
    }
}

/// The secrets of one sign-in, kept in the short-lived login cookie.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginSecrets {
    /// CSRF `state`.
    pub state: String,
    /// ID-token `nonce`.
    pub nonce: String,
    /// PKCE code verifier.
    pub verifier: String,
}

/// Groups from the configured groups and roles claims. A claim may be a list of strings, a
/// single string, or (Zitadel's project roles) an object whose keys are the role names.
pub fn group_claims(claims: &serde_json::Map<String, serde_json::Value>, policy: &SignInPolicy) -> Vec<String> {
    let mut groups = Vec::new();
    for name in [&policy.groups_claim, &policy.roles_claim] {
        match claims.get(name.as_str()) {
            Some(serde_json::Value::Array(items)) => {
                groups.extend(items.iter().filter_map(|v| v.as_str().map(str::to_owned)));
            }
            Some(serde_json::Value::String(s)) => groups.push(s.clone()),
            Some(serde_json::Value::Object(map)) => groups.extend(map.keys().cloned()),
            _ => {}
        }
    }
    groups.sort();
    groups.dedup();
    groups
}

/// Applies the sign-in policy: refuse unverified emails and, when there are allow-lists, any
/// address not verified or outside them;
/// decide whether the person is a platform operator (groups, or the verified seed email; nobody
/// when both are unset).
pub fn apply_policy(user: &mut VerifiedUser, policy: &SignInPolicy) -> Result<(), LoginError> {
    if user.email_verified == Some(false) {
        return Err(LoginError::Refused("Your email address is not verified with the identity provider."));
    }
    let email = user.email.as_deref().map(str::to_ascii_lowercase);
    if !policy.allowed_email_domains.is_empty() || !policy.allowed_emails.is_empty() {
        // An allow-list is only as good as the address: one the provider does not say it
        // verified (the claim absent) could be anybody's.
        let allowed = user.email_verified == Some(true)
            && email.as_deref().is_some_and(|email| {
                let domain = email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
                policy.allowed_email_domains.iter().any(|d| d.eq_ignore_ascii_case(domain))
                    || policy.allowed_emails.iter().any(|e| e.eq_ignore_ascii_case(email))
            });
        if !allowed {
            return Err(LoginError::Refused("Your account is not allowed to sign in here."));
        }
    }
    let by_group = user.groups.iter().any(|g| policy.operator_groups.contains(g));
    let by_seed = user.email_verified == Some(true)
        && policy
            .operator_seed_email
            .as_deref()
            .is_some_and(|seed| email.as_deref() == Some(&seed.to_ascii_lowercase()));
    user.is_platform_operator = by_group || by_seed;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(email: &str, verified: Option<bool>, groups: &[&str]) -> VerifiedUser {
        VerifiedUser {
            subject: "s".into(),
            issuer: "i".into(),
            email: Some(email.into()),
            email_verified: verified,
            name: None,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            is_platform_operator: false,
            id_token: String::new(),
        }
    }

    #[test]
    fn group_claims_accept_lists_strings_and_role_maps() {
        let policy = SignInPolicy { groups_claim: "groups".into(), roles_claim: "roles".into(), ..Default::default() };
        let claims = serde_json::json!({
            "groups": ["ops", "dev"],
            "roles": {"admin": {"123": "acme"}, "ops": {}},
            "other": ["ignored"]
        });
        assert_eq!(group_claims(claims.as_object().unwrap(), &policy), ["admin", "dev", "ops"]);
        let single = serde_json::json!({"groups": "ops"});
        assert_eq!(group_claims(single.as_object().unwrap(), &policy), ["ops"]);
    }

    #[test]
    fn operators_come_from_groups_or_the_verified_seed_email() {
        let policy = SignInPolicy {
            operator_groups: vec!["platform-ops".into()],
            operator_seed_email: Some("Root@Example.com".into()),
            ..Default::default()
        };
        let mut by_group = user("a@example.com", None, &["platform-ops"]);
        apply_policy(&mut by_group, &policy).unwrap();
        assert!(by_group.is_platform_operator);
        let mut seed = user("root@example.com", Some(true), &[]);
        apply_policy(&mut seed, &policy).unwrap();
        assert!(seed.is_platform_operator);
        let mut unverified_seed = user("root@example.com", None, &[]);
        apply_policy(&mut unverified_seed, &policy).unwrap();
        assert!(!unverified_seed.is_platform_operator, "the seed email must be verified");
        let mut nobody = user("root@example.com", Some(true), &["platform-ops"]);
        apply_policy(&mut nobody, &SignInPolicy::default()).unwrap();
        assert!(!nobody.is_platform_operator, "no rules configured: nobody is an operator");
    }

    #[test]
    fn unverified_and_disallowed_emails_are_refused() {
        let policy = SignInPolicy {
            allowed_email_domains: vec!["example.com".into()],
            allowed_emails: vec!["guest@partner.io".into()],
            ..Default::default()
        };
        assert!(apply_policy(&mut user("a@example.com", Some(false), &[]), &SignInPolicy::default()).is_err());
        assert!(apply_policy(&mut user("a@EXAMPLE.com", Some(true), &[]), &policy).is_ok());
        assert!(apply_policy(&mut user("guest@partner.io", Some(true), &[]), &policy).is_ok());
        assert!(apply_policy(&mut user("x@partner.io", Some(true), &[]), &policy).is_err());
        assert!(
            apply_policy(&mut user("a@example.com", None, &[]), &policy).is_err(),
            "an address not known to be verified does not pass an allow-list"
        );
        assert!(
            apply_policy(&mut user("a@example.com", None, &[]), &SignInPolicy::default()).is_ok(),
            "without one it may"
        );
        let mut no_email = user("", None, &[]);
        no_email.email = None;
        assert!(apply_policy(&mut no_email, &policy).is_err());
    }
}
