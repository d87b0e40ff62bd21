//! The app: persisted [`State`], the catalog with "This machine", cached derived data, background
//! jobs and the frame loop.
//!
//! Each frame: poll finished jobs, draw (views read the state and push [`Command`]s for side
//! effects), then apply the commands. File dialogs, file IO and hardware detection run on job
//! threads; nothing blocks the UI thread.

use super::derived::Derived;
use super::jobs::{FileAction, JobResult, Jobs, open_dialog, save_dialog};
use super::state::{State, Tab};
use super::style;
use crate::core::catalog::{Catalog, Machine};
use crate::core::estimate::{ComponentKind, group_digits};
use crate::core::fit::FitResult;
use crate::core::format_params;
use crate::core::scenario::Scenario;
use crate::io::detect::{DetectedMachine, Detector, LOCAL_MACHINE_ID, catalog_with_local};
use crate::io::export::{LaunchSetting, ReportFormat, ReportInput};
use egui::{RichText, Ui};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A side effect requested while drawing, applied after the frame's drawing is done.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Open the file dialog for this action (on a job thread).
    Dialog(FileAction),
    /// Do the action on this path without a dialog (typed path, dropped file, tests).
    AtPath(FileAction, PathBuf),
    /// Detect this machine again.
    Redetect,
    ResetScenario,
    /// Put text on the clipboard.
    Copy(String),
}

/// A message in the status bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub text: String,
    pub error: bool,
}

/// Transient notes shown next to the inputs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Notices {
    /// The context the user (or a loaded file) asked for before it was clamped to the model.
    pub context_clamped: Option<u64>,
    /// The last imported model: its summary and notes.
    pub imported: Option<(String, Vec<String>)>,
}

/// The rendered report, cached per derived generation, machine list and format.
struct ReportCache {
    key: (u64, Vec<String>, ReportFormat),
    text: String,
    launch: Vec<LaunchSetting>,
}

/// `HEADROOM_FRAME_STATS` and `HEADROOM_QUIT_AFTER_FRAMES`.
#[derive(Default)]
struct FrameStats {
    /// Log the mean/max time of `App::ui` every this many frames.
    every: Option<u32>,
    quit_after: Option<u64>,
    n: u32,
    sum: Duration,
    max: Duration,
    frames: u64,
}

impl FrameStats {
    fn from_env() -> Self {
        let every = std::env::var("HEADROOM_FRAME_STATS")
            .ok()
            .and_then(|v| match v.trim() {
                "" | "0" | "false" => None,
                "1" | "true" => Some(120),
                n => n.parse::<u32>().ok().filter(|n| *n > 0),
            });
        let quit_after = std::env::var("HEADROOM_QUIT_AFTER_FRAMES")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| *n > 0);
        FrameStats {
            every,
            quit_after,
            ..FrameStats::default()
        }
    }

    /// Records one frame; returns whether the app must keep repainting (measuring or counting).
    fn record(&mut self, took: Duration, ctx: &egui::Context, tab: Tab) -> bool {
        self.frames += 1;
        if let Some(every) = self.every {
            self.n += 1;
            self.sum += took;
            self.max = self.max.max(took);
            if self.n >= every {
                let mean = self.sum.as_secs_f64() * 1000.0 / self.n as f64;
                eprintln!(
                    "headroom frame stats: {} frames on the {} tab: App::ui mean {mean:.2} ms, max {:.2} ms",
                    self.n,
                    tab.label(),
                    self.max.as_secs_f64() * 1000.0
                );
                self.n = 0;
                self.sum = Duration::ZERO;
                self.max = Duration::ZERO;
            }
        }
        if let Some(q) = self.quit_after
            && self.frames >= q
        {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return false;
        }
        self.every.is_some() || self.quit_after.is_some()
    }
}

