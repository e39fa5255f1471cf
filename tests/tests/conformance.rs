//! The store conformance suite on [`MemoryStore`] and [`FileStore`], plus what is specific to
//! each: the memory store's per-execution limit and defensive copies; the file store's index,
//! cross-instance visibility, recovery, hostile files and deterministic output.

#![allow(clippy::unwrap_used)]

use caf_core::format::{encode, LoadError};
use caf_core::store::FileStore;
use caf_core::{CheckpointStore, Error, ListFilter, MemoryStore};
use caf_tests::gen::{checkpoint, ckpt_id, exec_id, full_checkpoint, CheckpointBuilder};
use caf_tests::{dir_entries, json_file_ids, TempFileStore};
use std::path::Path;

mod memory_store {
    caf_tests::conformance_tests!(caf_core::MemoryStore::new);
}

mod file_store {
    caf_tests::conformance_tests!(caf_tests::TempFileStore::new);
}

#[test]
fn run_all_works_with_a_closure() {
    caf_tests::conformance::run_all(&|| MemoryStore::with_max_per_execution(1000));
}

fn ids<S: CheckpointStore>(store: &S, filter: &ListFilter) -> Vec<String> {
    store
        .list(filter)
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect()
}

fn is_not_found<T: std::fmt::Debug>(r: caf_core::Result<T>) -> bool {
    matches!(r, Err(Error::NotFound { .. }))
}

// ---- MemoryStore -----------------------------------------------------------------------------

#[test]
fn memory_default_limit_of_10_evicts_the_oldest() {
    let store = MemoryStore::new();
    for i in 0..12 {
        store
            .save(&checkpoint(&format!("ckpt_{i:02}"), "exec_fifo", i * 1000))
            .unwrap();
    }
    for i in 0..3 {
        store
            .save(&checkpoint(&format!("ckpt_other_{i}"), "exec_other", i))
            .unwrap();
    }
    let kept = ids(&store, &ListFilter::execution(&exec_id("exec_fifo")));
    let want: Vec<String> = (2..12).rev().map(|i| format!("ckpt_{i:02}")).collect();
    assert_eq!(kept, want, "the 10 newest are kept");
    assert!(is_not_found(store.load(&ckpt_id("ckpt_00"))));
    assert!(is_not_found(store.load(&ckpt_id("ckpt_01"))));
    assert!(store.load(&ckpt_id("ckpt_02")).is_ok());
    assert_eq!(
        ids(&store, &ListFilter::execution(&exec_id("exec_other"))).len(),
        3,
        "the limit is per execution"
    );
    assert_eq!(
        store.delete_execution(&exec_id("exec_fifo")).unwrap(),
        10,
        "evicted checkpoints are really gone"
    );
}

#[test]
fn memory_custom_limit() {
    let store = MemoryStore::with_max_per_execution(3);
    for i in 0..5 {
        store
            .save(&checkpoint(&format!("ckpt_{i}"), "exec_x", i))
            .unwrap();
        let n = ids(&store, &ListFilter::default()).len();
        assert_eq!(n, (i as usize + 1).min(3));
    }
    assert_eq!(
        ids(&store, &ListFilter::default()),
        vec!["ckpt_4", "ckpt_3", "ckpt_2"]
    );
    // A limit of 0 means 1: the newest is always kept.
    let store = MemoryStore::with_max_per_execution(0);
    for i in 0..3 {
        store
            .save(&checkpoint(&format!("ckpt_{i}"), "exec_x", i))
            .unwrap();
    }
    assert_eq!(ids(&store, &ListFilter::default()), vec!["ckpt_2"]);
}

#[test]
fn memory_overwrite_neither_duplicates_nor_evicts() {
    let store = MemoryStore::with_max_per_execution(3);
    for i in 0..3 {
        store
            .save(&checkpoint(&format!("ckpt_{i}"), "exec_x", i))
            .unwrap();
    }
    let changed = CheckpointBuilder::new("ckpt_1")
        .execution("exec_x")
        .at_ms(1)
        .label("changed")
        .build();
    for _ in 0..5 {
        store.save(&changed).unwrap();
    }
    assert_eq!(
        ids(&store, &ListFilter::default()),
        vec!["ckpt_2", "ckpt_1", "ckpt_0"]
    );
    assert_eq!(store.load(&ckpt_id("ckpt_1")).unwrap(), changed);
}

