//! The app: the persisted [`State`], the shared [`Data`], one struct per view, background jobs
//! and the frame loop.
//!
//! Each frame: poll finished jobs, draw (views read the state and push [`Command`]s for side
//! effects), then apply the commands. File dialogs, file IO and hardware detection run on job
//! threads; nothing blocks the UI thread.

use super::breakdown::BreakdownTab;
use super::command::Command;
use super::data::{Data, Notices, View};
use super::frame_stats::FrameStats;
use super::hub_dialog::HubDialog;
use super::inputs::InputsPanel;
use super::jobs::{FileAction, JobResult, Jobs, open_dialog, save_dialog};
use super::machines::MachinesTab;
use super::recommend::RecommendStrip;
use super::report::ReportTab;
use super::serving::ServingTab;
use super::state::{State, Tab};
use super::status::Status;
use super::style;
use super::teach::TeachTab;
use crate::core::catalog::Catalog;
use crate::core::estimate::ComponentKind;
use crate::core::fit::FitResult;
use crate::core::format;
use crate::core::placement::explain::MachineLoad;
use crate::core::scenario::Scenario;
use crate::io::detect::Detector;
use crate::io::export::ReportInput;
use egui::{RichText, Ui};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The headroom desktop app.
pub struct HeadroomApp {
    /// What is saved between runs.
    pub state: State,
    pub(crate) data: Data,
    inputs: InputsPanel,
    recommend: RecommendStrip,
    breakdown: BreakdownTab,
    machines: MachinesTab,
    serving: ServingTab,
    cluster: super::cluster::ClusterTab,
    teach: TeachTab,
    report: ReportTab,
    detector: Arc<dyn Detector>,
    jobs: Jobs,
    commands: Vec<Command>,
    /// A file action whose dialog returned nothing: offer a typed path instead.
    path_prompt: Option<(FileAction, String)>,
    stats: FrameStats,
    /// The panels leave their background to the frame's clear colour ([`eframe::App::clear_color`],
    /// the panels' own fill) instead of painting it as rectangles over the whole window: a
    /// software rasteriser (Mesa's llvmpipe, as in a VM or a remote desktop without a GPU) shades
    /// every pixel of every rectangle, and the panel fills covered the whole window once more
    /// per frame. Set for the real window only: the headless test renderer does not clear with it.
    clear_with_panel_fill: bool,
    /// Times the estimate and fits were rebuilt (for tests of the cache).
    pub recomputes: u64,
    /// "Open from Hugging Face...".
    pub hub: HubDialog,
    /// Where "Calibrate from llama-bench output" stores its constants (`None`: nowhere to store).
    /// `new` uses `io::calibration::config_dir()`; tests point it at a temporary folder.
    pub config_dir: Option<PathBuf>,
    /// The last memory-bandwidth probe, as shown ("31 GB/s read, ...").
    probed: Option<String>,
    /// "Verify with llama-bench...".
    pub verify: super::verify::VerifyDialog,
}

impl HeadroomApp {
    /// The app as `run_app` creates it: state restored from eframe storage, the built-in catalog
    /// plus the user's catalog files, the real detector.
    pub fn new(cc: &eframe::CreationContext<'_>) -> Self {
        let mut state: State = cc
            .storage
            .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
            .unwrap_or_default();
        // HEADROOM_TAB=machines|breakdown|serving|cluster|cpu-vs-gpu|report opens on that tab (scripted screenshots).
        if let Ok(t) = std::env::var("HEADROOM_TAB") {
            let t = t.trim().to_ascii_lowercase().replace(['-', '_', ' '], "");
            if let Some(tab) = Tab::ALL
                .into_iter()
                .find(|x| x.label().to_ascii_lowercase().replace(' ', "") == t)
            {
                state.tab = tab;
            }
        }
        let (catalog, warnings) = super::load_catalog();
        let detector = crate::io::detect::SystemDetector::new(catalog.clone());
        let mut app = HeadroomApp::new_with(Arc::new(detector), catalog, state);
        app.config_dir = crate::io::calibration::config_dir();
        if let Some(d) = &app.config_dir {
            match crate::io::calibration::load(d) {
                Ok(c) => app.state.calibration = c,
                Err(e) => app.data.tell(Status::failed("Calibration ignored", e)),
            }
        }
        if let Some(w) = warnings.first() {
            app.data.tell(Status::error(format!("Catalog: {w}")));
        }
        app.data.catalog_warnings = warnings;
        app.check_settings_dir(eframe::storage_dir("headroom").as_deref());
        // HEADROOM_SCENARIO=FILE opens a saved scenario and HEADROOM_FOCUS=MACHINE focuses a
        // machine at start (scripted screenshots), as Open scenario and a click would.
        if let Some(p) = std::env::var_os("HEADROOM_SCENARIO") {
            app.commands
                .push(Command::AtPath(FileAction::OpenScenario, PathBuf::from(p)));
        }
        if let Ok(id) = std::env::var("HEADROOM_FOCUS") {
            app.state.focus = Some(id);
        }
        // HEADROOM_VERIFY=1 opens "Verify with llama-bench" at start; HEADROOM_VERIFY=FILE.gguf
        // also names the GGUF it runs (scripted screenshots).
        if let Some(v) = std::env::var_os("HEADROOM_VERIFY") {
            app.verify.open = true;
            if v != "1" {
                app.verify.model = PathBuf::from(v).display().to_string();
            }
        }
        app.clear_with_panel_fill = true;
        app
    }

