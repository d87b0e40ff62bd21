//! Expert offload: llama.cpp's `--n-cpu-moe N` placement of a mixture-of-experts model.
//!
//! Mechanism (llama.cpp): `--n-cpu-moe N` (common/arg.cpp, the `-ncmoe/--n-cpu-moe` option's
//! handler) pushes, for every layer `i < N`, a tensor buffer-type override
//! `llm_ffn_exps_block_regex(i)` = `blk\.i\.ffn_(up|down|gate|gate_up)_(ch|)exps` (common/common.h,
//! `LLM_FFN_EXPS_REGEX`) bound to `ggml_backend_cpu_buffer_type()`; `--cpu-moe` does the same for
//! every layer (`llm_ffn_exps_cpu_override`). With `-ngl 99` everything else — attention, norms,
//! router (`ffn_gate_inp`), shared experts (`ffn_*_shexp`, not matched), the KV cache and the
//! output head — stays on the GPU; the token embedding stays in host RAM as with any `-ngl`.
//!
//! Speed: a generated token reads the GPU-resident weights at VRAM speed and, in each offloaded
//! layer, its top-k routed experts from RAM on the CPU (the `MUL_MAT_ID` of one token runs where
//! its weights are). In prefill, the CUDA backend takes an op whose weights sit in host memory
//! when its batch is large enough (ggml/src/ggml-cuda/ggml-cuda.cu,
//! `ggml_backend_cuda_device_offload_op`: `get_op_batch_size(op) >= min_batch_size`, 32 by
//! default; for `MUL_MAT_ID` the batch is `ne[2]`, the ubatch's tokens): the scheduler then
//! copies the layer's whole expert tensors over PCIe once per ubatch and multiplies on the GPU.
//! Below 32 tokens the experts' matrix products run on the CPU.
//!
//! The speed of each part comes from the speed model ([`crate::core::speed`]) through one
//! callback ([`super::speed::query`]), so this module adds only the split and the PCIe copy.
//! The tier itself is [`offload`]; [`expert_offload_points`] gives the teaching curve.

use super::capacity::{Gpus, host_link};
use super::note::Note;
use super::{Job, Placement, Run};
use crate::core::catalog::{Accelerator, Catalog, Machine, MemoryKind};
use crate::core::estimate::{Estimate, RoutedExperts, estimate_owned, routed_experts};
use crate::core::fit::{FitSettings, OffloadStyle, Verdict};
use crate::core::model::ModelSpec;
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Runtime, Scenario};
use crate::core::speed::{Speed, placement_speed};
use crate::core::units::Bytes;
use serde::{Deserialize, Serialize};

/// Smallest batch (tokens of a ubatch) for which the CUDA backend runs an op whose weights sit in
/// host memory on the GPU, copying the weights (ggml-cuda.cu `ggml_backend_cuda_device_offload_op`,
/// `min_batch_size = 32`; later builds read `GGML_OP_OFFLOAD_MIN_BATCH`, default 32).
pub const OFFLOAD_MIN_BATCH: u64 = 32;

/// Crossings of the GPU–host boundary per offloaded MoE layer and decode step. The layer's
/// routed-expert ops run on the CPU backend (their weights are in a CPU buffer), so
/// `ggml_backend_sched` cuts the graph there: one split hands the router's input and choice
/// (`ffn_moe` input, `selected_experts`, weights) to the CPU, the next hands the experts' sum
/// back (ggml/src/ggml-backend.cpp, `ggml_backend_sched_compute_splits`: each split's inputs
/// from another backend are copied before it runs). With tensor overrides llama.cpp keeps one
/// copy of the graph (`n_copies = 1`: pipeline parallelism is off when `has_tensor_overrides()`,
/// llama.cpp PR 28874), so every crossing waits for the other side: two synchronised small
/// transfers per layer, whatever the layer's size.
pub const HANDOFFS_PER_LAYER: f64 = 2.0;

/// What moving between the GPU and host memory costs an expert-offload step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostLink {
    /// Bulk host→device copy rate, bytes/s (the link after its efficiency): the RAM experts'
    /// trip to the GPU in prefill.
    pub bytes_per_s: f64,
    /// One small synchronised transfer between a GPU and host memory, s: the speed model's
    /// small-message latency over PCIe (`SpeedConstants::allreduce_latency_pcie_us`).
    pub handoff_s: f64,
}

