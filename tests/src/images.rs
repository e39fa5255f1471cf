//! Disk images after a simulated power loss, rebuilt from what caf's file-system test double
//! ([`caf_core::store::TestFs`]) recorded: the way dm-log-writes replays a block log, or redb's
//! crash tests drop what was not synced.
//!
//! The model of the file system, for a power loss just before record `at`:
//!
//! - an operation is **covered** when a later sync (still before the cut) made it durable: a
//!   file's `fdatasync` covers the writes of that file before it; a directory's
//!   `fsync` covers the entries made, renamed to or removed in that directory before it (a
//!   rename counts for the directory it renames into, and is atomic); `syncfs` covers
//!   everything before it;
//! - a covered operation is on the disk; every other one is kept or dropped at random, each on
//!   its own, and a write may be torn: only a prefix of it reaches the disk, the rest of it
//!   lost, or zeros (the file's size got there, its data did not);
//! - a file's modification time is the one it had after the last of its operations that was
//!   kept, so that an index entry caf recorded (size and time) may match a torn file;
//! - only entries whose every parent directory is on the disk are reachable.
//!
//! The directory the record starts from (`base`) is taken as durable and empty.

use caf_core::store::{Op, Record};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What happens to the operations a power loss may lose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// All of them reached the disk.
    All,
    /// None did.
    None,
    /// The directory entries did (made, renamed, removed), and the size of every write, but
    /// not what it wrote: zeros (a file system that journals its metadata alone, ext4's
    /// delayed allocation of old).
    NamesOnly,
    /// Each is kept, dropped or (a write) torn at random, from this seed.
    Random(u64),
}

/// What [`build`] put in the image.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Built {
    /// Operations that could be lost (not covered by a sync).
    pub uncovered: usize,
    /// Of those, dropped.
    pub dropped: usize,
    /// Writes torn.
    pub torn: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File(u64),
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    mtime_ns: i64,
}

/// The directory whose entries an operation changes, if it changes entries.
fn entry_dir(op: &Op) -> Option<&Path> {
    match op {
        Op::Mkdir { path } | Op::Create { path, .. } | Op::Unlink { path } => path.parent(),
        Op::Rename { to, .. } | Op::Link { to, .. } => to.parent(),
        _ => None,
    }
}

/// The file whose data an operation changes, if any.
fn data_ino(op: &Op) -> Option<u64> {
    match op {
        Op::Write { ino, .. } => Some(*ino),
        _ => None,
    }
}

/// Which of `records` are covered by a later sync (see the module docs).
pub fn covered(records: &[Record]) -> Vec<bool> {
    let mut out = vec![false; records.len()];
    let mut all = false;
    let mut files: HashSet<u64> = HashSet::new();
    let mut dirs: HashSet<&Path> = HashSet::new();
    for (i, r) in records.iter().enumerate().rev() {
        out[i] = all
            || data_ino(&r.op).is_some_and(|ino| files.contains(&ino))
            || entry_dir(&r.op).is_some_and(|d| dirs.contains(d));
        match &r.op {
            Op::SyncFs => all = true,
            Op::SyncFile { ino } => {
                files.insert(*ino);
            }
            Op::SyncDir { path } => {
                dirs.insert(path.as_path());
            }
            _ => {}
        }
    }
    out
}

/// What becomes of one uncovered operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Kept,
    Dropped,
    /// A write of which only `len` bytes got there, the rest lost or (`zeros`) zeros.
    Torn {
        len: usize,
        zeros: bool,
    },
}

fn fate(op: &Op, keep: Keep, rng: &mut fastrand::Rng) -> Fate {
    match keep {
        Keep::All => Fate::Kept,
        Keep::None => Fate::Dropped,
        Keep::NamesOnly => match op {
            Op::Write { .. } => Fate::Torn {
                len: 0,
                zeros: true,
            },
            _ => Fate::Kept,
        },
        Keep::Random(_) => match (op, rng.u8(..10)) {
            (_, 0..=3) => Fate::Kept,
            (Op::Write { bytes, .. }, 4..=6) if !bytes.is_empty() => Fate::Torn {
                len: rng.usize(..bytes.len()),
                zeros: rng.bool(),
            },
            _ => Fate::Dropped,
        },
    }
}