    /// Says in the status bar when the settings cannot be saved between runs (eframe keeps them in
    /// `dir`; a folder that cannot be created or written only gets a log line there). Everything
    /// else keeps working. Returns the message.
    pub fn check_settings_dir(&mut self, dir: Option<&std::path::Path>) -> Option<String> {
        let why = match dir {
            None => "this system has no folder for them".to_string(),
            Some(d) => {
                let e = crate::io::check_writable_dir(d).err()?;
                format!("{}: {e}", d.display())
            }
        };
        let text = format!(
            "Settings will not be saved between runs ({why}). Everything else works; Save scenario keeps your inputs in a file."
        );
        match &mut self.data.status {
            Some(s) if s.error => s.text = format!("{} | {text}", s.text),
            _ => self.data.tell(Status::error(text.clone())),
        }
        Some(text)
    }

    /// An app with an injected detector, catalog and state (tests use a `FakeDetector`).
    /// Detection starts at once on a job thread.
    pub fn new_with(detector: Arc<dyn Detector>, catalog: Catalog, state: State) -> Self {
        let mut app = HeadroomApp {
            state,
            data: Data::new(catalog),
            inputs: InputsPanel::default(),
            recommend: RecommendStrip::default(),
            breakdown: BreakdownTab,
            machines: MachinesTab,
            serving: ServingTab::default(),
            cluster: super::cluster::ClusterTab::default(),
            teach: TeachTab,
            report: ReportTab::default(),
            detector,
            jobs: Jobs::default(),
            commands: Vec::new(),
            path_prompt: None,
            stats: FrameStats::from_env(),
            clear_with_panel_fill: false,
            recomputes: 0,
            hub: HubDialog::default(),
            config_dir: None,
            probed: None,
            verify: super::verify::VerifyDialog::default(),
        };
        app.start_detection();
        app
    }

    /// Blocks until running background jobs have reported (at most `timeout`) and applies their
    /// results. For tests and scripted runs; the UI itself never waits.
    pub fn wait_for_jobs(&mut self, timeout: Duration) {
        for r in self.jobs.wait_all(timeout) {
            self.apply_result(r);
        }
        self.data.detecting = self.data.detected.is_none() && self.jobs.running() > 0;
    }

    /// Queues a command as if a button had been pressed; it runs after the next frame's drawing.
    pub fn push_command(&mut self, c: Command) {
        self.commands.push(c);
    }

    /// The ids of the machine-table rows in display order (after filters and sorting).
    pub fn machine_rows(&mut self) -> Vec<String> {
        self.refresh();
        let local = self.data.local_id();
        let d = &mut self.data;
        let rows = d
            .derived
            .rows(
                &self.state.filter,
                &d.machines,
                &d.search_keys,
                local.as_deref(),
                &d.catalog,
            )
            .shown
            .clone();
        rows.into_iter()
            .map(|i| self.data.machines[i].id.to_string())
            .collect()
    }

    /// The fit of a machine in the current scenario.
    pub fn fit_of(&mut self, id: &str) -> Option<FitResult> {
        self.refresh();
        self.data.derived.fit(id).cloned()
    }

    /// The image pipeline's fit on machine `id` (image mode), as the Machines tab shows it.
    pub fn image_fit_of(&mut self, id: &str) -> Option<crate::core::diffusion::ImageFit> {
        self.refresh();
        self.data.derived.image.as_ref()?.fit(id).cloned()
    }

    /// The serving plan of machine `id` in the current scenario, as the Serving tab draws it.
    pub fn serving_plan(&mut self, id: &str) -> Option<crate::core::serving::ServingPlan> {
        self.refresh();
        self.data
            .serving_plans(&self.state)
            .iter()
            .find(|p| *p.machine == *id)
            .cloned()
    }

    /// The one-sentence answer the Serving tab gives for machine `id`.
    pub fn serving_sentence(&mut self, id: &str) -> Option<String> {
        let p = self.serving_plan(id)?;
        Some(super::serving::sentence(&p, &self.state.scenario))
    }

    /// How the scenario sits on each compared machine, as the Breakdown chart draws it.
    pub fn compared_loads(&mut self) -> Vec<MachineLoad> {
        self.refresh();
        self.data.compared_loads(&self.state)
    }

    /// The recommendations for the current scenario (the cards' picks).
    pub fn recommendations(&mut self) -> &crate::core::recommend::Recommendations {
        self.refresh();
        self.recommend.recommendations(&self.state, &self.data)
    }

    /// What a click on a recommendation card does: tick machine `id`, focus it, open it in the
    /// Machines table.
    pub fn open_pick(&mut self, id: &str) {
        super::recommend::open_pick(&mut self.state, &mut self.data, id);
    }

    /// The catalog in use (with "This machine" once detected).
    pub fn catalog(&self) -> &Catalog {
        &self.data.catalog
    }

    /// What a file dialog that returned nothing does (cancelled, or no dialog on this system):
    /// the typed-path bar for `action`. For tests.
    pub fn no_file_chosen(&mut self, action: FileAction) {
        self.apply_result(JobResult::NoFileChosen { action });
    }

    /// The example path the typed-path bar shows, when it is shown.
    pub fn path_prompt_hint(&self) -> Option<String> {
        let (action, _) = self.path_prompt.as_ref()?;
        Some(path_hint(*action, &scenario_slug(&self.state.scenario)))
    }

    /// The last status-bar message.
    pub fn status_text(&self) -> Option<&str> {
        self.data.status.as_ref().map(|s| s.text.as_str())
    }

    fn start_detection(&mut self) {
        let det = Arc::clone(&self.detector);
        self.data.detecting = true;
        self.jobs.spawn("detect", move || {
            JobResult::Detected(Box::new(det.detect()))
        });
    }

