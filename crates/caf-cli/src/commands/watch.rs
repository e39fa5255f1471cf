//! `caf watch [-- COMMAND…]`: periodic capture of a session (seed 003), and `caf watch
//! summary`. The library does the capturing (`caf_core::capture`); this runs the command,
//! listens for signals, and presents.

use super::execution_id;
use crate::cli::{WatchAction, WatchArgs};
use crate::output::{self, BOLD, DIM, RED};
use crate::supervise::Supervisor;
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::capture::{
    format_duration, latest_session, summarize, Ending, FilesModified, GitStatus, PeriodicCapture,
    ProcessMemory, StateDir, Summary, WatchEvent, AGENT_ID,
};
use caf_core::{CheckpointStore, ExecutionId};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Runs `caf watch` or `caf watch summary`.
pub fn run(t: &Target, json: bool, a: &WatchArgs) -> CmdResult {
    if let Some(WatchAction::Summary { session }) = &a.action {
        return summary(t, json, session.as_deref());
    }
    let session = a.session.as_deref().map(execution_id).transpose()?;
    let project = a.project.clone().unwrap_or_else(|| PathBuf::from("."));
    if !project.is_dir() {
        return Err(Failure::msg(format!(
            "{}: not a directory (--project)",
            project.display()
        )));
    }
    if let Some(dir) = a.state_dir.as_ref().filter(|d| !d.is_dir()) {
        output::warn_line(&format!(
            "{}: no such directory yet (--state-dir); each capture records that until it appears",
            dir.display()
        ));
    }
    let store = t.open_or_create_journaled()?;
    // Captures must not count the store's own files as changes to the project.
    let own = store.files().and_then(|f| inside(f.root(), &project));

    let mut supervisor = Supervisor::listen().map_err(Failure::msg)?;
    let mut git = GitStatus::new(&project);
    let mut modified = FilesModified::new(&project);
    if let Some(own) = &own {
        git = git.exclude(own);
        modified = modified.exclude(own);
    }
    // The files modified are counted from the project as it is before the command starts (a
    // project that is not a repository is recorded as the probe's error in each capture).
    let _ = modified.mark_start();
    let pid = if a.command.is_empty() {
        None
    } else {
        Some(supervisor.spawn(&a.command).map_err(Failure::msg)?)
    };
    let mut builder = PeriodicCapture::builder(store)
        .interval(a.interval)
        .save_unchanged(a.always)
        .probe(git)
        .probe(modified)
        .probe(ProcessMemory::new(pid))
        .on_event(progress);
    if let Some(dir) = &a.state_dir {
        builder = builder.probe(StateDir::new(dir));
    }
    if let Some(session) = session {
        builder = builder.session(session);
    }
    if !a.command.is_empty() {
        let argv = a
            .command
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        builder = builder.command(argv, pid);
    }
    let watch = builder.build()?;
    let mut note = |m: &str| say_err(m);
    let stopped = watch.run(|due_in| supervisor.wait(due_in, &mut note))?;
    print_summary(json, &stopped.summary);
    // caf ends as its command did, so that a script running `caf watch -- agent` sees the
    // agent's status.
    match stopped.ending {
        Ending::Exited {
            code: Some(code), ..
        } if code != 0 => Err(Failure::Status(u8::try_from(code & 0xff).unwrap_or(1))),
        Ending::Exited {
            code: None,
            signal: Some(sig),
        } => Err(Failure::Status(
            u8::try_from((128 + i64::from(sig)).clamp(1, 255)).unwrap_or(1),
        )),
        // Exited with 0 or without a status, or the watch was stopped.
        _ => Ok(()),
    }
}

/// `dir` relative to `project`, when it lies inside it.
fn inside(dir: &Path, project: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    let project = project.canonicalize().ok()?;
    dir.strip_prefix(&project)
        .ok()
        .filter(|rel| !rel.as_os_str().is_empty())
        .map(Path::to_path_buf)
}

/// A line on stderr (stdout belongs to the watched command).
fn say_err(m: &str) {
    let mut err = anstream::stderr();
    let _ = writeln!(err, "{DIM}caf watch:{DIM:#} {m}");
}

