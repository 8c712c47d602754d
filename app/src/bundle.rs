//! The browser bundle as a page refers to it: the file names under `/pkg` (content-hashed by
//! `cargo xtask build`, listed in `pkg/bundle.json`) and the island loader, which fetches the
//! wasm only on a page that has an island. Each role has a bundle of its own islands
//! (`opencrane-fleet.*`, `opencrane-silo.*`); both share the stylesheet (`opencrane.css`).
//!
//! Leptos' `HydrationScripts` preloads the wasm on every page and names the files without a
//! hash, so no response can be cached for good; here a page without islands costs the HTML and
//! the stylesheet, and a repeat visit only the HTML (hashed files are `immutable`).

use std::path::Path;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Role;

/// The manifest the site build writes into the `pkg` directory.
pub const MANIFEST: &str = "bundle.json";

/// The bundle's file names under `/pkg`, for one role's pages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bundle {
    /// The wasm-bindgen glue (an ES module).
    pub js: String,
    /// The WebAssembly module.
    pub wasm: String,
    /// The stylesheet.
    pub css: String,
}

/// The manifest: the stylesheet and each role's glue and wasm.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// The stylesheet (both roles).
    pub css: String,
    /// The fleet's bundle.
    pub fleet: Scripts,
    /// A silo's bundle.
    pub silo: Scripts,
}

/// One role's glue and wasm.
#[derive(Debug, Serialize, Deserialize)]
pub struct Scripts {
    /// The wasm-bindgen glue.
    pub js: String,
    /// The WebAssembly module.
    pub wasm: String,
}

/// The file stem of `role`'s bundle (`opencrane-fleet`, `opencrane-silo`).
pub fn stem(role: Role) -> String {
    format!("opencrane-{}", role.as_str())
}

impl Bundle {
    /// The unhashed names (a site built before the manifest, or none at all).
    pub fn unhashed(role: Role) -> Self {
        let stem = stem(role);
        Self { js: format!("{stem}.js"), wasm: format!("{stem}.wasm"), css: "opencrane.css".into() }
    }

    /// `role`'s names in `pkg_dir`'s manifest, or the unhashed ones when it has none (a
    /// development server started without a site says nothing; a manifest that does not parse
    /// is logged).
    pub fn read(pkg_dir: &Path, role: Role) -> Self {
        let path = pkg_dir.join(MANIFEST);
        let Ok(text) = std::fs::read_to_string(&path) else { return Self::unhashed(role) };
        let bundle = serde_json::from_str::<Manifest>(&text).map(|m| {
            let scripts = match role {
                Role::Fleet => m.fleet,
                Role::Silo => m.silo,
            };
            Self { js: scripts.js, wasm: scripts.wasm, css: m.css }
        });
        match bundle {
            Ok(bundle) if [&bundle.js, &bundle.wasm, &bundle.css].iter().all(|n| is_file_name(n)) => bundle,
            _ => {
                tracing::warn!(path = %path.display(), "the bundle manifest is not valid; using the unhashed names");
                Self::unhashed(role)
            }
        }
    }
}

/// A plain file name (the manifest names files in `pkg`, never paths).
fn is_file_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether `name` is one of the content-hashed bundle files (`<stem>.<16 hex>.<ext>`, the stem
/// `opencrane` for the stylesheet or a role's, with `.gz` for the precompressed copy): such a
/// file never changes, so it may be cached for good.
pub fn is_hashed(name: &str) -> bool {
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let mut parts = name.split('.');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("opencrane" | "opencrane-fleet" | "opencrane-silo"), Some(hash), Some("js" | "wasm" | "css"), None)
            if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit())
    )
}

/// The stylesheet link and the island loader. The loader (a module script carrying the
/// response's nonce) looks for islands in the page: with none it marks the page live at once
/// (`<body data-hydrated>`) and fetches nothing; with some it imports the glue, instantiates the
/// wasm and wakes each island, as Leptos' own island script does.
#[component]
pub fn BundleScripts(bundle: Bundle, pkg: String) -> impl IntoView {
    let nonce = leptos::nonce::use_nonce();
    let css = format!("/{pkg}/{}", bundle.css);
    let script = format!(
        "({LOADER})({js:?}, {wasm:?});",
        js = format!("/{pkg}/{}", bundle.js),
        wasm = format!("/{pkg}/{}", bundle.wasm),
    );
    view! {
        <link rel="stylesheet" href=css />
        <script type="module" nonce=nonce>{script}</script>
    }
}