    /// Brings the derived data up to date with the state (a no-op when nothing changed).
    fn refresh(&mut self) {
        if self.data.refresh(&self.state) {
            self.recomputes += 1;
        }
    }

    /// Brings the inputs that depend on each other together with the core's rules
    /// ([`Scenario::normalized`]: the prompt to the context, every number into its domain), with
    /// a note for each change; the context slider's own top
    /// ([`super::inputs::MAX_CONTEXT_SLIDER`]) after them. As each frame does.
    ///
    /// The prompt is the one input another lowers: the length the user asked for is kept
    /// ([`State::prompt_asked`]) and the scenario holds it cut to the context, so a longer
    /// context brings it back. Its note is derived afresh from the asked length and the context.
    pub fn normalize(&mut self) {
        self.weights_follow_mode();
        let asked = self.prompt_asked();
        self.state.scenario.prompt_tokens = asked;
        let (mut n, clamps) = self.state.scenario.normalized();
        let prompt = crate::core::scenario::Input::PromptTokens;
        for c in clamps.iter().filter(|c| c.input != prompt) {
            self.data.notices.clamp(c.input.label(), c.to_string());
        }
        let limit = super::inputs::MAX_CONTEXT_SLIDER;
        if n.context > limit {
            self.data.notices.context_clamped = Some(n.context);
            n.context = limit;
        }
        n.prompt_tokens = n.prompt_tokens.min(n.context);
        let label = prompt.label();
        if n.prompt_tokens < asked {
            let c = crate::core::scenario::Clamp {
                input: prompt,
                from: asked as f64,
                to: n.prompt_tokens as f64,
                why: crate::core::scenario::ClampWhy::LongerThanContext,
            };
            let text = format!(
                "{c} The {} tokens come back with a longer context.",
                format::group_digits(asked)
            );
            self.data.notices.clamp(label, text);
        } else if let Some(c) = clamps.iter().find(|c| c.input == prompt) {
            self.data.notices.clamp(label, c.to_string());
        } else {
            self.data.notices.clamped.retain(|(l, _)| l != label);
        }
        self.state.prompt_asked = Some(super::state::PromptAsked {
            asked,
            applied: n.prompt_tokens,
        });
        if n != self.state.scenario {
            self.state.scenario = n;
        }
    }

    /// A scenario from outside (a file, a test): what was asked before it (the prompt length,
    /// the precision a training mode replaced) and the notes about it go with the old one.
    pub fn replace_scenario(&mut self, s: Scenario) {
        self.state.scenario = s;
        self.state.prompt_asked = None;
        self.data.notices = Notices::default();
    }

    /// Puts the precision the mode trains into the Weights input (QLoRA: NF4 + double quant, a
    /// full fine-tune: BF16, as the estimate does), so the picker, the summary and the report
    /// say what the numbers use; the user's precision comes back with inference.
    fn weights_follow_mode(&mut self) {
        let s = &mut self.state.scenario;
        let n = &mut self.data.notices;
        let held = s.held_weights();
        if held != s.weights {
            // A training mode entered anew, or its held precision changed (QLoRA ↔ full):
            // the precision to bring back is the user's, not one this function set.
            let was = match n.weights_before_training {
                Some((was, set)) if set == s.weights => was,
                _ => s.weights,
            };
            n.weights_before_training = Some((was, held));
            n.weights_note = Some(if s.mode == crate::core::scenario::Mode::Image {
                format!(
                    "No image runtime loads {} weights: Weights set to {} (your {} comes back with Inference).",
                    was.label(),
                    held.label(),
                    was.label()
                )
            } else {
                format!(
                    "{} trains on {} weights: Weights set to {} (your {} comes back with Inference).",
                    s.mode.label(),
                    if s.mode == crate::core::scenario::Mode::Qlora {
                        "4-bit NF4"
                    } else {
                        "16-bit"
                    },
                    held.label(),
                    was.label()
                )
            });
            s.weights = held;
        } else if s.mode == crate::core::scenario::Mode::Inference
            && let Some((was, set)) = n.weights_before_training.take()
        {
            // Only while Weights still holds what the training mode set.
            if s.weights == set {
                s.weights = was;
            }
            n.weights_note = None;
        }
    }

    /// The prompt length the user asks for: the scenario's when something (the inputs, a traffic
    /// mix, a file) changed it since the last frame, else the one kept.
    fn prompt_asked(&self) -> u64 {
        let now = self.state.scenario.prompt_tokens;
        match self.state.prompt_asked {
            Some(p) if p.applied == now => p.asked,
            _ => now,
        }
    }

    /// The report text for the compared machines, rendered with the export module.
    fn report_input_owned(&self) -> (Scenario, crate::core::Estimate, Vec<FitResult>, Catalog) {
        (
            self.state.scenario.clone(),
            self.data.derived.estimate.clone(),
            self.data.compared_fits(&self.state),
            self.data.catalog.clone(),
        )
    }

    // ---- Commands and job results ----

    fn apply(&mut self, c: Command, ctx: &egui::Context) {
        match c {
            Command::Dialog(action) => self.start_file_action(action, None),
            Command::AtPath(action, path) => self.start_file_action(action, Some(path)),
            Command::Redetect => {
                self.data.tell(Status::info("Detecting this machine..."));
                self.start_detection();
            }
            Command::ProbeBandwidth => {
                self.data
                    .tell(Status::info("Measuring memory bandwidth..."));
                self.jobs.spawn("probe", || {
                    JobResult::Probed(crate::io::detect::probe::probe())
                });
            }
            Command::OpenVerify => self.verify.open = true,
            Command::ResetScenario => {
                self.state.scenario = Scenario::default();
                self.state.prompt_asked = None;
                self.data.notices = Notices::default();
            }
            Command::Copy(text) => {
                ctx.copy_text(text);
                self.data.tell(Status::info("Copied to the clipboard."));
            }
        }
    }