impl HostLink {
    /// The link of `acc` under the speed settings `st`.
    pub fn of(acc: &Accelerator, st: &FitSettings) -> HostLink {
        HostLink {
            bytes_per_s: host_link(acc).bytes_per_sec() * st.speed.pcie_efficiency,
            handoff_s: st.speed.allreduce_latency_pcie_us * 1e-6,
        }
    }
}

/// Whether a GGUF tensor name is one `--n-cpu-moe` / `--cpu-moe` moves to RAM: the regex
/// `\.ffn_(up|down|gate|gate_up)_(ch|)exps` searched in `blk.N.…` names (common/common.h
/// `LLM_FFN_EXPS_REGEX`, `llm_ffn_exps_block_regex`). Matches `blk.3.ffn_up_exps.weight`,
/// `blk.3.ffn_gate_up_exps.bias`, `blk.3.ffn_down_chexps.weight`; not the shared experts
/// (`ffn_up_shexp`) nor the router (`ffn_gate_inp`).
pub fn is_routed_expert_tensor(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("blk.") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let Some(rest) = rest[digits..].strip_prefix(".ffn_") else {
        return false;
    };
    ["gate_up_", "up_", "down_", "gate_"].iter().any(|p| {
        rest.strip_prefix(p).is_some_and(|r| {
            let r = r.strip_prefix("ch").unwrap_or(r);
            r.starts_with("exps")
        })
    })
}

/// The weights of an expert-offload placement: the routed experts of the first
/// `cpu_moe_layers` layers in RAM, everything else where `-ngl 99` puts it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExpertSplit {
    /// llama.cpp `--n-cpu-moe N`: layers 0…N−1 keep their routed experts in RAM.
    pub cpu_moe_layers: u64,
    /// MoE layers among them (dense layers have no experts to move).
    pub moe_layers_in_ram: u64,
    /// Bytes of the routed experts in RAM.
    pub ram_bytes: Bytes,
    /// Bytes of them one token reads (its top-k experts in each offloaded layer).
    pub ram_active_bytes: Bytes,
    /// Elements one token multiplies with in RAM.
    pub ram_active_elements: u64,
    /// Bytes of all routed experts of the model.
    pub all_expert_bytes: Bytes,
    /// What one GPU holds in this placement (set by the fit engine): everything the whole-model
    /// placement needs less this GPU's share of the RAM experts.
    pub gpu_required: Bytes,
    /// What host RAM holds in this placement (set by the fit engine): the whole-model
    /// placement's host part plus the RAM experts.
    pub ram_required: Bytes,
}

/// The routed experts of the model in layer order (see [`routed_experts`]).
pub fn inventory(spec: &ModelSpec, p: WeightPrecision) -> Vec<RoutedExperts> {
    routed_experts(spec, p)
}

/// The split with the experts of layers `0 … n_cpu_moe − 1` in RAM.
pub fn split(inv: &[RoutedExperts], n_cpu_moe: u64) -> ExpertSplit {
    let mut s = ExpertSplit {
        cpu_moe_layers: n_cpu_moe,
        ..ExpertSplit::default()
    };
    for r in inv {
        s.all_expert_bytes = s.all_expert_bytes.saturating_add(Bytes(r.bytes));
        if r.layer < n_cpu_moe {
            s.moe_layers_in_ram += 1;
            s.ram_bytes = s.ram_bytes.saturating_add(Bytes(r.bytes));
            s.ram_active_bytes = s.ram_active_bytes.saturating_add(Bytes(r.active_bytes));
            s.ram_active_elements = s.ram_active_elements.saturating_add(r.active_elements);
        }
    }
    s
}

