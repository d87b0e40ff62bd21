//! Everything the views show that is computed from the state: the estimate, the fit on every
//! machine, the solver answers, the teaching curves and the report text.
//!
//! Recomputed only when an input changes: each cache remembers the inputs it was built from
//! (the scenario and fit settings are compared by value, the catalog by a generation counter)
//! and `generation` bumps whenever the estimate and fits are rebuilt, so the caches downstream
//! key on it cheaply.

use super::state::{MachineFilter, SortColumn};
use crate::core::catalog::{Accelerator, Catalog, Machine, MemoryKind, Vendor};
use crate::core::estimate::{ComponentKind, Estimate, estimate};
use crate::core::fit::{self, FitResult, FitSettings, Verdict, fit_all};
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Mode, Scenario};
use crate::core::speed::{SpeedQuery, SplitStyle, placement_speed};
use crate::core::units::{Bytes, GbPerSec};
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

/// One bar of the CPU vs GPU comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedBar {
    pub label: String,
    pub tokens_per_s: f64,
    pub usd_per_million: Option<f64>,
    /// Whether the workload fits in this placement.
    pub fits: bool,
}

/// The curves of the CPU vs GPU tab for one machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Teach {
    pub machine: String,
    pub has_gpu: bool,
    pub unified: bool,
    pub layers: u64,
    /// Layers that fit on the GPU(s) before VRAM runs out (= `layers` when everything fits).
    pub k_fit: u64,
    /// (k, tok/s) with the CPU running its layers (llama.cpp `-ngl k`).
    pub cpu_layers: Vec<[f64; 2]>,
    /// (k, tok/s) with the other layers streamed over PCIe each token.
    pub streaming: Vec<[f64; 2]>,
    pub gpu_bandwidth: f64,
    pub ram_bandwidth: f64,
    pub link_bandwidth: f64,
    pub gpu_capacity: Bytes,
    pub ram_capacity: Bytes,
    /// Context points (log2 of tokens) and, per component kind, GiB per device at each.
    pub ctx_points: Vec<u64>,
    pub per_kind: Vec<(ComponentKind, Vec<[f64; 2]>)>,
    pub total: Vec<[f64; 2]>,
    pub bars: Vec<SpeedBar>,
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
    rows: Option<(u64, MachineFilter, Vec<usize>)>,
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
        self.fits.iter().find(|f| f.machine == id)
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
            matches!(&self.solvers, Some((g, id, _)) if *g == self.generation && *id == m.id);
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
                min_instances: if discrete
                    && (m.gpu_count > 1 || m.kind == crate::core::catalog::MachineKind::Cloud)
                {
                    fit::solve_min_instances(scenario, m, catalog, 128)
                } else {
                    None
                },
                gpu_name: acc.map(|a| a.name.clone()),
            };
            self.solvers = Some((self.generation, m.id.clone(), s));
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
        let fresh = matches!(&self.teach, Some((g, id, _)) if *g == self.generation && *id == m.id);
        if !fresh {
            let t = compute_teach(scenario, settings, m, catalog, &self.fits);
            self.teach = Some((self.generation, m.id.clone(), t));
        }
        &self.teach.as_ref().expect("just set").2
    }

    /// Indices into `machines` (and `fits`) of the rows to show, "This machine" first, then the
    /// filtered and sorted rest (cached per generation and filter).
    pub fn rows(
        &mut self,
        filter: &MachineFilter,
        machines: &[Machine],
        search_keys: &[String],
        local_id: Option<&str>,
    ) -> &[usize] {
        let fresh = matches!(&self.rows, Some((g, f, _)) if *g == self.generation && f == filter);
        if !fresh {
            let needle = filter.search.trim().to_lowercase();
            let mut pinned = Vec::new();
            let mut rest = Vec::new();
            for (i, m) in machines.iter().enumerate() {
                if Some(m.id.as_str()) == local_id {
                    pinned.push(i);
                    continue;
                }
                if !filter.kinds.is_empty() && !filter.kinds.contains(&m.kind) {
                    continue;
                }
                if filter.fits_only && !self.fits.get(i).is_some_and(FitResult::fits) {
                    continue;
                }
                if !needle.is_empty()
                    && !search_keys
                        .get(i)
                        .is_some_and(|k| needle.split_whitespace().all(|w| k.contains(w)))
                {
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
                    SortColumn::Headroom => fa.headroom_bytes.cmp(&fb.headroom_bytes),
                    SortColumn::Speed => speed_of(fa).total_cmp(&speed_of(fb)),
                    SortColumn::Latency => latency_of(fa).total_cmp(&latency_of(fb)),
                    SortColumn::Cost => cost_of(fa).total_cmp(&cost_of(fb)),
                };
                let o = if filter.descending { o.reverse() } else { o };
                // Machines that do not fit go last for the numeric columns, whatever the direction.
                match filter.sort {
                    SortColumn::Speed | SortColumn::Latency | SortColumn::Cost => {
                        fb.fits().cmp(&fa.fits()).then(o)
                    }
                    _ => o,
                }
                .then(a.cmp(b))
            };
            rest.sort_by(cmp);
            pinned.extend(rest);
            self.rows = Some((self.generation, filter.clone(), pinned));
        }
        &self.rows.as_ref().expect("just set").2
    }
}

