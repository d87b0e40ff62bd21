//! The Report tab: a live preview of the report the export writes, and the launch settings with
//! Copy buttons for the machine they are written for.

use super::command::Command;
use super::data::View;
use super::jobs::FileAction;
use super::style::hint;
use crate::io::export::{LaunchSetting, ReportFormat, ReportInput};
use egui::{RichText, Ui};

/// The rendered report, cached per derived generation, machine list and format.
struct ReportCache {
    key: (u64, Vec<String>, ReportFormat),
    text: String,
    /// What the preview shows: the text, with the Markdown escape that keeps GitHub from
    /// linking bare URLs (`https:\/\/`) read back as the `https://` it renders as.
    preview: String,
    launch: Vec<LaunchSetting>,
    /// The machine the launch settings are for.
    launch_machine: Option<String>,
}

/// The Report tab: the chosen format and the cached rendering.
pub(crate) struct ReportTab {
    pub format: ReportFormat,
    cache: Option<ReportCache>,
}

impl Default for ReportTab {
    fn default() -> Self {
        ReportTab {
            format: ReportFormat::Markdown,
            cache: None,
        }
    }
}

impl ReportTab {
    /// The report for the compared machines (rendered again only when something changed).
    fn refresh(&mut self, v: &View<'_>) -> &ReportCache {
        let ids = v.data.compared_ids(v.state);
        let key = (v.data.derived.generation, ids, self.format);
        if self.cache.as_ref().is_none_or(|r| r.key != key) {
            let fits = v.data.compared_fits(v.state);
            let settings = v.state.fit_settings();
            let input = ReportInput {
                scenario: &v.state.scenario,
                estimate: &v.data.derived.estimate,
                fits: &fits,
                catalog: &v.data.catalog,
                settings: &settings,
                generated: crate::io::clock::now_utc(),
                version: env!("CARGO_PKG_VERSION"),
            };
            let text = crate::io::export::render(&input, self.format);
            let preview = if self.format == ReportFormat::Markdown {
                text.replace(":\\/\\/", "://")
            } else {
                text.clone()
            };
            let launch = input.launch();
            let launch_machine = input.launch_fit().map(|f| f.name.to_string());
            self.cache = Some(ReportCache {
                key,
                text,
                preview,
                launch,
                launch_machine,
            });
        }
        self.cache.as_ref().expect("just set")
    }

    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        ui.horizontal(|ui| {
            let l = ui.label("Format:");
            let r = egui::ComboBox::from_id_salt("report-format")
                .selected_text(self.format.label())
                .show_ui(ui, |ui| {
                    for f in ReportFormat::ALL {
                        ui.selectable_value(&mut self.format, f, f.label());
                    }
                });
            let _ = r.response.labelled_by(l.id);
            if ui.button("Export report...").clicked() {
                v.cmds.push(Command::Dialog(FileAction::ExportReport));
            }
            if ui.button("Copy report").clicked() {
                let text = self.refresh(v).text.clone();
                v.cmds.push(Command::Copy(text));
            }
        });
        let compared: Vec<String> = v
            .data
            .compared_fits(v.state)
            .into_iter()
            .map(|f| f.name.to_string())
            .collect();
        let format = self.format;
        let r = self.refresh(v);
        if compared.is_empty() {
            hint(
                ui,
                "The report lists this machine and the machines ticked in the Machines tab; none yet, so it shows the memory estimate only.",
            );
        } else {
            let launch = match &r.launch_machine {
                Some(m) => {
                    format!("Launch settings are for {m}, the first of them the workload fits on.")
                }
                None => String::new(),
            };
            hint(
                ui,
                format!("Machines in the report: {}. {launch}", compared.join(", ")),
            );
        }
        ui.add_space(4.0);
        let avail = ui.available_size();
        let mut cmds = Vec::new();
        ui.horizontal_top(|ui| {
            let left_w = (avail.x * 0.58).max(300.0);
            ui.vertical(|ui| {
                ui.set_width(left_w);
                ui.label(RichText::new(format!("Preview ({})", format.label())).strong());
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    egui::ScrollArea::both()
                        .id_salt("report-preview")
                        .max_height(avail.y - 40.0)
                        .auto_shrink([false, false])
                        .show(ui, |ui| {
                            ui.add(
                                egui::Label::new(RichText::new(&r.preview).monospace().size(12.0))
                                    .selectable(true)
                                    .extend(),
                            );
                        });
                });
            });
            ui.vertical(|ui| {
                let title = match &r.launch_machine {
                    Some(m) => format!("Launch settings for {m}"),
                    None => "Launch settings".to_string(),
                };
                ui.add(egui::Label::new(RichText::new(title).strong()).wrap());
                if r.launch.is_empty() {
                    hint(ui, "Launch settings need a machine: tick one in the Machines tab (or let detection find this one).");
                }
                egui::ScrollArea::vertical()
                    .id_salt("launch")
                    .max_height(avail.y - 40.0)
                    .auto_shrink([false, false])
                    .show(ui, |ui| {
                        for s in &r.launch {
                            ui.horizontal(|ui| {
                                ui.label(RichText::new(&s.title).strong());
                                if ui.button(format!("Copy {}", s.runtime.label())).clicked() {
                                    cmds.push(Command::Copy(s.text.clone()));
                                }
                            });
                            egui::Frame::group(ui.style()).show(ui, |ui| {
                                ui.set_width(ui.available_width());
                                ui.add(
                                    egui::Label::new(RichText::new(&s.text).monospace().size(12.0))
                                        .selectable(true)
                                        .wrap(),
                                );
                            });
                            hint(ui, s.note.clone());
                            ui.add_space(8.0);
                        }
                    });
            });
        });
        v.cmds.extend(cmds);
    }
}
