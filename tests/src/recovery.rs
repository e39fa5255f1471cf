//! Helpers of the recovery tests: an execution with a fork, and damage done to checkpoint files
//! the ways disks and people do it.

use crate::gen::checkpoint;
use caf_core::Checkpoint;
use std::path::Path;

/// An execution with a fork, oldest first: `ckpt_a` ← `ckpt_b` ← `ckpt_c` ← `ckpt_e` (the
/// newest), and a branch `ckpt_d` ← `ckpt_a` taken between `ckpt_c` and `ckpt_e`. When `ckpt_e`
/// is damaged, the newest valid checkpoint of the execution is `ckpt_d`, which is not an
/// ancestor of `ckpt_e`; its newest valid ancestor is `ckpt_c`.
pub fn forked_execution(execution: &str) -> Vec<Checkpoint> {
    let with_parent = |id: &str, ms: i64, parent: Option<&str>| {
        let mut c = checkpoint(id, execution, ms);
        c.parent_id = parent.map(crate::gen::ckpt_id);
        c
    };
    vec![
        with_parent("ckpt_a", 1, None),
        with_parent("ckpt_b", 2, Some("ckpt_a")),
        with_parent("ckpt_c", 3, Some("ckpt_b")),
        with_parent("ckpt_d", 4, Some("ckpt_a")),
        with_parent("ckpt_e", 5, Some("ckpt_c")),
    ]
}

/// Changes one digit of the file's top-level `tokens_used` (the size stays the same): the file
/// still parses and passes its schema, but its checksum no longer matches. With `keep_mtime`,
/// the modification time is put back, as bit rot would leave it, so that an index trusts the
/// file unread.
pub fn corrupt(path: &Path, keep_mtime: bool) {
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    const KEY: &[u8] = b"\"tokens_used\": ";
    let at = bytes
        .windows(KEY.len())
        .position(|w| w == KEY)
        .unwrap_or_else(|| panic!("{} has no tokens_used", path.display()))
        + KEY.len();
    bytes[at] = if bytes[at] == b'9' {
        b'8'
    } else {
        bytes[at] + 1
    };
    std::fs::write(path, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if keep_mtime {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(mtime))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Cuts the file after the line holding its top-level `parent_id` (a write that stopped part-way):
/// what is left names the checkpoint, its execution and its parent, not its time.
pub fn truncate_after_parent(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let at = text
        .find("\n  \"parent_id\": ")
        .unwrap_or_else(|| panic!("{} has no parent_id", path.display()));
    let end = at + 1 + text[at + 1..].find('\n').unwrap_or(0) + 1;
    std::fs::write(path, &text[..end]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