/// Rebuilds in `image` what the disk may hold after a power loss just before `records[at]`
/// (all of `records` for `at == records.len()`), the recorded paths being under `base`. The
/// image directory must exist and be empty.
pub fn build(records: &[Record], at: usize, keep: Keep, base: &Path, image: &Path) -> Built {
    let records = &records[..at];
    let seed = match keep {
        Keep::Random(s) => s,
        _ => 0,
    };
    let mut rng = fastrand::Rng::with_seed(seed);
    let covered = covered(records);
    let mut built = Built::default();
    let mut entries: BTreeMap<PathBuf, Node> = BTreeMap::new();
    let mut inodes: HashMap<u64, Inode> = HashMap::new();
    for (r, covered) in records.iter().zip(covered) {
        if matches!(
            r.op,
            Op::SyncFs | Op::SyncDir { .. } | Op::SyncFile { .. } | Op::Mark(_)
        ) {
            continue;
        }
        let fate = if covered {
            Fate::Kept
        } else {
            built.uncovered += 1;
            fate(&r.op, keep, &mut rng)
        };
        match fate {
            Fate::Dropped => {
                built.dropped += 1;
                continue;
            }
            Fate::Torn { .. } => built.torn += 1,
            Fate::Kept => {}
        }
        apply(&r.op, fate, base, &mut entries, &mut inodes);
    }
    materialize(&entries, &inodes, image);
    built
}

/// The path of `path` relative to `base` (every recorded path must be under it).
fn under(base: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(base)
        .unwrap_or_else(|_| panic!("{} is not under {}", path.display(), base.display()))
        .to_path_buf()
}

fn apply(
    op: &Op,
    fate: Fate,
    base: &Path,
    entries: &mut BTreeMap<PathBuf, Node>,
    inodes: &mut HashMap<u64, Inode>,
) {
    match op {
        Op::Mkdir { path } => {
            entries.insert(under(base, path), Node::Dir);
        }
        Op::Create {
            path,
            ino,
            mtime_ns,
        } => {
            entries.insert(under(base, path), Node::File(*ino));
            let inode = inodes.entry(*ino).or_default();
            inode.mtime_ns = *mtime_ns;
        }
        Op::Write {
            ino,
            offset,
            bytes,
            mtime_ns,
        } => {
            let inode = inodes.entry(*ino).or_default();
            let at = usize::try_from(*offset).unwrap_or_else(|e| panic!("offset {offset}: {e}"));
            let (len, fill) = match fate {
                Fate::Torn { len, zeros } => (len, if zeros { bytes.len() } else { len }),
                _ => (bytes.len(), bytes.len()),
            };
            if inode.data.len() < at + fill {
                inode.data.resize(at + fill, 0);
            }
            inode.data[at..at + len].copy_from_slice(&bytes[..len]);
            for b in &mut inode.data[at + len..at + fill] {
                *b = 0;
            }
            inode.mtime_ns = *mtime_ns;
        }
        Op::Rename { from, to, ino } => {
            entries.remove(&under(base, from));
            entries.insert(under(base, to), Node::File(*ino));
            inodes.entry(*ino).or_default();
        }
        Op::Link { to, ino } => {
            entries.insert(under(base, to), Node::File(*ino));
            inodes.entry(*ino).or_default();
        }
        Op::Unlink { path } => {
            entries.remove(&under(base, path));
        }
        Op::SyncFs | Op::SyncDir { .. } | Op::SyncFile { .. } | Op::Mark(_) => {}
    }
}

