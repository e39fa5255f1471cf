//! The harness of the command-line tests (`tests/tests/cli*.rs`, `tests/tests/diff/cli.rs`): it
//! runs the real `caf` binary in a temporary directory and checks what every run must satisfy.
//!
//! - [`caf_bin`]: the binary. It lives in another package (`caf-cli`), so `CARGO_BIN_EXE_caf` is
//!   not available to these tests; it is built once per test process with
//!   `cargo build -p caf-cli --bin caf` into the target directory the running test executable was
//!   built in (so it follows `CARGO_TARGET_DIR` and the profile). `CAF_TEST_BIN=/path/to/caf`
//!   runs the tests against a given binary instead.
//! - [`run_caf`]: one run, with `CAF_DIR` and the colour variables removed, stdin closed and
//!   stdout and stderr captured through pipes (never a terminal). Every run must exit within a
//!   minute, print no ANSI escape code (so no colour and no progress bar) and not panic.
//! - [`Out`]: what a run did, with assertions on its exit code (0 success, 1 a failed operation,
//!   2 bad usage) and its error lines, and its stdout as JSON.
//! - [`Sandbox`]: a temporary working directory with a checkpoint store `store/` in it, for
//!   `caf --dir store …`; never the repository's `checkpoints/`.
//! - [`files`], [`json_files`]: the bytes of a directory's files, to check that a command changed
//!   nothing (or exactly what it should).
//!
//! ```no_run
//! use caf_tests::cli::Sandbox;
//!
//! let sb = Sandbox::new();
//! sb.caf(&["demo", "--steps", "2"]).ok();
//! assert_eq!(sb.list_ids().len(), 3);
//! sb.caf(&["inspect", "ckpt_nope"]).fails(1);
//! ```

#![allow(
    clippy::unwrap_used,
    reason = "a test harness: a failed unwrap is a failed test"
)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long one run of `caf` may take before it is killed and the test fails.
const TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

/// The root of the cargo workspace (the repository).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `tests/fixtures/`.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// `p` as a `&str` (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

/// The `caf` binary, built (or found up to date) once per test process; `CAF_TEST_BIN`
/// overrides. See the [module documentation](self).
pub fn caf_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("CAF_TEST_BIN") {
            return PathBuf::from(bin);
        }
        // The running test executable is <target-dir>/<profile>/deps/<test>-<hash>.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        let target_dir = profile_dir.parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace())
            .args([
                "build",
                "--quiet",
                "-p",
                "caf-cli",
                "--bin",
                "caf",
                "--target-dir",
            ])
            .arg(target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
        }
        let status = cmd
            .status()
            .expect("running cargo build for the caf binary");
        assert!(status.success(), "cargo build -p caf-cli failed: {status}");
        let bin = profile_dir.join(format!("caf{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "{} was not built", bin.display());
        bin
    })
}

/// A command that runs `caf` with the variables that pick a store (`CAF_DIR`,
/// `CAF_DATABASE_URL`, `DATABASE_URL`) removed, so that only its arguments do. Nothing else is
/// set: the working directory, the other variables and stdio are the caller's to choose (a
/// `tokio::process::Command` converts from it).
pub fn caf_command() -> Command {
    let mut cmd = Command::new(caf_bin());
    for var in ["CAF_DIR", "CAF_DATABASE_URL", "DATABASE_URL"] {
        cmd.env_remove(var);
    }
    cmd
}

/// What one run of `caf` did.
#[derive(Debug, Clone)]
pub struct Out {
    /// The command line, for messages (`caf ARGS…`).
    pub what: String,
    /// The exit code.
    pub code: i32,
    /// Everything printed on stdout.
    pub stdout: Vec<u8>,
    /// Everything printed on stderr.
    pub stderr: Vec<u8>,
}

impl Out {
    /// Stdout as text (lossily).
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Stderr as text (lossily).
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The command line, exit code, stdout and stderr, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "`{}` exited {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.what,
            self.code,
            self.out(),
            self.err()
        )
    }

    /// Asserts success.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "{}", self.describe());
        self
    }

    /// Asserts exit code `code` and at least one error line on stderr; for a failed operation
    /// (1), every line on stderr is an error or a warning.
    #[track_caller]
    pub fn fails(self, code: i32) -> Self {
        assert_eq!(self.code, code, "{}", self.describe());
        let err = self.err();
        assert!(
            err.lines().any(|l| l.starts_with("error: ")),
            "{}",
            self.describe()
        );
        if code == 1 {
            for l in err.lines() {
                assert!(
                    l.starts_with("error: ") || l.starts_with("warning: "),
                    "stray line {l:?} in {}",
                    self.describe()
                );
            }
        }
        self
    }

    /// The lines on stderr that report errors.
    pub fn errors(&self) -> Vec<String> {
        self.err()
            .lines()
            .filter(|l| l.starts_with("error: "))
            .map(str::to_string)
            .collect()
    }

    /// Stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.describe()))
    }
}

