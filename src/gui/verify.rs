//! "Verify with llama-bench…", beside "Calibrate from llama-bench output": runs llama-bench on this
//! machine with the settings headroom recommends for the scenario (as `headroom verify` does),
//! on a worker thread, bounded in time and cancellable, its log shown as progress, then the
//! prediction beside the measurement and an offer to store the run as this machine's
//! calibration. Finding, planning, running and reading llama-bench is `io::verify`'s (shared
//! with the CLI); the rows are `core::verify`'s. When something is missing (llama-bench, the
//! GGUF, a fit on this machine) the Run button is disabled and the reason is written under it.

use crate::core::catalog::{Catalog, Machine};
use crate::core::fit::{FitResult, FitSettings};
use crate::core::format;
use crate::core::scenario::Scenario;
use crate::core::speed::bench::Calibration;
use crate::io::verify::{self as iov, Compared};
use egui::{Context, RichText, Ui};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Progress lines kept on screen.
const PROGRESS_LINES: usize = 8;

enum Msg {
    /// The command line about to run.
    Started(String),
    Line(String),
    Done(Box<Result<Outcome, String>>),
    Stored(Result<(Box<Calibration>, String), String>),
}

/// A finished run and what storing it needs.
struct Outcome {
    compared: Compared,
    n_prompt: u64,
    n_gen: u64,
    program: PathBuf,
}

/// What the dialog reads from the app each frame.
pub struct VerifyInputs<'a> {
    pub scenario: &'a Scenario,
    /// This machine, once detected.
    pub machine: Option<&'a Machine>,
    pub catalog: &'a Catalog,
    /// The scenario's fit on this machine.
    pub fit: Option<&'a FitResult>,
    /// Where a calibration is stored (`None`: nowhere).
    pub config_dir: Option<&'a Path>,
}

/// The dialog's state; `HeadroomApp` holds one and calls [`VerifyDialog::show`] every frame.
pub struct VerifyDialog {
    pub open: bool,
    /// The llama-bench to run, as typed; empty = `llama-bench` on PATH.
    pub llama_bench: String,
    /// The GGUF it runs, as typed; empty = the imported model's file.
    pub model: String,
    /// Seconds llama-bench may run.
    pub timeout_s: u64,
    /// `find_llama_bench` for the typed path (re-read when the text changes, not every frame).
    found: Option<(String, Result<PathBuf, String>)>,
    rx: Option<Receiver<Msg>>,
    cancel: Option<Arc<AtomicBool>>,
    started: Option<Instant>,
    command: Option<String>,
    progress: Vec<String>,
    outcome: Option<Outcome>,
    error: Option<String>,
    /// The status line of a stored calibration.
    pub stored: Option<String>,
    storing: bool,
    shown: bool,
}

impl Default for VerifyDialog {
    fn default() -> Self {
        VerifyDialog {
            open: false,
            llama_bench: String::new(),
            model: String::new(),
            timeout_s: iov::DEFAULT_TIMEOUT_S,
            found: None,
            rx: None,
            cancel: None,
            started: None,
            command: None,
            progress: Vec::new(),
            outcome: None,
            error: None,
            stored: None,
            storing: false,
            shown: false,
        }
    }
}

/// The GGUF the scenario's model was read from, when it was one.
fn imported_gguf(s: &Scenario) -> Option<PathBuf> {
    let p = &s.model.file_weights.as_ref()?.path;
    let path = PathBuf::from(p);
    path.extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
        .then_some(path)
}

impl VerifyDialog {
    /// Whether llama-bench is running (or a calibration being stored).
    pub fn busy(&self) -> bool {
        self.rx.is_some()
    }

