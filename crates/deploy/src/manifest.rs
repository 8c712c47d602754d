//! The few objects a deploy applies itself, before Helm: the release namespace (with its Pod
//! Security and ownership labels) and the Secrets a release reads but must not carry in its
//! values (tokens, client secrets).

use serde_json::{Value, json};

use crate::{Secret, plan::Stdin};

/// Labels every object applied outside Helm carries.
fn labels(component: &str, extra: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert("app.kubernetes.io/part-of".into(), "opencrane".into());
    labels.insert("app.kubernetes.io/managed-by".into(), "opencrane-deploy".into());
    labels.insert("app.kubernetes.io/component".into(), component.into());
    for (k, v) in extra {
        labels.insert((*k).into(), (*v).into());
    }
    Value::Object(labels)
}

/// A namespace under the `restricted` Pod Security Standard (every OpenCrane pod complies).
pub fn namespace(name: &str, component: &str, extra_labels: &[(&str, &str)]) -> Value {
    let mut labels = labels(component, extra_labels);
    if let Value::Object(map) = &mut labels {
        for mode in ["enforce", "audit", "warn"] {
            map.insert(format!("pod-security.kubernetes.io/{mode}"), "restricted".into());
        }
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// An Opaque Secret with one key; returns the manifest and its redacted twin.
pub fn secret(namespace: &str, name: &str, key: &str, value: &Secret, component: &str) -> (Value, Value) {
    let make = |data: &str| {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": labels(component, &[])},
            "type": "Opaque",
            "stringData": {key: data},
        })
    };
    (make(value.expose()), make("<redacted>"))
}

/// Several objects as one multi-document YAML stdin (real and printable).
pub fn documents(objects: &[(Value, Value)]) -> Stdin {
    let render = |pick: &dyn Fn(&(Value, Value)) -> &Value| {
        objects
            .iter()
            .map(|pair| format!("---\n{}", serde_yaml_ng::to_string(pick(pair)).unwrap_or_default()))
            .collect::<String>()
    };
    Stdin { text: render(&|p| &p.0), printable: render(&|p| &p.1) }
}

/// An object without secrets, as a (real, printable) pair.
pub fn plain(object: Value) -> (Value, Value) {
    (object.clone(), object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_is_restricted_and_labelled() {
        let ns = namespace("opencrane-acme", "silo", &[("opencrane.io/cluster-tenant", "acme")]);
        let labels = &ns["metadata"]["labels"];
        assert_eq!(labels["pod-security.kubernetes.io/enforce"], "restricted");
        assert_eq!(labels["opencrane.io/cluster-tenant"], "acme");
        assert_eq!(labels["app.kubernetes.io/part-of"], "opencrane");
    }

    #[test]
    fn secrets_are_redacted_in_the_printable_copy() {
        let stdin = documents(&[
            plain(namespace("ns", "silo", &[])),
            secret("ns", "tok", "token", &Secret::new("s3cret"), "silo"),
        ]);
        assert!(stdin.text.contains("token: s3cret"));
        assert!(!stdin.printable.contains("s3cret"));
        assert!(stdin.printable.contains("token: <redacted>"));
        assert_eq!(stdin.text.matches("---\n").count(), 2);
    }
}