/// Writes the reachable entries into `image`.
fn materialize(entries: &BTreeMap<PathBuf, Node>, inodes: &HashMap<u64, Inode>, image: &Path) {
    let reachable = |path: &Path| {
        path.ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .all(|a| entries.get(a) == Some(&Node::Dir))
    };
    // Sorted by path: a directory comes before what it holds.
    for (path, node) in entries {
        if !reachable(path) {
            continue;
        }
        let to = image.join(path);
        match node {
            Node::Dir => {
                std::fs::create_dir(&to).unwrap_or_else(|e| panic!("making {}: {e}", to.display()))
            }
            Node::File(ino) => {
                let inode = &inodes[ino];
                std::fs::write(&to, &inode.data)
                    .unwrap_or_else(|e| panic!("writing {}: {e}", to.display()));
                let when = std::time::UNIX_EPOCH
                    + std::time::Duration::from_nanos(u64::try_from(inode.mtime_ns).unwrap_or(0));
                std::fs::File::options()
                    .write(true)
                    .open(&to)
                    .and_then(|f| f.set_modified(when))
                    .unwrap_or_else(|e| panic!("dating {}: {e}", to.display()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: Op) -> Record {
        Record { op, tag: 0 }
    }

    fn write(ino: u64, offset: u64, bytes: &[u8]) -> Record {
        rec(Op::Write {
            ino,
            offset,
            bytes: bytes.to_vec(),
            mtime_ns: 1_000_000_000,
        })
    }

    /// A file written, flushed, renamed into `d/` and the directory flushed: the files-only
    /// save.
    fn durable_save(base: &Path) -> Vec<Record> {
        vec![
            rec(Op::Mkdir {
                path: base.join("d"),
            }),
            rec(Op::SyncDir {
                path: base.to_path_buf(),
            }),
            rec(Op::Create {
                path: base.join("d/.t"),
                ino: 7,
                mtime_ns: 0,
            }),
            write(7, 0, b"hello"),
            rec(Op::SyncFile { ino: 7 }),
            rec(Op::Rename {
                from: base.join("d/.t"),
                to: base.join("d/a"),
                ino: 7,
            }),
            rec(Op::SyncDir {
                path: base.join("d"),
            }),
        ]
    }

    fn image_of(records: &[Record], at: usize, keep: Keep, base: &Path) -> tempfile::TempDir {
        let image = tempfile::tempdir().unwrap();
        build(records, at, keep, base, image.path());
        image
    }

    #[test]
    fn synced_operations_are_always_on_the_disk() {
        let base = Path::new("/b");
        let records = durable_save(base);
        for keep in [Keep::None, Keep::All, Keep::Random(1), Keep::Random(2)] {
            let image = image_of(&records, records.len(), keep, base);
            assert_eq!(std::fs::read(image.path().join("d/a")).unwrap(), b"hello");
        }
    }

    #[test]
    fn what_no_sync_covers_may_be_lost() {
        let base = Path::new("/b");
        let records = durable_save(base);
        // Cut before the directory's flush: the rename may be lost, never the file's data.
        let cut = records.len() - 1;
        let none = image_of(&records, cut, Keep::None, base);
        assert!(!none.path().join("d/a").exists());
        let all = image_of(&records, cut, Keep::All, base);
        assert_eq!(std::fs::read(all.path().join("d/a")).unwrap(), b"hello");
        // Cut before the file's flush: the data may be torn.
        let torn = (0..64)
            .map(|seed| {
                let image = image_of(&records[..4], 4, Keep::Random(seed), base);
                std::fs::read(image.path().join("d/.t")).ok()
            })
            .filter(|b| b.as_deref().is_some_and(|b| b != b"hello"))
            .count();
        assert!(torn > 0, "no seed tore the unsynced write");
        // A directory not flushed into its parent takes what it holds with it.
        let lost_dir: Vec<Record> = records
            .iter()
            .filter(|r| {
                r.op != Op::SyncDir {
                    path: base.to_path_buf(),
                }
            })
            .cloned()
            .collect();
        let image = image_of(&lost_dir, lost_dir.len(), Keep::None, base);
        assert!(!image.path().join("d").exists());
    }

    #[test]
    fn names_only_keeps_the_entries_and_zeros_the_data() {
        let base = Path::new("/b");
        let records = durable_save(base);
        // Before the file's flush: the file is there, its size too, its bytes are not.
        let image = image_of(&records, 4, Keep::NamesOnly, base);
        assert_eq!(
            std::fs::read(image.path().join("d/.t")).unwrap(),
            vec![0u8; 5]
        );
    }

    #[test]
    fn syncfs_covers_everything_before_it_and_nothing_after() {
        let base = Path::new("/b");
        let mut records = vec![
            rec(Op::Create {
                path: base.join("x"),
                ino: 1,
                mtime_ns: 0,
            }),
            write(1, 0, b"abc"),
            rec(Op::SyncFs),
            write(1, 3, b"def"),
        ];
        let image = image_of(&records, records.len(), Keep::None, base);
        assert_eq!(std::fs::read(image.path().join("x")).unwrap(), b"abc");
        records.push(rec(Op::Unlink {
            path: base.join("x"),
        }));
        records.push(rec(Op::SyncDir {
            path: base.to_path_buf(),
        }));
        let image = image_of(&records, records.len(), Keep::All, base);
        assert!(!image.path().join("x").exists(), "a synced unlink stays");
    }

    #[test]
    fn a_kept_file_has_the_time_of_its_last_kept_operation() {
        let base = Path::new("/b");
        let records = vec![
            rec(Op::Create {
                path: base.join("x"),
                ino: 1,
                mtime_ns: 5_000_000_000,
            }),
            rec(Op::SyncFs),
        ];
        let image = image_of(&records, records.len(), Keep::None, base);
        let mtime = std::fs::metadata(image.path().join("x"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(
            mtime,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(5)
        );
    }
}
