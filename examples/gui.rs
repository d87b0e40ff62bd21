//! Opens the desktop app (the same as `headroom` with no subcommand): `cargo run --example gui`.
fn main() -> eframe::Result<()> {
    headroom::gui::run_app()
}