/// The smallest `n_cpu_moe` (0 … layers) for which `fits(split)` holds; `None` when even every
/// layer's experts in RAM does not fit, or the model has no routed experts. `fits` must be
/// monotone (more experts in RAM never needs more VRAM).
pub fn smallest_fitting(
    inv: &[RoutedExperts],
    layers: u64,
    mut fits: impl FnMut(&ExpertSplit) -> bool,
) -> Option<ExpertSplit> {
    if inv.is_empty() {
        return None;
    }
    // Only the layers holding experts change the split: step through them.
    let mut candidates: Vec<u64> = inv.iter().map(|r| r.layer + 1).collect();
    candidates.retain(|&n| n <= layers);
    candidates.insert(0, 0);
    candidates
        .into_iter()
        .map(|n| split(inv, n))
        .find(|s| fits(s))
}

/// The estimate's workload seen by the GPU: the RAM experts' bytes and FLOPs taken out.
fn gpu_part(est: &Estimate, s: &ExpertSplit) -> Estimate {
    let mut e = est.clone();
    let w = &mut e.workload;
    w.active_weight_bytes_per_token = w
        .active_weight_bytes_per_token
        .saturating_sub(s.ram_active_bytes);
    w.layer_weights = w.layer_weights.saturating_sub(s.ram_bytes);
    w.flops_per_token = (w.flops_per_token - 2.0 * s.ram_active_elements as f64).max(0.0);
    e.params.active = e.params.active.saturating_sub(s.ram_active_elements);
    e
}

/// The estimate's workload seen by the CPU: only the RAM experts (no KV, no output head).
fn cpu_part(est: &Estimate, s: &ExpertSplit) -> Estimate {
    let mut e = est.clone();
    e.params.active = s.ram_active_elements;
    e.params.total = s.ram_active_elements;
    let w = &mut e.workload;
    w.layers = s.moe_layers_in_ram.max(1);
    w.layer_weights = s.ram_bytes;
    w.outer_weights = Bytes::ZERO;
    w.active_weight_bytes_per_token = s.ram_active_bytes;
    w.kv_total = Bytes::ZERO;
    w.kv_read_per_token = Bytes::ZERO;
    w.flops_per_token = 2.0 * s.ram_active_elements as f64;
    w.fixed_per_device = Bytes::ZERO;
    e
}

/// Decode and prefill speed of an expert-offload placement.
///
/// `run(est, on_gpu)` is the speed model: the speed of `est` with every layer on the GPU(s)
/// (`on_gpu`), or on the CPU alone. Decode: one step is the GPU part's time plus the CPU's time
/// to read the active experts of the offloaded layers (they run one after the other, layer by
/// layer) plus [`HANDOFFS_PER_LAYER`] synchronised transfers per offloaded MoE layer
/// (`link.handoff_s` each). Prefill of a ubatch of `ubatch` tokens: at ≥ [`OFFLOAD_MIN_BATCH`]
/// tokens the whole model's FLOPs on the GPU plus the RAM experts copied over the link
/// (`link.bytes_per_s`) once per ubatch; below, the GPU part plus the experts on the CPU and the
/// same handoffs.
pub fn expert_offload_speed(
    est: &Estimate,
    s: &ExpertSplit,
    batch: u64,
    ubatch: u64,
    link: HostLink,
    run: &dyn Fn(&Estimate, bool) -> Speed,
) -> Speed {
    let b = batch.max(1) as f64;
    let u = ubatch.max(1) as f64;
    let inv = |rate: f64, n: f64| if rate > 0.0 { n / rate } else { f64::INFINITY };
    let gpu = run(&gpu_part(est, s), true);
    let (cpu_decode, cpu_prefill) = if s.ram_bytes.0 == 0 {
        (0.0, 0.0)
    } else {
        let c = run(&cpu_part(est, s), false);
        (
            inv(c.decode_tokens_per_s, b),
            inv(c.prefill_tokens_per_s, u),
        )
    };
    let handoffs = s.moe_layers_in_ram as f64 * HANDOFFS_PER_LAYER * link.handoff_s.max(0.0);
    let t_decode = inv(gpu.decode_tokens_per_s, b) + cpu_decode + handoffs;
    let t_prefill = if ubatch >= OFFLOAD_MIN_BATCH {
        let full = run(est, true);
        inv(full.prefill_tokens_per_s, u) + s.ram_bytes.as_f64() / link.bytes_per_s.max(1.0)
    } else {
        inv(gpu.prefill_tokens_per_s, u) + cpu_prefill + handoffs
    };
    let rate = |n: f64, t: f64| {
        let r = n / t;
        if r.is_finite() && r > 0.0 { r } else { 0.0 }
    };
    Speed {
        decode_tokens_per_s: rate(b, t_decode),
        prefill_tokens_per_s: rate(u, t_prefill),
    }
}