/// The headroom desktop app.
pub struct HeadroomApp {
    /// What is saved between runs.
    pub state: State,
    /// The catalog without "This machine".
    base_catalog: Catalog,
    /// The catalog with "This machine" (machine "local", accelerator "local-gpu") once detected.
    pub(crate) catalog: Catalog,
    /// Machines in display order: "This machine" first.
    pub(crate) machines: Vec<Machine>,
    /// Lower-case search text per machine.
    pub(crate) search_keys: Vec<String>,
    catalog_gen: u64,
    detector: Arc<dyn Detector>,
    pub(crate) detected: Option<DetectedMachine>,
    pub(crate) jobs: Jobs,
    pub(crate) derived: Derived,
    pub(crate) recommend: super::recommend::RecommendCache,
    commands: Vec<Command>,
    pub(crate) status: Option<Status>,
    /// A file action whose dialog returned nothing: offer a typed path instead.
    pub(crate) path_prompt: Option<(FileAction, String)>,
    pub(crate) model_search: String,
    pub(crate) model_popup_open: bool,
    pub(crate) notices: Notices,
    pub(crate) report_format: ReportFormat,
    report: Option<ReportCache>,
    pub(crate) catalog_warnings: Vec<String>,
    stats: FrameStats,
    /// Times the estimate and fits were rebuilt (for tests of the cache).
    pub recomputes: u64,
    /// "Open from Hugging Face…".
    pub hub: super::hub_dialog::HubDialog,
}

impl HeadroomApp {
    /// The app as `run_app` creates it: state restored from eframe storage, the built-in catalog
    /// plus the user's catalog files, the real detector.
    pub fn new(cc: &eframe::CreationContext<'_>) -> Self {
        let mut state: State = cc
            .storage
            .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
            .unwrap_or_default();
        // HEADROOM_TAB=machines|breakdown|cpu-vs-gpu|report opens on that tab (scripted screenshots).
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
        app.catalog_warnings = warnings;
        if let Some(w) = app.catalog_warnings.first() {
            app.status = Some(Status {
                text: format!("Catalog: {w}"),
                error: true,
            });
        }
        app
    }

    /// An app with an injected detector, catalog and state (tests use a `FakeDetector`).
    /// Detection starts at once on a job thread.
    pub fn new_with(detector: Arc<dyn Detector>, catalog: Catalog, state: State) -> Self {
        let mut app = HeadroomApp {
            state,
            base_catalog: catalog.clone(),
            catalog,
            machines: Vec::new(),
            search_keys: Vec::new(),
            catalog_gen: 0,
            detector,
            detected: None,
            jobs: Jobs::default(),
            derived: Derived::default(),
            recommend: Default::default(),
            commands: Vec::new(),
            status: None,
            path_prompt: None,
            model_search: String::new(),
            model_popup_open: false,
            notices: Notices::default(),
            report_format: ReportFormat::Markdown,
            report: None,
            catalog_warnings: Vec::new(),
            stats: FrameStats::from_env(),
            recomputes: 0,
            hub: Default::default(),
        };
        app.rebuild_machines();
        app.start_detection();
        app
    }

    /// Blocks until running background jobs have reported (at most `timeout`) and applies their
    /// results. For tests and scripted runs; the UI itself never waits.
    pub fn wait_for_jobs(&mut self, timeout: Duration) {
        for r in self.jobs.wait_all(timeout) {
            self.apply_result(r);
        }
    }

    /// Queues a command as if a button had been pressed; it runs after the next frame's drawing.
    pub fn push_command(&mut self, c: Command) {
        self.commands.push(c);
    }

    /// The ids of the machine-table rows in display order (after filters and sorting).
    pub fn machine_rows(&mut self) -> Vec<String> {
        self.refresh();
        let local = self.local_id();
        let rows = self
            .derived
            .rows(
                &self.state.filter,
                &self.machines,
                &self.search_keys,
                local.as_deref(),
            )
            .to_vec();
        rows.into_iter()
            .map(|i| self.machines[i].id.clone())
            .collect()
    }

    /// The fit of a machine in the current scenario.
    pub fn fit_of(&mut self, id: &str) -> Option<FitResult> {
        self.refresh();
        self.derived.fit(id).cloned()
    }

    /// The catalog in use (with "This machine" once detected).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The last status-bar message.
    pub fn status_text(&self) -> Option<&str> {
        self.status.as_ref().map(|s| s.text.as_str())
    }

    pub(crate) fn local_id(&self) -> Option<String> {
        self.machines
            .first()
            .filter(|m| m.id == LOCAL_MACHINE_ID)
            .map(|m| m.id.clone())
    }

    fn start_detection(&mut self) {
        let det = Arc::clone(&self.detector);
        self.jobs.spawn("detect", move || {
            JobResult::Detected(Box::new(det.detect()))
        });
    }

