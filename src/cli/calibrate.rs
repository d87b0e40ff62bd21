//! `headroom calibrate FILE`: fit this machine's efficiency multipliers to its own llama-bench run
//! and store them in the config directory; `fit`/`report` on `--machine local` then use them and
//! say "calibrated from your run of DATE".

use crate::core::catalog::{Catalog, Machine};
use crate::core::speed::bench::{calibrate, predict_llama_bench};
use crate::core::speed::{SpeedConstants, Tuning};
use crate::io::calibration::{parse_llama_bench, save};
use std::fmt::Write as _;
use std::path::Path;

/// Calibrate `m` (in `cat`) from the llama-bench output in `file`, store the result in `dir`, and
/// say what changed. Errors are one line naming the file.
pub fn calibrate_file(
    file: &Path,
    m: &Machine,
    cat: &Catalog,
    dir: &Path,
    today: &str,
) -> Result<String, String> {
    let shown = file.display();
    let text = std::fs::read_to_string(file).map_err(|e| format!("{shown}: {e}"))?;
    let runs = parse_llama_bench(&text).map_err(|e| format!("{shown}: {e}"))?;
    let k = SpeedConstants::default();
    let c = calibrate(&runs, m, cat, &k, &shown.to_string(), today)
        .map_err(|e| format!("{shown}: {e}"))?;
    let path = save(dir, &c).map_err(|e| format!("cannot store the calibration: {e}"))?;
    let mut o = String::new();
    let _ = writeln!(o, "Calibrated {} from {} ({} tests)", m.name, shown, c.runs);
    let _ = writeln!(
        o,
        "  bandwidth × {:.3}, prefill × {:.3} ({})",
        c.tuning.bandwidth_factor,
        c.tuning.prefill_factor,
        c.backend.label()
    );
    // Before and after on the run's own first model.
    if let Some(r) = runs.first()
        && let Some(s) = crate::core::speed::bench::scenario_of_run(r, cat)
    {
        let before = predict_llama_bench(&s, m, cat, r.backend, Tuning::default(), &k);
        let after = predict_llama_bench(&s, m, cat, r.backend, c.tuning, &k);
        let _ = writeln!(
            o,
            "  {}: decode {:.1} → {:.1} tok/s, prefill {:.0} → {:.0} tok/s",
            r.model_type, before.0, after.0, before.1, after.1
        );
    }
    let _ = writeln!(o, "  stored in {}", path.display());
    let _ = writeln!(o, "  {}", c.note());
    Ok(o)
}

/// Runs `headroom calibrate FILE` on the detected machine (`local`).
pub fn command(file: &Path, cat: &Catalog) -> Result<String, super::app::CliError> {
    use super::app::CliError;
    use crate::io::detect::Detector;
    let d = crate::io::detect::SystemDetector::new(cat.clone()).detect();
    let c = crate::io::detect::catalog_with_local(&d, cat);
    let m = c
        .machine(crate::io::detect::LOCAL_MACHINE_ID)
        .cloned()
        .ok_or_else(|| CliError::input("this machine could not be described"))?;
    let dir = crate::io::calibration::config_dir().ok_or_else(|| {
        CliError::input("no config directory on this system (set HEADROOM_CONFIG_DIR)")
    })?;
    calibrate_file(file, &m, &c, &dir, &super::app::today()).map_err(CliError::input)
}

/// This machine's stored calibration (`headroom calibrate`); a broken file is a warning.
pub fn stored() -> Option<crate::core::speed::bench::Calibration> {
    crate::io::calibration::load_default().unwrap_or_else(|e| {
        eprintln!("headroom: {e} (ignored)");
        None
    })
}
