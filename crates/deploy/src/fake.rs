//! Fake `kubectl` and `helm` executables for tests (no cluster and no Helm binary exist on the
//! test machine): small POSIX shell scripts that record every invocation (arguments, and stdin
//! when there is one) and answer the read-only queries a deploy asks (`get --raw /readyz`,
//! `get crd`, `get endpointslices`, `get secret`) the way kubectl does, including kubectl's
//! NotFound error. A test makes a tool fail on demand with [`Fakes::fail_on`], or hides the
//! CloudNativePG CRD with [`Fakes::without_cnpg`]; the silo namespace's credential Secret exists
//! only after [`Fakes::with_silo_credential`].

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test support: a failed setup fails the test")]

use std::{fs, path::PathBuf};

use crate::run::Tools;

/// A directory holding the fake tools and what they recorded.
pub struct Fakes {
    /// Where the scripts and their records live.
    pub dir: PathBuf,
}

/// The script; `__DIR__` and `__TOOL__` are filled in.
const FAKE: &str = r#"#!/bin/sh
# A fake __TOOL__ for tests: records the call, answers read-only queries, fails on demand.
dir='__DIR__'
tool=__TOOL__
n=$(ls "$dir"/calls 2>/dev/null | wc -l)
call=$(printf '%s/calls/%03d-%s' "$dir" "$n" "$tool")
mkdir -p "$dir/calls"
printf '%s\n' "$@" > "$call.args"
stdin=$(cat)
[ -n "$stdin" ] && printf '%s\n' "$stdin" > "$call.stdin"
if [ -f "$dir/fail-$tool" ]; then
  needle=$(cat "$dir/fail-$tool")
  for a in "$@"; do
    if [ "$a" = "$needle" ]; then
      echo "Error: UPGRADE FAILED: release $needle failed, and has been rolled back due to atomic being set" >&2
      exit 1
    fi
  done
fi
if [ "$tool" = kubectl ]; then
  case "$*" in
    *"get crd clusters.postgresql.cnpg.io"*)
      if [ -f "$dir/no-cnpg" ]; then
        echo 'Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "clusters.postgresql.cnpg.io" not found' >&2
        exit 1
      fi
      echo customresourcedefinition.apiextensions.k8s.io/clusters.postgresql.cnpg.io ;;
    *"get crd"*) echo found ;;
    *"get endpointslices"*)
      echo '{"items":[{"endpoints":[{"addresses":["10.96.0.1"]}],"ports":[{"port":6443}]}]}' ;;
    *"get secret opencrane-fleet-token"*)
      if [ ! -f "$dir/silo-credential" ]; then
        echo 'Error from server (NotFound): secrets "opencrane-fleet-token" not found' >&2
        exit 1
      fi
      cat "$dir/silo-credential" ;;
    *"get --raw /readyz"*) echo ok ;;
  esac
fi
exit 0
"#;

/// One recorded invocation: (tool, arguments, stdin).
pub type Call = (String, Vec<String>, Option<String>);

impl Fakes {
    /// Writes the fakes into a fresh directory named after `name` (unique per test).
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("opencrane-deploy-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("bin")).unwrap();
        for tool in ["kubectl", "helm"] {
            let path = dir.join("bin").join(tool);
            fs::write(&path, FAKE.replace("__DIR__", &dir.display().to_string()).replace("__TOOL__", tool)).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        Self { dir }
    }

    /// Tools pointing at the fakes, with the kube context `test-ctx`.
    pub fn tools(&self) -> Tools {
        Tools {
            kubectl: Some(self.dir.join("bin/kubectl")),
            helm: Some(self.dir.join("bin/helm")),
            kube_context: Some("test-ctx".into()),
        }
    }

    /// Makes `tool` (kubectl or helm) fail when one of its arguments equals `argument`.
    pub fn fail_on(&self, tool: &str, argument: &str) {
        fs::write(self.dir.join(format!("fail-{tool}")), argument).unwrap();
    }

    /// Puts `value` in the silo namespace's credential Secret (`get secret opencrane-fleet-token`).
    pub fn with_silo_credential(&self, value: &str) {
        fs::write(self.dir.join("silo-credential"), value).unwrap();
    }

    /// Makes `kubectl get crd clusters.postgresql.cnpg.io` answer NotFound.
    pub fn without_cnpg(&self) {
        fs::write(self.dir.join("no-cnpg"), "").unwrap();
    }

    /// Every recorded call, in order: (tool, args, stdin).
    pub fn calls(&self) -> Vec<Call> {
        let Ok(entries) = fs::read_dir(self.dir.join("calls")) else { return Vec::new() };
        let mut names: Vec<String> =
            entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.ends_with(".args")).collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let stem = name.trim_end_matches(".args");
                let tool = stem.split_once('-').map(|(_, t)| t.to_owned()).unwrap_or_default();
                let args =
                    fs::read_to_string(self.dir.join("calls").join(&name)).unwrap().lines().map(String::from).collect();
                let stdin = fs::read_to_string(self.dir.join("calls").join(format!("{stem}.stdin"))).ok();
                (tool, args, stdin)
            })
            .collect()
    }
}

impl Drop for Fakes {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
