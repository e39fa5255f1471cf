//! Periodic capture of a long session (seed 003): [`PeriodicCapture`] saves a checkpoint at the
//! start, every interval, and at the end (with how the watched command ended), each holding
//! what its [`Probe`]s read — a git status ([`GitStatus`]), the files of a state directory
//! ([`StateDir`]), memory ([`ProcessMemory`]), the files modified since the start
//! ([`FilesModified`]) — and, at the end, a [`Summary`].
//!
//! **Captures are ordinary checkpoints** of one execution (the *session*), saved through the
//! store given, so `list`, `inspect`, `diff`, `log`, `prune` and SQL all work on them. Capture
//! `N` has the labels `capture-N` and `watch`, `context.variables` `capture` (N) and `trigger`
//! (`start`, `interval`, `exit`, `stop`, `manual`), `progress.step_number` N, the command in
//! `progress.task`, and each probe's reading in `context.state` under the probe's name
//! (`{"error": "…"}` when it failed: a failing probe never stops the watch). The command and
//! its end are in `context.state.command`; the last capture holds `context.state.summary`.
//! Its reason is `periodic`, and for the last one `completed` (the command exited 0, or the
//! watch was stopped) or `error` (the command failed; `progress.last_error` says how).
//!
//! **An unchanged state is not saved again** unless asked ([`PeriodicCaptureBuilder::save_unchanged`]):
//! at each interval the probes are read and a reading is written to the state only when it
//! differs from the last one, so the state's dirty tracking ([`crate::RuntimeState::dirty`])
//! says whether anything changed; probes of things that move all the time (memory) are not
//! counted ([`Probe::tracks_change`]). The first and the last capture are always saved.
//!
//! **Events** (`started`, `checkpoint`, `stopped`, as in seed 003, plus `failed` for a capture
//! the store refused) go to [`PeriodicCaptureBuilder::on_event`] subscribers;
//! [`PeriodicCaptureBuilder::on_checkpoint`] is called with each capture.
//!
//! ```
//! use caf_core::capture::{Ending, PeriodicCapture, Probe, ProbeError};
//! use caf_core::clock::SimulatedClock;
//! use caf_core::{MemoryStore, Timestamp};
//! use serde_json::{json, Value};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! /// A probe whose reading changes each time.
//! struct Counter(u64);
//! impl Probe for Counter {
//!     fn name(&self) -> &str { "counter" }
//!     fn read(&mut self) -> Result<Value, ProbeError> { self.0 += 1; Ok(json!(self.0)) }
//! }
//!
//! let clock = Arc::new(SimulatedClock::starting_at(Timestamp::from_micros(0)));
//! let watch = PeriodicCapture::builder(MemoryStore::new())
//!     .interval(Duration::from_secs(60))
//!     .probe(Counter(0))
//!     .clock(clock.clone())
//!     .on_checkpoint(|c| println!("capture {} saved", c.number))
//!     .build()
//!     .unwrap();
//! let mut waits = 0;
//! // `run` waits through the closure (here: a simulated clock moved on), captures when an
//! // interval is due, and stops when the closure says how the watch ended.
//! let stopped = watch
//!     .run(|due_in| {
//!         clock.advance_ms(due_in.as_millis() as u64 + 1);
//!         waits += 1;
//!         (waits == 3).then_some(Ending::Stopped { signal: None })
//!     })
//!     .unwrap();
//! assert_eq!(stopped.summary.total, 4); // the start, two intervals, the end
//! assert_eq!(stopped.summary.total_duration, "3m 0s"); // the end came a minute after the last
//! ```

mod git;
mod interval;
mod memory;
mod probe;
mod state_dir;
mod summary;

pub use git::{FilesModified, GitStatus, MAX_LISTED};
pub use interval::{parse_interval, IntervalError};
pub use memory::ProcessMemory;
pub use probe::{Probe, ProbeError};
pub use state_dir::{StateDir, MAX_FILES};
pub use summary::{format_duration, latest_session, summarize, CaptureRow, GitCounts, Summary};

use probe::error_reading;
use summary::{capture_number, captures_of};