/// The island loader: Leptos 0.8's `island_script.js` (MIT), reduced to what islands without the
/// islands router need, run only when the page has an island, and started at once.
const LOADER: &str = r#"(js, wasm) => {
  const mark = () => document.body.setAttribute("data-hydrated", "");
  if (!document.querySelector("leptos-island")) { mark(); return; }
  const stack = [];
  async function wake(el, mod) {
    const fn = mod[el.dataset.component];
    if (!fn) { console.warn(`No wasm function for the island ${el.dataset.component}.`); return; }
    const children = stack[stack.length - 1];
    if (children) children();
    const done = fn(el);
    if (done && done.then) await done;
  }
  async function walk(node, mod) {
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const tag = node.tagName.toLowerCase();
    if (tag === "leptos-island") await wake(node, mod);
    if (tag === "leptos-children") stack.push(node.$$on_hydrate);
    for (const child of node.children) await walk(child, mod);
    if (tag === "leptos-children") stack.pop();
  }
  // At once, not on idle as Leptos does: the module script already runs after the document is
  // parsed, and an island answers sooner when its wasm is fetched without waiting.
  import(js).then(async (mod) => {
    await mod.default({ module_or_path: wasm });
    mod.hydrate();
    await walk(document.body, mod);
  });
}"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_content_hashed_bundle_files_count_as_hashed() {
        assert!(is_hashed("opencrane-fleet.0123456789abcdef.wasm"));
        assert!(is_hashed("opencrane-silo.0123456789abcdef.js.gz"));
        assert!(is_hashed("opencrane.0123456789abcdef.css"));
        assert!(!is_hashed("opencrane-silo.wasm"), "the unhashed name changes with every build");
        assert!(!is_hashed("opencrane.0123456789abcdeg.css"));
        assert!(!is_hashed("opencrane.0123.css"));
        assert!(!is_hashed("other.0123456789abcdef.css"));
        assert!(!is_hashed("opencrane-other.0123456789abcdef.wasm"));
    }

    #[test]
    fn a_manifest_is_read_per_role_and_a_bad_one_falls_back() {
        let dir = std::env::temp_dir().join(format!("opencrane-bundle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(Bundle::read(&dir, Role::Silo), Bundle::unhashed(Role::Silo), "no manifest");
        assert_eq!(Bundle::unhashed(Role::Fleet).wasm, "opencrane-fleet.wasm");
        let manifest = Manifest {
            css: "opencrane.2123456789abcdef.css".into(),
            fleet: Scripts {
                js: "opencrane-fleet.0123456789abcdef.js".into(),
                wasm: "opencrane-fleet.1123456789abcdef.wasm".into(),
            },
            silo: Scripts {
                js: "opencrane-silo.3123456789abcdef.js".into(),
                wasm: "opencrane-silo.4123456789abcdef.wasm".into(),
            },
        };
        std::fs::write(dir.join(MANIFEST), serde_json::to_string(&manifest).unwrap()).unwrap();
        let fleet = Bundle::read(&dir, Role::Fleet);
        assert_eq!(
            (fleet.js.as_str(), fleet.wasm.as_str()),
            ("opencrane-fleet.0123456789abcdef.js", "opencrane-fleet.1123456789abcdef.wasm")
        );
        let silo = Bundle::read(&dir, Role::Silo);
        assert_eq!(
            (silo.wasm.as_str(), silo.css.as_str()),
            ("opencrane-silo.4123456789abcdef.wasm", "opencrane.2123456789abcdef.css")
        );
        std::fs::write(
            dir.join(MANIFEST),
            r#"{"css":"b","fleet":{"js":"../../etc/passwd","wasm":"a"},"silo":{"js":"c","wasm":"d"}}"#,
        )
        .unwrap();
        assert_eq!(Bundle::read(&dir, Role::Fleet), Bundle::unhashed(Role::Fleet), "names, never paths");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
