//! A plan: the ordered `kubectl`/`helm` invocations of a deploy, with the manifests they read
//! on stdin. Plans are plain data, so they can be printed (`--dry-run`), compared in tests and
//! executed by [`crate::run`].

use serde::Serialize;

/// Which executable a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// `kubectl`.
    Kubectl,
    /// `helm`.
    Helm,
}

impl Tool {
    /// The executable's usual name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Kubectl => "kubectl",
            Self::Helm => "helm",
        }
    }
}

/// Text sent to a step's stdin. Manifests carrying secrets keep a printable copy with the
/// secret values replaced, which is all that `--dry-run` and logs ever show.
#[derive(Clone, PartialEq, Eq)]
pub struct Stdin {
    /// What the tool receives.
    pub(crate) text: String,
    /// What people see.
    pub printable: String,
}

impl Stdin {
    /// Stdin without secrets.
    pub fn plain(text: String) -> Self {
        Self { printable: text.clone(), text }
    }
}

impl std::fmt::Debug for Stdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.printable)
    }
}

/// One invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// What the step achieves, for people.
    pub title: String,
    /// The executable.
    pub tool: Tool,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its stdin, if any.
    pub stdin: Option<Stdin>,
}

impl Step {
    /// A step without stdin.
    pub fn new(title: impl Into<String>, tool: Tool, args: Vec<String>) -> Self {
        Self { title: title.into(), tool, args, stdin: None }
    }

    /// The same step reading `stdin`.
    #[must_use]
    pub fn with_stdin(mut self, stdin: Stdin) -> Self {
        self.stdin = Some(stdin);
        self
    }
}

/// The steps of one deploy, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// What gets installed, for the plan's heading.
    pub summary: String,
    /// The steps.
    pub steps: Vec<Step>,
    /// Things the operator should know (skipped installs, defaults taken).
    pub notes: Vec<String>,
}

#[derive(Serialize)]
struct JsonStep<'a> {
    title: &'a str,
    tool: Tool,
    args: &'a [String],
    stdin: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonPlan<'a> {
    summary: &'a str,
    notes: &'a [String],
    steps: Vec<JsonStep<'a>>,
}

impl Plan {
    /// The plan as a shell script a person can read and run: one commented command per step,
    /// manifests as here-documents, secrets redacted.
    pub fn to_shell(&self) -> String {
        let mut out = format!("# {}\n", self.summary);
        for note in &self.notes {
            out.push_str(&format!("# note: {note}\n"));
        }
        for (i, step) in self.steps.iter().enumerate() {
            out.push_str(&format!("\n# {}. {}\n{}", i + 1, step.title, step.tool.name()));
            for arg in &step.args {
                out.push(' ');
                out.push_str(&shell_quote(arg));
            }
            match &step.stdin {
                Some(stdin) => {
                    out.push_str(" <<'EOF'\n");
                    out.push_str(stdin.printable.trim_end());
                    out.push_str("\nEOF\n");
                }
                None => out.push('\n'),
            }
        }
        out
    }

    /// The plan as JSON (`{summary, notes, steps: [{title, tool, args, stdin}]}`), secrets
    /// redacted; for tests and tooling.
    pub fn to_json(&self) -> String {
        let plan = JsonPlan {
            summary: &self.summary,
            notes: &self.notes,
            steps: self
                .steps
                .iter()
                .map(|s| JsonStep {
                    title: &s.title,
                    tool: s.tool,
                    args: &s.args,
                    stdin: s.stdin.as_ref().map(|i| i.printable.as_str()),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&plan).unwrap_or_default()
    }
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(arg: &str) -> String {
    let safe = !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,[]".contains(&b));
    if safe { arg.to_owned() } else { format!("'{}'", arg.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_form_quotes_and_redacts() {
        let plan = Plan {
            summary: "demo".into(),
            notes: vec!["skipped x".into()],
            steps: vec![
                Step::new("say", Tool::Helm, vec!["upgrade".into(), "a b".into(), "it's".into(), "k=v".into()]),
                Step::new("apply", Tool::Kubectl, vec!["apply".into(), "-f".into(), "-".into()])
                    .with_stdin(Stdin { text: "token: s3cret".into(), printable: "token: <redacted>".into() }),
            ],
        };
        let shell = plan.to_shell();
        assert!(shell.contains("helm upgrade 'a b' 'it'\\''s' k=v\n"), "{shell}");
        assert!(shell.contains("# note: skipped x"));
        assert!(shell.contains("kubectl apply -f - <<'EOF'\ntoken: <redacted>\nEOF"));
        assert!(!shell.contains("s3cret"));
        let json: serde_json::Value = serde_json::from_str(&plan.to_json()).unwrap();
        assert_eq!(json["steps"][1]["stdin"], "token: <redacted>");
        assert_eq!(json["steps"][0]["tool"], "helm");
        assert!(!plan.to_json().contains("s3cret"));
        assert!(!format!("{plan:?}").contains("s3cret"));
    }
}