use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::{Error, Result};
use crate::format::{Checkpoint, CheckpointReason};
use crate::id::ExecutionId;
use crate::manager::{CheckpointManager, CheckpointOptions};
use crate::runtime::RuntimeState;
use crate::store::CheckpointStore;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The agent id of the captures (`caf list --agent caf-watch`).
pub const AGENT_ID: &str = "caf-watch";

/// The default interval: 15 minutes.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15 * 60);

/// What caused a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The watch started.
    Start,
    /// An interval passed.
    Interval,
    /// The watched command exited.
    Exit,
    /// The watch was stopped (a signal, or its owner).
    Stop,
    /// Its owner asked ([`PeriodicCapture::capture`]).
    Manual,
}

impl Trigger {
    /// The word in `context.variables.trigger`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Interval => "interval",
            Self::Exit => "exit",
            Self::Stop => "stop",
            Self::Manual => "manual",
        }
    }
}

/// How a watch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The watched command exited with `code`, or was killed by `signal`.
    Exited {
        /// Its exit code.
        code: Option<i32>,
        /// The signal that killed it.
        signal: Option<i32>,
    },
    /// The watch was stopped before (or without) a command's end: by `signal` (`SIGTERM`, …)
    /// or by its owner (`None`).
    Stopped {
        /// The signal's name.
        signal: Option<String>,
    },
}

/// One capture saved.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Its number in the session.
    pub number: u64,
    /// What caused it.
    pub trigger: Trigger,
    /// The checkpoint, as handed to the store (which redacts its own copy of any secret).
    pub checkpoint: Checkpoint,
}

/// What a watch tells its subscribers.
#[derive(Debug)]
#[non_exhaustive]
pub enum WatchEvent<'a> {
    /// The watch started (before its first capture).
    Started {
        /// The session.
        session: &'a ExecutionId,
        /// The interval.
        interval: Duration,
        /// When it continues a session: the number of its last capture.
        resumed_after: Option<u64>,
    },
    /// A capture was saved.
    Checkpoint(&'a Capture),
    /// A capture could not be saved (the store failed); the watch goes on.
    Failed {
        /// What caused the capture.
        trigger: Trigger,
        /// Why it failed.
        error: &'a Error,
    },
    /// The watch stopped, after its last capture.
    Stopped {
        /// The last capture.
        final_capture: &'a Capture,
        /// The session's summary (also saved in the last capture).
        summary: &'a Summary,
    },
}

/// What [`PeriodicCapture::stop`] leaves.
#[derive(Debug)]
pub struct Stopped {
    /// The last capture.
    pub final_capture: Capture,
    /// The session's summary.
    pub summary: Summary,
    /// How the watch ended (as given to [`PeriodicCapture::stop`]).
    pub ending: Ending,
}

