//! The teaching curves of the CPU-vs-GPU view, for one machine: decode tokens/s against the
//! number of layers on the GPU (the VRAM cliff, llama.cpp `-ngl k` vs weights streamed over
//! PCIe), memory per device against context length, and CPU vs GPU speed and cost bars.
//!
//! Every point comes from the same estimate, capacity and speed functions the fit engine uses
//! ([`super::placement::capacity`], [`super::speed::placement_speed`],
//! [`super::placement::cost::usd_per_million`]).

use super::catalog::{Accelerator, Machine};
use super::estimate::{ComponentKind, Estimate, estimate};
use super::fit::{FitResult, FitSettings, Verdict};
use super::model::ModelSpec;
use super::placement::capacity::{
    gpu_capacity, gpus_used, host_link, is_unified, layers_that_fit, offload_host_bytes,
    ram_capacity,
};
use super::placement::cost::usd_per_million;
use super::placement::experts::expert_offload_points;
use super::placement::offload::unified_gpu_bytes;
use super::precision::WeightPrecision;
use super::scenario::{Mode, Scenario, SplitStyle};
use super::speed::{SpeedQuery, placement_speed};
use super::units::Bytes;

/// What a bar of the CPU vs GPU comparison stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BarKind {
    /// Every layer on the CPU, in RAM.
    CpuOnly,
    /// As many whole layers on the GPU as fit, the rest on the CPU (or streamed).
    Split,
    /// Every layer on the GPU (may need more VRAM than the machine has).
    AllGpu,
    /// The fastest unified-memory machine of the catalog for this workload.
    BestUnified,
}

/// One bar of the CPU vs GPU comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedBar {
    pub kind: BarKind,
    pub label: String,
    pub tokens_per_s: f64,
    /// `None` when the machine has no cost to run (a rented machine without a price).
    pub usd_per_million: Option<f64>,
    /// Whether the workload fits in this placement.
    pub fits: bool,
}

/// The curves of the CPU vs GPU view for one machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Teach {
    pub machine: String,
    pub has_gpu: bool,
    pub unified: bool,
    pub layers: u64,
    /// Layers that fit on the GPU(s) before VRAM runs out (= `layers` when everything fits).
    pub k_fit: u64,
    /// The fewest GPU layers for which the rest fits in RAM (the CPU's layers, or on unified
    /// memory the GPU's and the CPU's parts together): below it the split needs the disk. Above
    /// `k_fit` nothing runs either; `k_min > k_fit`: no split fits this machine at all.
    pub k_min: u64,
    /// (k, tok/s) with the CPU running the other layers (llama.cpp `-ngl k`).
    pub cpu_layers: Vec<[f64; 2]>,
    /// (k, tok/s) with the other layers streamed over PCIe each token (empty on unified
    /// memory: there is no link to stream over).
    pub streaming: Vec<[f64; 2]>,
    /// Mixture-of-experts models on a discrete GPU: (n, tok/s) with every layer on the GPU but
    /// the routed experts of the first n layers in RAM (llama.cpp `-ngl 99 --n-cpu-moe n`),
    /// n = 0 … layers. Empty for dense models.
    pub expert_offload: Vec<[f64; 2]>,
    /// The smallest `--n-cpu-moe` that fits the GPU and RAM (`None`: none does, or dense).
    pub n_cpu_moe_fit: Option<u64>,
    /// The largest `--n-cpu-moe` whose experts still fit in RAM (`None`: none does, or dense):
    /// the points from `n_cpu_moe_fit` to here are the ones that run.
    pub n_cpu_moe_max: Option<u64>,
    /// Peak bandwidths, GB/s.
    pub gpu_bandwidth: f64,
    pub ram_bandwidth: f64,
    pub link_bandwidth: f64,
    pub gpu_capacity: Bytes,
    pub ram_capacity: Bytes,
    /// Context lengths (tokens) of the memory curves.
    pub ctx_points: Vec<u64>,
    /// Per component kind, (log2 of context, GiB per device) at each context point.
    pub per_kind: Vec<(ComponentKind, Vec<[f64; 2]>)>,
    pub total: Vec<[f64; 2]>,
    pub bars: Vec<SpeedBar>,
    /// The memory hierarchy: (GiB of weights read per token, tok/s) with the weights
    /// filling VRAM, then RAM, then the disk — llama.cpp mmap (past RAM the page cache thrashes:
    /// every host-side byte comes from disk) ...
    pub tiers_mmap: Vec<[f64; 2]>,
    /// ... and only the overflow read from disk (accelerate `offload_folder`).
    pub tiers_overflow: Vec<[f64; 2]>,
    /// Effective rates of the three tiers, GB/s (VRAM and RAM from the speed model's decode of
    /// this model; the disk's sustained read).
    pub tier_rates: [f64; 3],
    /// Where VRAM and VRAM + RAM end on the x axis (GiB), and this model's size (GiB).
    pub tier_edges: [f64; 3],
    /// The disk, in words ("NVMe PCIe 4.0, 1.00 TB, 7.00 GB/s").
    pub disk_label: String,
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