    pub(crate) fn detecting(&self) -> bool {
        self.detected.is_none() && self.jobs.running() > 0
    }

    fn rebuild_machines(&mut self) {
        self.catalog = match &self.detected {
            Some(d) => catalog_with_local(d, &self.base_catalog),
            None => self.base_catalog.clone(),
        };
        let mut ms: Vec<Machine> = Vec::with_capacity(self.catalog.machines.len());
        if let Some(l) = self.catalog.machine(LOCAL_MACHINE_ID) {
            ms.push(l.clone());
        }
        ms.extend(
            self.catalog
                .machines
                .iter()
                .filter(|m| m.id != LOCAL_MACHINE_ID)
                .cloned(),
        );
        self.search_keys = ms
            .iter()
            .map(|m| {
                let gpu = m
                    .gpu
                    .as_deref()
                    .and_then(|g| self.catalog.accelerator(g))
                    .map(|a| a.name.as_str())
                    .unwrap_or("");
                format!("{} {} {} {} {}", m.name, m.id, gpu, m.cpu, m.kind.label()).to_lowercase()
            })
            .collect();
        self.machines = ms;
        self.catalog_gen += 1;
    }

    /// Brings the derived data up to date with the state (a no-op when nothing changed).
    pub(crate) fn refresh(&mut self) {
        let settings = self.state.fit_settings();
        if self.derived.update(
            &self.state.scenario,
            &settings,
            &self.machines,
            &self.catalog,
            self.catalog_gen,
        ) {
            self.recomputes += 1;
        }
    }

    /// Clamps inputs that depend on each other (context to the model, prompt to the context).
    fn normalize(&mut self) {
        let s = &mut self.state.scenario;
        let limit = super::inputs::context_limit(s);
        if s.context > limit {
            self.notices.context_clamped = Some(s.context);
            s.context = limit;
        }
        s.context = s.context.max(1);
        s.prompt_tokens = s.prompt_tokens.clamp(1, s.context);
        if !s.gpu_memory_utilization.is_finite() {
            s.gpu_memory_utilization = 0.9;
        }
        s.zero = s.zero.min(3);
    }

    pub(crate) fn apply_preset(&mut self, id: &str) {
        if let Some(p) = self.catalog.model(id) {
            self.state.scenario.model = p.spec.clone();
            self.state.scenario.model_id = Some(p.id.clone());
            self.notices.imported = None;
            self.notices.context_clamped = None;
        }
    }

    /// The machine the solvers and teaching plots are about.
    pub(crate) fn focus_machine(&self) -> Option<&Machine> {
        let by_id = |id: &str| self.machines.iter().find(|m| m.id == id);
        if let Some(m) = self.state.focus.as_deref().and_then(by_id) {
            return Some(m);
        }
        let local = self.machines.first().filter(|m| m.id == LOCAL_MACHINE_ID);
        if let Some(l) = local.filter(|m| m.gpu.is_some()) {
            return Some(l);
        }
        if let Some(m) = self
            .state
            .selected
            .iter()
            .filter_map(|id| by_id(id))
            .find(|m| m.gpu.is_some())
        {
            return Some(m);
        }
        local
            .or_else(|| self.machines.iter().find(|m| m.gpu.is_some()))
            .or(self.machines.first())
    }

