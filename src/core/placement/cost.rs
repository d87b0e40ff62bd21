//! What running on a machine costs: power for owned machines, the catalog's hourly price for
//! cloud instances, and per million generated tokens.

use crate::core::catalog::{Accelerator, Machine, MachineKind, Price};
use crate::core::fit::FitSettings;

/// Power an owned machine draws under load: its catalog figure, else the GPUs' TDP + 100 W for
/// the rest of the system, else a typical figure for its kind (heuristic: laptop 65 W, Apple
/// desktop or mini PC 120 W, desktop/workstation 200 W).
pub fn power_watts(m: &Machine, acc: Option<&Accelerator>) -> f64 {
    if let Some(w) = m.power_w {
        return w;
    }
    if let Some(t) = acc.and_then(|a| a.tdp_w) {
        return t * m.gpu_count.max(1) as f64 + 100.0;
    }
    match m.kind {
        MachineKind::Laptop => 65.0,
        MachineKind::Apple | MachineKind::MiniPc => 120.0,
        _ => 200.0,
    }
}

/// What an hour of the machine costs: cloud $/hour, owned power × electricity price. A cloud
/// instance without a catalog price has no cost (its electricity is not the user's bill).
pub fn hourly_usd(m: &Machine, acc: Option<&Accelerator>, st: &FitSettings) -> Option<f64> {
    match &m.price {
        Some(Price::Hourly { usd, .. }) => Some(*usd),
        _ if m.kind == MachineKind::Cloud => None,
        _ => Some(power_watts(m, acc) / 1000.0 * st.electricity_usd_per_kwh),
    }
}

/// Cost per million generated tokens at `tok_s` (the fit's decode rate, the same the speed
/// column shows): cloud from $/hour, owned from power × electricity.
pub fn usd_per_million(
    m: &Machine,
    acc: Option<&Accelerator>,
    tok_s: f64,
    st: &FitSettings,
) -> Option<f64> {
    if tok_s.is_nan() || tok_s <= 0.0 {
        return None;
    }
    Some(hourly_usd(m, acc, st)? * 1e6 / tok_s / 3600.0)
}