/// Whether the model is a mixture of experts.
pub fn is_moe(s: &Scenario) -> bool {
    s.model.moe.as_ref().is_some_and(|x| x.experts > 0)
}

/// Whether the runtime can keep a MoE's routed experts in RAM and the rest on the GPU:
/// llama.cpp (`--n-cpu-moe`, `--override-tensor`); the generic runtime is modelled on it.
fn runs_expert_offload(r: Runtime) -> bool {
    matches!(r, Runtime::LlamaCpp | Runtime::Generic)
}

/// `x` with what one of `gpus` GPUs and host RAM hold in it: the whole-model placement (`need`
/// per GPU, `host_need` in RAM) with the RAM experts moved from the GPUs to the host.
fn with_shares(x: ExpertSplit, need: Bytes, host_need: Bytes, gpus: u64) -> ExpertSplit {
    ExpertSplit {
        gpu_required: need.saturating_sub(x.ram_bytes.div_ceil(gpus.max(1))),
        ram_required: host_need.saturating_add(x.ram_bytes),
        ..x
    }
}

/// The expert-offload tier: every layer on the discrete GPU(s) but the routed experts of the
/// fewest first layers that make it fit (`--n-cpu-moe N`), which the CPU runs from RAM. Only
/// after the whole model failed; llama.cpp (and the generic runtime) only.
pub fn offload(job: &Job) -> Option<Placement> {
    let (g, inv) = expert_job(job)?;
    let split = smallest_fitting(&inv, job.s.model.layers, |x| {
        let x = with_shares(x.clone(), g.need, g.host_need, g.count);
        x.gpu_required <= g.capacity && x.ram_required <= job.ram
    })?;
    if split.ram_bytes.0 == 0 {
        // Nothing moved: the whole-model path already said no, so only its RAM check can have
        // failed; that is not an expert offload.
        return None;
    }
    Some(placed(job, g, split))
}

/// The expert split the user asked for (`--n-cpu-moe n`), whether or not it fits: verdict
/// `None` with how far each memory is short when it does not. `None` where there is no expert
/// offload (no routed experts, no discrete GPU, another runtime, training).
pub fn offload_at_asked(job: &Job, n: u64) -> Option<Placement> {
    let (g, inv) = expert_job(job)?;
    let x = split(&inv, n.min(job.s.model.layers));
    let shared = with_shares(x.clone(), g.need, g.host_need, g.count);
    if shared.gpu_required > g.capacity || shared.ram_required > job.ram {
        let headroom = g
            .capacity
            .signed_sub(shared.gpu_required)
            .min(job.ram.signed_sub(shared.ram_required));
        let mut p = Placement::new(
            Verdict::None,
            job.layers,
            shared.ram_required,
            headroom,
            Run::Nothing,
        );
        p.notes.push(Note::AskedSplitShort {
            gpu_need: shared.gpu_required,
            gpu_usable: g.capacity,
            ram_need: shared.ram_required,
            ram_usable: job.ram,
        });
        return Some(p);
    }
    Some(placed(job, g, x))
}

/// The discrete GPUs and the routed-expert inventory of an inference job whose runtime offloads
/// experts.
fn expert_job<'j>(job: &'j Job) -> Option<(&'j Gpus<'j>, Vec<RoutedExperts>)> {
    let s = job.s;
    let g = job.gpus.as_ref().filter(|g| !g.unified)?;
    if job.training() || !is_moe(s) || !runs_expert_offload(s.runtime) {
        return None;
    }
    Some((g, inventory(&s.model, s.weights)))
}