    /// Runs a file action on a job thread: the dialog (when `path` is `None`), then the IO.
    fn start_file_action(&mut self, action: FileAction, path: Option<PathBuf>) {
        self.path_prompt = None;
        let slug = scenario_slug(&self.state.scenario);
        match action {
            FileAction::ImportModel => self.import_model(path),
            FileAction::OpenScenario => self.open_scenario(path),
            FileAction::SaveScenario => self.save_scenario(path, slug),
            FileAction::Calibrate => self.calibrate(path),
            FileAction::ExportReport => self.export_report(path, slug),
        }
    }

    /// Imports a model file (`path`, or one chosen in a dialog).
    fn import_model(&mut self, path: Option<PathBuf>) {
        let action = FileAction::ImportModel;
        self.jobs.spawn("import", move || {
            let Some(p) = path.or_else(|| {
                open_dialog(
                    "Import a model",
                    &[
                        ("Model files", &["gguf", "safetensors", "json"]),
                        ("All files", &["*"]),
                    ],
                )
            }) else {
                return JobResult::NoFileChosen { action };
            };
            // A vision projector goes beside the model rather than replacing it.
            if crate::io::import::mmproj::is_mmproj(&p) {
                let result = crate::io::import::mmproj::read_mmproj(&p)
                    .map(Box::new)
                    .map_err(|e| e.to_string());
                return JobResult::MmprojImported { path: p, result };
            }
            let result = crate::io::import::import_path(&p)
                .map(Box::new)
                .map_err(|e| e.to_string());
            JobResult::Imported { path: p, result }
        });
    }

    /// Opens a scenario file.
    fn open_scenario(&mut self, path: Option<PathBuf>) {
        let action = FileAction::OpenScenario;
        self.jobs.spawn("open", move || {
            let Some(p) =
                path.or_else(|| open_dialog("Open a scenario", &[("headroom scenario", &["ron"])]))
            else {
                return JobResult::NoFileChosen { action };
            };
            let result = crate::io::export::read_scenario(&p)
                .map(Box::new)
                .map_err(|e| e.to_string());
            JobResult::ScenarioOpened { path: p, result }
        });
    }

    /// Saves the scenario (`slug`: the file name the dialog offers).
    fn save_scenario(&mut self, path: Option<PathBuf>, slug: String) {
        let action = FileAction::SaveScenario;
        let text = crate::io::export::save_scenario(&self.state.scenario);
        self.jobs.spawn("save", move || {
            let Some(p) = path.or_else(|| {
                save_dialog(
                    "Save the scenario",
                    "headroom scenario",
                    &["ron"],
                    &format!("{slug}.ron"),
                )
            }) else {
                return JobResult::NoFileChosen { action };
            };
            written("Scenario", p, &text)
        });
    }

    /// Calibrates this machine from llama-bench output.
    fn calibrate(&mut self, path: Option<PathBuf>) {
        let action = FileAction::Calibrate;
        let local = self
            .data
            .catalog
            .machine(crate::io::detect::LOCAL_MACHINE_ID)
            .cloned();
        let (Some(m), Some(dir)) = (local, self.config_dir.clone()) else {
            self.data.tell(Status::error(
                "Cannot calibrate: this machine is not detected yet, or there is no config directory (set HEADROOM_CONFIG_DIR).",
            ));
            return;
        };
        let catalog = self.data.catalog.clone();
        self.jobs.spawn("calibrate", move || {
            let Some(p) = path.or_else(|| {
                open_dialog(
                    "Calibrate from llama-bench output (-o json)",
                    &[
                        ("llama-bench JSON", &["json", "jsonl"]),
                        ("All files", &["*"]),
                    ],
                )
            }) else {
                return JobResult::NoFileChosen { action };
            };
            let today = crate::io::clock::today_utc();
            let result = crate::io::calibration::calibrate_file(&p, &m, &catalog, &dir, &today)
                .map(|done| {
                    let line = format!("{} {}", m.name, done.calibration.note());
                    (Box::new(done.calibration), line)
                });
            JobResult::Calibrated(result)
        });
    }

    /// "Verify with llama-bench..." while it is open or running: this machine, its fit and where
    /// a calibration goes; a stored calibration applies at once, as Calibrate's does.
    fn verify_dialog(&mut self, ctx: &egui::Context) {
        if !self.verify.open && !self.verify.busy() {
            return;
        }
        let local = crate::io::detect::LOCAL_MACHINE_ID;
        let fit = self.data.derived.fit(local).cloned();
        let inputs = super::verify::VerifyInputs {
            scenario: &self.state.scenario,
            machine: self.data.catalog.machine(local),
            catalog: &self.data.catalog,
            fit: fit.as_ref(),
            config_dir: self.config_dir.as_deref(),
        };
        if let Some((c, line)) = self.verify.show(ctx, &inputs) {
            self.state.calibration = Some(c);
            self.data.tell(Status::info(line));
        }
    }

