//! Work that must not block the UI thread: hardware detection, file dialogs, model import, file
//! writes. Each job runs on a named `std::thread` and sends one [`JobResult`] over a channel; the
//! app polls the channel each frame, and the thread asks for a repaint once its result is sent, so
//! an idle window stays idle (no polling repaint loop).

use crate::core::scenario::Scenario;
use crate::io::detect::DetectedMachine;
use crate::io::import::ImportedModel;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// What a finished job reports.
#[derive(Debug)]
pub enum JobResult {
    Detected(Box<DetectedMachine>),
    Imported {
        path: PathBuf,
        result: Result<Box<ImportedModel>, String>,
    },
    /// A vision projector (mmproj GGUF) was read for the model.
    MmprojImported {
        path: PathBuf,
        result: Result<Box<crate::core::vision::VisionEncoder>, String>,
    },
    ScenarioOpened {
        path: PathBuf,
        result: Result<Box<Scenario>, String>,
    },
    /// A file was written (report, scenario).
    Written {
        what: &'static str,
        result: Result<PathBuf, String>,
    },
    /// The memory-bandwidth probe finished.
    Probed(crate::io::detect::probe::ProbeResult),
    /// A llama-bench file was calibrated and stored: the stored constants and the status line,
    /// or a one-line error.
    Calibrated(Result<(Box<crate::core::speed::bench::Calibration>, String), String>),
    /// A file dialog returned nothing: cancelled, or no dialog backend on this system.
    NoFileChosen {
        action: FileAction,
    },
}

/// The file actions that go through a dialog (and can fall back to a typed path).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FileAction {
    ImportModel,
    OpenScenario,
    SaveScenario,
    ExportReport,
    /// Read llama-bench `-o json` output and calibrate this machine (as `headroom calibrate`).
    Calibrate,
}

impl FileAction {
    pub const fn label(self) -> &'static str {
        match self {
            FileAction::ImportModel => "Import model",
            FileAction::OpenScenario => "Open scenario",
            FileAction::SaveScenario => "Save scenario",
            FileAction::ExportReport => "Export report",
            FileAction::Calibrate => "Calibrate from llama-bench output",
        }
    }
}

/// The background jobs of one app.
pub struct Jobs {
    tx: Sender<JobResult>,
    rx: Receiver<JobResult>,
    /// Set on the first frame; a job that finishes later asks this context for a repaint.
    ctx: Arc<OnceLock<egui::Context>>,
    running: usize,
}

impl Default for Jobs {
    fn default() -> Self {
        let (tx, rx) = channel();
        Jobs {
            tx,
            rx,
            ctx: Arc::new(OnceLock::new()),
            running: 0,
        }
    }
}

impl Jobs {
    /// Remember the context so finished jobs can wake the UI (call before [`Jobs::poll`]).
    pub fn attach(&self, ctx: &egui::Context) {
        let _ = self.ctx.set(ctx.clone());
    }

    /// How many jobs have not reported yet.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Runs `f` on a named thread. If the thread cannot start, `f` runs here instead (it is never
    /// lost).
    pub fn spawn(&mut self, name: &str, f: impl FnOnce() -> JobResult + Send + 'static) {
        let tx = self.tx.clone();
        let ctx = Arc::clone(&self.ctx);
        // The closure is kept in a shared slot so a failed spawn can still run it here.
        let slot = Arc::new(std::sync::Mutex::new(Some(f)));
        let slot2 = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name(format!("headroom-{name}"))
            .spawn(move || {
                let job = slot2.lock().ok().and_then(|mut g| g.take());
                if let Some(job) = job {
                    let _ = tx.send(job());
                    // Send first, then wake: a frame that starts after this sees the result.
                    if let Some(c) = ctx.get() {
                        c.request_repaint();
                    }
                }
            });
        self.running += 1;
        if spawned.is_err()
            && let Some(job) = slot.lock().ok().and_then(|mut g| g.take())
        {
            let _ = self.tx.send(job());
        }
    }

    /// Results that have arrived since the last call (never blocks).
    pub fn poll(&mut self) -> Vec<JobResult> {
        let out: Vec<JobResult> = self.rx.try_iter().collect();
        self.running = self.running.saturating_sub(out.len());
        out
    }

    /// Blocks until every running job has reported or `timeout` passes (tests, shutdown).
    pub fn wait_all(&mut self, timeout: Duration) -> Vec<JobResult> {
        let end = Instant::now() + timeout;
        let mut out = Vec::new();
        while self.running > 0 {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.rx.recv_timeout(left) {
                Ok(r) => {
                    self.running -= 1;
                    out.push(r);
                }
                Err(_) => break,
            }
        }
        out
    }
}

/// A save dialog (blocking: call from a job thread). `None`: cancelled or no dialog available.
pub fn save_dialog(
    title: &str,
    filter_name: &str,
    extensions: &[&str],
    file_name: &str,
) -> Option<PathBuf> {
    rfd::FileDialog::new()
        .set_title(title)
        .add_filter(filter_name, extensions)
        .set_file_name(file_name)
        .save_file()
}

/// An open dialog (blocking: call from a job thread). `None`: cancelled or no dialog available.
pub fn open_dialog(title: &str, filters: &[(&str, &[&str])]) -> Option<PathBuf> {
    let mut d = rfd::FileDialog::new().set_title(title);
    for (name, ext) in filters {
        d = d.add_filter(*name, ext);
    }
    d.pick_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_arrive_and_are_counted() {
        let mut j = Jobs::default();
        j.spawn("t1", || JobResult::NoFileChosen {
            action: FileAction::ImportModel,
        });
        j.spawn("t2", || JobResult::Written {
            what: "x",
            result: Err("nope".into()),
        });
        assert_eq!(j.running(), 2);
        let got = j.wait_all(Duration::from_secs(5));
        assert_eq!(got.len(), 2);
        assert_eq!(j.running(), 0);
        assert!(j.poll().is_empty());
    }
}
