//! The git probes: [`GitStatus`] (branch, modified, staged and untracked files, the last
//! commit) and [`FilesModified`] (every file modified since the watch started), both running
//! `git` as a subprocess in the project directory (`git -C DIR …`, machine-readable output:
//! `status --porcelain=v2 -z`). The status's paths are as git gives them, relative to the
//! repository's root; the modified files' are relative to the project directory (the same
//! when the project is the repository). Parts of the project can be left out (the checkpoint directory itself, when it lies
//! inside the project, so that the captures do not count themselves as changes).

use super::probe::{Probe, ProbeError};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// At most this many paths are listed per list (counts are always exact).
pub const MAX_LISTED: usize = 1000;

/// Runs `git -C dir ARGS…` and returns its stdout.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, ProbeError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| ProbeError::Spawn {
            program: "git".into(),
            source,
        })?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map_or_else(|| out.status.to_string(), str::to_string);
    Err(ProbeError::Failed {
        program: "git".into(),
        args: args
            .iter()
            .take_while(|a| **a != "--")
            .copied()
            .collect::<Vec<_>>()
            .join(" "),
        message,
    })
}

/// The NUL-separated records of `-z` output.
fn records(out: &[u8]) -> impl Iterator<Item = String> + '_ {
    out.split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
}

/// `-- . :(exclude)P …`: the project, without the excluded paths.
fn pathspec(exclude: &[PathBuf]) -> Vec<String> {
    let mut out = vec!["--".to_string(), ".".to_string()];
    out.extend(exclude.iter().map(|p| format!(":(exclude){}", p.display())));
    out
}

/// A list of at most [`MAX_LISTED`] paths.
fn listed(paths: &BTreeSet<String>) -> Value {
    Value::from(paths.iter().take(MAX_LISTED).cloned().collect::<Vec<_>>())
}

/// What `git status --porcelain=v2 -z --branch -uall` says.
#[derive(Debug, Default, PartialEq)]
struct Status {
    head: Option<String>,
    branch: Option<String>,
    modified: BTreeSet<String>,
    staged: BTreeSet<String>,
    untracked: BTreeSet<String>,
}

fn parse_status(out: &[u8]) -> Status {
    let mut s = Status::default();
    let mut recs = records(out);
    while let Some(r) = recs.next() {
        let mut kind_rest = r.splitn(2, ' ');
        let (kind, rest) = (
            kind_rest.next().unwrap_or(""),
            kind_rest.next().unwrap_or(""),
        );
        match kind {
            "#" => {
                if let Some(oid) = rest.strip_prefix("branch.oid ") {
                    s.head = (oid != "(initial)").then(|| oid.to_string());
                } else if let Some(head) = rest.strip_prefix("branch.head ") {
                    s.branch = (head != "(detached)").then(|| head.to_string());
                }
            }
            "1" | "2" | "u" => {
                // Fields before the path: 7 for `1`, 8 for `2` (a score), 9 for `u`.
                let before = match kind {
                    "1" => 7,
                    "2" => 8,
                    _ => 9,
                };
                let fields: Vec<&str> = rest.splitn(before + 1, ' ').collect();
                let (Some(xy), Some(path)) = (fields.first(), fields.get(before)) else {
                    continue;
                };
                let mut xy = xy.chars();
                let (x, y) = (xy.next().unwrap_or('.'), xy.next().unwrap_or('.'));
                if x != '.' {
                    s.staged.insert((*path).to_string());
                }
                if y != '.' {
                    s.modified.insert((*path).to_string());
                }
                if kind == "2" {
                    // The original path of a rename or copy follows as its own record.
                    let _ = recs.next();
                }
            }
            "?" => {
                s.untracked.insert(rest.to_string());
            }
            _ => {}
        }
    }
    s
}

/// The git status of a project: `{"branch", "head", "modified", "staged", "untracked",
/// "modified_count", "staged_count", "untracked_count", "last_commit": {"id", "time",
/// "summary"}}` (a branch of `null` is a detached head; a head and last commit of `null`, a
/// repository without commits).
#[derive(Debug, Clone)]
pub struct GitStatus {
    project: PathBuf,
    exclude: Vec<PathBuf>,
}

