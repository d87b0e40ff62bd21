//! What the views read: the catalog with "This machine", the machines in display order, the
//! derived numbers, transient notices and the status message. [`View`] hands a view the state,
//! this data and the command queue for one frame.

use super::command::Command;
use super::derived::Derived;
use super::state::State;
use super::status::Status;
use crate::core::catalog::{Accelerator, Catalog, Machine};
use crate::core::fit::FitResult;
use crate::core::placement::explain::MachineLoad;
use crate::core::serving::ServingPlan;
use crate::io::detect::{DetectedMachine, LOCAL_MACHINE_ID, catalog_with_local};

/// Transient notes shown next to the inputs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Notices {
    /// The context the user (or a loaded file) asked for before it was clamped to the model.
    pub context_clamped: Option<u64>,
    /// Inputs whose typed value was clamped: (input label, what happened and why).
    pub clamped: Vec<(String, String)>,
    /// The last imported model: its summary and notes.
    pub imported: Option<(String, Vec<String>)>,
    /// The precision the user had before a training mode replaced it with the one it trains
    /// (QLoRA: NF4, full fine-tune: 16-bit); restored on the way back to inference.
    /// The user's precision before a training mode set Weights, and the precision it set: the
    /// first comes back with inference only while Weights still holds the second (a scenario
    /// opened or a precision picked since is kept).
    pub weights_before_training: Option<(
        crate::core::precision::WeightPrecision,
        crate::core::precision::WeightPrecision,
    )>,
    /// What the mode (or the model picker) did to the Weights input, shown under it.
    pub weights_note: Option<String>,
}

impl Notices {
    /// Records that the input `label` was clamped; replaces an older note for it.
    pub fn clamp(&mut self, label: &str, text: String) {
        self.clamped.retain(|(l, _)| l != label);
        self.clamped.push((label.to_string(), text));
    }
    /// The clamp note of the input `label`.
    pub fn clamp_note(&self, label: &str) -> Option<&str> {
        self.clamped
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, t)| t.as_str())
    }
}

/// The catalog, machines and derived numbers the views draw.
pub(crate) struct Data {
    /// The catalog without "This machine".
    pub base_catalog: Catalog,
    /// The catalog with "This machine" (machine "local", accelerator "local-gpu") once detected.
    pub catalog: Catalog,
    /// Machines in display order: "This machine" first.
    pub machines: Vec<Machine>,
    /// Lower-case search text per machine.
    pub search_keys: Vec<String>,
    pub catalog_gen: u64,
    pub detected: Option<DetectedMachine>,
    pub derived: Derived,
    pub notices: Notices,
    pub status: Option<Status>,
    pub catalog_warnings: Vec<String>,
    /// Whether a detection job is running.
    pub detecting: bool,
    /// A machine the Machines table scrolls to once (a recommendation card opened it).
    pub scroll_to: Option<String>,
}

impl Data {
    pub fn new(catalog: Catalog) -> Self {
        let mut d = Data {
            base_catalog: catalog.clone(),
            catalog,
            machines: Vec::new(),
            search_keys: Vec::new(),
            catalog_gen: 0,
            detected: None,
            derived: Derived::default(),
            notices: Notices::default(),
            status: None,
            catalog_warnings: Vec::new(),
            detecting: false,
            scroll_to: None,
        };
        d.rebuild_machines();
        d
    }

    /// Shows a message in the status bar.
    pub fn tell(&mut self, s: Status) {
        self.status = Some(s);
    }