    /// The llama-bench the typed path (or PATH) gives, read again only when the text changed.
    fn program(&mut self) -> Result<PathBuf, String> {
        let typed = self.llama_bench.trim().to_string();
        if self.found.as_ref().is_none_or(|(t, _)| *t != typed) {
            let given = (!typed.is_empty()).then(|| PathBuf::from(&typed));
            let r = iov::find_llama_bench(given.as_deref())
                .map_err(|e| e.replace("--llama-bench ", "llama-bench "));
            self.found = Some((typed, r));
        }
        self.found.as_ref().map_or_else(
            || Err("llama-bench is not on PATH".into()),
            |(_, r)| r.clone(),
        )
    }

    /// What a run needs, or the one reason it cannot start.
    fn ready(
        &mut self,
        i: &VerifyInputs,
    ) -> Result<(PathBuf, PathBuf, Machine, FitResult), String> {
        let m = i
            .machine
            .ok_or("This machine is not detected yet: wait for detection or press Re-detect.")?;
        if i.scenario.mode.is_training() {
            return Err("llama-bench measures inference: set the mode to inference.".into());
        }
        let program = self.program()?;
        let typed = self.model.trim();
        let model = if typed.is_empty() {
            imported_gguf(i.scenario).ok_or(
                "llama-bench runs a GGUF file: import the model's .gguf (Import model...) or type its path.",
            )?
        } else {
            PathBuf::from(typed)
        };
        if !model.is_file() {
            return Err(format!("{}: no such file.", model.display()));
        }
        let fit = i.fit.ok_or("No fit on this machine yet.")?;
        if !fit.fits() {
            return Err(format!(
                "The scenario does not fit on {}: nothing to run (the Machines tab says why).",
                m.name
            ));
        }
        Ok((program, model, m.clone(), fit.clone()))
    }

    /// Starts llama-bench on a worker thread.
    fn start(&mut self, ctx: &Context, i: &VerifyInputs) {
        let Ok((program, model, m, fit)) = self.ready(i) else {
            return;
        };
        let s = i.scenario.clone();
        let cat = i.catalog.clone();
        let timeout = Duration::from_secs(self.timeout_s.clamp(1, 86_400));
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = channel();
        self.cancel = Some(cancel.clone());
        self.rx = Some(rx);
        self.started = Some(Instant::now());
        self.progress.clear();
        self.command = None;
        self.outcome = None;
        self.error = None;
        self.stored = None;
        let ctx = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name("headroom-verify".into())
            .spawn(move || {
                let plan = iov::plan(&s, &fit, &model, iov::N_GEN, iov::DEFAULT_REPETITIONS);
                let _ = tx.send(Msg::Started(format!(
                    "{} {}",
                    program.display(),
                    plan.args.join(" ")
                )));
                let line_tx = tx.clone();
                let repaint = ctx.clone();
                let out = iov::run_cancellable(
                    &program,
                    &plan.args,
                    timeout,
                    Duration::from_secs(5),
                    Some(cancel.as_ref()),
                    |l| {
                        let _ = line_tx.send(Msg::Line(format::one_line(l).into_owned()));
                        repaint.request_repaint();
                    },
                );
                let result = out.and_then(|out| {
                    // The model's own constants: a stored calibration would compare the run
                    // with itself.
                    let st = FitSettings::default();
                    iov::compare(&s, &m, &cat, &st, &plan, &out).map(|compared| Outcome {
                        compared,
                        n_prompt: plan.n_prompt,
                        n_gen: plan.n_gen,
                        program,
                    })
                });
                let _ = tx.send(Msg::Done(Box::new(result)));
                ctx.request_repaint();
            });
        if let Err(e) = spawned {
            self.finish();
            self.error = Some(format!("cannot start a thread: {e}"));
        }
    }

