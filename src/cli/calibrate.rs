//! `headroom calibrate FILE`: fit this machine's efficiency multipliers to its own llama-bench run
//! and store them in the config directory; `fit`/`report` on `--machine local` then use them and
//! say "calibrated from your run of DATE". Reading, fitting and storing are
//! [`crate::io::calibration::calibrate_file`]'s; this module says what it did.

use crate::core::catalog::{Catalog, Machine};
use crate::core::format;
use crate::io::calibration::{Calibrated, calibrate_file};
use std::fmt::Write as _;
use std::path::Path;

/// What a calibration of `m` did, as `headroom calibrate` prints it.
pub fn describe(m: &Machine, done: &Calibrated) -> String {
    let c = &done.calibration;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Calibrated {} from {} ({} tests)",
        m.name,
        format::one_line(&done.file),
        c.runs
    );
    let _ = writeln!(
        o,
        "  bandwidth × {}, prefill × {} ({})",
        format::factor(c.tuning.bandwidth_factor),
        format::factor(c.tuning.prefill_factor),
        c.backend.label()
    );
    if let Some(check) = &done.check {
        let _ = writeln!(
            o,
            "  {}: decode {} → {} tok/s, prefill {} → {} tok/s",
            // llama-bench's model_type is text from the file: escaped for the terminal.
            format::one_line(&check.model_type),
            format::rate_tenths(check.before.0),
            format::rate_tenths(check.after.0),
            format::rate_whole(check.before.1),
            format::rate_whole(check.after.1)
        );
    }
    let _ = writeln!(o, "  stored in {}", done.path.display());
    let _ = writeln!(o, "  {}", c.note());
    o
}

/// Runs `headroom calibrate FILE` on the detected machine (`local`).
pub fn command(file: &Path, cat: &Catalog) -> Result<String, super::app::CliError> {
    use super::app::CliError;
    use crate::io::detect::Detector;
    let detected = crate::io::detect::SystemDetector::new(cat.clone()).detect();
    let with_local = crate::io::detect::catalog_with_local(&detected, cat);
    let m = with_local
        .machine(crate::io::detect::LOCAL_MACHINE_ID)
        .cloned()
        .ok_or_else(|| CliError::input("this machine could not be described"))?;
    let dir = crate::io::calibration::config_dir().ok_or_else(|| {
        CliError::input("no config directory on this system (set HEADROOM_CONFIG_DIR)")
    })?;
    let today = crate::io::clock::today_utc();
    calibrate_file(file, &m, &with_local, &dir, &today)
        .map(|done| describe(&m, &done))
        .map_err(CliError::input)
}

/// This machine's stored calibration (`headroom calibrate`); a broken file is a warning.
pub fn stored() -> Option<crate::core::speed::bench::Calibration> {
    crate::io::calibration::load_default().unwrap_or_else(|e| {
        eprintln!("headroom: {} (ignored)", format::one_line(&e));
        None
    })
}