    /// Exports the report in the format the file name asks for (`slug`: the name the dialog offers).
    fn export_report(&mut self, path: Option<PathBuf>, slug: String) {
        let action = FileAction::ExportReport;
        // Owned copies: the report renders on the job thread, in the format the chosen
        // file name asks for.
        let (scenario, estimate, fits, catalog) = self.report_input_owned();
        let settings = self.state.fit_settings();
        let fallback = self.report.format;
        // Image generation has a report of its own (`io::export::report_image`).
        let image = super::image::ImageReportOwned::of(&self.state, &self.data);
        self.jobs.spawn("export", move || {
            let ext = fallback.extension();
            let Some(mut p) = path.or_else(|| {
                save_dialog(
                    "Export the report",
                    "Report (.md, .html, .json)",
                    &["md", "html", "json"],
                    &format!("{slug}.{ext}"),
                )
            }) else {
                return JobResult::NoFileChosen { action };
            };
            let format = match crate::io::export::ReportFormat::from_path(&p) {
                Ok(f) => f,
                Err(_) => {
                    p.set_extension(ext);
                    fallback
                }
            };
            if let Some(r) = image {
                return written("Report", p, &r.render(format));
            }
            let input = ReportInput {
                scenario: &scenario,
                estimate: &estimate,
                fits: &fits,
                catalog: &catalog,
                settings: &settings,
                generated: crate::io::clock::now_utc(),
                version: env!("CARGO_PKG_VERSION"),
            };
            let text = crate::io::export::render(&input, format);
            written("Report", p, &text)
        });
    }

    fn apply_result(&mut self, r: JobResult) {
        match r {
            JobResult::Detected(d) => {
                let text = match (&d.unified_memory, d.gpus.first()) {
                    (Some(u), _) => format!(
                        "Detected {} with {} of unified memory.",
                        u.chip, d.ram_total
                    ),
                    (None, Some(g)) => format!(
                        "Detected {} ({} free of {}) and {} of RAM.",
                        g.name, g.vram_free, g.vram_total, d.ram_total
                    ),
                    (None, None) => format!(
                        "Detected no usable GPU; {} of RAM. Details: click \"Detection notes\".",
                        d.ram_total
                    ),
                };
                self.data.detected = Some(*d);
                self.data.detecting = false;
                self.data.rebuild_machines();
                if self.data.status.as_ref().is_none_or(|s| !s.error) {
                    self.data.tell(Status::info(text));
                }
            }
            JobResult::Imported { path, result } => match result {
                Ok(m) => {
                    let s = &mut self.state.scenario;
                    s.model = m.spec;
                    s.model_id = None;
                    if let Some(w) = m.weights {
                        s.weights = w;
                    }
                    self.data.notices.imported = Some((m.summary.clone(), m.notes));
                    // A note on the previous file's precision no longer applies.
                    self.data.notices.clamped.retain(|(l, _)| l != "Weights");
                    self.data.notices.context_clamped = None;
                    self.data.tell(Status::info(format!(
                        "Imported {}: {}",
                        path.display(),
                        m.summary
                    )));
                }
                Err(e) => self.data.tell(Status::failed("Import failed", e)),
            },
            JobResult::MmprojImported { path, result } => match result {
                Ok(e) => {
                    let s = &mut self.state.scenario;
                    let tokens = e.tokens_per_image();
                    s.vision = Some(crate::core::vision::VisionInputs {
                        encoder: *e,
                        images: s.vision.as_ref().map_or(1, |v| v.images),
                        ..Default::default()
                    });
                    self.data.tell(Status::info(format!(
                        "Vision projector {}: {} tokens per image, sized beside the model",
                        path.display(),
                        format::group_digits(tokens)
                    )));
                }
                Err(e) => self
                    .data
                    .tell(Status::failed("Cannot read the vision projector", e)),
            },
            JobResult::ScenarioOpened { path, result } => match result {
                Ok(s) => {
                    self.replace_scenario(*s);
                    self.data
                        .tell(Status::info(format!("Opened {}", path.display())));
                }
                Err(e) => self
                    .data
                    .tell(Status::failed("Cannot open the scenario", e)),
            },
            JobResult::Written { what, result } => match result {
                Ok(p) => self
                    .data
                    .tell(Status::info(format!("{what} saved to {}", p.display()))),
                Err(e) => self
                    .data
                    .tell(Status::failed(&format!("{what} not saved"), e)),
            },
            JobResult::Probed(r) => {
                let text = format!(
                    "Measured memory bandwidth: {} read ({} threads, {} passes over {}, {} ms, {})",
                    crate::core::format::bandwidth(crate::core::units::GbPerSec(r.read_gbs)),
                    r.threads,
                    r.passes,
                    crate::core::units::Bytes(r.buffer_bytes),
                    r.elapsed_ms.round(),
                    r.simd
                );
                self.probed = Some(text.clone());
                self.data.tell(Status::info(text));
            }
            JobResult::Calibrated(result) => match result {
                Ok((c, line)) => {
                    self.state.calibration = Some(*c);
                    self.data.tell(Status::info(line));
                }
                Err(e) => self.data.tell(Status::failed("Calibration failed", e)),
            },
            JobResult::NoFileChosen { action } => {
                self.data.tell(Status::info("No file was chosen: the dialog was cancelled, or no file dialog is available on this system (it needs xdg-desktop-portal or zenity). You can type a path instead."));
                self.path_prompt = Some((action, String::new()));
            }
        }
    }