/// What the watch says as it goes, on stderr.
fn progress(event: &WatchEvent<'_>) {
    match event {
        WatchEvent::Started {
            session,
            interval,
            resumed_after,
        } => {
            let resumed =
                resumed_after.map_or(String::new(), |n| format!(", continuing after capture {n}"));
            say_err(&format!(
                "session {session}{resumed}: a capture every {}",
                interval_text(*interval)
            ));
        }
        WatchEvent::Checkpoint(c) => {
            let files = c
                .checkpoint
                .snapshot
                .context
                .state
                .get("files_modified")
                .and_then(|f| f["count"].as_u64())
                .unwrap_or(0);
            say_err(&format!(
                "capture {} ({}) {}: {} modified",
                c.number,
                c.trigger.as_str(),
                c.checkpoint.id,
                output::count(files, "file")
            ));
        }
        WatchEvent::Failed { trigger, error } => output::warn_line(&format!(
            "the {} capture was not saved: {error}; still watching",
            trigger.as_str()
        )),
        _ => {}
    }
}

/// `15m`, `30s`, `500ms`.
fn interval_text(d: std::time::Duration) -> String {
    if d.subsec_millis() != 0 || d.as_secs() == 0 {
        return format!("{}ms", d.as_millis());
    }
    caf_core::duration::Duration::from_secs(d.as_secs()).to_string()
}

/// `caf watch summary`.
fn summary(t: &Target, json: bool, session: Option<&str>) -> CmdResult {
    let store = t.open_existing()?;
    let store: &dyn CheckpointStore = &**store;
    let session: ExecutionId = match session {
        Some(s) => execution_id(s)?,
        None => latest_session(store, AGENT_ID)?
            .ok_or_else(|| Failure::msg(format!("no watch session in {}", t.describe())))?,
    };
    let summary = summarize(store, &session)?;
    print_summary(json, &summary);
    Ok(())
}

/// How the command ended, in words.
fn ending_text(command: &serde_json::Value) -> Option<String> {
    if command.is_null() {
        return None;
    }
    let argv: Vec<&str> = command["argv"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default();
    let what = if argv.is_empty() {
        "the command".to_string()
    } else {
        format!("`{}`", argv.join(" "))
    };
    Some(
        match (command["exit_code"].as_i64(), command["signal"].as_i64()) {
            (Some(code), _) => format!("{what} exited with status {code}"),
            (None, Some(sig)) => format!("{what} was killed by signal {sig}"),
            _ => format!(
                "{what}: {}",
                command["status"].as_str().unwrap_or("no exit status")
            ),
        },
    )
}

/// Prints a summary: JSON, or a few lines and a table of captures.
fn print_summary(json: bool, s: &Summary) {
    if json {
        output::print_json(s);
        return;
    }
    let ending = ending_text(&s.command).map_or(String::new(), |e| format!("; {e}"));
    output::note_stdout(writeln!(
        anstream::stdout(),
        "{BOLD}session {}{BOLD:#}: {} over {}{ending}",
        s.session,
        output::count(s.total, "capture"),
        format_duration(s.total_duration_ms)
    ));
    crate::say!(
        "files modified: {}",
        if s.files_modified.is_empty() {
            "none".to_string()
        } else {
            s.files_modified.len().to_string()
        }
    );
    for f in &s.files_modified {
        crate::say!("  {f}");
    }
    let mut table = output::Table::new(&[
        "#",
        "trigger",
        "checkpoint",
        "elapsed",
        "modified",
        "git M/S/U",
        "state",
        "errors",
    ]);
    for r in &s.captures {
        let git = r.git.map_or("-".to_string(), |g| {
            format!("{}/{}/{}", g.modified, g.staged, g.untracked)
        });
        let errors = r
            .errors
            .iter()
            .map(|(probe, _)| probe.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let plain = anstyle::Style::new();
        table.row(vec![
            (r.number.to_string(), plain),
            (r.trigger.clone(), plain),
            (r.id.to_string(), output::CYAN),
            (format_duration(r.duration_ms), plain),
            (r.files_modified.to_string(), plain),
            (git, plain),
            (
                r.state_dir_files.map_or("-".to_string(), |n| n.to_string()),
                plain,
            ),
            (errors, RED),
        ]);
    }
    table.print();
}