/// Decode tok/s (inference) or training tokens/s.
pub fn speed_of(f: &FitResult) -> f64 {
    match &f.training {
        Some(t) => t.tokens_per_s,
        None => f.decode_tokens_per_s,
    }
}

/// TTFT (inference) or step time (training); infinite when unknown so it sorts last.
pub fn latency_of(f: &FitResult) -> f64 {
    let x = match &f.training {
        Some(t) => t.step_seconds,
        None => f.ttft_s,
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

/// What running the machine costs per hour: the cloud price, or power x electricity (the fit
/// engine's rule, so the bars agree with the machine table).
pub fn hourly_usd(m: &Machine, acc: Option<&Accelerator>, st: &FitSettings) -> Option<f64> {
    fit::hourly_usd(m, acc, st)
}

fn per_million(hourly: Option<f64>, tok_s: f64) -> Option<f64> {
    if tok_s > 0.0 {
        hourly.map(|h| h * 1e6 / tok_s / 3600.0)
    } else {
        None
    }
}

/// RAM usable by a job on `m` (RAM minus the OS reserve), as the fit engine computes it.
fn ram_capacity(m: &Machine, st: &FitSettings) -> Bytes {
    let frac = m.ram.scale(st.os_reserve_fraction.clamp(0.0, 0.9));
    let reserve = st.os_reserve.max(frac).min(m.ram);
    m.ram.saturating_sub(reserve)
}

/// `count` context lengths spread evenly on a log scale from 256 to `max`.
pub fn log_points(max: u64, count: usize) -> Vec<u64> {
    let lo = 256f64.min(max as f64).max(1.0);
    let hi = (max as f64).max(lo);
    if count < 2 || hi <= lo {
        return vec![hi as u64];
    }
    let mut v: Vec<u64> = (0..count)
        .map(|i| {
            let t = i as f64 / (count - 1) as f64;
            (lo.ln() + t * (hi.ln() - lo.ln())).exp().round() as u64
        })
        .collect();
    v.dedup();
    v
}

fn compute_teach(
    scenario: &Scenario,
    st: &FitSettings,
    m: &Machine,
    catalog: &Catalog,
    fits: &[FitResult],
) -> Teach {
    let k = &st.speed;
    // The teaching curves are about serving: a training scenario is shown as its inference twin.
    let s = Scenario {
        mode: Mode::Inference,
        ..scenario.clamped()
    };
    let acc = m.gpu.as_deref().and_then(|id| catalog.accelerator(id));
    let unified = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
    let g = match acc {
        Some(_) if unified => 1,
        Some(_) => m.gpu_count.max(1) as u64,
        None => 0,
    };
    let ram_cap = ram_capacity(m, st);
    let gpu_cap = match acc {
        Some(a) if unified => {
            let lim = m.gpu_memory_limit.unwrap_or_else(|| {
                if a.vendor == Vendor::Apple {
                    fit::metal_default_limit(m.ram)
                } else {
                    m.ram.scale(st.apu_gpu_fraction)
                }
            });
            lim.min(m.ram)
        }
        Some(a) if s.runtime == crate::core::scenario::Runtime::Vllm => {
            a.memory.scale(s.gpu_memory_utilization)
        }
        Some(a) => a.memory,
        None => Bytes::ZERO,
    };
    let est_g = estimate(&Scenario {
        gpus: g.max(1),
        ..s.clone()
    });
    let est_cpu = estimate(&Scenario {
        gpus: 0,
        ..s.clone()
    });
    let layers = est_g.workload.layers.max(1);
    let hourly = hourly_usd(m, acc, st);

    let mut t = Teach {
        machine: m.name.clone(),
        has_gpu: acc.is_some(),
        unified,
        layers,
        ram_bandwidth: m.ram_bandwidth.0,
        gpu_capacity: gpu_cap,
        ram_capacity: ram_cap,
        ..Teach::default()
    };

    let cpu_speed = placement_speed(
        &SpeedQuery::on_machine(&s, &est_cpu, m, acc, k).cpu_only(),
        k,
    );
    t.bars.push(SpeedBar {
        label: "CPU only".into(),
        tokens_per_s: cpu_speed.decode_tokens_per_s,
        usd_per_million: per_million(hourly, cpu_speed.decode_tokens_per_s),
        fits: est_cpu.total() <= ram_cap,
    });

    if let Some(a) = acc {
        let on_gpu = |kk: u64, style: SplitStyle| {
            let mut q = SpeedQuery::on_machine(&s, &est_g, m, acc, k);
            q.gpu_layers = kk;
            q.style = style;
            if kk == 0 {
                q = q.cpu_only();
            }
            placement_speed(&q, k)
        };
        let link = a.pcie.map(|p| p.bandwidth()).unwrap_or(GbPerSec(16.0));
        t.gpu_bandwidth = a.bandwidth.0;
        t.link_bandwidth = link.0;
        // Where VRAM runs out, as the fit engine places whole layers (per-GPU fixed costs stay).
        let whole = est_g.per_gpu_total() <= gpu_cap;
        t.k_fit = if whole {
            layers
        } else {
            let e1 = estimate(&Scenario {
                gpus: 1,
                ..s.clone()
            });
            let w = &e1.workload;
            let per_layer = w.layer_weights.saturating_add(w.kv_total).div_ceil(layers);
            let room = gpu_cap
                .saturating_sub(w.fixed_per_device)
                .saturating_mul(g.max(1));
            room.0
                .checked_div(per_layer.0)
                .map_or(layers, |k| k.min(layers - 1))
        };
        for (style, out) in [
            (SplitStyle::CpuLayers, &mut t.cpu_layers),
            (SplitStyle::Streaming, &mut t.streaming),
        ] {
            for kk in 0..=layers {
                let sp = on_gpu(kk, style);
                out.push([kk as f64, sp.decode_tokens_per_s]);
            }
        }
        if t.k_fit > 0 && t.k_fit < layers {
            let sp = on_gpu(t.k_fit, st.split_style);
            t.bars.push(SpeedBar {
                label: format!("{} of {} layers on GPU", t.k_fit, layers),
                tokens_per_s: sp.decode_tokens_per_s,
                usd_per_million: per_million(hourly, sp.decode_tokens_per_s),
                fits: true,
            });
        }
        let full = on_gpu(layers, st.split_style);
        t.bars.push(SpeedBar {
            label: if whole {
                "All on GPU".into()
            } else {
                "All on GPU (needs more VRAM)".into()
            },
            tokens_per_s: full.decode_tokens_per_s,
            usd_per_million: per_million(hourly, full.decode_tokens_per_s),
            fits: whole,
        });
    }
    // The best unified-memory machine in the catalog for this workload, when the scenario is
    // an inference one (the fits are for the real scenario).
    if !scenario.mode.is_training()
        && let Some(best) = fits
            .iter()
            .filter(|f| f.verdict == Verdict::Unified && f.machine != m.id)
            .max_by(|a, b| a.decode_tokens_per_s.total_cmp(&b.decode_tokens_per_s))
    {
        t.bars.push(SpeedBar {
            label: format!("Best unified: {}", best.name),
            tokens_per_s: best.decode_tokens_per_s,
            usd_per_million: best.usd_per_million_tokens,
            fits: true,
        });
    }

    // Memory against context length, per device (one GPU, or host RAM when CPU only).
    let max_ctx = if s.model.max_context > 0 {
        s.model.max_context
    } else {
        1 << 20
    };
    t.ctx_points = log_points(max_ctx.min(1 << 20), 20);
    let mut per_kind: Vec<(ComponentKind, Vec<[f64; 2]>)> = ComponentKind::ALL
        .iter()
        .map(|&k| (k, Vec::new()))
        .collect();
    let cpu_only = scenario.gpus == 0;
    for &c in &t.ctx_points {
        let e = estimate(&Scenario {
            context: c,
            prompt_tokens: s.prompt_tokens.min(c),
            mode: scenario.mode,
            ..s.clone()
        });
        let x = (c as f64).log2();
        let mut sum = 0.0;
        for (kind, pts) in per_kind.iter_mut() {
            let b = if cpu_only {
                e.host_kind(*kind)
            } else {
                e.per_gpu_kind(*kind)
            };
            sum += b.as_gib();
            pts.push([x, b.as_gib()]);
        }
        t.total.push([x, sum]);
    }
    per_kind.retain(|(_, pts)| pts.iter().any(|p| p[1] > 0.0));
    t.per_kind = per_kind;
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_points_span_the_range() {
        let p = log_points(1 << 20, 20);
        assert_eq!(p.first(), Some(&256));
        assert_eq!(p.last(), Some(&(1 << 20)));
        assert_eq!(p.len(), 20);
        assert_eq!(log_points(100, 20), vec![100]);
    }
}
