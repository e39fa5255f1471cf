//! Hostile files through the command line: every file in `tests/fixtures/hostile/` (and files too
//! big or too deep to commit, generated here) is refused by `caf validate` and `caf import` with
//! exit code 1 and an error line naming the file (and saying where, as the corpus's README.md
//! table says), never a panic, and without changing a byte of the checkpoint files in the store it
//! was imported into. Symlinks, directories, FIFOs and devices are not read at all.
//!
//! The binary is built and run by the shared harness, [`caf_tests::cli`].

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{files, fixtures, s, Out, Sandbox};
use std::path::{Path, PathBuf};
use std::process::Command;

fn hostile_dir() -> PathBuf {
    fixtures().join("hostile")
}

/// Checks of a run that should have refused a file.
trait Refusal {
    /// Why this run is not a clean refusal of `file` (exit 1, only error and warning lines on
    /// stderr, at least one error line naming `file` and containing `mentions`), if it is not.
    fn refusal_problem(&self, file: &str, mentions: &str) -> Option<String>;
}

impl Refusal for Out {
    fn refusal_problem(&self, file: &str, mentions: &str) -> Option<String> {
        let err = self.err();
        let naming: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("error: ") && l.contains(file))
            .collect();
        let problem = if self.code != 1 {
            "exit code is not 1"
        } else if err
            .lines()
            .any(|l| !l.starts_with("error: ") && !l.starts_with("warning: "))
        {
            "a line on stderr is neither an error nor a warning"
        } else if naming.is_empty() {
            "no error line names the file"
        } else if !naming.iter().any(|l| l.contains(mentions)) {
            "no error line says where"
        } else {
            return None;
        };
        Some(format!(
            "{problem} (expected {mentions:?}): {}",
            self.describe()
        ))
    }
}

/// The sandbox of these tests: its store holds the checkpoints of `caf demo --steps 2`, and
/// hostile files are fed to it.
trait HostileSandbox: Sized {
    /// A sandbox whose store holds the checkpoints of `caf demo --steps 2`.
    fn with_demo() -> Self;

    /// Checks that `validate FILE` and `import FILE` refuse `file`, saying `mentions`, and that
    /// the import changed no file of the store; returns what went wrong.
    fn refusal_problems(&self, file: &Path, mentions: &str) -> Vec<String>;
}

impl HostileSandbox for Sandbox {
    fn with_demo() -> Self {
        let sb = Sandbox::with_prefix("caf-cli-hostile-");
        sb.caf(&["demo", "--steps", "2"]).ok();
        assert_eq!(sb.list_ids().len(), 3);
        sb
    }

    fn refusal_problems(&self, file: &Path, mentions: &str) -> Vec<String> {
        let before = files(&self.store());
        let ids = self.list_ids();
        let mut problems = Vec::new();
        let v = self.caf(&["validate", s(file)]);
        problems.extend(v.refusal_problem(s(file), mentions));
        if !v.out().contains("0 valid, 1 invalid") {
            problems.push(format!("validate's summary: {}", v.describe()));
        }
        let j = self.caf(&["--json", "validate", s(file)]);
        problems.extend(j.refusal_problem(s(file), mentions));
        match serde_json::from_slice::<serde_json::Value>(&j.stdout) {
            Ok(r) if r[0]["valid"] == false && r[0]["path"] == s(file) => {}
            _ => problems.push(format!("validate --json's report: {}", j.describe())),
        }
        let i = self.caf(&["import", s(file)]);
        problems.extend(i.refusal_problem(s(file), mentions));
        if !i.err().contains("nothing imported") {
            problems.push(format!("import does not say nothing was: {}", i.describe()));
        }
        if files(&self.store()) != before {
            problems.push(format!("import of {} changed the store", file.display()));
        }
        if self.list_ids() != ids {
            problems.push(format!("import of {} changed the listing", file.display()));
        }
        problems
    }
}

/// The rows of the table in `tests/fixtures/hostile/README.md`: file, expected error, what the
/// message mentions.
fn readme_cases() -> Vec<(String, String, String)> {
    let readme = std::fs::read_to_string(hostile_dir().join("README.md")).unwrap();
    readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let unquote = |c: &str| {
                c.trim()
                    .trim_start_matches("| ")
                    .trim_matches('`')
                    .to_string()
            };
            (unquote(cells[0]), unquote(cells[1]), unquote(cells[2]))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The committed corpus
// ---------------------------------------------------------------------------------------------

#[test]
fn the_readme_describes_every_hostile_file() {
    let listed: Vec<String> = readme_cases().into_iter().map(|(f, _, _)| f).collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(hostile_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "README.md")
        .collect();
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk);
    assert!(listed.len() >= 60, "{}", listed.len());
}

