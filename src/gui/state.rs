//! The persisted state: the scenario plus the UI choices a person expects to find again.
//!
//! Everything is `#[serde(default)]`, so a state saved by an older version (fields missing) or a
//! newer one (unknown fields are ignored by RON's default options) still loads.

use crate::core::catalog::MachineKind;
use crate::core::fit::FitSettings;
use crate::core::recommend::Constraints;
use crate::core::scenario::Scenario;
use crate::core::scenario::SplitStyle;
use serde::{Deserialize, Serialize};

/// The tabs of the central area.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Tab {
    #[default]
    Breakdown,
    Machines,
    /// Serving many users: throughput, time to first token and cost against load.
    Serving,
    /// More than one machine: nodes, layout, time and cost.
    Cluster,
    CpuVsGpu,
    Report,
}

impl Tab {
    pub const ALL: [Tab; 6] = [
        Tab::Breakdown,
        Tab::Machines,
        Tab::Serving,
        Tab::Cluster,
        Tab::CpuVsGpu,
        Tab::Report,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            Tab::Breakdown => "Breakdown",
            Tab::Machines => "Machines",
            Tab::Serving => "Serving",
            Tab::Cluster => "Cluster",
            Tab::CpuVsGpu => "CPU vs GPU",
            Tab::Report => "Report",
        }
    }
}

/// Columns the machine table sorts by.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SortColumn {
    /// Catalog order.
    #[default]
    Catalog,
    Name,
    Kind,
    Verdict,
    Headroom,
    /// Decode tok/s (inference) or training tokens/s.
    Speed,
    /// Time to first token (inference) or step time (training).
    Latency,
    /// $ per 1M tokens (inference) or run cost (training).
    Cost,
}

/// Filters and sorting of the machine table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MachineFilter {
    /// Kinds shown; empty = all.
    pub kinds: Vec<MachineKind>,
    /// Hide machines where the workload does not fit.
    pub fits_only: bool,
    /// Case-insensitive search in the machine, GPU and CPU names.
    pub search: String,
    pub sort: SortColumn,
    pub descending: bool,
    /// The machine a recommendation card opened: kept in view (pinned under "This machine")
    /// even where the filters would hide it, so a click never changes the filters.
    #[serde(default)]
    pub opened: Option<String>,
}

impl Default for MachineFilter {
    fn default() -> Self {
        MachineFilter {
            kinds: Vec::new(),
            fits_only: false,
            search: String::new(),
            sort: SortColumn::Catalog,
            descending: false,
            opened: None,
        }
    }
}

/// Everything that is saved between runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    pub scenario: Scenario,
    /// This machine's stored calibration (`headroom calibrate` or the GUI's "Calibrate from
    /// llama-bench output"); read from the config directory, never saved with the state.
    #[serde(skip)]
    pub calibration: Option<crate::core::speed::bench::Calibration>,
    pub tab: Tab,
    /// Machine ids whose capacity is drawn next to the Breakdown bars and listed in the report.
    pub selected: Vec<String>,
    /// The machine the solvers and the CPU vs GPU plots are about (`None`: this machine, else the
    /// first selected machine with a GPU).
    pub focus: Option<String>,
    pub filter: MachineFilter,
    /// Electricity price for owned machines, USD per kWh.
    pub electricity_usd_per_kwh: f64,
    /// How layers that do not fit on the GPU run (llama.cpp CPU layers, or streamed over PCIe).
    pub split_style: SplitStyle,
    /// What the recommendation strip must respect (budget, $/hour, speed, context).
    pub constraints: Constraints,
    /// The prompt length the user asked for and the one last put into the scenario (at most the
    /// context): a shorter context lowers the scenario's prompt, a longer one brings the asked
    /// length back. `None` until the first frame, and after a scenario is opened or reset.
    pub prompt_asked: Option<PromptAsked>,
}

/// The prompt length asked for (typed, dragged, set by a traffic mix or a file) and the one the
/// scenario holds now.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptAsked {
    pub asked: u64,
    pub applied: u64,
}

impl Default for State {
    fn default() -> Self {
        State {
            calibration: None,
            scenario: Scenario::default(),
            tab: Tab::Breakdown,
            // A first look: an 8 GB laptop GPU, a 24 GB desktop card and a 48 GB Mac, so the
            // capacity lines show what overflows where (ids missing from the catalog are ignored).
            selected: [
                "laptop-rtx4060-16gb",
                "desktop-rtx4090-64gb",
                "macbook-pro-16-m4-max-48gb",
            ]
            .map(String::from)
            .to_vec(),
            focus: None,
            filter: MachineFilter::default(),
            electricity_usd_per_kwh: FitSettings::default().electricity_usd_per_kwh,
            split_style: SplitStyle::CpuLayers,
            constraints: Constraints::default(),
            prompt_asked: None,
        }
    }
}

impl State {
    /// The fit settings these UI choices imply.
    pub fn fit_settings(&self) -> FitSettings {
        let price = if self.electricity_usd_per_kwh.is_finite() {
            self.electricity_usd_per_kwh.clamp(0.0, 10.0)
        } else {
            0.15
        };
        FitSettings {
            electricity_usd_per_kwh: price,
            split_style: self.split_style,
            calibration: self.calibration.clone(),
            ..FitSettings::default()
        }
    }

    /// Whether `id` is one of the compared machines.
    pub fn is_selected(&self, id: &str) -> bool {
        self.selected.iter().any(|s| s == id)
    }

    /// Adds or removes `id` from the compared machines.
    pub fn set_selected(&mut self, id: &str, on: bool) {
        let has = self.is_selected(id);
        if on && !has {
            self.selected.push(id.to_string());
        } else if !on && has {
            self.selected.retain(|s| s != id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_state_without_new_fields_loads() {
        // A state written before `split_style` and `filter` existed.
        let text = "(tab: Machines, selected: [\"dgx-h100\"], electricity_usd_per_kwh: 0.3)";
        let s: State = ron::from_str(text).unwrap();
        assert_eq!(s.tab, Tab::Machines);
        assert_eq!(s.selected, vec!["dgx-h100".to_string()]);
        assert_eq!(s.split_style, SplitStyle::CpuLayers);
        assert_eq!(s.scenario, Scenario::default());
    }

    #[test]
    fn round_trips() {
        let mut s = State {
            selected: Vec::new(),
            ..State::default()
        };
        s.set_selected("a", true);
        s.set_selected("b", true);
        s.set_selected("a", false);
        let text = ron::to_string(&s).unwrap();
        let back: State = ron::from_str(&text).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.selected, vec!["b".to_string()]);
    }
}
