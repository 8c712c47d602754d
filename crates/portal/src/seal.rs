//! Secrets at rest: AES-256-GCM with a per-silo key, a random nonce per secret, and the row the
//! secret belongs to as associated data (so a ciphertext moved to another row does not open).
//! Each sealed value carries the version of the key that sealed it; a box opens only its own
//! version's values (see [`crate::credentials_key`] for how the version is known).

use base64::{Engine, engine::general_purpose::STANDARD};
use opencrane_silo_db::models::Sealed;
use ring::{
    aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey},
    rand::{SecureRandom, SystemRandom},
};

/// Why a secret could not be sealed or opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// The configured key is not 32 bytes of base64.
    #[error("OPENCRANE_CREDENTIALS_KEY must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)")]
    BadKey,
    /// The ciphertext does not open with this key and row (wrong key, or tampered).
    #[error("a stored secret does not open with the configured credentials key")]
    Corrupt,
    /// The value was sealed under another version of the credentials key.
    #[error("a stored secret was sealed under credentials key version {sealed}, but this key is version {key}")]
    OtherVersion {
        /// The value's version.
        sealed: i16,
        /// This box's version.
        key: i16,
    },
    /// No randomness.
    #[error("the system random source failed")]
    Random,
}

/// The silo's secret box: one version of the credentials key.
pub struct SecretBox {
    key: LessSafeKey,
    version: i16,
    fingerprint: String,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretBox").field("version", &self.version).finish_non_exhaustive()
    }
}

impl SecretBox {
    /// From 32 bytes of key material in base64.
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        let bytes = STANDARD.decode(text.trim()).map_err(|_| SealError::BadKey)?;
        Self::from_bytes(&bytes)
    }

    /// From 32 bytes of key material (version 1 until [`SecretBox::with_version`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SealError> {
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| SealError::BadKey)?;
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        let fingerprint = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self { key: LessSafeKey::new(key), version: 1, fingerprint })
    }

    /// The same key, known as `version` (what seals carry and opens require).
    #[must_use]
    pub fn with_version(mut self, version: i16) -> Self {
        self.version = version;
        self
    }

    /// The key's version.
    pub fn version(&self) -> i16 {
        self.version
    }

    /// SHA-256 of the key material, hex: recorded per version, never the key itself.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// 32 fresh random bytes in base64, for a new key.
    pub fn generate_base64() -> Result<String, SealError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new().fill(&mut bytes).map_err(|_| SealError::Random)?;
        Ok(STANDARD.encode(bytes))
    }

    /// Encrypts `plaintext` for the row named by `context`.
    pub fn seal(&self, plaintext: &[u8], context: &str) -> Result<Sealed, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| SealError::Random)?;
        let mut data = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(context.as_bytes()), &mut data)
            .map_err(|_| SealError::Corrupt)?;
        Ok(Sealed { nonce: nonce.to_vec(), ciphertext: data, key_version: self.version })
    }

    /// Decrypts a secret sealed for `context` under this box's version.
    pub fn open(&self, sealed: &Sealed, context: &str) -> Result<Vec<u8>, SealError> {
        if sealed.key_version != self.version {
            return Err(SealError::OtherVersion { sealed: sealed.key_version, key: self.version });
        }
        self.open_any_version(sealed, context)
    }

    /// Decrypts whatever version `sealed` says (the first check of a key against existing values).
    pub(crate) fn open_any_version(&self, sealed: &Sealed, context: &str) -> Result<Vec<u8>, SealError> {
        let nonce = Nonce::try_assume_unique_for_key(&sealed.nonce).map_err(|_| SealError::Corrupt)?;
        let mut data = sealed.ciphertext.clone();
        let plain =
            self.key.open_in_place(nonce, Aad::from(context.as_bytes()), &mut data).map_err(|_| SealError::Corrupt)?;
        Ok(plain.to_vec())
    }
}

/// The last four characters of a secret, to recognise it in lists.
pub fn hint(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(4)..].iter().collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_open_only_with_their_key_and_row() {
        let key = SecretBox::from_base64(&SecretBox::generate_base64().unwrap()).unwrap();
        let sealed = key.seal(b"sk-live-123", "credential:openai").unwrap();
        assert_ne!(sealed.ciphertext, b"sk-live-123");
        assert_eq!(key.open(&sealed, "credential:openai").unwrap(), b"sk-live-123");
        assert_eq!(key.open(&sealed, "credential:other"), Err(SealError::Corrupt));
        let other = SecretBox::from_bytes(&[7; 32]).unwrap();
        assert_eq!(other.open(&sealed, "credential:openai"), Err(SealError::Corrupt));
        let again = key.seal(b"sk-live-123", "credential:openai").unwrap();
        assert_ne!(again.nonce, sealed.nonce, "a fresh nonce each time");
        // The version travels with the value; another version of the box refuses it by name.
        assert_eq!(sealed.key_version, 1);
        let v2 = SecretBox::from_bytes(&[7; 32]).unwrap().with_version(2);
        let newer = v2.seal(b"x", "c").unwrap();
        assert_eq!(newer.key_version, 2);
        assert_eq!(key.open(&newer, "c"), Err(SealError::OtherVersion { sealed: 2, key: 1 }));
        assert_eq!(v2.fingerprint(), SecretBox::from_bytes(&[7; 32]).unwrap().fingerprint());
        assert_ne!(v2.fingerprint(), key.fingerprint());
        assert_eq!(v2.fingerprint().len(), 64);
    }

    #[test]
    fn bad_keys_are_refused_and_hints_show_four_characters() {
        assert_eq!(SecretBox::from_base64("c2hvcnQ=").unwrap_err(), SealError::BadKey);
        assert_eq!(SecretBox::from_base64("not base64!").unwrap_err(), SealError::BadKey);
        assert_eq!(hint("sk-abcdef1234"), "…1234");
        assert_eq!(hint("ab"), "…ab");
    }
}