#[test]
fn memory_store_keeps_defensive_copies() {
    let store = MemoryStore::new();
    let original = full_checkpoint("ckpt_copy", "exec_copy");
    let mut mine = original.clone();
    store.save(&mine).unwrap();
    // Changing the value that was saved does not change the stored one.
    std::sync::Arc::make_mut(&mut mine.snapshot.thought_chain.thoughts[0]).content =
        "changed".into();
    mine.snapshot
        .context
        .variables
        .insert("new".into(), serde_json::json!(1));
    mine.metadata.labels.push("new".into());
    assert_eq!(store.load(&ckpt_id("ckpt_copy")).unwrap(), original);
    // Neither does changing a loaded copy.
    let mut loaded = store.load(&ckpt_id("ckpt_copy")).unwrap();
    loaded.snapshot.tool_state.calls.clear();
    assert_eq!(store.load(&ckpt_id("ckpt_copy")).unwrap(), original);
    assert_eq!(store.latest(&exec_id("exec_copy")).unwrap(), Some(original));
}

#[test]
fn memory_store_refuses_what_a_file_could_not_hold() {
    let store = MemoryStore::new();
    let bad = CheckpointBuilder::new("ckpt_bad")
        .thought("reasoning", "x")
        .with(|c| {
            std::sync::Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).confidence =
                Some(1.5)
        })
        .build();
    assert!(matches!(store.save(&bad), Err(Error::Encode { .. })));
    assert!(ids(&store, &ListFilter::default()).is_empty());
}

// ---- FileStore -------------------------------------------------------------------------------

fn file_of(store: &FileStore, id: &str) -> std::path::PathBuf {
    store.path_of(&ckpt_id(id))
}

fn replace_in_file(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} holds {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn file_list_comes_from_the_index_without_opening_files() {
    let store = TempFileStore::new();
    for i in 0..3 {
        store
            .save(&checkpoint(&format!("ckpt_{i}"), "exec_idx", i))
            .unwrap();
    }
    let before = store.list(&ListFilter::default()).unwrap();
    // Ruin one file behind the store's back (another size, another mtime, not JSON at all).
    std::fs::write(file_of(&store, "ckpt_1"), b"\0\0 not a checkpoint").unwrap();
    // The open store still lists it from its index: listing did not read the file...
    assert_eq!(store.list(&ListFilter::default()).unwrap(), before);
    // ...while loading it does, and reports the damage.
    match store.load(&ckpt_id("ckpt_1")) {
        Err(Error::Load {
            error: LoadError::Syntax { .. },
            ..
        }) => {}
        other => panic!("expected a syntax error, got {other:?}"),
    }
    // A store opened afterwards reconciles: the broken file is a problem, not a listing.
    let reopened = FileStore::open(store.path()).unwrap();
    assert_eq!(reopened.problems().len(), 1);
    assert_eq!(reopened.problems()[0].path, file_of(&store, "ckpt_1"));
    assert_eq!(
        ids(&reopened, &ListFilter::default()),
        vec!["ckpt_2", "ckpt_0"]
    );
}

#[test]
fn file_open_trusts_the_index_for_unchanged_files() {
    let store = TempFileStore::new();
    for i in 0..3 {
        store
            .save(&checkpoint(&format!("ckpt_{i}"), "exec_trust", i))
            .unwrap();
    }
    let before = store.list(&ListFilter::default()).unwrap();
    // Damage a file without changing its size or modification time: a store opened now can
    // only notice by reading the file, which it must not need to do for an indexed one.
    let path = file_of(&store, "ckpt_1");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    replace_in_file(&path, "thinking in", "thinkinG in");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let reopened = FileStore::open(store.path()).unwrap();
    assert!(
        reopened.problems().is_empty(),
        "open re-read an indexed, unchanged file: {:?}",
        reopened.problems()
    );
    assert_eq!(reopened.list(&ListFilter::default()).unwrap(), before);
    // Loading reads the file, and the checksum catches the change.
    assert!(matches!(
        reopened.load(&ckpt_id("ckpt_1")),
        Err(Error::Load {
            error: LoadError::Corrupted { .. },
            ..
        })
    ));
}

#[test]
fn file_second_instance_sees_the_first_ones_changes() {
    let a = TempFileStore::new();
    let b = FileStore::open(a.path()).unwrap();
    let x = checkpoint("ckpt_x", "exec_shared", 1);
    a.save(&x).unwrap();
    assert_eq!(ids(&b, &ListFilter::default()), vec!["ckpt_x"]);
    assert_eq!(b.load(&ckpt_id("ckpt_x")).unwrap(), x);
    assert_eq!(b.latest(&exec_id("exec_shared")).unwrap(), Some(x.clone()));
    let y = checkpoint("ckpt_y", "exec_shared", 2);
    b.save(&y).unwrap();
    assert_eq!(ids(&*a, &ListFilter::default()), vec!["ckpt_y", "ckpt_x"]);
    // An overwrite by one is seen by the other.
    let x2 = CheckpointBuilder::new("ckpt_x")
        .execution("exec_shared")
        .at_ms(3)
        .label("v2")
        .build();
    b.save(&x2).unwrap();
    let listed = a.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].labels, vec!["v2".to_string()]);
    assert!(a.delete(&ckpt_id("ckpt_y")).unwrap());
    assert_eq!(ids(&b, &ListFilter::default()), vec!["ckpt_x"]);
    assert_eq!(b.delete_execution(&exec_id("exec_shared")).unwrap(), 1);
    assert!(ids(&*a, &ListFilter::default()).is_empty());
    // A third instance, opened on a store that two others have written to, agrees.
    let c = FileStore::open(a.path()).unwrap();
    assert!(c.problems().is_empty());
    assert!(ids(&c, &ListFilter::default()).is_empty());
}

