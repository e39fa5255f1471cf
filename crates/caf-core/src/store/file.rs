//! [`FileStore`]: one JSON file per checkpoint, `DIR/{id}.json`.

use super::atomic::{
    make_spare_in, stage_in, stage_into_spare_in, sync_dir_in, AtomicWriteOptions, Placed, Staged,
    SPARE_PREFIX, TEMP_PREFIX,
};
use super::buffers::Buffers;
use super::fs::{create_dir_durable, read_to_end, same_file, Fs, RealFs};
use super::index::{mtime_ns, Entry, Index};
use super::{CheckpointStore, CheckpointSummary, DamagedCheckpoint, ListFilter};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::format::{
    decode, decode_known_file, file_digest, prepare_shared, Checked, Checkpoint, Decoded,
    EncodeError, Encoder, Limits, LoadError, Unsealed,
};
use crate::id::{check_id, CheckpointId, ExecutionId};
use crate::redact::{RedactionRules, Redactor};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// How a [`FileStore`] reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStoreOptions {
    /// Durability of writes (default: durable).
    pub write: AtomicWriteOptions,
    /// Guard rails for reading files.
    pub limits: Limits,
    /// Only look: create neither the directory nor its `.caf/` index if they are missing (the
    /// index then lives in memory). For tools that read a directory that may not be a store.
    pub no_create: bool,
}

/// A file in the store that could not be indexed, and why.
#[derive(Debug)]
pub struct Problem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub error: Error,
}

/// Checkpoints as files in a directory: `DIR/{id}.json`, written atomically and durably, plus a
/// small index under `DIR/.caf/` (a cache, safe to delete) so that listing never opens a
/// checkpoint.
///
/// The store never writes outside its directory: ids are checked, files are replaced by rename
/// (which replaces a symlink rather than following it), and a symlink or other non-regular file
/// in the directory is never read.
///
/// `F` is the file system the store goes through: the real one ([`RealFs`], zero-sized) unless a
/// test gives its double (see [`Fs`]).
pub struct FileStore<F: Fs = RealFs> {
    fs: F,
    root: PathBuf,
    /// Where atomic writes stage their temporary files (`.caf/tmp`, when the index is on disk).
    temp_dir: Option<PathBuf>,
    options: FileStoreOptions,
    index: Mutex<Index<F>>,
    encoder: Mutex<Encoder>,
    /// The memory of files written, for the next encodings ([`FileStore::give_back`]).
    pub(super) buffers: Buffers,
    /// Replaces secrets before anything is written (see [`crate::redact`]).
    redactor: Redactor,
    /// Empty files made beforehand for the next saves to write into ([`FileStore::make_spares`]).
    spares: Mutex<Vec<(PathBuf, std::time::Instant)>>,
    problems: Vec<Problem>,
    damaged: Vec<DamagedCheckpoint>,
}

impl<F: Fs> std::fmt::Debug for FileStore<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStore")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Reads a checkpoint file: only a regular file (never a symlink), at most `limits.max_bytes`.
pub fn read_checkpoint_file(path: &Path, limits: &Limits) -> Result<Decoded> {
    read_known_checkpoint_file(path, limits, None)
}

/// Reads a checkpoint file like [`read_checkpoint_file`]; with `known_integrity`, the checksum a
/// trusted record (the store's index) holds for content validated before, a file whose bytes
/// are that content is decoded on the fast path (see [`crate::format::decode_known`]). Errors
/// are the same.
pub fn read_known_checkpoint_file(
    path: &Path,
    limits: &Limits,
    known_integrity: Option<&str>,
) -> Result<Decoded> {
    let known = Recorded {
        integrity: known_integrity.map(str::to_string),
        digest: None,
    };
    read_known_checkpoint_file_in(&RealFs, path, limits, &known)
}

/// [`read_known_checkpoint_file`] through `fs`.
fn read_known_checkpoint_file_in<F: Fs>(
    fs: &F,
    path: &Path,
    limits: &Limits,
    known: &Recorded,
) -> Result<Decoded> {
    // A file the fast path may hash beside its parse: the helper thread is woken while it is
    // read.
    let ready = |len| {
        if known.integrity.is_some() {
            prepare_shared(len);
        }
    };
    let bytes = Arc::new(read_regular_file_then(fs, path, limits.max_bytes, ready)?);
    match &known.integrity {
        Some(integrity) => decode_known_file(&bytes, limits, integrity, known.digest.as_deref()),
        None => decode(&bytes, limits),
    }
    .map_err(|error| Error::Load {
        origin: path.display().to_string(),
        error,
    })
}

