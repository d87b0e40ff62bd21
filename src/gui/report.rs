//! The Report tab: a live preview of the report the export writes, and the launch settings for
//! the first compared machine with Copy buttons.

use super::app::{Command, HeadroomApp};
use super::jobs::FileAction;
use super::style::hint;
use crate::io::export::ReportFormat;
use egui::{RichText, Ui};

impl HeadroomApp {
    pub(super) fn report_tab(&mut self, ui: &mut Ui) {
        let mut cmds = Vec::new();
        ui.horizontal(|ui| {
            let l = ui.label("Format:");
            let r = egui::ComboBox::from_id_salt("report-format")
                .selected_text(self.report_format.label())
                .show_ui(ui, |ui| {
                    for f in ReportFormat::ALL {
                        ui.selectable_value(&mut self.report_format, f, f.label());
                    }
                });
            let _ = r.response.labelled_by(l.id);
            if ui.button("Export report...").clicked() {
                cmds.push(Command::Dialog(FileAction::ExportReport));
            }
            let (text, _) = self.report();
            let text = text.to_string();
            if ui.button("Copy report").clicked() {
                cmds.push(Command::Copy(text));
            }
        });
        let compared = self.compared_ids();
        if compared.is_empty() {
            hint(
                ui,
                "The report lists this machine and the machines ticked in the Machines tab; none yet, so it shows the memory estimate only.",
            );
        } else {
            let names: Vec<String> = compared
                .iter()
                .filter_map(|id| self.derived.fit(id).map(|f| f.name.clone()))
                .collect();
            hint(
                ui,
                format!(
                    "Machines in the report: {}. Launch settings are for the first.",
                    names.join(", ")
                ),
            );
        }
        ui.add_space(4.0);
        let (text, launch) = self.report();
        let text = text.to_string();
        let launch = launch.to_vec();
        let avail = ui.available_size();
        ui.horizontal_top(|ui| {
            let left_w = (avail.x * 0.58).max(300.0);
            ui.vertical(|ui| {
                ui.set_width(left_w);
                ui.label(RichText::new(format!("Preview ({})", self.report_format.label())).strong());
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    egui::ScrollArea::both().id_salt("report-preview").max_height(avail.y - 40.0).auto_shrink([false, false]).show(ui, |ui| {
                        ui.add(egui::Label::new(RichText::new(&text).monospace().size(12.0)).selectable(true).extend());
                    });
                });
            });
            ui.vertical(|ui| {
                ui.label(RichText::new("Launch settings").strong());
                if launch.is_empty() {
                    hint(ui, "Launch settings need a machine: tick one in the Machines tab (or let detection find this one).");
                }
                egui::ScrollArea::vertical().id_salt("launch").max_height(avail.y - 40.0).auto_shrink([false, false]).show(ui, |ui| {
                    for s in &launch {
                        ui.horizontal(|ui| {
                            ui.label(RichText::new(&s.title).strong());
                            if ui.button(format!("Copy {}", s.runtime.label())).clicked() {
                                cmds.push(Command::Copy(s.text.clone()));
                            }
                        });
                        egui::Frame::group(ui.style()).show(ui, |ui| {
                            ui.set_width(ui.available_width());
                            ui.add(egui::Label::new(RichText::new(&s.text).monospace().size(12.0)).selectable(true).wrap());
                        });
                        hint(ui, s.note.clone());
                        ui.add_space(8.0);
                    }
                });
            });
        });
        for c in cmds {
            self.push_command(c);
        }
    }
}