#[test]
fn file_reopening_rebuilds_a_deleted_or_damaged_index() {
    let store = TempFileStore::new();
    for i in 0..5 {
        store
            .save(&checkpoint(&format!("ckpt_{i}"), "exec_re", i))
            .unwrap();
    }
    store
        .save(&full_checkpoint("ckpt_full", "exec_re"))
        .unwrap();
    let before = store.list(&ListFilter::default()).unwrap();
    let meta = store.path().join(".caf");
    assert!(meta.is_dir());

    std::fs::remove_dir_all(&meta).unwrap();
    let reopened = FileStore::open(store.path()).unwrap();
    assert!(reopened.problems().is_empty());
    assert_eq!(reopened.list(&ListFilter::default()).unwrap(), before);
    assert!(meta.join("index.jsonl").is_file(), "the index is rebuilt");
    drop(reopened);

    // A garbage index is no worse than none.
    std::fs::write(
        meta.join("index.jsonl"),
        b"garbage\n{\"op\":\"put\"}\n\xff\xfe\n",
    )
    .unwrap();
    let reopened = FileStore::open(store.path()).unwrap();
    assert_eq!(reopened.list(&ListFilter::default()).unwrap(), before);
    drop(reopened);

    // A stale index (a file removed behind its back) is corrected on open.
    std::fs::remove_file(file_of(&store, "ckpt_2")).unwrap();
    let reopened = FileStore::open(store.path()).unwrap();
    let want: Vec<_> = before
        .iter()
        .filter(|s| s.id.as_str() != "ckpt_2")
        .cloned()
        .collect();
    assert_eq!(reopened.list(&ListFilter::default()).unwrap(), want);
}

#[test]
fn file_added_or_changed_externally_is_picked_up_on_open() {
    let store = TempFileStore::new();
    store.save(&checkpoint("ckpt_own", "exec_ext", 0)).unwrap();
    // Copied in by someone else (e.g. `git pull` or `cp`).
    let external = full_checkpoint("ckpt_copied_in", "exec_ext");
    let bytes = encode(&external).unwrap();
    std::fs::write(store.path().join("ckpt_copied_in.json"), &bytes).unwrap();
    // Changed by someone else (same id, new content).
    let changed = CheckpointBuilder::new("ckpt_own")
        .execution("exec_ext")
        .at_ms(5)
        .label("edited-elsewhere")
        .build();
    std::fs::write(file_of(&store, "ckpt_own"), encode(&changed).unwrap()).unwrap();

    let reopened = FileStore::open(store.path()).unwrap();
    assert!(reopened.problems().is_empty());
    let listed = reopened.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), 2);
    let copied = listed
        .iter()
        .find(|s| s.id.as_str() == "ckpt_copied_in")
        .unwrap();
    assert_eq!(copied.bytes, bytes.len() as u64);
    let own = listed.iter().find(|s| s.id.as_str() == "ckpt_own").unwrap();
    assert_eq!(own.labels, vec!["edited-elsewhere".to_string()]);
    assert_eq!(reopened.load(&ckpt_id("ckpt_copied_in")).unwrap(), external);
    assert_eq!(reopened.load(&ckpt_id("ckpt_own")).unwrap(), changed);
}