/// Reads a whole regular file of at most `max_bytes`, refusing symlinks and special files.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    read_regular_file_in(&RealFs, path, max_bytes)
}

/// [`read_regular_file`] through `fs`.
pub(crate) fn read_regular_file_in<F: Fs>(fs: &F, path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    read_regular_file_then(fs, path, max_bytes, |_| {})
}

/// [`read_regular_file_in`], calling `before_read` with the file's size once it is known to be
/// a regular file within `max_bytes`, before its bytes are read.
fn read_regular_file_then<F: Fs>(
    fs: &F,
    path: &Path,
    max_bytes: u64,
    before_read: impl FnOnce(u64),
) -> Result<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_symlink() {
            "a symlink"
        } else if ft.is_dir() {
            "a directory"
        } else {
            "a special file"
        };
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let too_large = |size: u64| Error::Load {
        origin: path.display().to_string(),
        error: LoadError::TooLarge {
            size,
            max: max_bytes,
        },
    };
    if meta.len() > max_bytes {
        return Err(too_large(meta.len()));
    }
    before_read(meta.len());
    let file = fs.open_read(path).map_err(|e| Error::io(path, e))?;
    let opened = file.metadata().map_err(|e| Error::io(path, e))?;
    if !same_file(&meta, &opened) {
        // Swapped between the check and the open.
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind: "replaced while being opened",
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    read_to_end(fs, &file, path, &mut bytes, max_bytes.saturating_add(1))
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The entries of `DIR/.caf/` that caf writes: none may be a symbolic link, which could point
/// anywhere (another store, a system file).
pub const INTERNALS: [&str; 12] = [
    "",
    "tmp",
    "index.jsonl",
    "lock",
    "pruned.jsonl",
    "caf.db",
    "caf.db-writer.lock",
    "caf.db-wal",
    "caf.db-shm",
    "store-id",
    "unflushed",
    "has-db",
];

/// Refuses a store whose `.caf/` (`meta_dir`) or one of its entries is a symbolic link
/// ([`Error::LinkedInternal`]).
pub fn refuse_linked_internals(meta_dir: &Path) -> Result<()> {
    for name in INTERNALS {
        let path = if name.is_empty() {
            meta_dir.to_path_buf()
        } else {
            meta_dir.join(name)
        };
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::LinkedInternal { path });
        }
    }
    Ok(())
}

impl FileStore {
    /// Opens (creating if needed) the store in `root` with default options.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        Self::open_with(root, FileStoreOptions::default())
    }

    /// Opens (creating if needed) the store in `root`.
    pub fn open_with(root: impl Into<PathBuf>, options: FileStoreOptions) -> Result<Self> {
        Self::open_with_fs(RealFs, root, options)
    }
}

impl<F: Fs> FileStore<F> {
    /// Opens (creating if needed) the store in `root`, going through `fs`: the real file system
    /// ([`FileStore::open_with`]), or a test double.
    pub fn open_with_fs(
        fs: F,
        root: impl Into<PathBuf>,
        options: FileStoreOptions,
    ) -> Result<Self> {
        let root = root.into();
        if !options.no_create {
            create_dir_durable(&fs, &root).map_err(|e| Error::io(&root, e))?;
        }
        let meta_dir = root.join(".caf");
        refuse_linked_internals(&meta_dir)?;
        let mut index = if options.no_create && !meta_dir.is_dir() {
            Index::in_memory(fs.clone(), &meta_dir)
        } else {
            Index::open(fs.clone(), &meta_dir)
        };
        let found = reconcile(&fs, &root, &mut index, &options.limits, false)?;
        if found.changed || index.wants_compaction() {
            // Best effort: a read-only directory still gets a correct in-memory index.
            let _ = index.compact();
        }
        clean_stale_temp_files(&fs, &meta_dir.join("tmp"), false);
        // The thread that proves and types files beside a restore, started now rather than at
        // the first restore (see `format::start_helper`).
        crate::format::start_helper();
        // A file is put in place by renaming it, which cannot cross file systems: when `.caf/`
        // is on another one (mounted there), files are staged beside their place instead.
        let mut temp_dir = index.temp_dir();
        if temp_dir
            .as_ref()
            .is_some_and(|tmp| !same_file_system(tmp, &root))
        {
            temp_dir = None;
            clean_stale_temp_files(&fs, &root, true);
        }
        Ok(Self {
            fs,
            root,
            temp_dir,
            options,
            index: Mutex::new(index),
            encoder: Mutex::new(Encoder::default()),
            buffers: Buffers::default(),
            redactor: Redactor::default(),
            spares: Mutex::new(Vec::new()),
            problems: found.problems,
            damaged: found.damaged,
        })
    }

