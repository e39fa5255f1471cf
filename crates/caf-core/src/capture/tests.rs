//! Periodic capture on a simulated clock: when captures are taken and saved, what they hold,
//! events, probes that fail, sessions continued, the summary; the git probes on a repository
//! made here.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::clock::SimulatedClock;
use crate::store::{FileStore, ListFilter};
use std::sync::Mutex;

const MINUTE_MS: u64 = 60_000;

/// A probe whose reading is whatever the test last set.
#[derive(Clone)]
struct Dial(Arc<Mutex<Value>>, &'static str, bool);

impl Dial {
    fn new(name: &'static str, tracks: bool) -> Self {
        Self(Arc::new(Mutex::new(json!(0))), name, tracks)
    }
    fn set(&self, v: Value) {
        *self.0.lock().unwrap() = v;
    }
}

impl Probe for Dial {
    fn name(&self) -> &str {
        self.1
    }
    fn read(&mut self) -> std::result::Result<Value, ProbeError> {
        Ok(self.0.lock().unwrap().clone())
    }
    fn tracks_change(&self) -> bool {
        self.2
    }
}

/// A probe that always fails.
struct Broken;

impl Probe for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn read(&mut self) -> std::result::Result<Value, ProbeError> {
        Err(ProbeError::Unsupported("looking at nothing"))
    }
}

fn clock() -> Arc<SimulatedClock> {
    Arc::new(SimulatedClock::starting_at(Timestamp::from_micros(
        1_767_000_000_000_000,
    )))
}

fn store() -> (tempfile::TempDir, FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    (dir, store)
}

#[test]
fn captures_at_the_start_at_each_interval_and_at_the_end_with_the_exit_status() {
    let (_dir, store) = store();
    let clock = clock();
    let dial = Dial::new("dial", true);
    let memory = Dial::new("memory", false);
    let mut watch = PeriodicCapture::builder(&store)
        .interval(Duration::from_secs(15 * 60))
        .probe(dial.clone())
        .probe(memory.clone())
        .clock(clock.clone())
        .command(vec!["agent".into(), "--task".into(), "x".into()], Some(42))
        .build()
        .unwrap();
    let first = watch.start().unwrap();
    assert_eq!((first.number, first.trigger), (1, Trigger::Start));
    let due = watch.due_in();
    assert!(
        due <= Duration::from_secs(900) && due > Duration::from_secs(899),
        "{due:?}"
    );

    clock.advance_ms(14 * MINUTE_MS);
    assert!(watch.tick().unwrap().is_none(), "not due yet");
    clock.advance_ms(MINUTE_MS);
    dial.set(json!(1));
    memory.set(json!(1234));
    let second = watch.tick().unwrap().expect("due, and the dial moved");
    assert_eq!((second.number, second.trigger), (2, Trigger::Interval));
    let state = &second.checkpoint.snapshot.context.state;
    assert_eq!(state["dial"], 1);
    assert_eq!(state["memory"], 1234, "volatile readings ride along");

    clock.advance_ms(7 * MINUTE_MS);
    let stopped = watch
        .stop(Ending::Exited {
            code: Some(3),
            signal: None,
        })
        .unwrap();
    let last = &stopped.final_capture;
    assert_eq!((last.number, last.trigger), (3, Trigger::Exit));
    let c = &last.checkpoint;
    assert_eq!(c.metadata.checkpoint_reason, CheckpointReason::Error);
    assert_eq!(c.metadata.step_number, 3);
    assert_eq!(c.metadata.labels, ["capture-3", "watch"]);
    assert_eq!(c.agent_id, AGENT_ID);
    let command = &c.snapshot.context.state["command"];
    assert_eq!(command["exit_code"], 3);
    assert_eq!(command["status"], "exited");
    assert_eq!(command["argv"], json!(["agent", "--task", "x"]));
    assert_eq!(
        c.snapshot.progress.last_error.as_ref().unwrap().message,
        "the command exited with status 3"
    );
    assert_eq!(c.snapshot.progress.task.as_deref(), Some("agent --task x"));

    // The summary: returned, saved in the last capture, and the same read back from the store.
    let summary = &stopped.summary;
    assert_eq!(summary.total, 3);
    assert_eq!(summary.total_duration, "22m 0s");
    assert_eq!(summary.command["exit_code"], 3);
    assert_eq!(
        summary
            .captures
            .iter()
            .map(|r| r.trigger.as_str())
            .collect::<Vec<_>>(),
        ["start", "interval", "exit"]
    );
    let saved: Summary =
        serde_json::from_value(c.snapshot.context.state["summary"].clone()).unwrap();
    assert_eq!(&saved, summary);
    assert_eq!(&summarize(&store, &summary.session).unwrap(), summary);
    assert_eq!(
        latest_session(&store, AGENT_ID).unwrap().as_ref(),
        Some(&summary.session)
    );

    // Every capture is an ordinary checkpoint of one execution, a line of parents.
    let listed = store
        .list(&ListFilter::execution(&summary.session))
        .unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].parent_id.as_ref(), Some(&listed[1].id));
    assert_eq!(listed[1].parent_id.as_ref(), Some(&listed[2].id));
}

