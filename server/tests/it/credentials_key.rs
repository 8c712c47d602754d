//! The silo's credentials key: a manager started with another key than the one that sealed its
//! secrets refuses to start and names the Secret; `opencrane rotate-credentials-key` re-seals every
//! value under a new version, all or nothing.

use std::io::Write as _;

use opencrane::cli::PortalArgs;
use opencrane_portal::seal::SecretBox;
use opencrane_silo_db::models::{self, KeySource};
use sqlx::PgPool;

use crate::support;

const KEY_A: [u8; 32] = [11; 32];
const KEY_B: [u8; 32] = [22; 32];

fn base64(key: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(key)
}

fn args(key: &[u8]) -> PortalArgs {
    PortalArgs {
        credentials_key: Some(base64(key)),
        credentials_key_secret: Some("opencrane-silo-credentials".into()),
        ..PortalArgs::default()
    }
}

async fn start(pool: &PgPool, key: &[u8]) -> anyhow::Result<app::state::PortalRuntime> {
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    opencrane::silo::start_portal("acme", pool, &args(key), None, stopped).await
}

async fn seal_credential(pool: &PgPool, key: &SecretBox, name: &str, secret: &str) {
    let sealed = key.seal(secret.as_bytes(), &format!("credential:{name}")).unwrap();
    models::insert_credential(pool, name, "openai", None, &KeySource::Sealed(&sealed, "…")).await.unwrap();
}

async fn opened(pool: &PgPool, key: &SecretBox, name: &str) -> Result<String, String> {
    let credential = models::credentials(pool).await.unwrap().into_iter().find(|c| c.name == name).unwrap();
    let sealed = models::credential_secret(pool, credential.id).await.unwrap().unwrap();
    key.open(&sealed, &format!("credential:{name}")).map(|b| String::from_utf8(b).unwrap()).map_err(|e| e.to_string())
}

/// A key in a file of its own (removed when dropped).
struct KeyFile(std::path::PathBuf);

impl KeyFile {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn key_file(key: &[u8]) -> KeyFile {
    let path = std::env::temp_dir().join(format!("opencrane-key-{}", uuid::Uuid::new_v4()));
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "{}", base64(key)).unwrap();
    KeyFile(path)
}

fn rotate(pool_url: &str, old: &[u8], new: &[u8]) -> std::process::Output {
    let (old, new) = (key_file(old), key_file(new));
    std::process::Command::new(env!("CARGO_BIN_EXE_opencrane"))
        .arg("rotate-credentials-key")
        .env("DATABASE_URL", pool_url)
        .env("OPENCRANE_CREDENTIALS_KEY_FILE", old.path())
        .env("OPENCRANE_NEW_CREDENTIALS_KEY_FILE", new.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap()
}

fn url_of(pool: &PgPool) -> String {
    let options = pool.connect_options();
    let base = std::env::var("DATABASE_URL").unwrap();
    let (prefix, _) = base.rsplit_once('/').unwrap();
    format!("{prefix}/{}", options.get_database().unwrap())
}

#[sqlx::test(migrations = false)]
async fn a_silo_refuses_a_credentials_key_that_did_not_seal_its_secrets(pool: PgPool) {
    let silo = support::silo_db(&pool).await;
    let a = SecretBox::from_bytes(&KEY_A).unwrap();

    // A silo sealed before fingerprints existed: only the key that opens its secrets is recorded.
    seal_credential(&silo, &a, "openai-main", "sk-live-1").await;
    let refused = start(&silo, &KEY_B).await.unwrap_err().to_string();
    assert!(refused.contains("does not open this silo's 1 stored secret"), "{refused}");
    assert!(refused.contains("Secret opencrane-silo-credentials"), "the message names the Secret: {refused}");
    assert!(!refused.contains(&base64(&KEY_B)) && !refused.contains(&base64(&KEY_A)), "no key in the message");
    assert!(opencrane_silo_db::credentials_keys::current(&silo).await.unwrap().is_none(), "nothing recorded");
    let runtime = start(&silo, &KEY_A).await.unwrap();
    assert_eq!(runtime.secrets.unwrap().version(), 1);
    let recorded = opencrane_silo_db::credentials_keys::current(&silo).await.unwrap().unwrap();
    assert_eq!((recorded.version, recorded.fingerprint.as_str()), (1, a.fingerprint()));

    // From now on another key is refused by fingerprint, even before anything is sealed with it.
    let refused = start(&silo, &KEY_B).await.unwrap_err().to_string();
    assert!(refused.contains("is not the key that sealed this silo's secrets"), "{refused}");
    assert!(refused.contains("Secret opencrane-silo-credentials") && refused.contains("rotate-credentials-key"));
    assert_eq!(opened(&silo, &a, "openai-main").await.unwrap(), "sk-live-1", "nothing was changed");

    // Rotation: everything re-sealed under version 2; the old key is refused, the new one opens.
    seal_credential(&silo, &a, "anthropic", "sk-ant-2").await;
    let out = rotate(&url_of(&silo), &KEY_A, &KEY_B);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Re-sealed 2 secret(s) under credentials key version 2"), "{stdout}");
    assert!(start(&silo, &KEY_A).await.unwrap_err().to_string().contains("version 2"));
    let b = start(&silo, &KEY_B).await.unwrap().secrets.unwrap();
    assert_eq!(b.version(), 2);
    assert_eq!(opened(&silo, &b, "openai-main").await.unwrap(), "sk-live-1");
    assert_eq!(opened(&silo, &b, "anthropic").await.unwrap(), "sk-ant-2");
    assert!(opened(&silo, &a, "anthropic").await.unwrap_err().contains("version 2"));
    // New secrets carry the new version.
    seal_credential(&silo, &b, "mistral", "sk-m-3").await;
    assert_eq!(opened(&silo, &b, "mistral").await.unwrap(), "sk-m-3");

    // A rotation that cannot open one value changes nothing (one transaction).
    let garbled = opencrane_silo_db::models::Sealed { nonce: vec![1; 12], ciphertext: vec![9; 40], key_version: 2 };
    models::insert_credential(&silo, "garbled", "openai", None, &KeySource::Sealed(&garbled, "…")).await.unwrap();
    let failed = rotate(&url_of(&silo), &KEY_B, &KEY_A);
    assert!(!failed.status.success());
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("does not open"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
    assert_eq!(opencrane_silo_db::credentials_keys::current(&silo).await.unwrap().unwrap().version, 2);
    assert_eq!(opened(&silo, &b, "openai-main").await.unwrap(), "sk-live-1");
    // The wrong old key, or the same key twice: refused with the reason.
    let wrong = rotate(&url_of(&silo), &KEY_A, &[33; 32]);
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("is not the key that sealed"));
    let same = rotate(&url_of(&silo), &KEY_B, &KEY_B);
    assert!(String::from_utf8_lossy(&same.stderr).contains("is the current one"));
}
