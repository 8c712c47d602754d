//! `opencrane dev`'s place for a rotated Zitadel key: files in the state directory (owner-only),
//! where a cluster's fleet uses its Secret. `zitadel-key.json` is the key in use (read at the
//! next start in preference to `--zitadel-sa-key`), `zitadel-key.next.json` a prepared one.

use std::{io::Write as _, os::unix::fs::OpenOptionsExt as _, path::PathBuf};

use app::service::fleet::identity::{KeySlot, KeyStore};

/// The key files in `dir`.
#[derive(Clone, Debug)]
pub struct KeyFiles {
    dir: PathBuf,
}

impl KeyFiles {
    /// Key files in the state directory `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The file of `slot`.
    pub fn path(&self, slot: KeySlot) -> PathBuf {
        self.dir.join(match slot {
            KeySlot::Active => "zitadel-key.json",
            KeySlot::Next => "zitadel-key.next.json",
        })
    }
}

#[async_trait::async_trait]
impl KeyStore for KeyFiles {
    fn location(&self) -> String {
        format!("{} (opencrane dev)", self.path(KeySlot::Active).display())
    }

    async fn write(&self, slot: KeySlot, json: Option<&str>) -> Result<(), String> {
        let path = self.path(slot);
        let Some(json) = json else {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("removing {}: {e}", path.display())),
                _ => Ok(()),
            };
        };
        // Written next to the target, then renamed: a crash never leaves half a key.
        let partial = path.with_extension("partial");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)
            .and_then(|mut f| f.write_all(json.as_bytes()).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&partial, &path));
        written.map_err(|e| format!("writing {}: {e}", path.display()))
    }

    async fn read(&self, slot: KeySlot) -> Result<Option<String>, String> {
        let path = self.path(slot);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("reading {}: {e}", path.display())),
        }
    }
}
