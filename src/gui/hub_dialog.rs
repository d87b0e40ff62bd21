//! "Open from Hugging Face…": a repo id, the files found (the GGUF quants with their sizes, or
//! the safetensors checkpoint), a progress bar and Cancel. The listing and the header reads run
//! on a worker thread through `io::hub`; the window stays responsive. The network is touched
//! only when the user presses "List files" or "Read headers".

use crate::core::units::Bytes;
use crate::io::hub::{self, HubError, Opened, Options, RepoListing, Request};
use crate::io::import::ImportedModel;
use egui::{Context, RichText, Ui};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

enum Msg {
    Progress(usize, usize, String),
    Listed(Result<RepoListing, HubError>),
    Opened(Box<Result<Opened, HubError>>),
}

/// What the user picks to read.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pick {
    /// config.json and the safetensors headers (or config.json alone).
    Checkpoint,
    Gguf(String),
}

/// The dialog's state; `HeadroomApp` holds one and calls [`HubDialog::show`] every frame.
#[derive(Default)]
pub struct HubDialog {
    pub open: bool,
    /// `ORG/NAME[@REVISION]` as typed.
    pub repo: String,
    /// Options for tests (a local endpoint, a temporary cache); `None`: from the environment
    /// when a request starts.
    pub options: Option<Options>,
    listing: Option<RepoListing>,
    pick: Option<Pick>,
    rx: Option<Receiver<Msg>>,
    cancel: Option<Arc<AtomicBool>>,
    progress: Option<(usize, usize, String)>,
    error: Option<String>,
    /// The last result line ("Read … in N requests").
    pub done: Option<String>,
    /// Whether the modal was drawn last frame: the click that opens it is not a click outside.
    shown: bool,
}

impl HubDialog {
    pub fn busy(&self) -> bool {
        self.rx.is_some()
    }

    fn options(&self) -> Options {
        self.options.clone().unwrap_or_else(Options::from_env)
    }

    fn start(
        &mut self,
        ctx: &Context,
        job: impl FnOnce(&Options, &Sender<Msg>) -> Msg + Send + 'static,
    ) {
        let cancel = Arc::new(AtomicBool::new(false));
        let mut opts = self.options();
        opts.cancel = Some(cancel.clone());
        let (tx, rx) = channel();
        let ctx = ctx.clone();
        self.cancel = Some(cancel);
        self.rx = Some(rx);
        self.error = None;
        self.done = None;
        self.progress = Some((0, 1, "starting".into()));
        std::thread::spawn(move || {
            let msg = job(&opts, &tx);
            let _ = tx.send(msg);
            ctx.request_repaint();
        });
    }