/// The placement of `split` (experts of its first layers in RAM) on the job's GPUs: its speed,
/// memory and note.
fn placed(job: &Job, g: &Gpus, split: ExpertSplit) -> Placement {
    let s = job.s;
    let link = HostLink::of(g.acc, job.st);
    let run = speed_model(s, job.m, job.acc, job.st, job.cpu);
    let speed = expert_offload_speed(g.est, &split, s.batch, s.ubatch, link, &run);
    let split = with_shares(split, g.need, g.host_need, g.count);
    let backend =
        super::speed::query(s, g.est, job.m, job.acc, job.st, job.cpu, job.layers).backend;
    let headroom = g
        .capacity
        .signed_sub(split.gpu_required)
        .min(job.ram.signed_sub(split.ram_required));
    let mut p = Placement::new(
        Verdict::Offload,
        job.layers,
        split.ram_required,
        headroom,
        Run::Inference { speed, backend },
    );
    p.offload_style = Some(OffloadStyle::Experts);
    p.notes.push(Note::ExpertOffload {
        cpu_moe_layers: split.cpu_moe_layers,
        moe_layers_in_ram: split.moe_layers_in_ram,
        ram_bytes: split.ram_bytes,
    });
    p.expert_split = Some(Box::new(split));
    p
}

/// The speed model as [`expert_offload_speed`] calls it: an estimate with every layer on the
/// GPU(s) (`on_gpu`), or on the CPU alone. The CPU part is the routed experts only, so its query
/// sees a scenario without attention heads (no attention FLOPs on the CPU) and with the
/// workload's layer count (the offloaded MoE layers). The one place expert offload meets the
/// speed model.
fn speed_model<'a>(
    s: &'a Scenario,
    m: &'a Machine,
    acc: Option<&'a Accelerator>,
    st: &'a FitSettings,
    cpu: crate::core::speed::CpuDevice,
) -> impl Fn(&Estimate, bool) -> Speed + 'a {
    move |e: &Estimate, on_gpu: bool| {
        if on_gpu {
            let q = super::speed::query(s, e, m, acc, st, cpu, e.workload.layers.max(1));
            placement_speed(&q, &st.speed)
        } else {
            let experts_only = Scenario {
                model: ModelSpec {
                    heads: 0,
                    layers: e.workload.layers,
                    ..s.model.clone()
                },
                ..s.clone()
            };
            let q = super::speed::query(&experts_only, e, m, acc, st, cpu, 0);
            placement_speed(&q, &st.speed)
        }
    }
}

/// Decode and prefill of the expert-offload placement of `s` on `m` with the routed experts of
/// layers `0 … n_cpu_moe − 1` in RAM (llama.cpp `-ngl 99 --n-cpu-moe n_cpu_moe`), whether or not
/// it fits; with the split. `None` without a discrete GPU or routed experts. Published
/// measurements at a given `--n-cpu-moe` are checked with it.
pub fn expert_offload_at(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
    n_cpu_moe: u64,
) -> Option<(ExpertSplit, Speed)> {
    let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id))?;
    expert_offload_points(s, m, acc, st, &[n_cpu_moe]).pop()
}