    /// The file system the store goes through.
    pub fn fs(&self) -> &F {
        &self.fs
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Files found on open that are not valid checkpoints (they are not listed).
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The path of a checkpoint's file.
    pub fn path_of(&self, id: &CheckpointId) -> PathBuf {
        self.root.join(format!("{id}.json"))
    }

    /// Loads a checkpoint like [`CheckpointStore::load`], and says which format version its
    /// file is written in ([`Decoded::source_version`]).
    ///
    /// A file whose bytes are what the index recorded when caf wrote or validated it (the same
    /// integrity checksum) is typed straight from its bytes, without the schema; any other file
    /// is decoded in full (see [`decode_known`](crate::format::decode_known)).
    pub fn load_decoded(&self, id: &CheckpointId) -> Result<Decoded> {
        let known = self.recorded(id);
        self.load_known(id, &known)
    }

    /// Loads the file of `id`, on the fast path if its bytes hash to `known` (see
    /// [`decode_known`](crate::format::decode_known)).
    fn load_known(&self, id: &CheckpointId, known: &Recorded) -> Result<Decoded> {
        let path = self.path_of(id);
        match read_known_checkpoint_file_in(&self.fs, &path, &self.options.limits, known) {
            Ok(d) => check_name(&path, id, d),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Err(Error::not_found(id))
            }
            Err(e) => Err(e),
        }
    }

    /// The integrity checksum and digest the index records for `id`, if any. The log's new tail
    /// is read first (another process may have saved the file again); if that fails, what is in
    /// memory is used: a stale record only sends the file down the full path.
    fn recorded(&self, id: &CheckpointId) -> Recorded {
        let mut index = self.index();
        let _ = index.refresh();
        index.entries.get(id).map(Recorded::of).unwrap_or_default()
    }

    /// The integrity checksum the index records for each listed checkpoint (`None` where it is
    /// not known: a file in an older format). Reads no checkpoint file.
    pub fn indexed_checksums(&self) -> Result<HashMap<CheckpointId, Option<String>>> {
        let mut index = self.index();
        index.refresh()?;
        Ok(index
            .entries
            .iter()
            .map(|(id, e)| (id.clone(), e.integrity.clone()))
            .collect())
    }

    /// Rebuilds the index from the files: every file is read again, and nothing the index
    /// recorded is trusted (not even for a file whose size and modification time are unchanged,
    /// which opening a store trusts), then the log is rewritten. Returns the files that could not
    /// be indexed. [`FileStore::problems`] and [`CheckpointStore::damaged`] still report what was
    /// found when the store was opened.
    pub fn rebuild_index(&self) -> Result<Vec<Problem>> {
        let mut index = self.index();
        let found = reconcile(&self.fs, &self.root, &mut index, &self.options.limits, true)?;
        index.compact()?;
        Ok(found.problems)
    }

    fn index(&self) -> MutexGuard<'_, Index<F>> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Saves already encoded bytes of `checkpoint`: `bytes` must be
    /// [`crate::format::encode`]`(checkpoint)`. For callers that need the encoding anyway (import, or a hybrid
    /// store that also indexes the checkpoint in a database), so that it is computed once.
    pub fn save_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<CheckpointSummary> {
        self.publish(self.stage_encoded(checkpoint, bytes)?)
    }

    /// Writes the file of `checkpoint` (encoded as `bytes`) beside its place without putting it
    /// there: [`FileStore::publish`] does, after the caller recorded the save elsewhere (a
    /// database commit). Until then no reader sees it; dropped, it leaves nothing behind.
    ///
    /// Every write of the store goes through here, so this is where the store's redaction
    /// happens: a checkpoint holding secrets is written as its redacted copy (encoded again;
    /// `bytes` are then not used). A caller that writes the checkpoint elsewhere too (a
    /// database) redacts it first with [`FileStore::redactor`], so that both copies agree, and
    /// stages that copy with [`FileStore::stage_as_is`].
    pub fn stage_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<StagedFile<F>> {
        let (redacted, bytes) = self.redact_and_encode(checkpoint, Some(bytes), self)?;
        self.stage_as_is(&redacted, &bytes)
    }