#[test]
fn every_hostile_file_is_refused_by_validate_and_import() {
    let sb = Sandbox::with_demo();
    let mut problems = Vec::new();
    for (file, _, mentions) in readme_cases() {
        let path = hostile_dir().join(&file);
        problems.extend(sb.refusal_problems(&path, &mentions));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// All of them at once: one line (at least) per file, and still nothing imported.
#[test]
fn the_whole_corpus_at_once_is_refused() {
    let sb = Sandbox::with_demo();
    let before = files(&sb.store());
    let cases = readme_cases();
    let dir = hostile_dir();
    let out = sb.caf(&["validate", s(&dir)]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(
        out.out()
            .contains(&format!("0 valid, {} invalid", cases.len())),
        "{}",
        out.describe()
    );
    let good = fixtures().join("v1.0.0/minimal.json");
    let out = sb.caf(&["import", s(&good), s(&dir)]);
    assert_eq!(out.code, 1, "{}", out.describe());
    for (file, _, _) in &cases {
        let path = dir.join(file);
        assert!(
            out.err()
                .lines()
                .any(|l| l.starts_with("error: ") && l.contains(s(&path))),
            "{file} not named: {}",
            out.describe()
        );
    }
    assert!(
        out.err().contains(&format!(
            "nothing imported: {} of {} files are invalid",
            cases.len(),
            cases.len() + 1
        )),
        "{}",
        out.describe()
    );
    assert_eq!(files(&sb.store()), before);
}

/// Hostile files that got into the store directory are reported, not listed, and not changed.
#[test]
fn hostile_files_inside_the_store_are_skipped_with_a_warning() {
    let sb = Sandbox::with_demo();
    let ids = sb.list_ids();
    let cases = readme_cases();
    for (file, _, _) in &cases {
        std::fs::copy(hostile_dir().join(file), sb.store().join(file)).unwrap();
    }
    let before = files(&sb.store());
    let out = sb.caf(&["list"]);
    assert_eq!(out.code, 0, "{}", out.describe());
    let warnings = out
        .err()
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .count();
    assert_eq!(warnings, cases.len(), "{}", out.describe());
    for (file, _, _) in &cases {
        assert!(
            out.err().contains(file.as_str()),
            "{file}: {}",
            out.describe()
        );
    }
    assert_eq!(sb.list_ids(), ids);
    // validate of the store names every hostile file; the demo's files are fine.
    let out = sb.caf(&["validate", s(&sb.store())]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(
        out.out()
            .contains(&format!("{} valid, {} invalid", ids.len(), cases.len())),
        "{}",
        out.describe()
    );
    // A hostile file in the store, asked for by its name as an id, is an error, not a crash.
    let out = sb.caf(&["inspect", "checksum-mismatch-thought-edited"]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(out.err().contains("at /integrity"), "{}", out.describe());
    let out = sb.caf(&["export", "checksum-mismatch-thought-edited"]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(out.stdout.is_empty());
    // Valid checkpoints still work.
    let out = sb.caf(&["inspect", &ids[0]]);
    assert_eq!(out.code, 0, "{}", out.describe());
    assert_eq!(files(&sb.store()), before);
}

// ---------------------------------------------------------------------------------------------
// Generated files: too deep, too big
// ---------------------------------------------------------------------------------------------

#[test]
fn twenty_thousand_levels_of_nesting_are_refused() {
    let sb = Sandbox::with_demo();
    let n = 20_000;
    let docs = [
        ("arrays", format!("{}{}", "[".repeat(n), "]".repeat(n))),
        (
            "objects",
            format!("{}{}{}", "{\"a\":".repeat(n), "1", "}".repeat(n)),
        ),
        (
            "both",
            format!("{}{}{}", "{\"a\":[".repeat(n / 2), "1", "]}".repeat(n / 2)),
        ),
        (
            "in-a-checkpoint",
            format!(
                "{{\"version\": \"1.0.0\", \"snapshot\": {}{}}}",
                "[".repeat(n),
                "]".repeat(n)
            ),
        ),
    ];
    let mut problems = Vec::new();
    for (name, doc) in docs {
        let path = sb.path().join(format!("deep-{name}.json"));
        std::fs::write(&path, doc).unwrap();
        problems.extend(sb.refusal_problems(&path, "nesting deeper than"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// A valid-looking file one byte over the 64 MiB default limit is refused before it is read.
/// (A file exactly at the limit is left to the library tests: decoding 64 MiB in a debug build
/// is slow.)
#[test]
fn a_file_over_64_mib_is_refused() {
    let sb = Sandbox::with_demo();
    let limit: usize = 64 * 1024 * 1024;
    let minimal = std::fs::read(fixtures().join("v1.0.0/minimal.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&minimal).unwrap();
    doc["snapshot"]["context"]["variables"]["padding"] = "@PAD@".into();
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let (head, tail) = text.split_once("@PAD@").unwrap();
    let pad = limit + 1 - head.len() - tail.len();
    let path = sb.path().join("oversized.json");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        f.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        let mut left = pad;
        while left > 0 {
            let k = left.min(chunk.len());
            f.write_all(&chunk[..k]).unwrap();
            left -= k;
        }
        f.write_all(tail.as_bytes()).unwrap();
        f.flush().unwrap();
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), limit as u64 + 1);
    let problems = sb.refusal_problems(&path, "the limit is 67108864 bytes");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    let out = sb.caf(&["inspect", s(&path)]);
    assert!(
        out.refusal_problem(s(&path), "67108865").is_none(),
        "{}",
        out.describe()
    );
}

// ---------------------------------------------------------------------------------------------
// Not regular files
// ---------------------------------------------------------------------------------------------

#[cfg(unix)]
#[test]
fn a_symlink_in_the_store_is_not_followed() {
    let sb = Sandbox::with_demo();
    let ids = sb.list_ids();
    // A valid checkpoint outside the store, and a link to it inside, named like a checkpoint.
    let outside = sb.path().join("outside.json");
    std::fs::copy(fixtures().join("v1.0.0/minimal.json"), &outside).unwrap();
    let outside_bytes = std::fs::read(&outside).unwrap();
    let link = sb.store().join("ckpt_golden_minimal.json");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let before = files(&sb.store());

    let out = sb.caf(&["inspect", "ckpt_golden_minimal"]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(
        out.err().contains("not a regular file"),
        "{}",
        out.describe()
    );
    assert!(
        out.err().contains("ckpt_golden_minimal"),
        "{}",
        out.describe()
    );
    assert!(out.stdout.is_empty());
    let out = sb.caf(&["inspect", s(&link)]);
    assert!(
        out.refusal_problem(s(&link), "not a regular file")
            .is_none(),
        "{}",
        out.describe()
    );
    let problems = sb.refusal_problems(&link, "not a regular file");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    let out = sb.caf(&["export", "ckpt_golden_minimal"]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(out.stdout.is_empty());
    // Listing skips it with a warning; deleting does not touch what it points to.
    let out = sb.caf(&["list"]);
    assert_eq!(out.code, 0, "{}", out.describe());
    assert!(
        out.err().contains("not a regular file"),
        "{}",
        out.describe()
    );
    assert_eq!(sb.list_ids(), ids);
    let out = sb.caf(&["validate", s(&sb.store())]);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(
        out.out().contains("3 valid, 1 invalid"),
        "{}",
        out.describe()
    );

    assert_eq!(files(&sb.store()), before);
    assert_eq!(std::fs::read(&outside).unwrap(), outside_bytes);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // Deleting it may remove the link from the store, never what it points to.
    let out = sb.caf(&["delete", "ckpt_golden_minimal"]);
    assert!(out.code == 0 || out.code == 1, "{}", out.describe());
    assert_eq!(std::fs::read(&outside).unwrap(), outside_bytes);
    assert_eq!(sb.list_ids(), ids);
}

#[cfg(unix)]
#[test]
fn devices_fifos_and_directories_are_not_read() {
    let sb = Sandbox::with_demo();
    let dev_zero = Path::new("/dev/zero");
    if dev_zero.exists() {
        let problems = sb.refusal_problems(dev_zero, "not a regular file (a special file)");
        assert!(problems.is_empty(), "{}", problems.join("\n\n"));
        let out = sb.caf(&["inspect", "/dev/zero"]);
        assert_eq!(out.code, 1, "{}", out.describe());
    }
    // A FIFO with no writer: opening it would block forever.
    let fifo = sb.path().join("fifo.json");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if made {
        let problems = sb.refusal_problems(&fifo, "not a regular file (a special file)");
        assert!(problems.is_empty(), "{}", problems.join("\n\n"));
        let out = sb.caf(&["inspect", s(&fifo)]);
        assert_eq!(out.code, 1, "{}", out.describe());
        // Inside a directory given to validate, too.
        let out = sb.caf(&["validate", s(sb.path())]);
        assert_eq!(out.code, 1, "{}", out.describe());
        assert!(out.err().contains(s(&fifo)), "{}", out.describe());
    } else {
        eprintln!("mkfifo is not available: FIFO case skipped");
    }
    // A directory named like a checkpoint file, given as a path.
    let dir = sb.path().join("dir.json");
    std::fs::create_dir(&dir).unwrap();
    let out = sb.caf(&["inspect", s(&dir)]);
    assert!(
        out.refusal_problem(s(&dir), "not a regular file (a directory)")
            .is_none(),
        "{}",
        out.describe()
    );
}