#[test]
fn an_unchanged_state_is_not_saved_again_unless_asked() {
    for save_unchanged in [false, true] {
        let (_dir, store) = store();
        let clock = clock();
        let dial = Dial::new("dial", true);
        let memory = Dial::new("memory", false);
        let mut watch = PeriodicCapture::builder(&store)
            .interval(Duration::from_secs(60))
            .probe(dial.clone())
            .probe(memory.clone())
            .clock(clock.clone())
            .save_unchanged(save_unchanged)
            .build()
            .unwrap();
        watch.start().unwrap();
        clock.advance_ms(MINUTE_MS);
        memory.set(json!(99)); // memory alone is no change
        let tick = watch.tick().unwrap();
        assert_eq!(tick.is_some(), save_unchanged);
        clock.advance_ms(MINUTE_MS);
        dial.set(json!("moved"));
        assert!(watch.tick().unwrap().is_some(), "a tracked change is saved");
        let stopped = watch.stop(Ending::Stopped { signal: None }).unwrap();
        assert_eq!(stopped.summary.total, if save_unchanged { 4 } else { 3 });
        let last = &stopped.final_capture.checkpoint;
        assert_eq!(last.metadata.checkpoint_reason, CheckpointReason::Completed);
        assert_eq!(last.snapshot.context.variables["stopped_by"], "owner");
    }
}

#[test]
fn missed_intervals_are_skipped_not_made_up() {
    let (_dir, store) = store();
    let clock = clock();
    let dial = Dial::new("dial", true);
    let mut watch = PeriodicCapture::builder(&store)
        .interval(Duration::from_secs(60))
        .probe(dial.clone())
        .clock(clock.clone())
        .build()
        .unwrap();
    watch.start().unwrap();
    clock.advance_ms(10 * MINUTE_MS + 30_000); // asleep for ten intervals
    dial.set(json!(1));
    assert!(watch.tick().unwrap().is_some());
    dial.set(json!(2));
    assert!(
        watch.tick().unwrap().is_none(),
        "the next is a whole interval on"
    );
    let left = watch.due_in();
    assert!(
        left <= Duration::from_secs(30) && left > Duration::from_secs(29),
        "{left:?}"
    );
}

#[test]
fn a_failing_probe_records_its_error_and_the_watch_goes_on() {
    let (_dir, store) = store();
    let clock = clock();
    let mut watch = PeriodicCapture::builder(&store)
        .probe(Broken)
        .clock(clock.clone())
        .build()
        .unwrap();
    let first = watch.start().unwrap();
    assert_eq!(
        first.checkpoint.snapshot.context.state["broken"],
        json!({"error": "looking at nothing is not supported on this platform"})
    );
    let stopped = watch
        .stop(Ending::Stopped {
            signal: Some("SIGTERM".into()),
        })
        .unwrap();
    assert_eq!(stopped.summary.total, 2);
    assert_eq!(
        stopped.summary.captures[0].errors,
        [(
            "broken".to_string(),
            "looking at nothing is not supported on this platform".to_string()
        )]
    );
    assert_eq!(
        stopped.final_capture.checkpoint.snapshot.context.variables["stopped_by"],
        "SIGTERM"
    );
}