    /// Rebuilds the machine list after detection or a catalog change.
    pub fn rebuild_machines(&mut self) {
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
                .filter(|m| *m.id != *LOCAL_MACHINE_ID)
                .cloned(),
        );
        self.search_keys = ms
            .iter()
            .map(|m| {
                let gpu = self.accelerator(m).map(|a| a.name.as_str()).unwrap_or("");
                format!("{} {} {} {} {}", m.name, m.id, gpu, m.cpu, m.kind.label()).to_lowercase()
            })
            .collect();
        self.machines = ms;
        self.catalog_gen += 1;
    }

    /// The accelerator of `m`, if it has one.
    pub fn accelerator(&self, m: &Machine) -> Option<&Accelerator> {
        m.gpu.as_deref().and_then(|g| self.catalog.accelerator(g))
    }

    pub fn machine(&self, id: &str) -> Option<&Machine> {
        self.machines.iter().find(|m| *m.id == *id)
    }

    /// "This machine"'s id once detected.
    pub fn local_id(&self) -> Option<String> {
        self.machines
            .first()
            .filter(|m| *m.id == *LOCAL_MACHINE_ID)
            .map(|m| m.id.to_string())
    }

    /// Brings the derived data up to date with the state (a no-op when nothing changed).
    /// Returns whether anything was recomputed.
    pub fn refresh(&mut self, state: &State) -> bool {
        let settings = state.fit_settings();
        self.derived.update(
            &state.scenario,
            &settings,
            &self.machines,
            &self.catalog,
            self.catalog_gen,
        )
    }

    /// The machine the solvers and teaching plots are about: the one the user chose, else this
    /// machine when it has a GPU, else the first compared machine with a GPU.
    pub fn focus_machine(&self, state: &State) -> Option<&Machine> {
        if let Some(m) = state.focus.as_deref().and_then(|id| self.machine(id)) {
            return Some(m);
        }
        let local = self.machines.first().filter(|m| *m.id == *LOCAL_MACHINE_ID);
        if let Some(l) = local.filter(|m| m.gpu.is_some()) {
            return Some(l);
        }
        if let Some(m) = state
            .selected
            .iter()
            .filter_map(|id| self.machine(id))
            .find(|m| m.gpu.is_some())
        {
            return Some(m);
        }
        local
            .or_else(|| self.machines.iter().find(|m| m.gpu.is_some()))
            .or(self.machines.first())
    }

    /// "This machine" (when detected) and the machines the user ticked, in that order.
    pub fn compared_ids(&self, state: &State) -> Vec<String> {
        let mut ids: Vec<String> = self.local_id().into_iter().collect();
        for id in &state.selected {
            if !ids.contains(id) && self.machine(id).is_some() {
                ids.push(id.clone());
            }
        }
        ids
    }

    /// The fits of the compared machines, in order.
    pub fn compared_fits(&self, state: &State) -> Vec<FitResult> {
        self.compared_ids(state)
            .iter()
            .filter_map(|id| self.derived.fit(id).cloned())
            .collect()
    }

    /// How the scenario sits on each compared machine (cached per generation).
    pub fn compared_loads(&mut self, state: &State) -> Vec<MachineLoad> {
        let ids = self.compared_ids(state);
        let settings = state.fit_settings();
        self.derived
            .loads(
                &state.scenario,
                &settings,
                &ids,
                &self.machines,
                &self.catalog,
            )
            .to_vec()
    }
}

impl Data {
    /// The serving plan of every machine (cached per generation).
    pub fn serving_plans(&mut self, state: &State) -> &[ServingPlan] {
        let settings = state.fit_settings();
        self.derived
            .plans(&state.scenario, &settings, &self.catalog)
    }
}

/// One frame's access for a view: the persisted state, the shared data, and the queue of side
/// effects applied after drawing.
pub(crate) struct View<'a> {
    pub state: &'a mut State,
    pub data: &'a mut Data,
    pub cmds: &'a mut Vec<Command>,
}

impl View<'_> {
    /// Replaces the model by a catalog preset. The precision the user chose stays (every
    /// precision applies to every preset); one left at the previous preset's own follows the
    /// new preset's (gpt-oss: MXFP4 experts). A note under Weights says which happened when the
    /// publisher's differs.
    pub fn apply_preset(&mut self, id: &str) {
        let Some(p) = self.data.catalog.model(id) else {
            return;
        };
        let s = &mut self.state.scenario;
        let previous_default = s
            .model_id
            .as_deref()
            .and_then(|m| self.data.catalog.model(m))
            .map(|m| m.default_weights());
        let (was, theirs) = (s.weights, p.default_weights());
        s.model = p.spec.clone();
        s.model_id = Some(p.id.clone());
        let notices = &mut self.data.notices;
        notices.weights_note = if previous_default == Some(was) {
            s.weights = theirs;
            (theirs != was).then(|| {
                format!(
                    "Weights set to {}, the precision {} ships in (was {}).",
                    theirs.label(),
                    p.name,
                    was.label()
                )
            })
        } else {
            // Said only where the publisher ships a precision of its own (not just BF16).
            (p.weights.is_some() && theirs != was).then(|| {
                format!(
                    "Weights kept at {}, your choice; {} ships in {}.",
                    was.label(),
                    p.name,
                    theirs.label()
                )
            })
        };
        notices.imported = None;
        notices.context_clamped = None;
    }
}