impl GitStatus {
    /// The status of the git work tree at `project`.
    pub fn new(project: impl Into<PathBuf>) -> Self {
        Self {
            project: project.into(),
            exclude: Vec::new(),
        }
    }

    /// Leaves out `path` (relative to the project directory).
    pub fn exclude(mut self, path: impl Into<PathBuf>) -> Self {
        self.exclude.push(path.into());
        self
    }
}

impl Probe for GitStatus {
    fn name(&self) -> &str {
        "git"
    }

    fn read(&mut self) -> Result<Value, ProbeError> {
        let mut args = vec!["status", "--porcelain=v2", "-z", "--branch", "-uall"];
        let spec = pathspec(&self.exclude);
        args.extend(spec.iter().map(String::as_str));
        let status = parse_status(&git(&self.project, &args)?);
        let last_commit = match &status.head {
            Some(_) => {
                let out = git(&self.project, &["log", "-1", "--format=%H%x00%cI%x00%s"])?;
                let text = String::from_utf8_lossy(&out);
                let mut parts = text.trim_end_matches('\n').splitn(3, '\0');
                json!({
                    "id": parts.next().unwrap_or(""),
                    "time": parts.next().unwrap_or(""),
                    "summary": parts.next().unwrap_or(""),
                })
            }
            None => Value::Null,
        };
        Ok(json!({
            "branch": status.branch,
            "head": status.head,
            "modified": listed(&status.modified),
            "modified_count": status.modified.len(),
            "staged": listed(&status.staged),
            "staged_count": status.staged.len(),
            "untracked": listed(&status.untracked),
            "untracked_count": status.untracked.len(),
            "last_commit": last_commit,
        }))
    }
}

/// Every file modified since the watch started, cumulatively: tracked files whose content
/// differs from what the work tree held at the start (changed, staged or committed since),
/// plus untracked files that are new or changed since the start, added up over the captures
/// (a file changed and then changed back still counts). Files already modified when the watch
/// started count only once they change again. Paths are relative to the project directory.
/// `{"since": commit or null, "files": […], "count": n}`; `since` is the start: the commit
/// checked out, or a snapshot of the work tree (`git stash create`, which touches no branch,
/// stash list or file) when it had changes.
#[derive(Debug, Clone)]
pub struct FilesModified {
    project: PathBuf,
    exclude: Vec<PathBuf>,
    /// The start (`Some(None)`: the repository had no commit then).
    since: Option<Option<String>>,
    /// Untracked files at the start, with their size and modification time.
    untracked_at_start: HashMap<String, (u64, Option<SystemTime>)>,
    files: BTreeSet<String>,
}

impl FilesModified {
    /// Files modified in the git work tree at `project` from now on.
    pub fn new(project: impl Into<PathBuf>) -> Self {
        Self {
            project: project.into(),
            exclude: Vec::new(),
            since: None,
            untracked_at_start: HashMap::new(),
            files: BTreeSet::new(),
        }
    }

    /// Leaves out `path` (relative to the project directory).
    pub fn exclude(mut self, path: impl Into<PathBuf>) -> Self {
        self.exclude.push(path.into());
        self
    }