type CheckpointHook = Box<dyn FnMut(&Capture) + Send>;
type EventHook = Box<dyn FnMut(&WatchEvent<'_>) + Send>;

/// Builds a [`PeriodicCapture`]: interval, probes, store, session, clock, callbacks.
pub struct PeriodicCaptureBuilder<S> {
    store: S,
    interval: Duration,
    probes: Vec<Box<dyn Probe>>,
    session: Option<ExecutionId>,
    clock: Arc<dyn Clock>,
    agent: String,
    save_unchanged: bool,
    command: Option<(Vec<String>, Option<u32>)>,
    on_checkpoint: Vec<CheckpointHook>,
    on_event: Vec<EventHook>,
}

impl<S: CheckpointStore> PeriodicCaptureBuilder<S> {
    /// How often to capture (default [`DEFAULT_INTERVAL`]; at least a millisecond).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Adds a probe; its readings go under its name in each capture's context state.
    pub fn probe(mut self, probe: impl Probe + 'static) -> Self {
        self.probes.push(Box::new(probe));
        self
    }

    /// The session (the execution of the captures; default: a new `watch_…` id). A session
    /// the store already has is continued: numbering goes on, and probes pick up their last
    /// readings ([`Probe::resume`]).
    pub fn session(mut self, session: ExecutionId) -> Self {
        self.session = Some(session);
        self
    }

    /// The clock (default: the system clock; a simulated one in tests).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The agent id of the captures (default [`AGENT_ID`]).
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = agent.into();
        self
    }

    /// Save a capture at every interval even when nothing changed (default: no).
    pub fn save_unchanged(mut self, yes: bool) -> Self {
        self.save_unchanged = yes;
        self
    }

    /// The watched command (its arguments and process id), recorded in each capture.
    pub fn command(mut self, argv: Vec<String>, pid: Option<u32>) -> Self {
        self.command = Some((argv, pid));
        self
    }

    /// Called with each capture saved.
    pub fn on_checkpoint(mut self, f: impl FnMut(&Capture) + Send + 'static) -> Self {
        self.on_checkpoint.push(Box::new(f));
        self
    }

    /// Called with each event (started, checkpoint, failed, stopped).
    pub fn on_event(mut self, f: impl FnMut(&WatchEvent<'_>) + Send + 'static) -> Self {
        self.on_event.push(Box::new(f));
        self
    }

    /// The watch, ready to [`start`](PeriodicCapture::start). Continuing a session loads its
    /// last capture, which may fail.
    pub fn build(self) -> Result<PeriodicCapture<S>> {
        let session = match self.session {
            Some(s) => s,
            None => ExecutionId::new(format!("watch_{}", uuid::Uuid::now_v7().simple()))?,
        };
        let manager = CheckpointManager::new(self.store).with_clock(Arc::clone(&self.clock));
        let mut probes = self.probes;
        let (state, number) = match manager.restore_latest(&session) {
            Ok(restored) => {
                let number = capture_number(&restored.checkpoint).unwrap_or(0);
                let readings = &restored.state.snapshot().context.state;
                for p in &mut probes {
                    if let Some(previous) = readings.get(p.name()) {
                        p.resume(previous);
                    }
                }
                (restored.state, Some(number))
            }
            Err(Error::NotFound { .. }) => (
                RuntimeState::with_clock(self.agent, session, Arc::clone(&self.clock)),
                None,
            ),
            Err(e) => return Err(e),
        };
        let mut state = state;
        // What belonged to the run that saved the last capture, not to this one.
        state.remove_state("summary");
        state.remove_state("command");
        state.remove_variable("stopped_by");
        let mut watch = PeriodicCapture {
            manager,
            state,
            probes,
            interval: self.interval,
            number: number.unwrap_or(0),
            resumed_after: number,
            next_due: None,
            save_unchanged: self.save_unchanged,
            on_checkpoint: self.on_checkpoint,
            on_event: self.on_event,
        };
        match self.command {
            Some((argv, pid)) => {
                watch.state.set_task(argv.join(" "));
                watch.state.set_state(
                    "command",
                    json!({"argv": argv, "pid": pid, "status": "running"}),
                );
            }
            None => watch.state.set_task("watch (no command)"),
        }
        Ok(watch)
    }
}

/// Periodic capture of a session (see the module docs).
pub struct PeriodicCapture<S> {
    manager: CheckpointManager<S>,
    state: RuntimeState,
    probes: Vec<Box<dyn Probe>>,
    interval: Duration,
    /// The number of the last capture saved.
    number: u64,
    resumed_after: Option<u64>,
    /// When the next interval capture is due (`None` before the start).
    next_due: Option<Timestamp>,
    save_unchanged: bool,
    on_checkpoint: Vec<CheckpointHook>,
    on_event: Vec<EventHook>,
}

impl<S> std::fmt::Debug for PeriodicCapture<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeriodicCapture")
            .field("session", self.state.execution_id())
            .field("interval", &self.interval)
            .field("captures", &self.number)
            .finish_non_exhaustive()
    }
}

/// `t` plus `d` (saturating).
fn after(t: Timestamp, d: Duration) -> Timestamp {
    let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    Timestamp::from_micros(t.as_micros().saturating_add(micros))
}

impl<S: CheckpointStore> PeriodicCapture<S> {
    /// A builder over `store`.
    pub fn builder(store: S) -> PeriodicCaptureBuilder<S> {
        PeriodicCaptureBuilder {
            store,
            interval: DEFAULT_INTERVAL,
            probes: Vec::new(),
            session: None,
            clock: Arc::new(SystemClock),
            agent: AGENT_ID.to_string(),
            save_unchanged: false,
            command: None,
            on_checkpoint: Vec::new(),
            on_event: Vec::new(),
        }
    }