/// Average bits per weight of precision `p` on `model`: the estimate's weight bytes × 8 over
/// the parameter count. K-quant mixes keep some tensors at higher precision (llama.cpp
/// `src/llama-quant.cpp`, `llama_tensor_get_type`), so Q4_K_M averages above its 4.5-bit blocks.
pub fn effective_bits(model: &ModelSpec, p: WeightPrecision) -> f64 {
    let e = estimate(&Scenario {
        model: model.clone(),
        model_id: None,
        weights: p,
        ..Scenario::default()
    });
    let params = e.params.total.max(1);
    e.kind_total(ComponentKind::Weights).as_f64() * 8.0 / params as f64
}

/// A placement for the speed model: where the layers are and how the rest runs.
struct Place<'a> {
    est: &'a Estimate,
    m: &'a Machine,
    acc: Option<&'a Accelerator>,
    style: SplitStyle,
}

/// Decode tokens/s with `k` layers on the GPU(s): the one place this module asks the speed model
/// (the fit engine's query for this machine, with `k` GPU layers; `k = 0`: the CPU alone).
fn decode_at(p: &Place<'_>, k: u64, s: &Scenario, st: &FitSettings) -> f64 {
    let mut q = SpeedQuery::on_machine(s, p.est, p.m, p.acc, &st.speed);
    q.style = p.style;
    if let Some(c) = st.calibration.as_ref().filter(|c| *c.machine == *p.m.id) {
        q.tuning = c.tuning;
    }
    if p.acc.is_none() || k == 0 {
        q = q.cpu_only();
    } else {
        q.gpu_layers = k;
    }
    placement_speed(&q, &st.speed).decode_tokens_per_s
}

/// The CPU vs GPU curves of `scenario` on `m` (`acc`: its accelerator). `fits` are the
/// scenario's fits on the catalog, for the best unified-memory machine.
pub fn teach_curves(
    scenario: &Scenario,
    st: &FitSettings,
    m: &Machine,
    acc: Option<&Accelerator>,
    fits: &[FitResult],
) -> Teach {
    let c = Setting::new(scenario, st, m, acc);
    let mut t = Teach {
        machine: m.name.to_string(),
        has_gpu: acc.is_some(),
        unified: c.unified,
        layers: c.layers,
        ram_bandwidth: m.ram_bandwidth.0,
        gpu_capacity: c.gpu_cap,
        ram_capacity: c.ram_cap,
        ..Teach::default()
    };
    cpu_only_bar(&mut t, &c);
    if let Some(a) = acc {
        gpu_curves(&mut t, &c, a);
        expert_curve(&mut t, &c, a);
    }
    tiers(&mut t, &c.est_g, &c.est_cpu, m, acc, c.gpu_cap, c.ram_cap);
    // The best unified-memory machine only for an inference scenario (the fits are for the real
    // scenario, not its inference twin).
    if !scenario.mode.is_training() {
        best_unified_bar(&mut t, m, fits);
    }
    memory_curves(&mut t, scenario, &c.s);
    t
}

/// What every curve of [`teach_curves`] is made from: the scenario as served, the machine and
/// its capacities, and the estimates on its GPUs and on its CPU alone.
struct Setting<'a> {
    /// The speed curves are about serving: a training scenario is shown as its inference twin.
    s: Scenario,
    st: &'a FitSettings,
    m: &'a Machine,
    acc: Option<&'a Accelerator>,
    unified: bool,
    /// GPUs the machine runs the model on.
    g: u64,
    ram_cap: Bytes,
    gpu_cap: Bytes,
    est_g: Estimate,
    est_cpu: Estimate,
    layers: u64,
}

