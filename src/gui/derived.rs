//! Caches of what the views show: the estimate, the fit on every machine, the solver answers,
//! the teaching curves, the placements on the compared machines and the table rows. Every
//! number comes from `core`; this module only decides when to ask again.
//!
//! Each cache remembers the inputs it was built from (the scenario and fit settings are compared
//! by value, the catalog by a generation counter) and `generation` bumps whenever the estimate
//! and fits are rebuilt, so the caches downstream key on it cheaply.

use super::state::{MachineFilter, SortColumn};
use crate::core::catalog::{Catalog, Machine, MachineKind, MemoryKind};
use crate::core::diffusion::{self, ImageEstimate, ImageFit, ImageInputs, PipelineOffload};
use crate::core::estimate::{Estimate, estimate};
use crate::core::fit::{self, EstimateCache, FitResult, FitSettings, fit_all};
use crate::core::placement::explain::{MachineLoad, machine_load};
use crate::core::precision::WeightPrecision;
use crate::core::quality::{PrecisionCost, precision_costs};
use crate::core::scenario::{Mode, Scenario};
use crate::core::serving::{ServingPlan, plan_all};
use crate::core::teach::{Teach, teach_curves};
use std::cmp::Ordering;

/// The inputs of the estimate and the fits.
#[derive(Clone, PartialEq)]
struct Key {
    scenario: Scenario,
    settings: FitSettings,
    catalog_gen: u64,
}

/// The solver answers for one machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Solvers {
    pub max_context: Option<u64>,
    pub max_batch: Option<u64>,
    pub precision: Option<WeightPrecision>,
    /// Fewest GPUs of this machine's accelerator that hold the workload (discrete GPUs only).
    pub min_gpus: Option<u64>,
    /// Fewest whole machines of this type (multi-GPU and cloud machines).
    pub min_instances: Option<u64>,
    /// Accelerator name for the min-GPU answer.
    pub gpu_name: Option<String>,
}

/// The rows of the machine table and what the filters hid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    /// Indices into the machines (and fits), "This machine" first.
    pub shown: Vec<usize>,
    /// Machines (not counting "This machine") the workload fits on, before the filters.
    pub fitting: usize,
    /// Machines that fit but the kind filter or the search hid.
    pub fitting_hidden: usize,
}

/// The derived data and its caches.
#[derive(Default)]
pub struct Derived {
    key: Option<Key>,
    /// Bumps on every rebuild of `estimate` and `fits`.
    pub generation: u64,
    pub estimate: Estimate,
    /// One per machine, in the app's machine order ("This machine" first when detected).
    pub fits: Vec<FitResult>,
    solvers: Option<(u64, String, Solvers)>,
    teach: Option<(u64, String, Teach)>,
    rows: Option<(u64, MachineFilter, Rows)>,
    loads: Option<(u64, Vec<String>, Vec<MachineLoad>)>,
    /// Serving plans for every machine (same order as `fits`), per generation.
    plans: Option<(u64, Vec<ServingPlan>)>,
    /// Each precision's weights size and quality for the scenario (the Weights picker's rows and
    /// the size-vs-quality chart), per generation.
    costs: Option<(u64, Vec<PrecisionCost<'static>>)>,
    /// Image generation (`Mode::Image`): the pipeline's estimate and its fit on every machine,
    /// rebuilt with the estimate and fits.
    pub image: Option<ImageDerived>,
}

/// The image pipeline of an image-mode scenario, as the core sizes it.
#[derive(Clone, Debug)]
pub struct ImageDerived {
    /// The image scenario, or why it cannot be sized (one line naming the input).
    pub inputs: Result<ImageInputs, String>,
    /// The estimate at the asked placement (`auto`: everything on the GPU, as the command line
    /// sizes it; the fit picks per machine).
    pub estimate: Option<ImageEstimate>,
    /// One per machine, in the app's machine order.
    pub fits: Vec<ImageFit>,
}

impl ImageDerived {
    fn build(
        scenario: &Scenario,
        settings: &FitSettings,
        machines: &[Machine],
        catalog: &Catalog,
    ) -> ImageDerived {
        let inputs = scenario
            .image
            .inputs(scenario.weights, scenario.flash_attention);
        let (estimate, fits) = match &inputs {
            Ok(i) => {
                let place = match i.offload {
                    PipelineOffload::Auto => PipelineOffload::None,
                    p => p,
                };
                let fits = machines
                    .iter()
                    .map(|m| diffusion::fit_machine(i, m, catalog, settings))
                    .collect();
                (Some(diffusion::estimate(i, place)), fits)
            }
            Err(_) => (None, Vec::new()),
        };
        ImageDerived {
            inputs,
            estimate,
            fits,
        }
    }