/// [`expert_offload_at`] for several `n_cpu_moe` (the teaching curve: every value 0 … layers),
/// with one estimate. Empty without routed experts or on a unified-memory GPU.
pub fn expert_offload_points(
    s: &Scenario,
    m: &Machine,
    acc: &Accelerator,
    st: &FitSettings,
    ns: &[u64],
) -> Vec<(ExpertSplit, Speed)> {
    if acc.memory_kind == MemoryKind::Unified {
        return Vec::new();
    }
    let sc = s.clamped();
    let inv = inventory(&sc.model, sc.weights);
    if inv.is_empty() {
        return Vec::new();
    }
    let g = m.gpu_count.max(1) as u64;
    let est = estimate_owned(
        Scenario {
            gpus: g,
            ..sc.clone()
        },
        false,
    );
    let link = HostLink::of(acc, st);
    let cpu = crate::core::speed::CpuDevice::for_scenario(m, Some(acc), &sc, &st.speed);
    let run = speed_model(&sc, m, Some(acc), st, cpu);
    ns.iter()
        .map(|&n| {
            let x = split(&inv, n.min(sc.model.layers));
            let sp = expert_offload_speed(&est, &x, sc.batch, sc.ubatch, link, &run);
            (with_shares(x, est.peak_reserved(), est.host_total(), g), sp)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_names_follow_llm_ffn_exps_regex() {
        for n in [
            "blk.0.ffn_up_exps.weight",
            "blk.12.ffn_down_exps.weight",
            "blk.3.ffn_gate_exps.weight",
            "blk.3.ffn_gate_up_exps.weight",
            "blk.3.ffn_gate_exps.bias",
            "blk.7.ffn_down_chexps.weight",
        ] {
            assert!(is_routed_expert_tensor(n), "{n}");
        }
        for n in [
            "blk.0.ffn_up_shexp.weight",
            "blk.0.ffn_gate_inp.weight",
            "blk.0.ffn_up.weight",
            "blk.0.attn_q.weight",
            "token_embd.weight",
            "blk.x.ffn_up_exps.weight",
            "blk..ffn_up_exps.weight",
            "output.weight",
            "blk.0.ffn_exp_probs_b.bias",
        ] {
            assert!(!is_routed_expert_tensor(n), "{n}");
        }
    }

    fn inv() -> Vec<RoutedExperts> {
        // Layer 0 dense; layers 1–3 with 100 bytes of experts, 10 read per token.
        (1..4)
            .map(|layer| RoutedExperts {
                layer,
                bytes: 100,
                active_bytes: 10,
                active_elements: 20,
            })
            .collect()
    }

    #[test]
    fn split_counts_only_the_first_n_layers() {
        let v = inv();
        assert_eq!(split(&v, 0).ram_bytes, Bytes(0));
        // --n-cpu-moe 1 covers only the dense layer 0: nothing moves.
        assert_eq!(split(&v, 1).ram_bytes, Bytes(0));
        let s = split(&v, 3);
        assert_eq!(
            (s.moe_layers_in_ram, s.ram_bytes, s.ram_active_bytes),
            (2, Bytes(200), Bytes(20))
        );
        assert_eq!(s.all_expert_bytes, Bytes(300));
        assert_eq!(split(&v, 99).ram_bytes, Bytes(300));
    }

    #[test]
    fn each_offloaded_layer_adds_two_handoffs_to_a_decode_step() {
        // GPU part 100 tok/s, CPU part 50 tok/s: 10 + 20 ms a step, plus 2 handoffs of 25 µs in
        // each of the 2 MoE layers in RAM (layers 1 and 2): 30.1 ms. Prefill at 16 tokens (below
        // OFFLOAD_MIN_BATCH) pays the same 0.1 ms per ubatch.
        let est = crate::core::estimate::estimate(&Scenario::default());
        let run = |_: &Estimate, on_gpu: bool| Speed {
            decode_tokens_per_s: if on_gpu { 100.0 } else { 50.0 },
            prefill_tokens_per_s: if on_gpu { 1600.0 } else { 800.0 },
        };
        let link = HostLink {
            bytes_per_s: 1e9,
            handoff_s: 25e-6,
        };
        let x = split(&inv(), 3);
        let sp = expert_offload_speed(&est, &x, 1, 16, link, &run);
        assert!(
            (1.0 / sp.decode_tokens_per_s - 0.0301).abs() < 1e-12,
            "{sp:?}"
        );
        assert!(
            (16.0 / sp.prefill_tokens_per_s - 0.0301).abs() < 1e-12,
            "{sp:?}"
        );
        // Nothing in RAM: no CPU part, no handoff.
        let none = expert_offload_speed(&est, &split(&inv(), 0), 1, 16, link, &run);
        assert!((none.decode_tokens_per_s - 100.0).abs() < 1e-9, "{none:?}");
    }

    #[test]
    fn smallest_fitting_is_the_first_that_fits() {
        let v = inv();
        let s = smallest_fitting(&v, 4, |s| s.ram_bytes.0 >= 150).unwrap();
        assert_eq!(s.cpu_moe_layers, 3);
        assert!(smallest_fitting(&v, 4, |_| false).is_none());
        assert_eq!(smallest_fitting(&v, 4, |_| true).unwrap().cpu_moe_layers, 0);
        assert!(smallest_fitting(&[], 4, |_| true).is_none());
    }
}