impl<'a> Setting<'a> {
    fn new(
        scenario: &Scenario,
        st: &'a FitSettings,
        m: &'a Machine,
        acc: Option<&'a Accelerator>,
    ) -> Self {
        let s = Scenario {
            mode: Mode::Inference,
            ..scenario.clamped()
        };
        let g = gpus_used(m, acc);
        let (ram_cap, _) = ram_capacity(m, st);
        let gpu_cap = gpu_capacity(m, acc, &s, st);
        let est_g = estimate(&Scenario {
            gpus: g.max(1),
            ..s.clone()
        });
        let est_cpu = estimate(&Scenario {
            gpus: 0,
            ..s.clone()
        });
        let layers = est_g.workload.layers.max(1);
        Setting {
            s,
            st,
            m,
            acc,
            unified: is_unified(acc),
            g,
            ram_cap,
            gpu_cap,
            est_g,
            est_cpu,
            layers,
        }
    }
    /// Decode tokens/s with `k` layers on the GPU(s) of placement `est` run in `style`.
    fn decode(&self, est: &Estimate, style: SplitStyle, k: u64) -> f64 {
        let p = Place {
            est,
            m: self.m,
            acc: self.acc,
            style,
        };
        decode_at(&p, k, &self.s, self.st)
    }
    /// What a million tokens cost at `tok_s` on this machine.
    fn cost(&self, tok_s: f64) -> Option<f64> {
        usd_per_million(self.m, self.acc, tok_s, self.st)
    }
}

/// The bar of every layer on the CPU, in RAM.
fn cpu_only_bar(t: &mut Teach, c: &Setting<'_>) {
    let cpu_tok = c.decode(&c.est_cpu, SplitStyle::CpuLayers, 0);
    t.bars.push(SpeedBar {
        kind: BarKind::CpuOnly,
        label: "CPU only".into(),
        tokens_per_s: cpu_tok,
        usd_per_million: c.cost(cpu_tok),
        fits: c.est_cpu.total() <= c.ram_cap,
    });
}

/// With a GPU: where its memory and RAM run out over k layers on it, tok/s at every k (the CPU
/// running the rest, or the rest streamed), and the bars of the split and of every layer on it.
fn gpu_curves(t: &mut Teach, c: &Setting<'_>, a: &Accelerator) {
    let (layers, unified, ram_cap) = (c.layers, c.unified, c.ram_cap);
    t.gpu_bandwidth = a.bandwidth.0;
    t.link_bandwidth = host_link(a).0;
    let e1 = estimate(&Scenario {
        gpus: 1,
        ..c.s.clone()
    });
    // Where VRAM runs out, as the fit engine places whole layers.
    let whole = c.est_g.per_gpu_total() <= c.gpu_cap;
    t.k_fit = if whole {
        layers
    } else {
        layers_that_fit(&e1, c.gpu_cap, c.g).min(layers - 1)
    };
    // Where RAM stops holding the rest, as the fit engine counts it (the offload tiers).
    let ram_holds = |k: u64| {
        let host = offload_host_bytes(&e1, k);
        if unified {
            host.saturating_add(unified_gpu_bytes(&e1, k)) <= ram_cap
        } else {
            host <= ram_cap
        }
    };
    t.k_min = (0..=layers).find(|&k| ram_holds(k)).unwrap_or(layers + 1);
    let whole = whole
        && if unified {
            c.est_g.per_gpu_total().saturating_add(c.est_g.host_total()) <= ram_cap
        } else {
            c.est_g.host_total() <= ram_cap
        };
    for kk in 0..=layers {
        t.cpu_layers
            .push([kk as f64, c.decode(&c.est_g, SplitStyle::CpuLayers, kk)]);
        if !unified {
            t.streaming
                .push([kk as f64, c.decode(&c.est_g, SplitStyle::Streaming, kk)]);
        }
    }
    // Unified memory runs the rest on the CPU whatever the settings say (nothing to stream).
    let chosen = if unified {
        SplitStyle::CpuLayers
    } else {
        c.st.split_style
    };
    if t.k_fit > 0 && t.k_fit < layers {
        let tok = c.decode(&c.est_g, chosen, t.k_fit);
        let fits = ram_holds(t.k_fit);
        t.bars.push(SpeedBar {
            kind: BarKind::Split,
            label: if fits {
                format!("{} of {} layers on GPU", t.k_fit, layers)
            } else {
                format!("{} of {} layers on GPU (needs more RAM)", t.k_fit, layers)
            },
            tokens_per_s: tok,
            usd_per_million: c.cost(tok),
            fits,
        });
    }
    let tok = c.decode(&c.est_g, chosen, layers);
    t.bars.push(SpeedBar {
        kind: BarKind::AllGpu,
        label: if whole {
            "All on GPU".into()
        } else if unified {
            "All on GPU (needs a bigger GPU share)".into()
        } else {
            "All on GPU (needs more VRAM)".into()
        },
        tokens_per_s: tok,
        usd_per_million: c.cost(tok),
        fits: whole,
    });
}