    /// `checkpoint` redacted with the store's rules (counted as a save into `store`), and its
    /// encoding: `bytes`, when given and redaction changed nothing; else encoded here.
    pub fn redact_and_encode<'a>(
        &self,
        checkpoint: &'a Checkpoint,
        bytes: Option<&'a [u8]>,
        store: &dyn CheckpointStore,
    ) -> Result<(Cow<'a, Checkpoint>, Cow<'a, [u8]>)> {
        let redacted = self.redactor.redact_for(checkpoint, store).checkpoint;
        let bytes = match (&redacted, bytes) {
            (Cow::Borrowed(_), Some(bytes)) => Cow::Borrowed(bytes),
            _ => Cow::Owned(self.encode(&redacted)?),
        };
        Ok((redacted, bytes))
    }

    /// [`FileStore::redact_and_encode`] of a checkpoint not yet encoded, but for the checksum:
    /// the caller seals the bytes ([`Unsealed::seal`]) where it suits it (a hybrid store, on
    /// the thread that writes the file while the rows are written).
    pub fn redact_and_encode_unsealed<'a>(
        &self,
        checkpoint: &'a Checkpoint,
        store: &dyn CheckpointStore,
    ) -> Result<(Cow<'a, Checkpoint>, Unsealed)> {
        let redacted = self.redactor.redact_for(checkpoint, store).checkpoint;
        let unsealed = self.encode_unsealed(&redacted)?;
        Ok((redacted, unsealed))
    }

    /// [`FileStore::stage_encoded`] without redaction: `checkpoint` is written exactly as
    /// `bytes`. For a checkpoint already redacted by [`FileStore::redactor`] (a hybrid store's
    /// save: redacting twice would scan it twice), and for a file that must be byte for byte
    /// another copy of it (a hybrid store writing a file again from its database).
    pub fn stage_as_is(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<StagedFile<F>> {
        self.stage_summarized(CheckpointSummary::of(checkpoint, bytes.len() as u64), bytes)
    }

    /// [`FileStore::stage_as_is`] for the checkpoint `summary` sums up (its `bytes` the length
    /// of `bytes`): what a thread that does not hold the checkpoint needs to write its file.
    pub fn stage_summarized(
        &self,
        summary: CheckpointSummary,
        bytes: &[u8],
    ) -> Result<StagedFile<F>> {
        let path = self.path_of(&summary.id);
        let spare = self.take_spare();
        let write = self.options.write;
        let staged = match spare.and_then(|s| stage_into_spare_in(&self.fs, s, &path, bytes, write))
        {
            Some(staged) => staged?,
            None => stage_in(&self.fs, &path, self.temp_dir.as_deref(), bytes, write)?,
        };
        let integrity = stated_integrity(bytes);
        Ok(StagedFile {
            staged,
            summary,
            digest: integrity.as_ref().map(|_| file_digest(bytes)),
            integrity,
        })
    }

    /// Makes empty files for the next saves to write into, up to `count` ready: a save then does
    /// not pay for creating its file. For a writer with a thread to spare (a hybrid store's
    /// flusher makes them). Does nothing for a store without an index directory.
    pub fn make_spares(&self, count: usize) -> Result<()> {
        let Some(dir) = self.temp_dir.as_deref() else {
            return Ok(());
        };
        loop {
            let ready = self.spares.lock().unwrap_or_else(|p| p.into_inner()).len();
            if ready >= count {
                return Ok(());
            }
            let spare = make_spare_in(&self.fs, dir)?;
            self.spares
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((spare, std::time::Instant::now()));
        }
    }

    /// A spare file young enough that no other process removed it as stale (older ones are
    /// removed here).
    fn take_spare(&self) -> Option<PathBuf> {
        let mut spares = self.spares.lock().unwrap_or_else(|p| p.into_inner());
        while let Some((path, made)) = spares.pop() {
            if made.elapsed() < Duration::from_secs(30 * 60) {
                return Some(path);
            }
            let _ = self.fs.remove_file(&path);
        }
        None
    }

    /// Puts a staged file in place (atomically) and indexes it.
    pub fn publish(&self, file: StagedFile<F>) -> Result<CheckpointSummary> {
        self.try_publish(file).map_err(|u| u.error)
    }

    /// [`FileStore::publish`], whose error also says whether the file is in place (what failed
    /// came after the rename: flushing the directory, or appending to the index). A file in
    /// place is indexed in any case, so that this store lists what its directory holds.
    pub fn try_publish(
        &self,
        file: StagedFile<F>,
    ) -> std::result::Result<CheckpointSummary, Unpublished> {
        let (meta, flushed) = match file.staged.put_in_place() {
            Placed::Flushed(meta) => (meta, Ok(())),
            Placed::Unflushed(meta, e) => (meta, Err(e)),
            Placed::Not(error) => {
                return Err(Unpublished {
                    in_place: false,
                    error,
                })
            }
        };
        // The index is a cache: a record it cannot write now is kept and written with the next.
        self.index().put(Entry {
            summary: file.summary.clone(),
            mtime_ns: mtime_ns(&meta),
            integrity: file.integrity,
            digest: file.digest,
        });
        match flushed {
            Ok(()) => Ok(file.summary),
            Err(error) => Err(Unpublished {
                in_place: true,
                error,
            }),
        }
    }

    /// Encodes `checkpoint` as [`crate::format::encode`] does, splicing in the text of the
    /// thoughts and tool calls this store wrote before ([`Encoder`]).
    pub fn encode(&self, checkpoint: &Checkpoint) -> Result<Vec<u8>> {
        self.encode_unsealed(checkpoint).map(Unsealed::seal)
    }

    /// Gives the store back the bytes of a file it encoded (or any buffer), once written: its
    /// memory is reused by a later encoding rather than allocated again (see
    /// `store/buffers.rs`: fresh pages cost a writer more than encoding into them).
    pub fn give_back(&self, bytes: Vec<u8>) {
        self.buffers.give_back(bytes);
    }

    /// [`FileStore::encode_unsealed`] of a checkpoint [`check`](crate::format::check)
    /// accepted, not checked again.
    pub fn encode_checked_unsealed(&self, checkpoint: &Checked) -> Result<Unsealed> {
        self.encode_with(&checkpoint.get().id, |encoder, buffer| {
            encoder.encode_checked_into(checkpoint, buffer)
        })
    }

    /// [`FileStore::encode`] but for the checksum ([`Encoder::encode_unsealed`]), of
    /// `checkpoint` as it is (not redacted; see [`FileStore::redactor`]).
    fn encode_unsealed(&self, checkpoint: &Checkpoint) -> Result<Unsealed> {
        self.encode_with(&checkpoint.id, |encoder, buffer| {
            encoder.encode_unsealed_into(checkpoint, buffer)
        })
    }

    /// Runs `encode` with the store's encoder and a buffer given back; its error is of
    /// checkpoint `id`.
    fn encode_with(
        &self,
        id: &CheckpointId,
        encode: impl FnOnce(&mut Encoder, Vec<u8>) -> std::result::Result<Unsealed, EncodeError>,
    ) -> Result<Unsealed> {
        let mut encoder = self.encoder.lock().unwrap_or_else(|p| p.into_inner());
        encode(&mut encoder, self.buffers.take()).map_err(|error| Error::Encode {
            id: id.to_string(),
            error,
        })
    }

    /// Replaces the store's redaction rules (the default: [`RedactionRules::new`], every
    /// built-in rule; [`RedactionRules::disabled`] turns redaction off).
    pub fn set_redaction(&mut self, rules: RedactionRules) {
        self.redactor = Redactor::new(rules);
    }

    /// The redactor every write goes through (for a store built on this one, such as a hybrid
    /// store, that must write the same redacted checkpoint elsewhere too).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The options the store was opened with (and its current write options).
    pub fn options(&self) -> FileStoreOptions {
        self.options
    }

    /// Changes how the store writes files: a store whose saves are made durable elsewhere (a
    /// database commit, see `caf_sql::HybridStore`) writes them without flushing.
    pub fn set_write_options(&mut self, write: AtomicWriteOptions) {
        self.options.write = write;
    }
}

