//! Running a watched command and listening for SIGINT and SIGTERM while waiting: what
//! `caf watch` waits on between captures.
//!
//! One channel gets every wake-up: a signal (from a `signal-hook` thread) and the command's
//! exit (from a thread waiting for it). With a command, SIGTERM is passed on to it and the
//! watch ends when the command does; SIGINT is not passed on, because Ctrl-C in a terminal
//! already reaches the command (they share the terminal's process group), and an interactive
//! agent may take a second one as "quit". Without a command, either signal ends the watch.

use caf_core::capture::Ending;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// What woke the watch.
enum Wake {
    Signal(i32),
    Exited(std::io::Result<std::process::ExitStatus>),
}

/// The watched command (if any) and the signals, as one thing to wait on.
pub struct Supervisor {
    wakes: Receiver<Wake>,
    /// For the thread that waits for the command.
    sender: Sender<Wake>,
    signals: Handle,
    pid: Option<u32>,
    exited: bool,
}

/// The name of a signal this module handles.
fn signal_name(sig: i32) -> String {
    match sig {
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

impl Supervisor {
    /// Starts listening for SIGINT and SIGTERM.
    pub fn listen() -> Result<Self, String> {
        let (tx, wakes) = channel();
        let mut signals = Signals::new([SIGINT, SIGTERM])
            .map_err(|e| format!("cannot listen for signals: {e}"))?;
        let handle = signals.handle();
        let to_signals = tx.clone();
        std::thread::Builder::new()
            .name("caf-watch-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if to_signals.send(Wake::Signal(sig)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start the signal thread: {e}"))?;
        Ok(Self {
            wakes,
            sender: tx,
            signals: handle,
            pid: None,
            exited: false,
        })
    }

    /// Runs `command` (its program and arguments), in the current directory, with caf's
    /// standard input, output and error; returns its process id.
    pub fn spawn(&mut self, command: &[OsString]) -> Result<u32, String> {
        let Some((program, args)) = command.split_first() else {
            return Err("no command to run".into());
        };
        let mut child = std::process::Command::new(program)
            .args(args)
            .spawn()
            .map_err(|e| format!("{}: {e}", program.to_string_lossy()))?;
        let pid = child.id();
        let tx = self.sender.clone();
        std::thread::Builder::new()
            .name("caf-watch-child".into())
            .spawn(move || {
                let _ = tx.send(Wake::Exited(child.wait()));
            })
            .map_err(|e| format!("cannot start the thread that waits for {pid}: {e}"))?;
        self.pid = Some(pid);
        Ok(pid)
    }

    /// Waits up to `timeout`: `None` when it passed, the [`Ending`] when the command exited or
    /// a signal ended the watch. `note` is told of a signal passed on to the command.
    pub fn wait(&mut self, timeout: Duration, note: &mut dyn FnMut(&str)) -> Option<Ending> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.wakes.recv_timeout(left) {
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left);
                    return None;
                }
                Ok(Wake::Exited(status)) => {
                    self.exited = true;
                    return Some(match status {
                        Ok(s) => Ending::Exited {
                            code: s.code(),
                            signal: s.signal(),
                        },
                        Err(_) => Ending::Exited {
                            code: None,
                            signal: None,
                        },
                    });
                }
                Ok(Wake::Signal(sig)) => match self.pid {
                    Some(pid) if !self.exited => {
                        if sig == SIGTERM {
                            self.pass_on(pid, note);
                        }
                    }
                    _ => {
                        return Some(Ending::Stopped {
                            signal: Some(signal_name(sig)),
                        })
                    }
                },
            }
        }
    }

    /// Passes SIGTERM on to the command.
    fn pass_on(&self, pid: u32, note: &mut dyn FnMut(&str)) {
        let target = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        let sent = target.map(|p| rustix::process::kill_process(p, rustix::process::Signal::TERM));
        match sent {
            Some(Ok(())) => note(&format!("SIGTERM passed on to the command (pid {pid})")),
            Some(Err(e)) => note(&format!("could not pass SIGTERM on to pid {pid}: {e}")),
            None => note(&format!("could not pass SIGTERM on to pid {pid}")),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.signals.close();
    }
}