    /// The session (the execution of the captures).
    pub fn session(&self) -> &ExecutionId {
        self.state.execution_id()
    }

    /// The interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The number of the last capture saved (0 before the first).
    pub fn captures(&self) -> u64 {
        self.number
    }

    /// The state the captures are taken of.
    pub fn state(&self) -> &RuntimeState {
        &self.state
    }

    /// The store.
    pub fn store(&self) -> &S {
        self.manager.store()
    }

    fn emit(&mut self, event: &WatchEvent<'_>) {
        for f in &mut self.on_event {
            f(event);
        }
    }

    /// Starts the watch: emits `started` and saves the first capture, at once.
    pub fn start(&mut self) -> Result<Capture> {
        let session = self.state.execution_id().clone();
        let resumed_after = self.resumed_after;
        let interval = self.interval;
        self.emit(&WatchEvent::Started {
            session: &session,
            interval,
            resumed_after,
        });
        let volatile = self.read_probes();
        let capture = self.save(Trigger::Start, volatile, CheckpointReason::Periodic)?;
        self.next_due = Some(after(self.state.clock().now(), self.interval));
        self.announce(&capture);
        Ok(capture)
    }

    /// How long until the next interval capture is due (zero when it is).
    pub fn due_in(&self) -> Duration {
        let Some(due) = self.next_due else {
            return Duration::ZERO;
        };
        let left = due.as_micros() - self.state.clock().now().as_micros();
        Duration::from_micros(u64::try_from(left).unwrap_or(0))
    }

    /// Takes the interval capture if it is due (saved only if something changed, or if asked
    /// to save unchanged states). The next one is due an interval later; intervals missed
    /// (a machine asleep) are skipped, not made up.
    pub fn tick(&mut self) -> Result<Option<Capture>> {
        let now = self.state.clock().now();
        let due = match self.next_due {
            Some(due) if now < due => return Ok(None),
            Some(due) => due,
            None => return self.start().map(Some),
        };
        let mut next = due;
        while next <= now {
            next = after(next, self.interval);
        }
        self.next_due = Some(next);
        self.capture(Trigger::Interval)
    }

    /// Reads the probes and saves a capture if something changed since the last one (or if
    /// asked to save unchanged states); `None` when nothing did.
    pub fn capture(&mut self, trigger: Trigger) -> Result<Option<Capture>> {
        let volatile = self.read_probes();
        let unchanged = self.state.dirty().is_clean() && self.state.last_checkpoint().is_some();
        if unchanged && !self.save_unchanged {
            return Ok(None);
        }
        let capture = self.save(trigger, volatile, CheckpointReason::Periodic)?;
        self.announce(&capture);
        Ok(Some(capture))
    }

    /// Stops the watch: reads the probes, records how it ended, saves the last capture with
    /// the session's summary in it, emits `stopped`.
    pub fn stop(mut self, ending: Ending) -> Result<Stopped> {
        let volatile = self.read_probes();
        let mut command = self.state.snapshot().context.state.get("command").cloned();
        let (trigger, reason) = match &ending {
            Ending::Exited { code, signal } => {
                let command = command.get_or_insert_with(|| json!({}));
                command["status"] = json!("exited");
                command["exit_code"] = json!(code);
                command["signal"] = json!(signal);
                let failed = match (code, signal) {
                    (Some(0), _) => None,
                    (Some(code), _) => Some(format!("the command exited with status {code}")),
                    (None, Some(sig)) => Some(format!("the command was killed by signal {sig}")),
                    (None, None) => Some("the command ended without a status".to_string()),
                };
                match failed {
                    Some(message) => {
                        self.state.set_last_error(message);
                        (Trigger::Exit, CheckpointReason::Error)
                    }
                    None => (Trigger::Exit, CheckpointReason::Completed),
                }
            }
            Ending::Stopped { signal } => {
                if let Some(command) = command.as_mut() {
                    command["status"] = json!("running when the watch stopped");
                }
                self.state
                    .set_variable("stopped_by", json!(signal.as_deref().unwrap_or("owner")));
                (Trigger::Stop, CheckpointReason::Completed)
            }
        };
        if let Some(command) = command {
            self.state.set_state("command", command);
        }
        let mut captures = captures_of(self.manager.store(), self.state.execution_id())?;
        let (number, mut checkpoint) = self.prepare(trigger, volatile, reason);
        captures.push(checkpoint.clone());
        let summary = Summary::of(self.session(), &captures);
        checkpoint.snapshot.context.state.insert(
            "summary".into(),
            serde_json::to_value(&summary).unwrap_or(Value::Null),
        );
        let capture = self.commit(number, trigger, checkpoint)?;
        self.announce(&capture);
        self.emit(&WatchEvent::Stopped {
            final_capture: &capture,
            summary: &summary,
        });
        Ok(Stopped {
            final_capture: capture,
            summary,
            ending,
        })
    }