    fn shortcuts_and_drops(&mut self, ctx: &egui::Context) {
        use egui::{Key, KeyboardShortcut, Modifiers};
        let sc = |k| KeyboardShortcut::new(Modifiers::COMMAND, k);
        let (i, o, s, e) = ctx.input_mut(|inp| {
            (
                inp.consume_shortcut(&sc(Key::I)),
                inp.consume_shortcut(&sc(Key::O)),
                inp.consume_shortcut(&sc(Key::S)),
                inp.consume_shortcut(&sc(Key::E)),
            )
        });
        for (hit, a) in [
            (i, FileAction::ImportModel),
            (o, FileAction::OpenScenario),
            (s, FileAction::SaveScenario),
            (e, FileAction::ExportReport),
        ] {
            if hit {
                self.commands.push(Command::Dialog(a));
            }
        }
        let dropped: Vec<PathBuf> = ctx.input(|inp| {
            inp.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        for p in dropped {
            let is_ron = p.extension().is_some_and(|x| x.eq_ignore_ascii_case("ron"));
            let action = if is_ron {
                FileAction::OpenScenario
            } else {
                FileAction::ImportModel
            };
            self.commands.push(Command::AtPath(action, p));
        }
    }

    // ---- Drawing ----

    fn top_bar(&mut self, ui: &mut Ui, cmds: &mut Vec<Command>) {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new("headroom").strong().size(16.0));
            ui.separator();
            if ui
                .button("Import model...")
                .on_hover_text("Read a .gguf, .safetensors or config.json (Ctrl+I)")
                .clicked()
            {
                cmds.push(Command::Dialog(FileAction::ImportModel));
            }
            if ui
                .button("Open from Hugging Face...")
                .on_hover_text("Read a model's config and headers from the Hub by its repo id")
                .clicked()
            {
                self.hub.open = true;
            }
            for (label, hover, action) in [
                (
                    "Open scenario...",
                    "Load a scenario saved as .ron (Ctrl+O)",
                    FileAction::OpenScenario,
                ),
                (
                    "Save scenario...",
                    "Save every input as a .ron file (Ctrl+S)",
                    FileAction::SaveScenario,
                ),
                (
                    "Export report...",
                    "Write the sizing report as Markdown, HTML or JSON (Ctrl+E)",
                    FileAction::ExportReport,
                ),
            ] {
                if ui.button(label).on_hover_text(hover).clicked() {
                    cmds.push(Command::Dialog(action));
                }
            }
            ui.separator();
            let busy = self.data.detecting;
            if ui
                .add_enabled(!busy, egui::Button::new("Re-detect"))
                .on_hover_text("Read this machine's RAM and GPUs again (free VRAM changes)")
                .clicked()
            {
                cmds.push(Command::Redetect);
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                let mut pref = ui.ctx().options(|o| o.theme_preference);
                let before = pref;
                let r = egui::ComboBox::from_id_salt("theme")
                    .selected_text(match pref {
                        egui::ThemePreference::System => "System theme",
                        egui::ThemePreference::Light => "Light",
                        egui::ThemePreference::Dark => "Dark",
                    })
                    .show_ui(ui, |ui| {
                        ui.selectable_value(
                            &mut pref,
                            egui::ThemePreference::System,
                            "System theme",
                        );
                        ui.selectable_value(&mut pref, egui::ThemePreference::Light, "Light");
                        ui.selectable_value(&mut pref, egui::ThemePreference::Dark, "Dark");
                    });
                let _ = r.response.accessible_name("Theme");
                if pref != before {
                    ui.ctx().set_theme(pref);
                }
            });
        });
    }

    fn path_prompt_bar(&mut self, ui: &mut Ui, cmds: &mut Vec<Command>) {
        let Some((action, text)) = &mut self.path_prompt else {
            return;
        };
        let action = *action;
        let hint = path_hint(action, &scenario_slug(&self.state.scenario));
        let mut close = false;
        ui.horizontal(|ui| {
            let l = ui.label(format!("{} - type a path:", action.label()));
            let r = ui
                .add(
                    egui::TextEdit::singleline(text)
                        .desired_width(420.0)
                        .hint_text(hint),
                )
                .labelled_by(l.id);
            let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button(action.label()).clicked() || enter) && !text.trim().is_empty() {
                cmds.push(Command::AtPath(action, PathBuf::from(text.trim())));
            }
            if ui.button("Cancel").clicked() {
                close = true;
            }
        });
        if close {
            self.path_prompt = None;
        }
    }

    fn status_bar(&mut self, ui: &mut Ui, cmds: &mut Vec<Command>) {
        // The counts and the notes button first, from the right; the message takes what is
        // left and is cut there (whole on hover), never drawn under the button.
        ui.horizontal(|ui| {
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                ui.label(
                    RichText::new(format!(
                        "{} machines, {} accelerators, {} models",
                        self.data.catalog.machines.len(),
                        self.data.catalog.accelerators.len(),
                        self.data.catalog.models.len()
                    ))
                    .weak(),
                );
                // What detection could not read and what it assumed (as `headroom detect` says),
                // the bandwidth probe and calibration from a llama-bench run.
                if let Some(d) = &self.data.detected {
                    let mut notes = d.notes.clone();
                    notes.extend(self.probed.clone());
                    let label = if notes.is_empty() {
                        "Measure / calibrate".to_string()
                    } else {
                        format!("Detection notes ({})", notes.len())
                    };
                    ui.menu_button(label, |ui| {
                        ui.set_max_width(520.0);
                        if ui
                            .button("Measure memory bandwidth")
                            .on_hover_text(
                                "Read a 64 MiB buffer with every core for about 0.3 s and show the GB/s",
                            )
                            .clicked()
                        {
                            cmds.push(Command::ProbeBandwidth);
                            ui.close();
                        }
                        if ui
                            .button("Calibrate from llama-bench output...")
                            .on_hover_text(
                                "Fit this machine's speeds to your llama-bench -o json run (as headroom calibrate)",
                            )
                            .clicked()
                        {
                            cmds.push(Command::Dialog(FileAction::Calibrate));
                            ui.close();
                        }
                        if ui
                            .button("Verify with llama-bench...")
                            .on_hover_text(
                                "Run llama-bench here with the recommended settings and show the prediction beside the measurement (as headroom verify)",
                            )
                            .clicked()
                        {
                            cmds.push(Command::OpenVerify);
                            ui.close();
                        }
                        if let Some(c) = &self.state.calibration {
                            ui.add(egui::Label::new(c.note()).wrap());
                        }
                        ui.separator();
                        for n in &notes {
                            ui.add(egui::Label::new(n).wrap());
                        }
                    });
                }
                ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                    self.status_message(ui);
                });
            });
        });
    }

    /// The status bar's message (or the detection in progress), cut to the room it has.
    fn status_message(&self, ui: &mut Ui) {
        if self.jobs.running() > 0 {
            ui.spinner();
        }
        if self.data.detecting {
            ui.label("Detecting this machine...");
        } else if let Some(s) = &self.data.status {
            let text = if s.error {
                RichText::new(&s.text).color(ui.visuals().error_fg_color)
            } else {
                RichText::new(&s.text)
            };
            ui.add(
                egui::Label::new(text)
                    .truncate()
                    .show_tooltip_when_elided(false),
            )
            .on_hover_text(s.text.clone());
        }
    }

    /// The key numbers of the scenario as set in the inputs (hypothetical GPU count).
    fn summary_strip(&mut self, ui: &mut Ui) {
        let e = &self.data.derived.estimate;
        let s = &self.state.scenario;
        ui.horizontal_wrapped(|ui| {
            // Each figure moves to the next line whole rather than breaking inside.
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
            ui.label(RichText::new(&s.model.name).strong());
            let est = if s.model.is_estimated() {
                " (estimated shape)"
            } else {
                ""
            };
            ui.label(format!("{} params{est}", format::params(e.params.total)));
            ui.separator();
            let per_gpu = s.gpus > 1;
            if s.gpus == 0 {
                ui.label(format!("RAM needed: {}", e.host_total()));
            } else {
                let per = if per_gpu {
                    format!("Per GPU (of {}): {}", s.gpus, e.per_gpu_total())
                } else {
                    format!("On 1 GPU: {}", e.per_gpu_total())
                };
                ui.label(RichText::new(per).strong()).on_hover_text(
                    "With the GPU count set in the inputs. Each machine in the table and the chart is judged with its own GPUs.",
                );
                // The inputs' GPUs are a hypothetical setup: say so where this machine has none.
                let local_has_gpu = self
                    .data
                    .local_id()
                    .and_then(|id| self.data.machine(&id).map(|m| m.gpu.is_some()));
                if local_has_gpu == Some(false) {
                    ui.label(RichText::new("(as set in the inputs; this machine has no GPU)").weak());
                }
                if e.host_total().0 > 0 {
                    ui.label(format!("Host RAM: {}", e.host_total()));
                }
            }
            ui.separator();
            // Per GPU when the job spans several (a sum over replicas would not be on any GPU).
            let amount = |k: ComponentKind| {
                if per_gpu {
                    e.per_gpu_kind(k) + e.host_kind(k)
                } else {
                    e.kind_total(k)
                }
            };
            let (w_label, scope) = if per_gpu {
                ("Weights per GPU", "On one GPU (plus any part in host RAM)")
            } else {
                ("Weights", "Whole job")
            };
            ui.label(format!("{w_label}: {}", amount(ComponentKind::Weights)))
                .on_hover_text(scope);
            if !s.mode.is_training() {
                let kv = if per_gpu { "KV cache per GPU" } else { "KV cache" };
                ui.label(format!("{kv}: {}", amount(ComponentKind::KvCache)))
                    .on_hover_text(scope);
                ui.label(format!("KV per token: {}", e.kv_cache_per_token))
                    .on_hover_text("All layers, one sequence");
            } else {
                let states = amount(ComponentKind::Gradients)
                    + amount(ComponentKind::Optimizer)
                    + amount(ComponentKind::MasterWeights);
                let l = if per_gpu {
                    "Gradients + optimizer per GPU"
                } else {
                    "Gradients + optimizer"
                };
                ui.label(format!("{l}: {states}")).on_hover_text(scope);
            }
            if let Some(local) = self.data.local_id()
                && let Some(f) = self.data.derived.fit(&local)
            {
                ui.separator();
                // One group: it moves to the next line whole ("tok/s" never wraps alone). A
                // wrapping row cannot move a nested group, so the group's width is measured.
                let rate = (f.runs() && !s.mode.is_training())
                    .then(|| format!("{} tok/s", style::rate(f.throughput())));
                let gap = ui.spacing().item_spacing.x;
                let w = style::text_width(ui, "This machine:")
                    + style::text_width(ui, &f.verdict_text())
                    + 12.0
                    + rate.as_deref().map_or(0.0, |r| style::text_width(ui, r) + gap)
                    + 3.0 * gap
                    + 16.0;
                // What is left of this row (`available_width` is the whole row's).
                if ui.max_rect().right() - ui.cursor().min.x < w {
                    ui.end_row();
                }
                ui.label("This machine:");
                style::verdict_badge(ui, f).on_hover_text(f.name.to_string());
                if let Some(r) = rate {
                    ui.label(r);
                }
            }
        });
        // The estimated-shape note is shown beside the Parameters slider already.
        for n in e.notes.iter().filter(|n| !n.starts_with("Shape estimated")) {
            style::note(ui, n.clone());
        }
    }

    fn tab_bar(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            for t in Tab::ALL {
                ui.selectable_value(&mut self.state.tab, t, RichText::new(t.label()).size(15.0));
            }
        });
    }

    fn central(&mut self, ui: &mut Ui, cmds: &mut Vec<Command>) {
        // The tabs come first so a note or a card appearing below never moves them.
        self.tab_bar(ui);
        ui.separator();
        let mut v = View {
            state: &mut self.state,
            data: &mut self.data,
            cmds,
        };
        if v.state.scenario.mode == crate::core::scenario::Mode::Image {
            super::image::central(ui, &mut v);
            return;
        }
        self.recommend.ui(ui, &mut v);
        self.summary_strip(ui);
        ui.add_space(4.0);
        let mut v = View {
            state: &mut self.state,
            data: &mut self.data,
            cmds,
        };
        match v.state.tab {
            Tab::Breakdown => self.breakdown.ui(ui, &mut v),
            Tab::Machines => self.machines.ui(ui, &mut v),
            Tab::Serving => self.serving.ui(ui, &mut v),
            Tab::Cluster => self.cluster.ui(ui, &mut v),
            Tab::CpuVsGpu => self.teach.ui(ui, &mut v),
            Tab::Report => self.report.ui(ui, &mut v),
        }
    }
}