#[test]
fn events_and_callbacks_come_in_order() {
    let (_dir, store) = store();
    let clock = clock();
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let numbers = Arc::new(Mutex::new(Vec::<u64>::new()));
    let (e, n) = (Arc::clone(&events), Arc::clone(&numbers));
    let dial = Dial::new("dial", true);
    let watch = PeriodicCapture::builder(&store)
        .interval(Duration::from_secs(60))
        .probe(dial.clone())
        .clock(clock.clone())
        .on_event(move |ev| {
            e.lock().unwrap().push(match ev {
                WatchEvent::Started { interval, .. } => format!("started {}s", interval.as_secs()),
                WatchEvent::Checkpoint(c) => format!("checkpoint {}", c.number),
                WatchEvent::Failed { .. } => "failed".into(),
                WatchEvent::Stopped { summary, .. } => format!("stopped {}", summary.total),
            })
        })
        .on_checkpoint(move |c| n.lock().unwrap().push(c.number))
        .build()
        .unwrap();
    let mut round = 0;
    watch
        .run(|due_in| {
            clock.advance_ms(due_in.as_millis() as u64 + 1);
            round += 1;
            dial.set(json!(round));
            (round == 3).then_some(Ending::Exited {
                code: Some(0),
                signal: None,
            })
        })
        .unwrap();
    assert_eq!(
        *events.lock().unwrap(),
        [
            "started 60s",
            "checkpoint 1",
            "checkpoint 2",
            "checkpoint 3",
            "checkpoint 4",
            "stopped 4"
        ]
    );
    assert_eq!(*numbers.lock().unwrap(), [1, 2, 3, 4]);
}

#[test]
fn a_session_continues_where_it_left_off() {
    let (_dir, store) = store();
    let clock = clock();
    let session = ExecutionId::new("watch_again").unwrap();
    let build = || {
        PeriodicCapture::builder(&store)
            .session(session.clone())
            .probe(Dial::new("dial", true))
            .clock(clock.clone())
            .build()
            .unwrap()
    };
    let mut first = build();
    first.start().unwrap();
    clock.advance_ms(MINUTE_MS);
    first.stop(Ending::Stopped { signal: None }).unwrap();
    let mut again = build();
    assert_eq!(again.captures(), 2);
    let c = again.start().unwrap();
    assert_eq!(c.number, 3);
    assert!(c.checkpoint.snapshot.context.state.get("summary").is_none());
    clock.advance_ms(MINUTE_MS);
    let stopped = again.stop(Ending::Stopped { signal: None }).unwrap();
    assert_eq!(stopped.summary.total, 4);
    assert_eq!(stopped.summary.total_duration, "2m 0s");
}

#[test]
fn a_session_cut_short_still_has_a_summary() {
    let (_dir, store) = store();
    let clock = clock();
    let mut watch = PeriodicCapture::builder(&store)
        .probe(Dial::new("dial", true))
        .clock(clock.clone())
        .build()
        .unwrap();
    watch.start().unwrap();
    let session = watch.session().clone();
    drop(watch); // a crash: no last capture
    let summary = summarize(&store, &session).unwrap();
    assert_eq!(summary.total, 1);
    assert_eq!(summary.command, Value::Null);
    assert!(matches!(
        summarize(&store, &ExecutionId::new("watch_none").unwrap()),
        Err(Error::NotFound { .. })
    ));
}