    /// The fit of machine `id`.
    pub fn fit(&self, id: &str) -> Option<&ImageFit> {
        self.fits.iter().find(|f| *f.machine == *id)
    }
}

impl Derived {
    /// Rebuilds the estimate and fits when the scenario, settings or catalog changed. Returns
    /// whether anything was recomputed.
    pub fn update(
        &mut self,
        scenario: &Scenario,
        settings: &FitSettings,
        machines: &[Machine],
        catalog: &Catalog,
        catalog_gen: u64,
    ) -> bool {
        let same = self.key.as_ref().is_some_and(|k| {
            k.catalog_gen == catalog_gen && k.settings == *settings && k.scenario == *scenario
        });
        if same {
            return false;
        }
        self.estimate = estimate(scenario);
        self.fits = fit_all(scenario, machines, catalog, settings);
        self.image = (scenario.mode == Mode::Image)
            .then(|| ImageDerived::build(scenario, settings, machines, catalog));
        self.key = Some(Key {
            scenario: scenario.clone(),
            settings: settings.clone(),
            catalog_gen,
        });
        self.generation += 1;
        true
    }

    /// The fit of machine `id`.
    pub fn fit(&self, id: &str) -> Option<&FitResult> {
        self.fits.iter().find(|f| *f.machine == *id)
    }

    /// Solver answers for `m` (cached per machine and generation).
    pub fn solvers(
        &mut self,
        scenario: &Scenario,
        settings: &FitSettings,
        m: &Machine,
        catalog: &Catalog,
    ) -> &Solvers {
        let fresh =
            matches!(&self.solvers, Some((g, id, _)) if *g == self.generation && **id == *m.id);
        if !fresh {
            let acc = m.gpu.as_deref().and_then(|id| catalog.accelerator(id));
            let discrete = acc.is_some_and(|a| a.memory_kind == MemoryKind::Discrete);
            let s = Solvers {
                max_context: fit::solve_max_context(scenario, m, catalog, settings),
                max_batch: fit::solve_max_batch(scenario, m, catalog, settings),
                precision: if scenario.mode.is_training() {
                    None
                } else {
                    fit::solve_precision(scenario, m, catalog, settings)
                },
                min_gpus: if discrete {
                    m.gpu
                        .as_deref()
                        .and_then(|id| fit::solve_min_gpus(scenario, id, catalog, 1024))
                } else {
                    None
                },
                min_instances: if discrete && (m.gpu_count > 1 || m.kind == MachineKind::Cloud) {
                    fit::solve_min_instances(scenario, m, catalog, 128)
                } else {
                    None
                },
                gpu_name: acc.map(|a| a.name.clone()),
            };
            self.solvers = Some((self.generation, m.id.to_string(), s));
        }
        &self.solvers.as_ref().expect("just set").2
    }

    /// The CPU vs GPU curves for `m` (cached per machine and generation).
    pub fn teach(
        &mut self,
        scenario: &Scenario,
        settings: &FitSettings,
        m: &Machine,
        catalog: &Catalog,
    ) -> &Teach {
        let fresh =
            matches!(&self.teach, Some((g, id, _)) if *g == self.generation && **id == *m.id);
        if !fresh {
            let acc = m.gpu.as_deref().and_then(|id| catalog.accelerator(id));
            let t = teach_curves(scenario, settings, m, acc, &self.fits);
            self.teach = Some((self.generation, m.id.to_string(), t));
        }
        &self.teach.as_ref().expect("just set").2
    }