impl eframe::App for HeadroomApp {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        let t0 = Instant::now();
        let ctx = ui.ctx().clone();
        self.jobs.attach(&ctx);
        for r in self.jobs.poll() {
            self.apply_result(r);
        }
        self.shortcuts_and_drops(&ctx);
        self.normalize();
        self.refresh();

        let mut cmds = std::mem::take(&mut self.commands);
        let fill = if self.clear_with_panel_fill {
            egui::Color32::TRANSPARENT
        } else {
            ui.style().visuals.panel_fill
        };
        let side = egui::Frame::side_top_panel(ui.style()).fill(fill);
        egui::Panel::top("top-bar")
            .frame(side.inner_margin(egui::Margin::symmetric(8, 6)))
            .show(ui, |ui| {
                self.top_bar(ui, &mut cmds);
            });
        if self.path_prompt.is_some() {
            egui::Panel::top("path-prompt")
                .frame(side)
                .show(ui, |ui| self.path_prompt_bar(ui, &mut cmds));
        }
        egui::Panel::bottom("status-bar")
            .frame(side)
            .show(ui, |ui| self.status_bar(ui, &mut cmds));
        // Narrow windows give the inputs less of the width (1024 px: 290 px).
        let panel_w = (ui.available_width() * 0.28).clamp(290.0, 330.0);
        egui::Panel::left("inputs")
            .frame(side)
            .resizable(true)
            .default_size(panel_w)
            .size_range(270.0..=560.0)
            .show(ui, |ui| {
                let mut v = View {
                    state: &mut self.state,
                    data: &mut self.data,
                    cmds: &mut cmds,
                };
                self.inputs.ui(ui, &mut v);
            });
        // The inputs may have changed: bring the numbers up to date before the central area.
        self.normalize();
        self.refresh();
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(ui.style()).fill(fill))
            .show(ui, |ui| self.central(ui, &mut cmds));
        if let Some((source, m)) = self.hub.show(&ctx) {
            let (path, result) = (PathBuf::from(source), Ok(Box::new(m)));
            self.apply_result(JobResult::Imported { path, result });
        }
        self.verify_dialog(&ctx);

        for c in cmds {
            self.apply(c, &ctx);
        }
        super::frame_stats::probe_frame(t0.elapsed());
        if self.stats.record(t0.elapsed(), &ctx, self.state.tab) {
            ctx.request_repaint();
        }
    }

    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        visuals.panel_fill.to_normalized_gamma_f32()
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
    }
}

