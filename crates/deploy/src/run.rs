//! The only code that starts processes: finding `kubectl` and `helm`, running one invocation,
//! and executing a plan step by step (stopping at the first failure).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use crate::{
    Error,
    plan::{Plan, Tool},
};

/// What an invocation produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs one program with arguments and optional stdin. The real one is [`ProcessRunner`];
/// tests may substitute fakes, but the deploy tests run real fake *executables* through it.
pub trait Runner {
    /// Runs `program args…`, feeding `stdin`, and waits for it.
    fn run(&mut self, program: &Path, args: &[String], stdin: Option<&str>) -> std::io::Result<Output>;
}

/// Starts real processes.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessRunner;

impl Runner for ProcessRunner {
    fn run(&mut self, program: &Path, args: &[String], stdin: Option<&str>) -> std::io::Result<Output> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        Ok(Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// Where the tools are, and the kube context both use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tools {
    /// The `kubectl` executable (`None`: not found; only a dry run may proceed).
    pub kubectl: Option<PathBuf>,
    /// The `helm` executable (`None`: not found; only a dry run may proceed).
    pub helm: Option<PathBuf>,
    /// `--kube-context` for both.
    pub kube_context: Option<String>,
}

impl Tools {
    /// Uses the given paths, or finds the tools on `PATH`.
    pub fn resolve(kubectl: Option<PathBuf>, helm: Option<PathBuf>, kube_context: Option<String>) -> Self {
        Self {
            kubectl: kubectl.or_else(|| find_on_path("kubectl")),
            helm: helm.or_else(|| find_on_path("helm")),
            kube_context,
        }
    }

    /// The executable for `tool`, or an error saying how to provide it.
    pub fn path(&self, tool: Tool) -> Result<&Path, Error> {
        let found = match tool {
            Tool::Kubectl => self.kubectl.as_deref(),
            Tool::Helm => self.helm.as_deref(),
        };
        found.ok_or_else(|| {
            Error::Tool(format!(
                "{name} not found on PATH; install it or pass --{name} /path/to/{name}",
                name = tool.name()
            ))
        })
    }

    /// Arguments with the kube context prepended (`--kube-context` for helm, `--context` for kubectl).
    pub fn args(&self, tool: Tool, args: &[String]) -> Vec<String> {
        let mut all = Vec::with_capacity(args.len() + 2);
        if let Some(context) = &self.kube_context {
            all.push(match tool {
                Tool::Kubectl => "--context".to_owned(),
                Tool::Helm => "--kube-context".to_owned(),
            });
            all.push(context.clone());
        }
        all.extend_from_slice(args);
        all
    }
}

/// The first executable file called `name` in `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Runs one read-only query (used by preflight and discovery).
pub fn query(runner: &mut dyn Runner, tools: &Tools, tool: Tool, args: &[String]) -> Result<Output, Error> {
    let program = tools.path(tool)?;
    runner
        .run(program, &tools.args(tool, args), None)
        .map_err(|e| Error::Tool(format!("could not run {}: {e}", program.display())))
}

/// Executes every step in order and stops at the first failure, reporting the tool's output
/// (trimmed). `progress` hears each step's title before it runs.
pub fn execute(
    plan: &Plan,
    runner: &mut dyn Runner,
    tools: &Tools,
    progress: &mut dyn FnMut(usize, &str),
) -> Result<(), Error> {
    for (i, step) in plan.steps.iter().enumerate() {
        progress(i + 1, &step.title);
        let program = tools.path(step.tool)?;
        let output = runner
            .run(program, &tools.args(step.tool, &step.args), step.stdin.as_ref().map(|s| s.text.as_str()))
            .map_err(|e| Error::Tool(format!("could not run {}: {e}", program.display())))?;
        if !output.success {
            return Err(Error::Step { index: i + 1, title: step.title.clone(), output: trim_output(&output) });
        }
    }
    Ok(())
}

/// The useful end of a failed tool's output: stderr (else stdout), its last lines, at most
/// 1000 characters, so it fits in a status condition.
pub fn trim_output(output: &Output) -> String {
    const MAX_LINES: usize = 12;
    const MAX_CHARS: usize = 1000;
    let text = if output.stderr.trim().is_empty() { &output.stdout } else { &output.stderr };
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(MAX_LINES)..].join("\n");
    if tail.is_empty() {
        return "no output".to_owned();
    }
    let chars: Vec<char> = tail.chars().collect();
    if chars.len() > MAX_CHARS {
        format!("…{}", chars[chars.len() - MAX_CHARS..].iter().collect::<String>())
    } else {
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_keeps_the_end_of_stderr() {
        let long = (1..=30).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let trimmed = trim_output(&Output { success: false, stdout: "ignored".into(), stderr: long });
        assert!(trimmed.starts_with("line 19"), "{trimmed}");
        assert!(trimmed.ends_with("line 30"));
        let trimmed = trim_output(&Output { success: false, stdout: "only stdout\n".into(), stderr: " \n".into() });
        assert_eq!(trimmed, "only stdout");
        let huge = trim_output(&Output { success: false, stdout: String::new(), stderr: "é".repeat(5000) });
        assert_eq!(huge.chars().count(), 1001);
        assert_eq!(trim_output(&Output::default()), "no output");
    }

    #[test]
    fn the_context_goes_first_with_each_tools_flag() {
        let tools = Tools { kubectl: None, helm: None, kube_context: Some("prod".into()) };
        assert_eq!(tools.args(Tool::Kubectl, &["get".into()]), ["--context", "prod", "get"]);
        assert_eq!(tools.args(Tool::Helm, &["list".into()]), ["--kube-context", "prod", "list"]);
        assert!(tools.path(Tool::Helm).unwrap_err().to_string().contains("--helm"));
    }
}