    /// How the scenario sits on each machine of `ids` (cached per generation and ids).
    pub fn loads(
        &mut self,
        scenario: &Scenario,
        settings: &FitSettings,
        ids: &[String],
        machines: &[Machine],
        catalog: &Catalog,
    ) -> &[MachineLoad] {
        let _ = settings; // part of the generation key
        let fresh =
            matches!(&self.loads, Some((g, k, _)) if *g == self.generation && k.as_slice() == ids);
        if !fresh {
            let mut cache = EstimateCache::new(scenario);
            let training = scenario.mode.is_training();
            let loads = ids
                .iter()
                .filter_map(|id| {
                    let m = machines.iter().find(|m| *m.id == **id)?;
                    let f = self.fits.iter().find(|f| *f.machine == **id)?;
                    let acc = m.gpu.as_deref().and_then(|g| catalog.accelerator(g));
                    Some(machine_load(f, m, acc, training, |g| cache.get(g).clone()))
                })
                .collect();
            self.loads = Some((self.generation, ids.to_vec(), loads));
        }
        &self.loads.as_ref().expect("just set").2
    }

    /// The serving plan of every machine, in the order of `fits` (cached per generation: the
    /// serving inputs are part of the scenario, so changing one rebuilds the fits and then these).
    pub fn plans(
        &mut self,
        scenario: &Scenario,
        settings: &FitSettings,
        catalog: &Catalog,
    ) -> &[ServingPlan] {
        let fresh = matches!(&self.plans, Some((g, _)) if *g == self.generation);
        if !fresh {
            let plans = plan_all(scenario, &self.fits, catalog, settings);
            self.plans = Some((self.generation, plans));
        }
        &self.plans.as_ref().expect("just set").1
    }

    /// Each precision the scenario's mode offers, with its weights size and quality (cached
    /// per generation).
    pub fn precision_costs(&mut self, scenario: &Scenario) -> &[PrecisionCost<'static>] {
        let fresh = matches!(&self.costs, Some((g, _)) if *g == self.generation);
        if !fresh {
            let costs = precision_costs(
                scenario,
                crate::io::catalog::quality(),
                Scenario::weights_for_mode(scenario.mode),
            );
            self.costs = Some((self.generation, costs));
        }
        &self.costs.as_ref().expect("just set").1
    }

    /// The plans last built by [`Derived::plans`] (empty before the first call).
    pub fn plans_cached(&self) -> &[ServingPlan] {
        self.plans.as_ref().map_or(&[], |(_, p)| p.as_slice())
    }