    /// Runs the watch: starts it (unless started), then calls `wait` with the time until the
    /// next capture is due, captures when it returns `None`, and stops with the [`Ending`] it
    /// returns. A capture the store refuses is reported to subscribers
    /// ([`WatchEvent::Failed`]) and the watch goes on; a refused first or last capture is
    /// returned as the error.
    pub fn run(mut self, mut wait: impl FnMut(Duration) -> Option<Ending>) -> Result<Stopped> {
        if self.next_due.is_none() {
            self.start()?;
        }
        loop {
            if let Some(ending) = wait(self.due_in()) {
                return self.stop(ending);
            }
            if let Err(error) = self.tick() {
                self.emit(&WatchEvent::Failed {
                    trigger: Trigger::Interval,
                    error: &error,
                });
            }
        }
    }

    /// Reads every probe; tracked readings are written to the state when they changed, the
    /// others (memory) are returned, to be written only into a capture that is saved.
    fn read_probes(&mut self) -> Vec<(String, Value)> {
        let mut volatile = Vec::new();
        for probe in &mut self.probes {
            let name = probe.name().to_string();
            let reading = probe.read().unwrap_or_else(|e| error_reading(&e));
            if !probe.tracks_change() {
                volatile.push((name, reading));
            } else if self.state.snapshot().context.state.get(&name) != Some(&reading) {
                self.state.set_state(name, reading);
            }
        }
        volatile
    }

    /// Saves capture `number + 1`.
    fn save(
        &mut self,
        trigger: Trigger,
        volatile: Vec<(String, Value)>,
        reason: CheckpointReason,
    ) -> Result<Capture> {
        let (number, checkpoint) = self.prepare(trigger, volatile, reason);
        self.commit(number, trigger, checkpoint)
    }

    /// Capture `number + 1`, not yet saved: the volatile readings written to the state, the
    /// capture's number, trigger and step recorded; returns its number and checkpoint.
    fn prepare(
        &mut self,
        trigger: Trigger,
        volatile: Vec<(String, Value)>,
        reason: CheckpointReason,
    ) -> (u64, Checkpoint) {
        for (name, reading) in volatile {
            self.state.set_state(name, reading);
        }
        let number = self.number + 1;
        self.state.set_variable("capture", json!(number));
        self.state.set_variable("trigger", json!(trigger.as_str()));
        self.state.complete_step(None);
        let options = CheckpointOptions::new(reason)
            .label(format!("capture-{number}"))
            .label("watch");
        (number, self.manager.prepare(&self.state, options))
    }

    /// Saves capture `number` [`prepare`](Self::prepare)d.
    fn commit(&mut self, number: u64, trigger: Trigger, checkpoint: Checkpoint) -> Result<Capture> {
        self.manager.commit(&mut self.state, &checkpoint)?;
        self.number = number;
        Ok(Capture {
            number,
            trigger,
            checkpoint,
        })
    }

    /// Tells the callbacks and subscribers of a capture.
    fn announce(&mut self, capture: &Capture) {
        for f in &mut self.on_checkpoint {
            f(capture);
        }
        self.emit(&WatchEvent::Checkpoint(capture));
    }
}

#[cfg(test)]
mod tests;