    fn head(&self) -> Result<Option<String>, ProbeError> {
        match git(&self.project, &["rev-parse", "-q", "--verify", "HEAD"]) {
            Ok(out) => Ok(Some(String::from_utf8_lossy(&out).trim().to_string())),
            // No commit yet: `rev-parse --verify` fails quietly.
            Err(ProbeError::Failed { message, .. }) if !message.starts_with("fatal") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The work tree as it is now, to compare later readings with: a commit of it if it has
    /// changes, else the commit checked out.
    fn start(&self) -> Result<Option<String>, ProbeError> {
        let Some(head) = self.head()? else {
            return Ok(None);
        };
        let snapshot = git(
            &self.project,
            &[
                "-c",
                "user.name=caf",
                "-c",
                "user.email=caf@localhost",
                "stash",
                "create",
            ],
        )
        .map(|out| String::from_utf8_lossy(&out).trim().to_string())
        .unwrap_or_default();
        Ok(Some(if snapshot.is_empty() { head } else { snapshot }))
    }

    fn untracked(&self, spec: &[&str]) -> Result<Vec<String>, ProbeError> {
        let mut args = vec!["ls-files", "--others", "--exclude-standard", "-z"];
        args.extend(spec);
        Ok(records(&git(&self.project, &args)?).collect())
    }

    fn stamp(&self, path: &str) -> Option<(u64, Option<SystemTime>)> {
        let meta = std::fs::symlink_metadata(self.project.join(path)).ok()?;
        Some((meta.len(), meta.modified().ok()))
    }
}

impl FilesModified {
    /// Takes the start now (the first reading does otherwise): for a watch that starts a
    /// command after making its probes, so that what the command does counts from the first
    /// capture on. An error (not a repository) leaves the start to the first reading.
    pub fn mark_start(&mut self) -> Result<(), ProbeError> {
        if self.since.is_some() {
            return Ok(());
        }
        let spec = pathspec(&self.exclude);
        let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
        let start = self.start()?;
        let untracked = self.untracked(&spec)?;
        self.untracked_at_start = untracked
            .into_iter()
            .filter_map(|p| Some((p.clone(), self.stamp(&p)?)))
            .collect();
        self.since = Some(start);
        Ok(())
    }
}

impl Probe for FilesModified {
    fn name(&self) -> &str {
        "files_modified"
    }

    fn read(&mut self) -> Result<Value, ProbeError> {
        self.mark_start()?;
        let spec = pathspec(&self.exclude);
        let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
        let since = self.since.clone().flatten();
        // Tracked files that differ from the start (or, with no commit then, every tracked
        // file: all of them came during the watch).
        let mut args = match &since {
            Some(commit) => vec![
                "diff",
                "--name-only",
                "--no-renames",
                "--relative",
                "-z",
                commit.as_str(),
            ],
            None => vec!["ls-files", "-z"],
        };
        args.extend(&spec);
        let changed = git(&self.project, &args)?;
        self.files.extend(records(&changed));
        for path in self.untracked(&spec)? {
            let before = self.untracked_at_start.get(&path);
            if before.is_none() || before != self.stamp(&path).as_ref() {
                self.files.insert(path);
            }
        }
        Ok(json!({
            "since": since,
            "files": listed(&self.files),
            "count": self.files.len(),
        }))
    }

    fn resume(&mut self, previous: &Value) {
        if let Some(files) = previous["files"].as_array() {
            self.files
                .extend(files.iter().filter_map(Value::as_str).map(str::to_string));
        }
        if previous.get("since").is_some() {
            self.since = Some(previous["since"].as_str().map(str::to_string));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_v2() {
        let out = b"# branch.oid a5384de\0# branch.head main\0\
2 RM N... 100644 100644 100644 6178 6178 R100 c d.txt\0b.txt\0\
1 A. N... 000000 100644 100644 0000 b478 staged.txt\0\
1 .M N... 100644 100644 100644 7898 7898 sub/a b.txt\0\
u UU N... 100644 100644 100644 100644 1 2 3 conflict.txt\0\
? sub/new.txt\0";
        let s = parse_status(out);
        assert_eq!(s.head.as_deref(), Some("a5384de"));
        assert_eq!(s.branch.as_deref(), Some("main"));
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(s.staged, set(&["c d.txt", "staged.txt", "conflict.txt"]));
        assert_eq!(s.modified, set(&["c d.txt", "sub/a b.txt", "conflict.txt"]));
        assert_eq!(s.untracked, set(&["sub/new.txt"]));

        let fresh = parse_status(b"# branch.oid (initial)\0# branch.head (detached)\0");
        assert_eq!(fresh, Status::default());
    }
}