    /// "This machine" (when detected) and the machines the user ticked, in that order.
    pub(crate) fn compared_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.local_id().into_iter().collect();
        for id in &self.state.selected {
            if !ids.contains(id) && self.machines.iter().any(|m| &m.id == id) {
                ids.push(id.clone());
            }
        }
        ids
    }

    /// The report text and launch settings for the compared machines (cached).
    pub(crate) fn report(&mut self) -> (&str, &[LaunchSetting]) {
        let ids = self.compared_ids();
        let key = (self.derived.generation, ids.clone(), self.report_format);
        if self.report.as_ref().is_none_or(|r| r.key != key) {
            let fits: Vec<FitResult> = ids
                .iter()
                .filter_map(|id| self.derived.fit(id).cloned())
                .collect();
            let settings = self.state.fit_settings();
            let input = ReportInput {
                scenario: &self.state.scenario,
                estimate: &self.derived.estimate,
                fits: &fits,
                catalog: &self.catalog,
                settings: &settings,
                generated: now_utc(),
                version: env!("CARGO_PKG_VERSION"),
            };
            let text = crate::io::export::render(&input, self.report_format);
            let launch = input.launch();
            self.report = Some(ReportCache { key, text, launch });
        }
        let r = self.report.as_ref().expect("just set");
        (&r.text, &r.launch)
    }

    // ---- Commands and job results ----

    fn apply(&mut self, c: Command, ctx: &egui::Context) {
        match c {
            Command::Dialog(action) => self.start_file_action(action, None),
            Command::AtPath(action, path) => self.start_file_action(action, Some(path)),
            Command::Redetect => {
                self.status = Some(Status {
                    text: "Detecting this machine...".into(),
                    error: false,
                });
                self.start_detection();
            }
            Command::ResetScenario => {
                self.state.scenario = Scenario::default();
                self.notices = Notices::default();
            }
            Command::Copy(text) => {
                ctx.copy_text(text);
                self.status = Some(Status {
                    text: "Copied to the clipboard.".into(),
                    error: false,
                });
            }
        }
    }

    /// Runs a file action on a job thread: the dialog (when `path` is `None`), then the IO.
    fn start_file_action(&mut self, action: FileAction, path: Option<PathBuf>) {
        self.path_prompt = None;
        let slug = scenario_slug(&self.state.scenario);
        match action {
            FileAction::ImportModel => {
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
                    let result = crate::io::import::import_path(&p)
                        .map(Box::new)
                        .map_err(|e| e.to_string());
                    JobResult::Imported { path: p, result }
                });
            }
            FileAction::OpenScenario => {
                self.jobs.spawn("open", move || {
                    let Some(p) = path.or_else(|| {
                        open_dialog("Open a scenario", &[("headroom scenario", &["ron"])])
                    }) else {
                        return JobResult::NoFileChosen { action };
                    };
                    let name = p.display().to_string();
                    let result = std::fs::read_to_string(&p)
                        .map_err(|e| format!("{name}: cannot read: {e}"))
                        .and_then(|t| {
                            crate::io::export::load_scenario(&name, &t)
                                .map(Box::new)
                                .map_err(|e| e.to_string())
                        });
                    JobResult::ScenarioOpened { path: p, result }
                });
            }
            FileAction::SaveScenario => {
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
                    let result = crate::io::export::write_atomic(&p, text.as_bytes())
                        .map(|_| p)
                        .map_err(|e| e.to_string());
                    JobResult::Written {
                        what: "Scenario",
                        result,
                    }
                });
            }
            FileAction::ExportReport => {
                // Owned copies: the report renders on the job thread, in the format the chosen
                // file name asks for.
                let scenario = self.state.scenario.clone();
                let estimate = self.derived.estimate.clone();
                let fits: Vec<FitResult> = self
                    .compared_ids()
                    .iter()
                    .filter_map(|id| self.derived.fit(id).cloned())
                    .collect();
                let catalog = self.catalog.clone();
                let settings = self.state.fit_settings();
                let fallback = self.report_format;
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
                    let format = match ReportFormat::from_path(&p) {
                        Ok(f) => f,
                        Err(_) => {
                            p.set_extension(ext);
                            fallback
                        }
                    };
                    let input = ReportInput {
                        scenario: &scenario,
                        estimate: &estimate,
                        fits: &fits,
                        catalog: &catalog,
                        settings: &settings,
                        generated: now_utc(),
                        version: env!("CARGO_PKG_VERSION"),
                    };
                    let text = crate::io::export::render(&input, format);
                    let result = crate::io::export::write_atomic(&p, text.as_bytes())
                        .map(|_| p)
                        .map_err(|e| e.to_string());
                    JobResult::Written {
                        what: "Report",
                        result,
                    }
                });
            }
        }
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
                    (None, None) => format!("Detected no usable GPU; {} of RAM.", d.ram_total),
                };
                self.detected = Some(*d);
                self.rebuild_machines();
                if self.status.as_ref().is_none_or(|s| !s.error) {
                    self.status = Some(Status { text, error: false });
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
                    self.notices.imported = Some((m.summary.clone(), m.notes));
                    self.notices.context_clamped = None;
                    self.status = Some(Status {
                        text: format!("Imported {}: {}", path.display(), m.summary),
                        error: false,
                    });
                }
                Err(e) => {
                    self.status = Some(Status {
                        text: format!("Import failed: {e}"),
                        error: true,
                    })
                }
            },
            JobResult::ScenarioOpened { path, result } => match result {
                Ok(s) => {
                    self.state.scenario = *s;
                    self.notices = Notices::default();
                    self.status = Some(Status {
                        text: format!("Opened {}", path.display()),
                        error: false,
                    });
                }
                Err(e) => {
                    self.status = Some(Status {
                        text: format!("Cannot open the scenario: {e}"),
                        error: true,
                    })
                }
            },
            JobResult::Written { what, result } => match result {
                Ok(p) => {
                    self.status = Some(Status {
                        text: format!("{what} saved to {}", p.display()),
                        error: false,
                    })
                }
                Err(e) => {
                    self.status = Some(Status {
                        text: format!("{what} not saved: {e}"),
                        error: true,
                    })
                }
            },
            JobResult::NoFileChosen { action } => {
                self.status = Some(Status {
                    text: "No file was chosen: the dialog was cancelled, or no file dialog is available on this system (it needs xdg-desktop-portal or zenity). You can type a path instead.".into(),
                    error: false,
                });
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
            if ui
                .button("Open scenario...")
                .on_hover_text("Load a scenario saved as .ron (Ctrl+O)")
                .clicked()
            {
                cmds.push(Command::Dialog(FileAction::OpenScenario));
            }
            if ui
                .button("Save scenario...")
                .on_hover_text("Save every input as a .ron file (Ctrl+S)")
                .clicked()
            {
                cmds.push(Command::Dialog(FileAction::SaveScenario));
            }
            if ui
                .button("Export report...")
                .on_hover_text("Write the sizing report as Markdown, HTML or JSON (Ctrl+E)")
                .clicked()
            {
                cmds.push(Command::Dialog(FileAction::ExportReport));
            }
            ui.separator();
            let busy = self.detecting();
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
        let mut close = false;
        ui.horizontal(|ui| {
            let l = ui.label(format!("{} - type a path:", action.label()));
            let r = ui
                .add(
                    egui::TextEdit::singleline(text)
                        .desired_width(420.0)
                        .hint_text("/home/me/report.md"),
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

    fn status_bar(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            if self.jobs.running() > 0 {
                ui.spinner();
            }
            if self.detecting() {
                ui.label("Detecting this machine...");
            } else if let Some(s) = &self.status {
                if s.error {
                    ui.label(RichText::new(&s.text).color(ui.visuals().error_fg_color));
                } else {
                    ui.label(&s.text);
                }
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                ui.label(
                    RichText::new(format!(
                        "{} machines, {} accelerators, {} models in the catalog",
                        self.catalog.machines.len(),
                        self.catalog.accelerators.len(),
                        self.catalog.models.len()
                    ))
                    .weak(),
                );
            });
        });
    }

    /// The key numbers above the tabs.
    fn summary_strip(&mut self, ui: &mut Ui) {
        let e = &self.derived.estimate;
        let s = &self.state.scenario;
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(&s.model.name).strong());
            let est = if s.model.is_estimated() {
                " (estimated shape)"
            } else {
                ""
            };
            ui.label(format!("{} params{est}", format_params(e.params.total)));
            ui.separator();
            if s.gpus == 0 {
                ui.label(format!("RAM needed: {}", e.host_total()));
            } else {
                let per = if s.gpus > 1 {
                    format!("Per GPU (of {}): {}", s.gpus, e.per_gpu_total())
                } else {
                    format!("GPU needs: {}", e.per_gpu_total())
                };
                ui.label(RichText::new(per).strong());
                if e.host_total().0 > 0 {
                    ui.label(format!("Host RAM: {}", e.host_total()));
                }
            }
            ui.separator();
            ui.label(format!("Weights: {}", e.kind_total(ComponentKind::Weights)))
                .on_hover_text("Whole job (all GPUs together)");
            if !s.mode.is_training() {
                ui.label(format!(
                    "KV cache: {}",
                    e.kind_total(ComponentKind::KvCache)
                ))
                .on_hover_text("Whole job (all sequences, all GPUs)");
                ui.label(format!("KV per token: {}", e.kv_cache_per_token))
                    .on_hover_text("All layers, one sequence");
            } else {
                let states = e.kind_total(ComponentKind::Gradients)
                    + e.kind_total(ComponentKind::Optimizer)
                    + e.kind_total(ComponentKind::MasterWeights);
                ui.label(format!("Gradients + optimizer: {states}"))
                    .on_hover_text("Whole job (all GPUs together)");
            }
            if let Some(local) = self.local_id()
                && let Some(f) = self.derived.fit(&local)
            {
                ui.separator();
                ui.label("This machine:");
                style::verdict_badge(ui, f).on_hover_text(f.name.clone());
                if f.fits() && !s.mode.is_training() {
                    ui.label(format!("{} tok/s", style::rate(f.decode_tokens_per_s)));
                }
            }
        });
        // The estimated-shape note is shown beside the Parameters slider already.
        for n in e.notes.iter().filter(|n| !n.starts_with("Shape estimated")) {
            style::note(ui, n.clone());
        }
    }

    fn central(&mut self, ui: &mut Ui) {
        self.recommend_strip(ui);
        self.summary_strip(ui);
        ui.add_space(2.0);
        ui.horizontal(|ui| {
            for t in Tab::ALL {
                let r = ui.selectable_value(
                    &mut self.state.tab,
                    t,
                    RichText::new(t.label()).size(15.0),
                );
                let _ = r;
            }
        });
        ui.separator();
        match self.state.tab {
            Tab::Breakdown => self.breakdown_tab(ui),
            Tab::Machines => self.machines_tab(ui),
            Tab::CpuVsGpu => self.teach_tab(ui),
            Tab::Report => self.report_tab(ui),
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
        egui::Panel::top("top-bar")
            .frame(
                egui::Frame::side_top_panel(ui.style()).inner_margin(egui::Margin::symmetric(8, 6)),
            )
            .show(ui, |ui| {
                self.top_bar(ui, &mut cmds);
            });
        if self.path_prompt.is_some() {
            egui::Panel::top("path-prompt").show(ui, |ui| self.path_prompt_bar(ui, &mut cmds));
        }
        egui::Panel::bottom("status-bar").show(ui, |ui| self.status_bar(ui));
        egui::Panel::left("inputs")
            .resizable(true)
            .default_size(330.0)
            .size_range(290.0..=560.0)
            .show(ui, |ui| {
                self.inputs_panel(ui, &mut cmds);
            });
        // The inputs may have changed: bring the numbers up to date before the central area.
        self.normalize();
        self.refresh();
        egui::CentralPanel::default().show(ui, |ui| self.central(ui));
        if let Some((source, m)) = self.hub.show(&ctx) {
            let (path, result) = (PathBuf::from(source), Ok(Box::new(m)));
            self.apply_result(JobResult::Imported { path, result });
        }

        for c in cmds {
            self.apply(c, &ctx);
        }
        if self.stats.record(t0.elapsed(), &ctx, self.state.tab) {
            ctx.request_repaint();
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
    }
}

/// A file-name-friendly name for the scenario: "llama-3-8b-bf16-8k" ([`crate::core::format::slug`]).
fn scenario_slug(s: &Scenario) -> String {
    let base = format!(
        "{}-{}-{}",
        s.model.name,
        s.weights.cli_name(),
        style::tokens_short(s.context)
    );
    crate::core::format::slug(&base).to_ascii_lowercase()
}

/// Now as "2025-06-01 14:03 UTC" ([`crate::io::clock::now_utc`]).
pub(crate) fn now_utc() -> String {
    crate::io::clock::now_utc()
}

/// "1,234" for counts in the views.
pub(crate) fn digits(n: u64) -> String {
    group_digits(n)
}

/// Small helper for "nothing here" states.
pub(crate) fn empty_state(ui: &mut Ui, title: &str, body: &str) {
    ui.add_space(24.0);
    ui.vertical_centered(|ui| {
        ui.label(RichText::new(title).strong().size(16.0));
        ui.add_space(4.0);
        ui.set_max_width(560.0);
        ui.add(egui::Label::new(RichText::new(body).weak()).wrap());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_and_date() {
        let s = Scenario::default();
        assert_eq!(scenario_slug(&s), "llama-3-8b-bf16-8k");
        let d = now_utc();
        assert_eq!(d.len(), "2025-06-01 14:03 UTC".len(), "{d}");
    }
}
