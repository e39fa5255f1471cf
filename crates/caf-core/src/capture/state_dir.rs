//! [`StateDir`]: the files of a state directory and their sizes, as seed 003 scans `.aiwg/`.

use super::probe::{Probe, ProbeError};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// At most this many files are listed (the count and total size cover them all).
pub const MAX_FILES: usize = 10_000;

/// The files under a directory, recursively, with their sizes: `{"dir", "files": {path:
/// bytes}, "count", "bytes", "truncated"?}`, paths relative to the directory with `/`
/// between components. Symbolic links are listed, never followed.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// A scan of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ProbeError + '_ {
    move |source| ProbeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Probe for StateDir {
    fn name(&self) -> &str {
        "state_dir"
    }

    fn read(&mut self) -> Result<Value, ProbeError> {
        let mut files = Map::new();
        let mut count: u64 = 0;
        let mut bytes: u64 = 0;
        let mut stack = vec![(self.dir.clone(), String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            let entries = std::fs::read_dir(&dir).map_err(io(&dir))?;
            for entry in entries {
                let entry = entry.map_err(io(&dir))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let rel = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                let path = entry.path();
                let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
                if meta.is_dir() {
                    stack.push((path, rel));
                    continue;
                }
                count += 1;
                bytes += meta.len();
                if files.len() < MAX_FILES {
                    files.insert(rel, Value::from(meta.len()));
                }
            }
        }
        let mut out = json!({
            "dir": self.dir.display().to_string(),
            "files": files,
            "count": count,
            "bytes": bytes,
        });
        if count > MAX_FILES as u64 {
            out["truncated"] = Value::Bool(true);
        }
        Ok(out)
    }
}