/// Runs `caf` with `args` in `cwd`, with `envs` set (after `CAF_DIR`, the colour-forcing
/// variables, `TERM`, `COLUMNS` and `RUST_BACKTRACE` are removed), stdin closed and stdout and stderr
/// captured, and checks what every run must satisfy: it exits (within a minute, else it is killed
/// and this panics), prints no ANSI escape codes and does not panic.
pub fn run_caf(cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Out {
    run_caf_within(cwd, args, envs, TIMEOUT)
}

/// [`run_caf`] with its own time limit (a command over a very large store).
pub fn run_caf_within(cwd: &Path, args: &[&str], envs: &[(&str, &str)], limit: Duration) -> Out {
    let mut cmd = caf_command();
    cmd.current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "CLICOLOR_FORCE",
        "CLICOLOR",
        "NO_COLOR",
        "TERM",
        "RUST_BACKTRACE",
        "COLUMNS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let what = format!("caf {}", args.join(" "));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let read_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).map(|_| v)
    });
    let read_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).map(|_| v)
    });
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_micros(200);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (killed)");
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    };
    let out = Out {
        code: status
            .code()
            .unwrap_or_else(|| panic!("{what}: killed by a signal ({status})")),
        stdout: read_out.join().unwrap().unwrap(),
        stderr: read_err.join().unwrap().unwrap(),
        what,
    };
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !bytes.contains(&0x1b),
            "ANSI escape code on {name} (not a terminal): {}",
            out.describe()
        );
    }
    assert!(!out.err().contains("panicked"), "{}", out.describe());
    out
}

// ---------------------------------------------------------------------------------------------
// A sandbox
// ---------------------------------------------------------------------------------------------

/// A temporary working directory (removed when dropped) with a checkpoint store `store/` in it
/// (not created: the commands run here create it).
#[derive(Debug)]
pub struct Sandbox {
    tmp: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// An empty sandbox.
    pub fn new() -> Self {
        Self::with_prefix("caf-cli-")
    }

    /// An empty sandbox whose directory name starts with `prefix`.
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            tmp: tempfile::Builder::new().prefix(prefix).tempdir().unwrap(),
        }
    }

    /// The working directory.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The store, `store/` in the working directory.
    pub fn store(&self) -> PathBuf {
        self.path().join("store")
    }

    /// [`Sandbox::store`] as a string.
    pub fn store_str(&self) -> String {
        self.store().to_str().unwrap().to_string()
    }

    /// The file of checkpoint `id` in the store.
    pub fn path_of(&self, id: &str) -> PathBuf {
        self.store().join(format!("{id}.json"))
    }

    /// `caf --dir store ARGS…`, in the sandbox.
    pub fn caf(&self, args: &[&str]) -> Out {
        let store = self.store_str();
        let mut all = vec!["--dir", store.as_str()];
        all.extend_from_slice(args);
        run_caf(self.path(), &all, &[])
    }

    /// `caf ARGS…` with no `--dir`, in the sandbox, with `envs` set.
    pub fn caf_plain(&self, args: &[&str], envs: &[(&str, &str)]) -> Out {
        run_caf(self.path(), args, envs)
    }

    /// `caf ARGS…` (no `--dir`) in the sandbox, with stdout and stderr going to one file, as on
    /// a terminal: the exit code and everything printed, in the order it was printed.
    pub fn caf_interleaved(&self, args: &[&str]) -> (i32, String) {
        let file = tempfile::tempfile().unwrap();
        let status = caf_command()
            .current_dir(self.path())
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file.try_clone().unwrap()))
            .status()
            .unwrap();
        let mut file = file;
        std::io::Seek::rewind(&mut file).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert!(!text.contains("panicked"), "caf {}: {text}", args.join(" "));
        (status.code().unwrap(), text)
    }

    /// Runs the demo into the store (`caf --json demo ARGS…`, which must succeed) and returns its
    /// JSON report.
    pub fn demo(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json", "demo"];
        all.extend_from_slice(args);
        self.caf(&all).ok().json()
    }

    /// `scratch/` in the working directory (created if missing), for `caf bench --scratch`.
    pub fn scratch(&self) -> PathBuf {
        let dir = self.path().join("scratch");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `caf --dir store --json bench ARGS… --scratch scratch/` (which must succeed): its report
    /// is the run's [`Out::json`].
    pub fn bench_json(&self, args: &[&str]) -> Out {
        let scratch = self.scratch();
        let mut all = vec!["--json", "bench"];
        all.extend_from_slice(args);
        all.extend(["--scratch", s(&scratch)]);
        self.caf(&all).ok()
    }

    /// `caf --json list ARGS…` (which must succeed) as an array.
    pub fn list(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["--json", "list"];
        all.extend_from_slice(args);
        match self.caf(&all).ok().json() {
            Value::Array(items) => items,
            other => panic!("list --json is not an array: {other}"),
        }
    }

    /// The ids `caf list` shows, newest first.
    pub fn list_ids(&self) -> Vec<String> {
        ids(&self.list(&[]))
    }
}

/// The `id` of each item of a JSON listing.
pub fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/// Every file under `dir` outside hidden directories (the store's `.caf/` index may change), keyed
/// by its path relative to `dir`, with its bytes; a symlink (not followed) with its target's path,
/// and a FIFO, socket or device (not read) with `<special file>`. A directory that does not exist
/// has no files; any other error reading one panics.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => panic!("reading {}: {e}", dir.display()),
        };
        for e in rd {
            let e = e.unwrap();
            let path = e.path();
            let ft = e.file_type().unwrap();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if ft.is_dir() {
                if !e.file_name().to_string_lossy().starts_with('.') {
                    walk(root, &path, out);
                }
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else if ft.is_file() {
                out.insert(rel, std::fs::read(&path).unwrap());
            } else {
                out.insert(rel, b"<special file>".to_vec());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The `*.json` entries directly in `dir`, with their bytes (as [`files`] gives them).
pub fn json_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files(dir)
        .into_iter()
        .filter(|(k, _)| k.ends_with(".json") && !k.contains('/'))
        .collect()
}