/// Expert offload (MoE): tok/s against the layers whose routed experts sit in RAM.
fn expert_curve(t: &mut Teach, c: &Setting<'_>, a: &Accelerator) {
    let ns: Vec<u64> = (0..=c.layers).collect();
    for (split, sp) in expert_offload_points(&c.s, c.m, a, c.st, &ns) {
        let n = split.cpu_moe_layers;
        t.expert_offload.push([n as f64, sp.decode_tokens_per_s]);
        if split.gpu_required <= c.gpu_cap && split.ram_required <= c.ram_cap {
            t.n_cpu_moe_fit.get_or_insert(n);
            t.n_cpu_moe_max = Some(n);
        }
    }
}

/// The bar of the best unified-memory machine of the catalog for this workload (`fits`: the
/// scenario's fits on the catalog), when there is one other than `m`.
fn best_unified_bar(t: &mut Teach, m: &Machine, fits: &[FitResult]) {
    if let Some(best) = fits
        .iter()
        .filter(|f| f.verdict == Verdict::Unified && f.machine != m.id)
        .max_by(|a, b| a.decode_tokens_per_s.total_cmp(&b.decode_tokens_per_s))
    {
        t.bars.push(SpeedBar {
            kind: BarKind::BestUnified,
            label: format!("Best unified: {}", best.name),
            tokens_per_s: best.decode_tokens_per_s,
            usd_per_million: best.usd_per_million_tokens,
            fits: true,
        });
    }
}

/// Memory against context length, per device (one GPU, or host RAM when CPU only), of
/// `scenario` in its own mode (`s`: its clamped inference twin).
fn memory_curves(t: &mut Teach, scenario: &Scenario, s: &Scenario) {
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
}