/// A checkpoint file written but not yet in place (see [`FileStore::stage_encoded`]).
#[derive(Debug)]
pub struct StagedFile<F: Fs = RealFs> {
    staged: Staged<F>,
    summary: CheckpointSummary,
    integrity: Option<String>,
    /// The digest of its bytes, for the index (with the integrity, when there is one).
    digest: Option<String>,
}

impl<F: Fs> StagedFile<F> {
    /// The checksum its bytes state (`None` for bytes without an `integrity` line).
    pub fn integrity(&self) -> Option<&str> {
        self.integrity.as_deref()
    }
}

/// Why [`FileStore::try_publish`] failed, and whether the file is in place all the same.
#[derive(Debug)]
pub struct Unpublished {
    /// The file replaced its target (what failed came after); `false`: the target is unchanged.
    pub in_place: bool,
    /// What failed.
    pub error: Error,
}

/// The integrity checksum an encoded checkpoint states on its `integrity` line, read without
/// decoding it (`None` if there is no such line where caf writes it).
pub fn stated_integrity(bytes: &[u8]) -> Option<String> {
    const PREFIX: &[u8] = b"\n  \"integrity\": \"";
    let start = bytes.windows(PREFIX.len()).position(|w| w == PREFIX)? + PREFIX.len();
    let len = bytes[start..].iter().position(|b| *b == b'"')?;
    std::str::from_utf8(&bytes[start..start + len])
        .ok()
        .map(str::to_string)
}