    /// The machine-table rows: "This machine" first, then the filtered and sorted rest (cached
    /// per generation and filter).
    pub fn rows(
        &mut self,
        filter: &MachineFilter,
        machines: &[Machine],
        search_keys: &[String],
        local_id: Option<&str>,
        catalog: &Catalog,
    ) -> &Rows {
        let fresh = matches!(&self.rows, Some((g, f, _)) if *g == self.generation && f == filter);
        if !fresh {
            let needle = filter.search.trim().to_lowercase();
            let mut pinned = Vec::new();
            let mut rest = Vec::new();
            let (mut fitting, mut fitting_hidden) = (0, 0);
            for (i, m) in machines.iter().enumerate() {
                if Some(&*m.id) == local_id {
                    pinned.push(i);
                    continue;
                }
                let fits = self.fits.get(i).is_some_and(FitResult::fits);
                fitting += usize::from(fits);
                let kind_ok =
                    filter.kinds.is_empty() || filter.kinds.iter().any(|&k| catalog.is_kind(m, k));
                let search_ok = needle.is_empty()
                    || search_keys
                        .get(i)
                        .is_some_and(|k| needle.split_whitespace().all(|w| k.contains(w)));
                // A machine opened from a recommendation card stays in view whatever the filters.
                let shown = kind_ok && search_ok && (fits || !filter.fits_only);
                if !shown && filter.opened.as_deref() == Some(&*m.id) {
                    pinned.push(i);
                    continue;
                }
                if !(kind_ok && search_ok) {
                    fitting_hidden += usize::from(fits);
                    continue;
                }
                if filter.fits_only && !fits {
                    continue;
                }
                rest.push(i);
            }
            let fits = &self.fits;
            let cmp = |a: &usize, b: &usize| -> Ordering {
                let (fa, fb) = (&fits[*a], &fits[*b]);
                let o = match filter.sort {
                    SortColumn::Catalog => a.cmp(b),
                    SortColumn::Name => fa.name.to_lowercase().cmp(&fb.name.to_lowercase()),
                    SortColumn::Kind => fa.kind.cli_name().cmp(fb.kind.cli_name()),
                    SortColumn::Verdict => fa
                        .verdict
                        .cmp(&fb.verdict)
                        .then(fb.gpu_layers.cmp(&fa.gpu_layers)),
                    SortColumn::Headroom => headroom_key(fa).cmp(&headroom_key(fb)),
                    SortColumn::Speed => speed_of(fa).total_cmp(&speed_of(fb)),
                    SortColumn::Latency => latency_of(fa).total_cmp(&latency_of(fb)),
                    SortColumn::Cost => cost_of(fa).total_cmp(&cost_of(fb)),
                };
                let o = if filter.descending { o.reverse() } else { o };
                // A "no" with room to spare goes last in either direction.
                let o = if filter.sort == SortColumn::Headroom {
                    (headroom_key(fa) == i64::MIN)
                        .cmp(&(headroom_key(fb) == i64::MIN))
                        .then(o)
                } else {
                    o
                };
                // Machines that do not fit go last for the numeric columns, whatever the direction.
                match filter.sort {
                    SortColumn::Headroom
                    | SortColumn::Speed
                    | SortColumn::Latency
                    | SortColumn::Cost => fb.fits().cmp(&fa.fits()).then(o),
                    _ => o,
                }
                .then(a.cmp(b))
            };
            rest.sort_by(cmp);
            pinned.extend(rest);
            let rows = Rows {
                shown: pinned,
                fitting,
                fitting_hidden,
            };
            self.rows = Some((self.generation, filter.clone(), rows));
        }
        &self.rows.as_ref().expect("just set").2
    }
}

/// The headroom a row sorts by: a "no" with memory to spare (a CPU box asked to train) has no
/// meaningful headroom and sorts below every real figure.
pub fn headroom_key(f: &FitResult) -> i64 {
    if f.fits() || f.headroom_bytes < 0 {
        f.headroom_bytes
    } else {
        i64::MIN
    }
}

/// Decode tok/s (inference), sequences/s (embeddings) or training tokens/s.
pub fn speed_of(f: &FitResult) -> f64 {
    match (&f.training, &f.embedding) {
        (Some(t), _) => t.tokens_per_s,
        (None, Some(e)) => e.sequences_per_s,
        (None, None) => f.decode_tokens_per_s,
    }
}

/// TTFT (inference) or step time (training); infinite when unknown so it sorts last.
pub fn latency_of(f: &FitResult) -> f64 {
    let x = match (&f.training, &f.embedding) {
        (Some(t), _) => t.step_seconds,
        (None, Some(e)) => e.batch_s,
        (None, None) => f.ttft_s,
    };
    if x > 0.0 { x } else { f64::INFINITY }
}

/// $ per 1M tokens (inference) or run cost (training); infinite when unknown.
pub fn cost_of(f: &FitResult) -> f64 {
    let x = match &f.training {
        Some(t) => t.run_usd,
        None => f.usd_per_million_tokens,
    };
    x.filter(|v| v.is_finite()).unwrap_or(f64::INFINITY)
}