    /// Stores the finished run as this machine's calibration, on a worker thread.
    fn store(&mut self, ctx: &Context, i: &VerifyInputs) {
        let (Some(o), Some(m), Some(dir)) = (&self.outcome, i.machine, i.config_dir) else {
            return;
        };
        let runs = o.compared.runs.clone();
        let shown = format!("llama-bench run by headroom ({})", o.program.display());
        let (m, cat, dir) = (m.clone(), i.catalog.clone(), dir.to_path_buf());
        let (tx, rx) = channel();
        self.rx = Some(rx);
        self.storing = true;
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let today = crate::io::clock::today_utc();
            let r = crate::io::calibration::calibrate_runs(&runs, &shown, &m, &cat, &dir, &today)
                .map(|done| {
                    let line = format!("{} {}", m.name, done.calibration.note());
                    (Box::new(done.calibration), line)
                });
            let _ = tx.send(Msg::Stored(r));
            ctx.request_repaint();
        });
    }

    fn finish(&mut self) {
        self.rx = None;
        self.cancel = None;
        self.started = None;
        self.storing = false;
    }

    /// Stops a running llama-bench (the thread reports "cancelled" within about 50 ms).
    pub fn cancel(&mut self) {
        if let Some(c) = &self.cancel {
            c.store(true, Ordering::Relaxed);
        }
    }

    /// Reads what the worker sent; returns a stored calibration and its status line.
    fn poll(&mut self) -> Option<(Calibration, String)> {
        let msgs: Vec<Msg> = self
            .rx
            .as_ref()
            .map(|rx| rx.try_iter().collect())
            .unwrap_or_default();
        let mut out = None;
        for m in msgs {
            match m {
                Msg::Started(c) => self.command = Some(c),
                Msg::Line(l) => {
                    self.progress.push(l);
                    let extra = self.progress.len().saturating_sub(PROGRESS_LINES);
                    self.progress.drain(..extra);
                }
                Msg::Done(r) => {
                    self.finish();
                    match *r {
                        Ok(o) => self.outcome = Some(o),
                        Err(e) => self.error = Some(e),
                    }
                }
                Msg::Stored(r) => {
                    self.finish();
                    match r {
                        Ok((c, line)) => {
                            self.stored = Some(line.clone());
                            out = Some((*c, line));
                        }
                        Err(e) => self.error = Some(format!("Calibration not stored: {e}")),
                    }
                }
            }
        }
        out
    }

    /// Draws the window when open; returns a calibration once one was stored.
    pub fn show(&mut self, ctx: &Context, i: &VerifyInputs) -> Option<(Calibration, String)> {
        let out = self.poll();
        if self.busy() {
            ctx.request_repaint_after(Duration::from_millis(250));
        }
        if !self.open {
            self.shown = false;
            return out;
        }
        let first = !std::mem::replace(&mut self.shown, true);
        let modal = egui::Modal::new(egui::Id::unique("verify-dialog")).show(ctx, |ui| {
            ui.set_width(620.0);
            let close = ui
                .horizontal(|ui| {
                    ui.heading("Verify with llama-bench");
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        ui.button("Close").on_hover_text("Escape").clicked()
                    })
                    .inner
                })
                .inner;
            self.body(ui, ctx, i);
            close
        });
        // Closing leaves a run going (its result waits here); Cancel stops it.
        if modal.inner || (modal.should_close() && !first) {
            self.open = false;
        }
        out
    }

    fn body(&mut self, ui: &mut Ui, ctx: &Context, i: &VerifyInputs) {
        let busy = self.busy();
        super::style::hint(
            ui,
            "Runs llama-bench here with the settings headroom recommends (one prompt test and one generation test, 3 repetitions each) and puts the prediction beside the measurement.",
        );
        egui::Grid::new("verify-inputs")
            .num_columns(2)
            .show(ui, |ui| {
                let l = ui.label("llama-bench");
                ui.add_enabled(
                    !busy,
                    egui::TextEdit::singleline(&mut self.llama_bench)
                        .hint_text("llama-bench on PATH, or its path")
                        .desired_width(420.0),
                )
                .labelled_by(l.id);
                ui.end_row();
                let l = ui.label("Model file (GGUF)");
                let hint = imported_gguf(i.scenario).map_or_else(
                    || "the .gguf llama-bench loads".to_string(),
                    |p| p.display().to_string(),
                );
                ui.add_enabled(
                    !busy,
                    egui::TextEdit::singleline(&mut self.model)
                        .hint_text(hint)
                        .desired_width(420.0),
                )
                .labelled_by(l.id);
                ui.end_row();
                let l = ui.label("Stop after");
                ui.add_enabled(
                    !busy,
                    egui::DragValue::new(&mut self.timeout_s)
                        .range(1..=86_400)
                        .suffix(" s")
                        .speed(10.0),
                )
                .labelled_by(l.id);
                ui.end_row();
            });
        let ready = self.ready(i);
        ui.horizontal(|ui| {
            let run = ui.add_enabled(!busy && ready.is_ok(), egui::Button::new("Run llama-bench"));
            let run = match &ready {
                Err(why) => run.on_disabled_hover_text(why.as_str()),
                Ok(_) => run.on_hover_text("Run it now on this machine"),
            };
            if run.clicked() {
                self.start(ctx, i);
            }
            if self.cancel.is_some() && ui.button("Cancel").clicked() {
                self.cancel();
            }
        });
        match &ready {
            Err(why) if !busy => {
                ui.colored_label(ui.visuals().warn_fg_color, why.as_str());
            }
            Ok((program, _, _, _)) if !busy && self.outcome.is_none() => {
                ui.label(RichText::new(format!("Will run {}", program.display())).weak());
            }
            _ => {}
        }
        if let Some(c) = &self.command {
            ui.add(egui::Label::new(RichText::new(c).monospace().small()).wrap());
        }
        if let Some(t0) = self.started {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(format!(
                    "running for {} of at most {}",
                    format::duration(t0.elapsed().as_secs_f64()),
                    format::duration(self.timeout_s as f64)
                ));
            });
        }
        if busy || self.outcome.is_none() {
            for l in &self.progress {
                ui.add(egui::Label::new(RichText::new(l).monospace().small()).truncate());
            }
        }
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e.as_str());
        }
        if self.outcome.is_some() {
            self.results(ui, ctx, i);
        }
    }

    /// The table and the offer to store the calibration.
    fn results(&mut self, ui: &mut Ui, ctx: &Context, i: &VerifyInputs) {
        let Some(o) = &self.outcome else {
            return;
        };
        ui.separator();
        let c = &o.compared;
        ui.label(format!(
            "llama-bench {} ({} tests), n_ctx {}",
            format::one_line(&c.build),
            c.runs.len(),
            format::group_digits(c.n_ctx)
        ));
        egui::Grid::new("verify-rows")
            .num_columns(4)
            .striped(true)
            .show(ui, |ui| {
                ui.label("");
                for h in ["Predicted", "Measured", "Error"] {
                    ui.label(RichText::new(h).strong());
                }
                ui.end_row();
                for r in &c.rows {
                    ui.label(r.label(o.n_prompt, o.n_gen));
                    ui.label(r.show(Some(r.predicted)));
                    ui.label(r.show(r.measured));
                    ui.label(r.show_error());
                    ui.end_row();
                }
            });
        if c.logged.is_empty() {
            ui.label("No buffer sizes in llama-bench's log (a build without -v logging?).");
        }
        let can_store = i.config_dir.is_some() && i.machine.is_some();
        let b = ui.add_enabled(
            can_store && !self.busy() && self.stored.is_none(),
            egui::Button::new("Store as this machine's calibration"),
        );
        let b = if can_store {
            b.on_hover_text(
                "Fit this machine's speeds to the run, as Calibrate from llama-bench output does",
            )
        } else {
            b.on_disabled_hover_text(
                "No config directory on this system (set HEADROOM_CONFIG_DIR).",
            )
        };
        if b.clicked() {
            self.store(ctx, i);
        }
        if self.storing {
            ui.spinner();
        }
        if let Some(s) = &self.stored {
            ui.label(format!("Stored: {s}"));
        }
    }
}