/// What the top-level members of a damaged file still say, where it keeps the layout caf writes
/// (each top-level member on a line of its own, indented by two spaces): enough to place a
/// truncated or corrupted checkpoint in its execution and lineage.
#[derive(Debug, Default)]
struct Salvaged {
    id: Option<CheckpointId>,
    execution_id: Option<ExecutionId>,
    parent_id: Option<CheckpointId>,
    timestamp: Option<Timestamp>,
}

fn salvage(bytes: &[u8]) -> Salvaged {
    let mut out = Salvaged::default();
    for line in bytes.split(|&b| b == b'\n') {
        // Top-level members only: nested lines are indented further.
        if !line.starts_with(b"  \"") {
            continue;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            continue;
        };
        let member = format!("{{{}}}", text.trim_end().trim_end_matches(','));
        let Ok(serde_json::Value::Object(m)) = serde_json::from_str(&member) else {
            continue;
        };
        for (key, value) in m {
            let Some(v) = value.as_str() else { continue };
            match key.as_str() {
                "id" => out.id = CheckpointId::new(v).ok(),
                "execution_id" => out.execution_id = ExecutionId::new(v).ok(),
                "parent_id" => out.parent_id = CheckpointId::new(v).ok(),
                "timestamp" => out.timestamp = Timestamp::parse(v).ok(),
                _ => {}
            }
        }
    }
    out
}

/// What is known of the damaged file of `id`: the entry the index had for it while it was whole,
/// else what can be read from its bytes (unless they name another checkpoint).
fn damaged_checkpoint(
    id: &CheckpointId,
    known: Option<&Entry>,
    bytes: Option<&[u8]>,
    error: &Error,
) -> DamagedCheckpoint {
    let error = error.to_string();
    if let Some(e) = known {
        return DamagedCheckpoint {
            id: id.clone(),
            execution_id: Some(e.summary.execution_id.clone()),
            parent_id: e.summary.parent_id.clone(),
            timestamp: Some(e.summary.timestamp),
            error,
        };
    }
    let s = bytes
        .map(salvage)
        .filter(|s| s.id.as_ref().is_none_or(|named| named == id))
        .unwrap_or_default();
    DamagedCheckpoint {
        id: id.clone(),
        execution_id: s.execution_id,
        parent_id: s.parent_id,
        timestamp: s.timestamp,
        error,
    }
}

/// A file that could not be indexed: why, and its bytes if they could be read.
type Unindexable = (Error, Option<Vec<u8>>);

/// What the index records of a file besides its summary: the checksum it states and the digest
/// of its bytes, when it is in the current format.
#[derive(Debug, Default)]
struct Recorded {
    integrity: Option<String>,
    digest: Option<String>,
}

impl Recorded {
    fn of(entry: &Entry) -> Self {
        Self {
            integrity: entry.integrity.clone(),
            digest: entry.digest.clone(),
        }
    }
}

/// Reads the file of `id` for the index: the checkpoint and what the index records of it.
fn read_for_index<F: Fs>(
    fs: &F,
    path: &Path,
    id: &CheckpointId,
    limits: &Limits,
) -> std::result::Result<(Checkpoint, Recorded), Unindexable> {
    let bytes = read_regular_file_in(fs, path, limits.max_bytes).map_err(|e| (e, None))?;
    let decoded = match decode(&bytes, limits) {
        Ok(d) => d,
        Err(error) => {
            let origin = path.display().to_string();
            return Err((Error::Load { origin, error }, Some(bytes)));
        }
    };
    let migrated = decoded.was_migrated();
    match check_name(path, id, decoded) {
        Ok(d) => {
            let integrity = if migrated {
                None
            } else {
                stated_integrity(&bytes)
            };
            let digest = integrity.as_ref().map(|_| file_digest(&bytes));
            Ok((d.checkpoint, Recorded { integrity, digest }))
        }
        Err(e) => Err((e, Some(bytes))),
    }
}