/// The VRAM → RAM → disk curve of [`Teach::tiers_mmap`]: the effective VRAM and RAM rates are
/// this model's active bytes per token ÷ the speed model's time for all layers on the GPU / on
/// the CPU (the bars above); the disk's is its sustained read ([`super::catalog::Storage::read`]).
fn tiers(
    t: &mut Teach,
    est_g: &Estimate,
    est_cpu: &Estimate,
    m: &Machine,
    acc: Option<&Accelerator>,
    gpu_cap: Bytes,
    ram_cap: Bytes,
) {
    let gib = 1024.0 * 1024.0 * 1024.0;
    let rate_of = |kind: BarKind, est: &Estimate| {
        t.bars.iter().find(|b| b.kind == kind).map_or(0.0, |b| {
            b.tokens_per_s * est.workload.active_weight_bytes_per_token.as_f64()
        })
    };
    let vram = if acc.is_some() {
        rate_of(BarKind::AllGpu, est_g)
    } else {
        0.0
    };
    let ram = rate_of(BarKind::CpuOnly, est_cpu);
    let disk = super::catalog::storage_of(m, acc);
    let ssd = disk.read().bytes_per_sec();
    if ram <= 0.0 || ssd <= 0.0 {
        return;
    }
    let v = if vram > 0.0 && !t.unified {
        gpu_cap.as_f64()
    } else {
        0.0
    };
    let r = ram_cap.as_f64();
    let here = est_g.workload.active_weight_bytes_per_token.as_f64();
    t.tier_rates = [vram / 1e9, ram / 1e9, ssd / 1e9];
    t.tier_edges = [v / gib, (v + r) / gib, here / gib];
    t.disk_label = disk.describe();
    let max = (2.0 * (v + r)).max(1.5 * here).max(1.0);
    let n = 120;
    for i in 1..=n {
        let sz = max * i as f64 / n as f64;
        let on_gpu = sz.min(v);
        let rest = sz - on_gpu;
        let t_fixed = if vram > 0.0 { on_gpu / vram } else { 0.0 };
        let spill = (rest - r).max(0.0);
        // mmap: once the host part exceeds RAM, all of it is read from disk every token.
        let t_mmap = t_fixed
            + if spill > 0.0 {
                rest / ram + rest / ssd
            } else {
                rest / ram
            };
        let t_over = t_fixed + rest / ram + spill / ssd;
        t.tiers_mmap.push([sz / gib, 1.0 / t_mmap]);
        t.tiers_overflow.push([sz / gib, 1.0 / t_over]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{MachineKind, MemoryKind, PcieLink, Segment, Vendor};
    use crate::core::fit::fit_all;
    use crate::core::units::GbPerSec;

    #[test]
    fn q4_k_m_averages_above_its_blocks() {
        // Llama 3 8B at Q4_K_M: 4.58 GiB for 8.03 B parameters (llama.cpp README) = 4.9 bits.
        let m = ModelSpec::default();
        let b = effective_bits(&m, WeightPrecision::Q4KM);
        assert!((4.7..5.0).contains(&b), "{b}");
        assert!((effective_bits(&m, WeightPrecision::Bf16) - 16.0).abs() < 0.1);
    }

    #[test]
    fn log_points_span_the_range() {
        let p = log_points(1 << 20, 20);
        assert_eq!(p.first(), Some(&256));
        assert_eq!(p.last(), Some(&(1 << 20)));
        assert_eq!(p.len(), 20);
        assert_eq!(log_points(100, 20), vec![100]);
    }

    fn rtx4060_laptop() -> (Machine, Accelerator) {
        let a = Accelerator {
            memory: Bytes::gib(8),
            bandwidth: GbPerSec(256.0),
            fp16_tflops: 30.0,
            tdp_w: Some(115.0),
            pcie: Some(PcieLink {
                generation: 4,
                lanes: 8,
            }),
            source: "test".into(),
            ..Accelerator::new(
                "rtx-4060-laptop",
                "RTX 4060 Laptop",
                Vendor::Nvidia,
                Segment::Laptop,
                MemoryKind::Discrete,
            )
        };
        let m = Machine {
            id: "l4060".into(),
            name: "Laptop".into(),
            kind: MachineKind::Laptop,
            gpu: Some(a.id.clone()),
            gpu_count: 1,
            ram: Bytes::gib(32),
            ram_bandwidth: GbPerSec(89.6),
            cpu: "i7".into(),
            cpu_cores: 14,
            power_w: Some(180.0),
            source: "test".into(),
            ..Machine::bare("", "", MachineKind::Cloud)
        };
        (m, a)
    }

    /// The curves agree with the fit engine: the cliff is where the fit engine stops putting
    /// layers on the GPU, and the split bar has the fit's decode speed and cost.
    #[test]
    fn curves_agree_with_the_fit_engine() {
        let (m, a) = rtx4060_laptop();
        let cat = crate::core::catalog::Catalog {
            benchmarks: Vec::new(),
            accelerator_index: Default::default(),
            accelerators: vec![a.clone()],
            machines: vec![m.clone()],
            models: vec![],
        };
        let s = Scenario::default(); // Llama 3 8B BF16 8K: ~16 GiB, does not fit 8 GiB
        let st = FitSettings::default();
        let fits = fit_all(&s, &cat.machines, &cat, &st);
        assert_eq!(fits[0].verdict, Verdict::Offload);
        let t = teach_curves(&s, &st, &m, Some(&a), &fits);
        assert_eq!(t.layers, 32);
        assert_eq!(t.k_fit, fits[0].gpu_layers);
        assert_eq!(t.cpu_layers.len(), 33);
        let split = t.bars.iter().find(|b| b.kind == BarKind::Split).unwrap();
        assert!((split.tokens_per_s - fits[0].decode_tokens_per_s).abs() < 1e-9);
        assert_eq!(split.usd_per_million, fits[0].usd_per_million_tokens);
        // Speed rises with layers on the GPU (CPU layers), and streaming is slower than
        // running the rest on the CPU for a partial split (PCIe x8 < DDR5 RAM bandwidth).
        let k = t.k_fit as usize;
        assert!(t.cpu_layers[32][1] > t.cpu_layers[k][1]);
        assert!(t.cpu_layers[k][1] > t.cpu_layers[0][1]);
        assert!(t.streaming[k][1] < t.cpu_layers[k][1]);
        // All-on-GPU does not fit; CPU only does (16 GiB in 32 GiB − 3.2 GiB reserve).
        let all = t.bars.iter().find(|b| b.kind == BarKind::AllGpu).unwrap();
        assert!(!all.fits);
        assert!(t.bars[0].fits);
        // Memory curves: the total grows with context; weights do not.
        let w = &t
            .per_kind
            .iter()
            .find(|(k, _)| *k == ComponentKind::Weights)
            .unwrap()
            .1;
        assert_eq!(w.first().unwrap()[1], w.last().unwrap()[1]);
        assert!(t.total.last().unwrap()[1] > t.total.first().unwrap()[1]);
        // At Q4_K_M it all fits: no split bar, the cliff is at every layer.
        let q4 = Scenario {
            weights: WeightPrecision::Q4KM,
            ..s
        };
        let t = teach_curves(&q4, &st, &m, Some(&a), &fits);
        assert_eq!(t.k_fit, t.layers);
        assert!(!t.bars.iter().any(|b| b.kind == BarKind::Split));
    }
}