#[test]
fn file_corrupted_files_are_problems_and_not_listed() {
    let store = TempFileStore::new();
    store.save(&checkpoint("ckpt_good", "exec_c", 0)).unwrap();
    store
        .save(&checkpoint("ckpt_flipped", "exec_c", 1))
        .unwrap();
    // One changed byte in the snapshot: still valid JSON and schema, wrong checksum.
    replace_in_file(
        &file_of(&store, "ckpt_flipped"),
        "thinking in",
        "thinkinG in",
    );
    // Not JSON at all, and an empty file.
    std::fs::write(store.path().join("ckpt_garbage.json"), b"{ nope").unwrap();
    std::fs::write(store.path().join("ckpt_empty.json"), b"").unwrap();
    // Not checkpoints by name: ignored.
    std::fs::write(store.path().join("notes.txt"), b"hello").unwrap();
    std::fs::write(store.path().join(".hidden.json"), b"{").unwrap();

    let reopened = FileStore::open(store.path()).unwrap();
    let mut problems: Vec<String> = reopened
        .problems()
        .iter()
        .map(|p| p.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    problems.sort();
    assert_eq!(
        problems,
        vec!["ckpt_empty.json", "ckpt_flipped.json", "ckpt_garbage.json"]
    );
    let flipped = reopened
        .problems()
        .iter()
        .find(|p| p.path.ends_with("ckpt_flipped.json"))
        .unwrap();
    assert!(
        matches!(
            flipped.error,
            Error::Load {
                error: LoadError::Corrupted { .. },
                ..
            }
        ),
        "{:?}",
        flipped.error
    );
    assert_eq!(ids(&reopened, &ListFilter::default()), vec!["ckpt_good"]);
    assert!(matches!(
        reopened.load(&ckpt_id("ckpt_flipped")),
        Err(Error::Load {
            error: LoadError::Corrupted { .. },
            ..
        })
    ));
    // The damaged files are left alone.
    assert!(file_of(&store, "ckpt_flipped").exists());
}

#[test]
fn file_named_for_another_id_is_refused() {
    let store = TempFileStore::new();
    let y = checkpoint("ckpt_y", "exec_n", 0);
    std::fs::write(store.path().join("ckpt_x.json"), encode(&y).unwrap()).unwrap();
    match store.load(&ckpt_id("ckpt_x")) {
        Err(Error::Load {
            error: LoadError::Invalid { pointer, message },
            ..
        }) => {
            assert_eq!(pointer, "/id");
            assert!(message.contains("ckpt_y"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(is_not_found(store.load(&ckpt_id("ckpt_y"))));
    let reopened = FileStore::open(store.path()).unwrap();
    assert_eq!(reopened.problems().len(), 1);
    assert!(ids(&reopened, &ListFilter::default()).is_empty());
}

#[cfg(unix)]
#[test]
fn file_symlinks_are_never_followed() {
    let store = TempFileStore::new();
    let outside = tempfile::tempdir().unwrap();
    // The target is a perfectly valid checkpoint with the link's id: if caf followed the
    // link, it would load it.
    let target = outside.path().join("secret.json");
    let secret = checkpoint("ckpt_evil", "exec_evil", 0);
    let secret_bytes = encode(&secret).unwrap();
    std::fs::write(&target, &secret_bytes).unwrap();
    let link = file_of(&store, "ckpt_evil");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    match store.load(&ckpt_id("ckpt_evil")) {
        Err(Error::NotRegularFile { .. }) => {}
        other => panic!("expected NotRegularFile, got {other:?}"),
    }
    let reopened = FileStore::open(store.path()).unwrap();
    assert_eq!(reopened.problems().len(), 1);
    assert!(matches!(
        reopened.problems()[0].error,
        Error::NotRegularFile { .. }
    ));
    assert!(ids(&reopened, &ListFilter::default()).is_empty());

    // Saving that id replaces the link itself; the outside file is untouched.
    let mine = CheckpointBuilder::new("ckpt_evil")
        .execution("exec_mine")
        .label("mine")
        .build();
    reopened.save(&mine).unwrap();
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the link was replaced by a file"
    );
    assert_eq!(std::fs::read(&target).unwrap(), secret_bytes);
    assert_eq!(reopened.load(&ckpt_id("ckpt_evil")).unwrap(), mine);
    assert_eq!(dir_entries(outside.path()), vec!["secret.json"]);

    // Deleting a link removes the link, never its target.
    let link2 = file_of(&store, "ckpt_evil2");
    std::os::unix::fs::symlink(&target, &link2).unwrap();
    let _ = reopened.delete(&ckpt_id("ckpt_evil2")).unwrap();
    assert!(std::fs::symlink_metadata(&link2).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), secret_bytes);
}

#[test]
fn file_saves_leave_no_temporary_files() {
    let store = TempFileStore::new();
    for i in 0..20 {
        store
            .save(&checkpoint(&format!("ckpt_{i:02}"), "exec_t", i))
            .unwrap();
    }
    store.save(&full_checkpoint("ckpt_05", "exec_t")).unwrap();
    store.delete(&ckpt_id("ckpt_06")).unwrap();
    let mut want: Vec<String> = (0..20)
        .filter(|i| *i != 6)
        .map(|i| format!("ckpt_{i:02}.json"))
        .collect();
    want.insert(0, ".caf".to_string());
    assert_eq!(dir_entries(store.path()), want);
    let tmp = store.path().join(".caf").join("tmp");
    if tmp.exists() {
        assert!(
            dir_entries(&tmp).is_empty(),
            "staging directory: {:?}",
            dir_entries(&tmp)
        );
    }
    assert_eq!(json_file_ids(store.path()).len(), 19);
}

#[test]
fn file_delete_removes_the_files() {
    let store = TempFileStore::new();
    for i in 0..4 {
        let e = if i < 2 { "exec_a" } else { "exec_b" };
        store.save(&checkpoint(&format!("ckpt_{i}"), e, i)).unwrap();
    }
    assert!(store.delete(&ckpt_id("ckpt_0")).unwrap());
    assert!(!file_of(&store, "ckpt_0").exists());
    assert_eq!(store.delete_execution(&exec_id("exec_b")).unwrap(), 2);
    assert_eq!(
        json_file_ids(store.path()).into_iter().collect::<Vec<_>>(),
        vec!["ckpt_1"]
    );
}

/// Top-level keys in file order (lines indented by exactly two spaces).
fn top_level_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
        .map(|l| l[3..].split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn file_output_is_deterministic_sorted_and_pretty() {
    let a = TempFileStore::new();
    let b = TempFileStore::new();
    let c = full_checkpoint("ckpt_det", "exec_det");
    a.save(&c).unwrap();
    b.save(&c).unwrap();
    let bytes_a = std::fs::read(file_of(&a, "ckpt_det")).unwrap();
    let bytes_b = std::fs::read(file_of(&b, "ckpt_det")).unwrap();
    assert_eq!(bytes_a, bytes_b, "same checkpoint, same bytes");
    assert_eq!(
        bytes_a,
        encode(&c).unwrap(),
        "the file is exactly the encoding"
    );
    // Saving again rewrites the same bytes.
    a.save(&c).unwrap();
    assert_eq!(std::fs::read(file_of(&a, "ckpt_det")).unwrap(), bytes_a);

    let text = String::from_utf8(bytes_a.clone()).unwrap();
    assert!(
        text.ends_with("}\n") && !text.ends_with("\n\n"),
        "one trailing newline"
    );
    assert!(!text.contains('\t') && !text.contains('\r'), "spaces only");
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        assert_eq!(indent % 2, 0, "indent of {line:?}");
    }
    // Re-printing the parsed document with sorted keys and a 2-space indent gives the file
    // back, so every object's keys are sorted and the indent is 2 spaces at every level.
    let doc: serde_json::Value = serde_json::from_slice(&bytes_a).unwrap();
    let again = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    assert_eq!(again, text);
    let keys = top_level_keys(&text);
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(keys.contains(&"integrity".to_string()) && keys.contains(&"snapshot".to_string()));
}

#[test]
fn file_consecutive_checkpoints_give_a_small_diff() {
    let store = TempFileStore::new();
    let mut b = CheckpointBuilder::new("ckpt_1").execution("exec_diff");
    for i in 0..30 {
        b = b.thought("reasoning", &format!("thought number {i}"));
    }
    let first = b.clone().build();
    let second = b
        .with(|c| {
            c.id = ckpt_id("ckpt_2");
            c.parent_id = Some(ckpt_id("ckpt_1"));
        })
        .at_ms(1000)
        .step(1)
        .thought("observation", "one more")
        .build();
    store.save(&first).unwrap();
    store.save(&second).unwrap();
    let one = std::fs::read_to_string(file_of(&store, "ckpt_1")).unwrap();
    let two = std::fs::read_to_string(file_of(&store, "ckpt_2")).unwrap();
    let old: std::collections::HashSet<&str> = one.lines().collect();
    let new_lines = two.lines().filter(|l| !old.contains(l)).count();
    assert!(
        new_lines < 25,
        "{new_lines} new lines out of {}",
        two.lines().count()
    );
    assert!(two.lines().count() > 200);
}