/// A file-name-friendly name for the scenario: "llama-3-8b-bf16-8k" ([`crate::core::format::slug`]).
/// Writes `text` to `p` atomically, as a job's result (`what`: what was written, for the status
/// line).
fn written(what: &'static str, p: PathBuf, text: &str) -> JobResult {
    let result = crate::io::export::write_atomic(&p, text.as_bytes())
        .map(|_| p)
        .map_err(|e| e.to_string());
    JobResult::Written { what, result }
}

/// An example path for the typed-path fallback of `action`, in the home folder: a scenario
/// file for Save and Open scenario, llama-bench output for Calibrate, a model file for Import.
fn path_hint(action: FileAction, slug: &str) -> String {
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("~"));
    let name = match action {
        FileAction::SaveScenario | FileAction::OpenScenario => format!("{slug}.ron"),
        FileAction::Calibrate => "llama-bench.json".to_string(),
        FileAction::ImportModel => "model.gguf".to_string(),
        FileAction::ExportReport => format!("{slug}.md"),
    };
    home.join(name).display().to_string()
}

fn scenario_slug(s: &Scenario) -> String {
    let base = format!(
        "{}-{}-{}",
        s.model.name,
        s.weights.cli_name(),
        style::tokens_short(s.context)
    );
    crate::core::format::slug(&base).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_and_date() {
        let s = Scenario::default();
        assert_eq!(scenario_slug(&s), "llama-3-8b-bf16-8k");
        let d = crate::io::clock::now_utc();
        assert_eq!(d.len(), "2025-06-01 14:03 UTC".len(), "{d}");
    }
}
