//! Which credentials key this silo's secrets are sealed under, checked before a manager serves:
//! a manager given another key (a regenerated Secret, a restore from the wrong backup) refuses to
//! start with the Secret named, instead of failing to open every provider key or sealing new ones
//! that no other replica can open. And `rotate`, which re-seals every value under a new key in one
//! transaction (what `opencrane rotate-credentials-key` runs).

use opencrane_db::PgPool;
use opencrane_silo_db::credentials_keys::{self, KeyVersion};

use crate::seal::{SealError, SecretBox};

/// Why a key was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key's fingerprint is not the recorded one.
    #[error(
        "the credentials key from {source_name} is not the key that sealed this silo's secrets \
         (version {version}, fingerprint {recorded}…; this key's is {given}…). Restore the original \
         key into {source_name}, or, holding both keys, re-seal with `opencrane rotate-credentials-key`. \
         Nothing was changed."
    )]
    Mismatch {
        /// Where the key came from, for the message (e.g. `Secret opencrane-silo-credentials`).
        source_name: String,
        /// The recorded version.
        version: i16,
        /// The first 12 hex digits of the recorded fingerprint.
        recorded: String,
        /// The first 12 hex digits of the given key's fingerprint.
        given: String,
    },
    /// No fingerprint recorded yet, and the stored secrets do not open with this key.
    #[error(
        "the credentials key from {source_name} does not open this silo's {count} stored secret(s). \
         Restore the key they were sealed with into {source_name}. Nothing was changed."
    )]
    DoesNotOpen {
        /// Where the key came from.
        source_name: String,
        /// How many sealed values there are.
        count: usize,
    },
    /// A value sealed under another version than the recorded one (a rotation cut short).
    #[error("{count} stored secret(s) are sealed under credentials key version {found}, not the current {current}")]
    Mixed {
        /// How many.
        count: usize,
        /// Their version.
        found: i16,
        /// The recorded one.
        current: i16,
    },
    /// Another rotation finished while this one started.
    #[error("another rotation changed the credentials key meanwhile; nothing was changed, run it again")]
    Concurrent,
    /// Rotation to the key already in use.
    #[error("the new credentials key is the current one")]
    SameKey,
    /// The database.
    #[error(transparent)]
    Database(#[from] opencrane_db::Error),
    /// Sealing.
    #[error(transparent)]
    Seal(#[from] SealError),
}

fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(12).collect()
}

/// Checks `key` against what the database recorded, and answers it with its version. The first
/// start with sealed values but no record (a silo sealed before fingerprints existed) records the
/// key only if it opens every one of them; an empty silo records it as version 1.
pub async fn verify(pool: &PgPool, key: SecretBox, source_name: &str) -> Result<SecretBox, KeyError> {
    let mut tx = pool.begin().await.map_err(opencrane_db::Error::from)?;
    credentials_keys::lock(&mut *tx).await?;
    let key = match credentials_keys::current(&mut *tx).await? {
        Some(KeyVersion { version, fingerprint }) => {
            if fingerprint != key.fingerprint() {
                return Err(KeyError::Mismatch {
                    source_name: source_name.to_owned(),
                    version,
                    recorded: short(&fingerprint),
                    given: short(key.fingerprint()),
                });
            }
            key.with_version(version)
        }
        None => {
            let values = credentials_keys::sealed_values(&mut *tx).await?;
            let opens = values.iter().all(|(owner, sealed)| key.open_any_version(sealed, &owner.context()).is_ok());
            if !opens {
                return Err(KeyError::DoesNotOpen { source_name: source_name.to_owned(), count: values.len() });
            }
            credentials_keys::record(&mut *tx, 1, key.fingerprint()).await?;
            key.with_version(1)
        }
    };
    let stale: Vec<i16> = credentials_keys::sealed_values(&mut *tx)
        .await?
        .into_iter()
        .map(|(_, sealed)| sealed.key_version)
        .filter(|v| *v != key.version())
        .collect();
    if let Some(found) = stale.first() {
        return Err(KeyError::Mixed { count: stale.len(), found: *found, current: key.version() });
    }
    tx.commit().await.map_err(opencrane_db::Error::from)?;
    Ok(key)
}

/// What a rotation did.
#[derive(Debug, PartialEq, Eq)]
pub struct Rotated {
    /// The new key's version.
    pub version: i16,
    /// How many values were re-sealed.
    pub resealed: usize,
}

/// Re-seals every value from `old` (which must be the recorded key) to `new`, as the next
/// version, in one transaction that blocks writes to the sealed tables while it runs: all or
/// nothing.
pub async fn rotate(pool: &PgPool, old: SecretBox, new: SecretBox, source_name: &str) -> Result<Rotated, KeyError> {
    if old.fingerprint() == new.fingerprint() {
        return Err(KeyError::SameKey);
    }
    let old = verify(pool, old, source_name).await?;
    let version = old.version().checked_add(1).ok_or(SealError::BadKey)?;
    let new = new.with_version(version);
    let mut tx = pool.begin().await.map_err(opencrane_db::Error::from)?;
    credentials_keys::lock(&mut *tx).await?;
    credentials_keys::lock_sealed_tables(&mut *tx).await?;
    // Checked again under the lock: another rotation may have run since `verify`.
    if credentials_keys::current(&mut *tx).await?.map(|k| k.version) != Some(old.version()) {
        return Err(KeyError::Concurrent);
    }
    let values = credentials_keys::sealed_values(&mut *tx).await?;
    for (owner, sealed) in &values {
        let context = owner.context();
        let plain = old.open(sealed, &context)?;
        credentials_keys::reseal(&mut *tx, owner, &new.seal(&plain, &context)?).await?;
    }
    credentials_keys::record(&mut *tx, version, new.fingerprint()).await?;
    tx.commit().await.map_err(opencrane_db::Error::from)?;
    Ok(Rotated { version, resealed: values.len() })
}
