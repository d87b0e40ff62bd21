//! The desktop app (eframe/egui).