/// Runs `git` in `dir`, failing the test if it fails.
fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_git_probes_follow_a_repository() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "T"]);
    std::fs::write(dir.join("a.txt"), "a").unwrap();
    std::fs::create_dir(dir.join("checkpoints")).unwrap();
    std::fs::write(dir.join("checkpoints/x.json"), "{}").unwrap();

    // No commit yet.
    let mut status = GitStatus::new(dir).exclude("checkpoints");
    let v = status.read().unwrap();
    assert_eq!(v["head"], Value::Null);
    assert_eq!(v["last_commit"], Value::Null);
    assert_eq!(
        v["untracked"],
        json!(["a.txt"]),
        "the excluded directory is left out"
    );

    git(dir, &["add", "a.txt"]);
    git(dir, &["commit", "-q", "-m", "first"]);
    // Dirty before the watch starts: a change and an untracked file, counted only once they
    // change again.
    std::fs::write(dir.join("a.txt"), "dirty before").unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let mut files = FilesModified::new(dir).exclude("checkpoints");
    let v = files.read().unwrap();
    assert_eq!(v["count"], 0, "{v}");
    assert!(v["since"].is_string());
    assert_eq!(
        String::from_utf8(
            std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["stash", "list"])
                .output()
                .unwrap()
                .stdout
        )
        .unwrap(),
        "",
        "the snapshot of the start touches no stash"
    );
    std::fs::remove_file(dir.join("notes.txt")).unwrap();

    std::fs::write(dir.join("a.txt"), "changed").unwrap();
    std::fs::write(dir.join("b.txt"), "new").unwrap();
    std::fs::write(dir.join("c.txt"), "staged").unwrap();
    git(dir, &["add", "c.txt"]);
    let v = status.read().unwrap();
    assert_eq!(v["branch"], "main");
    assert_eq!(v["modified"], json!(["a.txt"]));
    assert_eq!(v["staged"], json!(["c.txt"]));
    assert_eq!(v["untracked"], json!(["b.txt"]));
    assert_eq!(v["last_commit"]["summary"], "first");
    assert_eq!(
        files.read().unwrap()["files"],
        json!(["a.txt", "b.txt", "c.txt"])
    );

    // Committed, the changes leave the status but stay modified since the start; a file
    // changed and changed back still counts.
    git(dir, &["add", "-A", "."]);
    git(dir, &["commit", "-q", "-m", "second"]);
    std::fs::write(dir.join("d.txt"), "brief").unwrap();
    let v = files.read().unwrap();
    assert_eq!(v["files"], json!(["a.txt", "b.txt", "c.txt", "d.txt"]));
    std::fs::remove_file(dir.join("d.txt")).unwrap();
    assert_eq!(files.read().unwrap()["count"], 4);
    let last = files.read().unwrap();
    let v = status.read().unwrap();
    assert_eq!(v["modified_count"], 0);
    assert_eq!(v["last_commit"]["summary"], "second");

    // A continued session picks up the files and the starting commit.
    let mut resumed = FilesModified::new(dir).exclude("checkpoints");
    resumed.resume(&last);
    assert_eq!(resumed.read().unwrap()["count"], 4);

    // Not a repository: an error, recorded by the capture.
    let plain = tempfile::tempdir().unwrap();
    let err = GitStatus::new(plain.path()).read().unwrap_err().to_string();
    assert!(err.contains("not a git repository"), "{err}");
}

#[test]
fn the_state_directory_is_listed_with_sizes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("requirements")).unwrap();
    std::fs::write(dir.path().join("requirements/UC-001.md"), vec![b'x'; 2048]).unwrap();
    std::fs::write(dir.path().join("plan.md"), vec![b'y'; 1024]).unwrap();
    let v = StateDir::new(dir.path()).read().unwrap();
    assert_eq!(
        v["files"],
        json!({"plan.md": 1024, "requirements/UC-001.md": 2048})
    );
    assert_eq!(v["count"], 2);
    assert_eq!(v["bytes"], 3072);
    let err = StateDir::new(dir.path().join("missing"))
        .read()
        .unwrap_err();
    assert!(matches!(err, ProbeError::Io { .. }));
}