/// What [`reconcile`] found.
struct Reconciled {
    problems: Vec<Problem>,
    damaged: Vec<DamagedCheckpoint>,
    /// Whether the in-memory index changed (so the log should be rewritten).
    changed: bool,
}

/// Brings the index in line with the directory; returns the files that could not be indexed.
/// With `force`, every file is read again, even those the index records with the same size and
/// modification time.
fn reconcile<F: Fs>(
    fs: &F,
    root: &Path,
    index: &mut Index<F>,
    limits: &Limits,
    force: bool,
) -> Result<Reconciled> {
    let mut problems = Vec::new();
    let mut damaged = Vec::new();
    let mut seen = HashSet::new();
    let mut seen_damaged = HashSet::new();
    let mut changed = force;
    let dir = std::fs::read_dir(root).map_err(|e| Error::io(root, e))?;
    for entry in dir {
        let entry = entry.map_err(|e| Error::io(root, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if name.starts_with('.') || check_id(stem).is_err() {
            continue;
        }
        let path = entry.path();
        let Ok(id) = CheckpointId::new(stem) else {
            continue;
        };
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_) => continue, // vanished meanwhile
        };
        let fresh = !force
            && index
                .entries
                .get(&id)
                .is_some_and(|e| e.summary.bytes == meta.len() && e.mtime_ns == mtime_ns(&meta));
        if fresh && meta.file_type().is_file() {
            seen.insert(id);
            continue;
        }
        let previous = index.entries.remove(&id);
        match read_for_index(fs, &path, &id, limits) {
            Ok((c, recorded)) => {
                let fresh_entry = Entry {
                    summary: CheckpointSummary::of(&c, meta.len()),
                    mtime_ns: mtime_ns(&meta),
                    integrity: recorded.integrity,
                    digest: recorded.digest,
                };
                changed |= previous.as_ref() != Some(&fresh_entry);
                changed |= index.damaged.remove(&id).is_some();
                index.entries.insert(id.clone(), fresh_entry);
                seen.insert(id);
            }
            Err((error, bytes)) => {
                if let Some(whole) = previous {
                    // Remember what it was while it was whole.
                    index.damaged.insert(id.clone(), whole);
                    changed = true;
                }
                damaged.push(damaged_checkpoint(
                    &id,
                    index.damaged.get(&id),
                    bytes.as_deref(),
                    &error,
                ));
                seen_damaged.insert(id);
                problems.push(Problem { path, error });
            }
        }
    }
    let before = (index.entries.len(), index.damaged.len());
    index.entries.retain(|id| seen.contains(id));
    index.damaged.retain(|id, _| seen_damaged.contains(id));
    changed |= (index.entries.len(), index.damaged.len()) != before;
    Ok(Reconciled {
        problems,
        damaged,
        changed,
    })
}

/// Checks that the file `DIR/{id}.json` holds the checkpoint `id`.
fn check_name(path: &Path, id: &CheckpointId, d: Decoded) -> Result<Decoded> {
    if &d.checkpoint.id != id {
        return Err(Error::Load {
            origin: path.display().to_string(),
            error: LoadError::Invalid {
                pointer: "/id".into(),
                message: format!(
                    "the file is named {id}.json but holds checkpoint {}",
                    d.checkpoint.id
                ),
            },
        });
    }
    Ok(d)
}

/// Whether `a` and `b` are on the same file system (a rename between them can work). Unknown
/// counts as the same.
#[cfg(unix)]
fn same_file_system(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev(),
        _ => true,
    }
}

#[cfg(not(unix))]
fn same_file_system(_a: &Path, _b: &Path) -> bool {
    true
}