    fn list(&mut self, ctx: &Context) {
        let (repo, rev) = match hub::parse_repo(&self.repo) {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(e.message.replace("--hf: ", ""));
                return;
            }
        };
        self.listing = None;
        self.pick = None;
        self.start(ctx, move |opts, _| {
            Msg::Listed(hub::list_repo(&repo, &rev, opts))
        });
    }

    fn read(&mut self, ctx: &Context) {
        let (Some(l), Some(p)) = (&self.listing, &self.pick) else {
            return;
        };
        let req = Request::Hub {
            repo: l.repo.clone(),
            revision: l.revision.clone(),
            file: match p {
                Pick::Checkpoint if l.safetensors().is_empty() => Some("config.json".into()),
                Pick::Checkpoint => None,
                Pick::Gguf(f) => Some(f.clone()),
            },
            quant: None,
        };
        let repaint = ctx.clone();
        self.start(ctx, move |opts, tx| {
            let tx = tx.clone();
            let mut progress = move |d: usize, t: usize, what: &str| {
                let _ = tx.send(Msg::Progress(d, t, what.to_string()));
                repaint.request_repaint();
            };
            Msg::Opened(Box::new(hub::open(&req, opts, &mut progress)))
        });
    }

    /// Draws the window when open; returns the model when a read finished.
    pub fn show(&mut self, ctx: &Context) -> Option<(String, ImportedModel)> {
        let mut out = None;
        let msgs: Vec<Msg> = self
            .rx
            .as_ref()
            .map(|rx| rx.try_iter().collect())
            .unwrap_or_default();
        {
            for m in msgs {
                match m {
                    Msg::Progress(d, t, s) => self.progress = Some((d, t, s)),
                    Msg::Listed(r) => {
                        self.rx_done();
                        match r {
                            Ok(l) => {
                                self.pick = default_pick(&l);
                                self.listing = Some(l);
                            }
                            Err(e) => self.error = Some(e.message),
                        }
                        break;
                    }
                    Msg::Opened(r) => {
                        self.rx_done();
                        match *r {
                            Ok(o) => {
                                self.done = Some(if o.from_cache {
                                    "Read from the cache: no request.".to_string()
                                } else {
                                    format!(
                                        "Read {} in {} requests (headers only).",
                                        Bytes(o.bytes_transferred).display_gb(),
                                        o.requests
                                    )
                                });
                                let source = o
                                    .model
                                    .spec
                                    .file_weights
                                    .as_ref()
                                    .map(|f| f.path.clone())
                                    .unwrap_or_else(|| self.repo.trim().to_string());
                                out = Some((source, o.model));
                                self.open = false;
                            }
                            Err(e) => self.error = Some(e.message),
                        }
                        break;
                    }
                }
            }
        }
        if self.busy() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        if !self.open {
            self.shown = false;
            return out;
        }
        let first = !std::mem::replace(&mut self.shown, true);
        // A modal, as egui_demo_app's: the window behind is dimmed and blocked, it is centred
        // (never over the button that opened it), and Escape or a click outside closes it
        // (cancelling a running request).
        let modal = egui::Modal::new(egui::Id::unique("hub-dialog")).show(ctx, |ui| {
            ui.set_width(460.0);
            let close = ui
                .horizontal(|ui| {
                    ui.heading("Open from Hugging Face");
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        ui.button("Close").on_hover_text("Escape").clicked()
                    })
                    .inner
                })
                .inner;
            self.body(ui, ctx);
            close
        });
        if modal.inner || (modal.should_close() && !first) {
            self.cancel_job();
            self.open = false;
        }
        out
    }

    fn rx_done(&mut self) {
        self.rx = None;
        self.cancel = None;
        self.progress = None;
    }

    fn cancel_job(&mut self) {
        if let Some(c) = &self.cancel {
            c.store(true, Ordering::Relaxed);
        }
        self.rx_done();
    }

    fn body(&mut self, ui: &mut Ui, ctx: &Context) {
        let busy = self.busy();
        ui.horizontal(|ui| {
            let l = ui.label("Repository");
            let r = ui
                .add_enabled(
                    !busy,
                    egui::TextEdit::singleline(&mut self.repo)
                        .hint_text("ORG/NAME or ORG/NAME@REVISION")
                        .desired_width(260.0),
                )
                .labelled_by(l.id);
            let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui
                .add_enabled(!busy, egui::Button::new("List files"))
                .clicked()
                || enter)
                && !self.repo.trim().is_empty()
            {
                self.list(ctx);
            }
        });
        ui.label(
            RichText::new(
                "Reads config.json and the weight files' headers (never the weights) from the Hub; HF_TOKEN for gated models.",
            )
            .small()
            .weak(),
        );
        if let Some(l) = &self.listing {
            ui.separator();
            let st = l.safetensors();
            let ggufs = l.ggufs();
            ui.label(format!(
                "{}@{}: {} files",
                l.repo,
                l.revision,
                l.files.len()
            ));
            egui::ScrollArea::vertical()
                .max_height(220.0)
                .show(ui, |ui| {
                    let has_config = l.files.iter().any(|f| f.path == "config.json");
                    if !st.is_empty() || has_config {
                        let size: Option<u64> = st
                            .iter()
                            .map(|s| l.files.iter().find(|f| &f.path == s).and_then(|f| f.size))
                            .try_fold(0u64, |a, s| s.map(|s| a + s));
                        let text = if st.is_empty() {
                            "config.json (no weight files)".to_string()
                        } else {
                            format!(
                                "safetensors: {} file(s){}",
                                st.len(),
                                size.map(|s| format!(", {}", Bytes(s).display_gib()))
                                    .unwrap_or_default()
                            )
                        };
                        ui.radio_value(&mut self.pick, Some(Pick::Checkpoint), text);
                    }
                    for g in &ggufs {
                        let text = format!(
                            "GGUF {}: {}{}{}",
                            g.quant.as_deref().unwrap_or("?"),
                            g.file,
                            if g.parts > 1 {
                                format!(" ({} parts)", g.parts)
                            } else {
                                String::new()
                            },
                            g.size
                                .map(|s| format!(", {}", Bytes(s).display_gib()))
                                .unwrap_or_default()
                        );
                        ui.radio_value(&mut self.pick, Some(Pick::Gguf(g.file.clone())), text);
                    }
                    if st.is_empty() && ggufs.is_empty() && !has_config {
                        ui.label("No config.json, .safetensors or .gguf file in this repository.");
                    }
                });
            if ui
                .add_enabled(
                    !busy && self.pick.is_some(),
                    egui::Button::new("Read headers"),
                )
                .clicked()
            {
                self.read(ctx);
            }
        }
        if let Some((d, t, what)) = &self.progress {
            ui.separator();
            let frac = if *t == 0 { 0.0 } else { *d as f32 / *t as f32 };
            ui.add(
                egui::ProgressBar::new(frac.clamp(0.0, 1.0))
                    .text(format!("{d}/{t}: {what}"))
                    .animate(true),
            );
            if ui.button("Cancel").clicked() {
                self.cancel_job();
            }
        }
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        if let Some(d) = &self.done {
            ui.label(d);
        }
    }
}

/// The checkpoint when there are safetensors (or only config.json), else the only GGUF.
fn default_pick(l: &RepoListing) -> Option<Pick> {
    if !l.safetensors().is_empty() {
        return Some(Pick::Checkpoint);
    }
    match l.ggufs().as_slice() {
        [one] => Some(Pick::Gguf(one.file.clone())),
        [] if l.files.iter().any(|f| f.path == "config.json") => Some(Pick::Checkpoint),
        _ => None,
    }
}