/// Removes temporary files left by writers that were killed (older than a minute) from `dir`:
/// every file of the staging directory `.caf/tmp`, or only the staged files caf names (with
/// `named_only`, in the store's own directory).
fn clean_stale_temp_files<F: Fs>(fs: &F, dir: &Path, named_only: bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // A live writer's spare files may wait a while for their save.
        let spare = name.starts_with(SPARE_PREFIX);
        if named_only && !spare && !name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let cutoff = now - Duration::from_secs(if spare { 3600 } else { 60 });
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < cutoff);
        if old {
            let _ = fs.remove_file(&entry.path());
        }
    }
}

impl<F: Fs> Drop for FileStore<F> {
    fn drop(&mut self) {
        let spares = self.spares.get_mut().unwrap_or_else(|p| p.into_inner());
        for (path, _) in spares.drain(..) {
            let _ = self.fs.remove_file(&path);
        }
    }
}

impl<F: Fs> CheckpointStore for FileStore<F> {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        let (redacted, bytes) = self.redact_and_encode(checkpoint, None, self)?;
        let staged = self.stage_as_is(&redacted, &bytes);
        if let Cow::Owned(bytes) = bytes {
            self.give_back(bytes);
        }
        self.publish(staged?)
    }

    fn save_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<CheckpointSummary> {
        FileStore::save_encoded(self, checkpoint, bytes)
    }

    fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.load_decoded(id).map(|d| d.checkpoint)
    }

    /// The newest entry of the execution in the index (no listing is built), then its file,
    /// on the fast path when the file is what the index recorded.
    fn latest(&self, execution_id: &ExecutionId) -> Result<Option<Checkpoint>> {
        let newest = {
            let mut index = self.index();
            index.refresh()?;
            index
                .entries
                .newest_of(execution_id)
                .map(|e| (e.summary.id.clone(), Recorded::of(e)))
        };
        match newest {
            Some((id, known)) => self.load_known(&id, &known).map(|d| Some(d.checkpoint)),
            None => Ok(None),
        }
    }

    fn damaged(&self) -> Result<Vec<DamagedCheckpoint>> {
        // Found on open; since then a damaged file may have been deleted or saved again.
        let mut index = self.index();
        index.refresh()?;
        Ok(self
            .damaged
            .iter()
            .filter(|d| !index.entries.contains_key(&d.id))
            .filter(|d| std::fs::symlink_metadata(self.path_of(&d.id)).is_ok())
            .cloned()
            .collect())
    }

    fn record_pruned(&self, stones: &[crate::prune::Tombstone]) -> Result<()> {
        crate::prune::PrunedLog::of_dir(self.root()).record(stones)
    }

    fn pruned(&self) -> Result<std::collections::HashMap<CheckpointId, crate::prune::Tombstone>> {
        crate::prune::PrunedLog::of_dir(self.root()).load()
    }

    fn describe(&self) -> String {
        self.root().display().to_string()
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        let mut index = self.index();
        index.refresh()?;
        let entries: Box<dyn Iterator<Item = &Entry>> = match &filter.execution_id {
            Some(execution) => Box::new(index.entries.of_execution(execution)),
            None => Box::new(index.entries.values()),
        };
        let items = entries
            .filter(|e| filter.matches(&e.summary))
            .map(|e| e.summary.clone());
        Ok(filter.apply(items))
    }

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        let mut index = self.index();
        index.refresh()?;
        Ok(index.entries.get(id).map(|e| e.summary.clone()))
    }

    fn delete(&self, id: &CheckpointId) -> Result<bool> {
        let path = self.path_of(id);
        let existed = match self.fs.remove_file(&path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(Error::io(&path, e)),
        };
        if existed && self.options.write.durable {
            sync_dir_in(&self.fs, &self.root)?;
        }
        let mut index = self.index();
        let indexed = index.entries.contains_key(id);
        if existed || indexed {
            index.delete(std::slice::from_ref(id));
        }
        Ok(existed)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        let mut index = self.index();
        index.refresh()?;
        // Oldest first: one that fails part of the way leaves the newest in place.
        let mut ids: Vec<CheckpointId> = index
            .entries
            .of_execution(execution_id)
            .map(|e| e.summary.id.clone())
            .collect();
        ids.reverse();
        let mut removed = Vec::new();
        for id in &ids {
            let path = self.path_of(id);
            match self.fs.remove_file(&path) {
                Ok(()) => removed.push(id.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    index.delete(&removed);
                    return Err(Error::io(&path, e));
                }
            }
        }
        if !removed.is_empty() && self.options.write.durable {
            sync_dir_in(&self.fs, &self.root)?;
        }
        index.delete(&ids);
        Ok(removed.len())
    }
}
