//! Serving many users: per machine, how many requests the engine's KV pool holds at the
//! traffic's lengths, throughput and per-user speed against load, time to first token at the
//! 95th percentile, the largest load that meets the target, the replicas an asked load needs and
//! what a million tokens cost at that load.
//!
//! Scenario → Estimate → Fit → **serving plan**: a plan starts from the machine's fit (its
//! usable GPU memory) and builds, per tensor-parallel size, the engine's settings
//! ([`engine`]), its KV pool ([`pool`]), the step-time model ([`step`]) and the steady state
//! under load ([`load`]). The mechanism, its constants and the published measurements it is
//! checked against are in docs/serving.md.

pub mod engine;
pub mod inputs;
pub mod load;
pub mod picks;
pub mod pool;

pub use crate::core::speed::step::Kernel;
pub use engine::EngineSettings;
pub use inputs::{Engine, Load, Mix, ServingInputs, Target};
pub use load::LoadPoint;
pub use picks::{ServingPick, ServingPicks, price_cloud_at_load, serving_picks};
pub use pool::KvPool;

use crate::core::catalog::{Accelerator, Catalog, Machine, MachineKind, MemoryKind, Price};
use crate::core::estimate::estimate_with;
use crate::core::fit::{FitResult, FitSettings, Verdict};
use crate::core::placement::cost::hourly_usd;
use crate::core::scenario::{KvAllocation, Runtime, Scenario};
use crate::core::speed::step::{StepCosts, StepInputs, StepModel};
use crate::core::speed::{Backend, GpuDevice, backend_for};
use crate::core::units::GbPerSec;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Years an owned machine's purchase price is spread over for its cost per token (heuristic:
/// the three-year straight-line depreciation common for servers and GPUs; stated in reports).
pub const AMORTISATION_YEARS: f64 = 3.0;
const HOURS_PER_YEAR: f64 = 8766.0;

/// Engine costs outside the layers, per scheduler step: the runtime's ([`StepCosts::of`]), and
/// for SGLang half of vLLM's, its overlap scheduler hiding most of the CPU step (lmsys.org blog,
/// 2024-12-04, "SGLang v0.4").
pub fn step_costs(engine: Engine) -> StepCosts {
    match engine {
        Engine::Vllm | Engine::Auto => StepCosts::of(Backend::Vllm),
        Engine::Sglang => StepCosts {
            step_us: 250.0,
            per_seq_us: 5.0,
        },
        Engine::LlamaServer => StepCosts::of(Backend::Cuda),
        Engine::Transformers => StepCosts::of(Backend::Transformers),
    }
}

/// Why a machine gets no serving plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocker {
    /// The model does not fit in GPU (or unified) memory: the fit's verdict is offload, CPU,
    /// disk or none.
    DoesNotFitGpu,
    /// No GPU: serving many users is planned on GPUs only.
    NoGpu,
    /// The weights fit but leave no room for one request's KV cache.
    NoKvRoom,
    /// Training scenario.
    Training,
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Blocker::DoesNotFitGpu => "the model does not fit in GPU memory here",
            Blocker::NoGpu => "no GPU: serving is planned on GPUs and unified memory",
            Blocker::NoKvRoom => "the weights leave no room for one request's KV cache",
            Blocker::Training => "a training scenario has no serving plan",
        })
    }
}

/// The asked load and what it takes.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AskedLoad {
    pub load: Load,
    /// Engine replicas needed (each `tp` GPUs).
    pub replicas: u64,
    /// Machines needed (each runs `replicas_per_machine` replicas).
    pub machines: u64,
    /// One replica's state at its share of the load.
    pub per_replica: LoadPoint,
    /// Whether that state meets the target.
    pub meets_target: bool,
}

impl std::fmt::Display for AskedLoad {
    /// "8 replicas on 1 machine", with " (target missed)" when the share misses the target.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::core::format::count;
        write!(
            f,
            "{} on {}{}",
            count(self.replicas, "replica", "replicas"),
            count(self.machines, "machine", "machines"),
            if self.meets_target {
                ""
            } else {
                " (target missed)"
            }
        )
    }
}

/// What a million tokens cost at a load.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServeCost {
    /// The machine's hour: cloud price, or power × electricity + purchase ÷ amortisation.
    pub usd_per_hour: f64,
    /// All of the hour charged to the generated tokens (the fit's `$ / 1M tok` convention).
    pub usd_per_million_output: f64,
    /// The hour split by the time spent on prompts and on decoding.
    pub usd_per_million_input_split: f64,
    pub usd_per_million_output_split: f64,
    /// Which load it is for.
    pub basis: CostBasis,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostBasis {
    /// The largest load that meets the target.
    Target,
    /// The asked load.
    Asked,
    /// One user (the target is not met by any load).
    SingleUser,
}

/// One machine's serving plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingPlan {
    pub machine: Arc<str>,
    pub name: Arc<str>,
    pub kind: MachineKind,
    pub engine: Engine,
    pub blocker: Option<Blocker>,
    pub settings: Option<EngineSettings>,
    pub kernel: Option<Kernel>,
    pub backend: Option<Backend>,
    /// GPUs per replica (tensor parallel) and replicas on one machine (data parallel).
    pub tp: u64,
    /// Pipeline stages of a replica (a cluster's nodes; 1 on one machine).
    #[serde(default = "one_stage")]
    pub pp: u64,
    pub replicas_per_machine: u64,
    pub pool: Option<KvPool>,
    /// Requests of the full context length the pool holds at once (vLLM's "Maximum concurrency
    /// for N tokens per request").
    pub max_seqs_at_context: u64,
    /// Requests of the traffic's mean length that run at once (pool and `max_num_seqs`).
    pub slots: u64,
    /// One user alone.
    pub single: Option<LoadPoint>,
    /// The largest load per replica that meets the target.
    pub best_users: Option<u64>,
    pub best: Option<LoadPoint>,
    pub asked: Option<AskedLoad>,
    pub cost: Option<ServeCost>,
    /// Throughput and latency against users in flight (one replica), for the charts.
    pub curve: Vec<LoadPoint>,
    /// Speculative decoding, when on and run by this engine.
    #[serde(default)]
    pub speculative: Option<ServingSpec>,
}

impl ServingPlan {
    fn blocked(m: &Machine, engine: Engine, b: Blocker) -> ServingPlan {
        ServingPlan {
            machine: m.id.clone(),
            name: m.name.clone(),
            kind: m.kind,
            engine,
            blocker: Some(b),
            settings: None,
            kernel: None,
            backend: None,
            tp: 0,
            pp: 1,
            replicas_per_machine: 0,
            pool: None,
            max_seqs_at_context: 0,
            slots: 0,
            single: None,
            best_users: None,
            best: None,
            asked: None,
            cost: None,
            curve: Vec::new(),
            speculative: None,
        }
    }
    /// Users one machine holds at the target (all its replicas).
    pub fn machine_users(&self) -> Option<u64> {
        self.best_users
            .map(|u| u.saturating_mul(self.replicas_per_machine.max(1)))
    }
    /// The machine's output tokens/s at the load the cost is for.
    pub fn machine_output_tokens_per_s(&self) -> Option<f64> {
        let pt = match self.cost?.basis {
            CostBasis::Asked => self.asked?.per_replica,
            CostBasis::Target => self.best?,
            CostBasis::SingleUser => self.single?,
        };
        Some(pt.output_tokens_per_s * self.replicas_per_machine.max(1) as f64)
    }
}

fn one_stage() -> u64 {
    1
}

/// Curve points (users in flight) drawn for each plan.
const CURVE_USERS: [u64; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];

/// Plan serving `s` on machine `m`, whose fit is `fit`.
pub fn plan(
    s: &Scenario,
    fit: &FitResult,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
) -> ServingPlan {
    let s = s.clamped();
    let inputs = s.serving.clamped();
    let engine = engine::resolve_engine(&s, &inputs, acc);
    if s.mode.is_training() {
        return ServingPlan::blocked(m, engine, Blocker::Training);
    }
    let Some(acc) = acc else {
        return ServingPlan::blocked(m, engine, Blocker::NoGpu);
    };
    if !matches!(fit.verdict, Verdict::Gpu | Verdict::Unified) {
        return ServingPlan::blocked(m, engine, Blocker::DoesNotFitGpu);
    }
    let mut best: Option<(u64, ServingPlan)> = None;
    let tps = match inputs.tensor_parallel {
        Some(tp) => vec![tp],
        None => tp_candidates(&s, m, acc, engine),
    };
    for tp in tps {
        let Some(p) = build(&s, fit, m, acc, st, tp).map(|b| plan_of(b, &s, m, acc, st)) else {
            continue;
        };
        let better = match &best {
            None => true,
            Some((_, b)) => score(&p) > score(b),
        };
        if better {
            best = Some((tp, p));
        }
    }
    match best {
        Some((tp, mut p)) => {
            if p.speculative.is_some() {
                let plain = Scenario {
                    speculative: None,
                    ..s.clone()
                };
                if let Some(b) = build(&plain, fit, m, acc, st, tp) {
                    compare_plain(&mut p, &b, &inputs.target);
                }
            }
            p
        }
        None => ServingPlan::blocked(m, engine, Blocker::NoKvRoom),
    }
}

/// Fill the speculative plan's speedups against `plain`, the same replica without speculation
/// (its own pool: no drafter weights or KV): output tokens/s at one user and at the plan's most
/// users that meet the target.
fn compare_plain(p: &mut ServingPlan, plain: &Built, target: &Target) {
    let r = plain.replica();
    let ratio = |a: Option<LoadPoint>, users: f64| {
        let b = r.at_users(users).output_tokens_per_s;
        a.map(|x| x.output_tokens_per_s / b)
            .filter(|x| x.is_finite())
    };
    let one = ratio(p.single, 1.0);
    let at_best = p.best_users.and_then(|u| ratio(p.best, u as f64));
    let plain_best = r.max_users(target).map(|x| x.0);
    if let Some(sp) = p.speculative.as_mut() {
        sp.speedup_one_user = one;
        sp.speedup_at_best = at_best;
        sp.plain_best_users = plain_best;
    }
}

/// What the tensor-parallel choice maximises: users per machine at the target, then output
/// throughput at one user (lower TP wins ties: fewer all-reduces).
fn score(p: &ServingPlan) -> (u64, u64) {
    let users = p.machine_users().unwrap_or(0);
    let single = p.single.map_or(0.0, |x| {
        x.output_tokens_per_s * p.replicas_per_machine as f64
    });
    (users, single as u64)
}

/// Tensor-parallel sizes to try: powers of two up to the machine's GPUs that divide the GPU
/// count and the attention heads (vLLM requires `num_attention_heads % tp == 0`). llama.cpp and
/// transformers split layers over every GPU (one replica, memory pooled, no speed-up).
fn tp_candidates(s: &Scenario, m: &Machine, acc: &Accelerator, engine: Engine) -> Vec<u64> {
    let n = machine_gpus(m, acc);
    if engine.splits_layers() {
        return vec![n];
    }
    let heads = s.model.heads.max(1);
    (0..8)
        .map(|k| 1_u64 << k)
        .filter(|tp| *tp <= n && n.is_multiple_of(*tp) && heads.is_multiple_of(*tp))
        .collect()
}

/// The GPUs a machine serves with: its own count, or one on a unified-memory machine (its GPU
/// and CPU share one pool).
fn machine_gpus(m: &Machine, acc: &Accelerator) -> u64 {
    if acc.memory_kind == MemoryKind::Unified {
        1
    } else {
        m.gpu_count.max(1) as u64
    }
}

/// The scenario as the engine's memory arithmetic sees it at `gpus` GPUs.
fn engine_scenario(s: &Scenario, engine: Engine, gpus: u64) -> Scenario {
    let mut e = s.clone();
    e.gpus = gpus;
    e.batch = 1;
    e.runtime = match engine {
        Engine::Vllm | Engine::Sglang | Engine::Auto => Runtime::Vllm,
        Engine::LlamaServer => Runtime::LlamaCpp,
        Engine::Transformers => Runtime::Transformers,
    };
    e.kv_allocation = if e.runtime == Runtime::Vllm {
        KvAllocation::Paged
    } else {
        KvAllocation::Contiguous
    };
    e
}

/// One replica's engine, pool and step model on a machine: what a plan is made from (and what
/// the published-measurement tests query directly).
#[derive(Clone, Debug)]
pub struct Built {
    pub engine: Engine,
    pub settings: EngineSettings,
    pub kernel: Kernel,
    pub backend: Backend,
    pub step: StepModel,
    pub pool: KvPool,
    /// GPUs per replica (layer split: all of them, pooled).
    pub tp: u64,
    pub replicas_per_machine: u64,
    pub prompt: f64,
    pub prompt_computed: f64,
    pub output: f64,
    pub slots: u64,
    pub max_seqs_at_context: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Speculative decoding, when the scenario turns it on and the engine runs it here.
    pub spec: Option<ServingSpec>,
}

/// Share of the weights the heaviest pipeline stage holds: `1/pp` of the layers and, past one
/// stage, the larger of the embedding and the head (vLLM places the embedding on the first
/// rank and the head on the last; `vllm/distributed/utils.py`, `get_pp_indices`).
pub fn stage_weight_share(est: &crate::core::estimate::Estimate, pp: u64) -> f64 {
    if pp <= 1 {
        return 1.0;
    }
    let w = &est.workload;
    let (layers, outer) = (w.layer_weights.as_f64(), w.outer_weights.as_f64());
    let total = (layers + outer).max(1.0);
    ((layers / pp as f64 + outer / 2.0) / total).min(1.0)
}

impl Built {
    pub fn replica(&self) -> load::Replica<'_> {
        load::Replica {
            step: &self.step,
            prompt: self.prompt,
            prompt_computed: self.prompt_computed,
            output: self.output,
            slots: self.slots as f64,
            budget: self.settings.max_num_batched_tokens.min(1 << 40) as f64,
            continuous: self.engine.continuous(),
        }
    }
    /// A static batch of `b` requests run start to finish (vLLM's latency benchmark, a batched
    /// `generate()`), whatever the engine's own scheduling.
    pub fn static_batch(&self, b: u64) -> LoadPoint {
        let r = load::Replica {
            continuous: false,
            slots: b.max(1) as f64,
            ..self.replica()
        };
        r.at_users(b.max(1) as f64)
    }
}

/// Pipeline stages of a replica and the link between them.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Stages {
    pub count: u64,
    /// One send's latency, s, and the link's bytes/s.
    pub hop_latency_s: f64,
    pub hop_bps: f64,
}

impl Stages {
    pub const ONE: Stages = Stages {
        count: 1,
        hop_latency_s: 0.0,
        hop_bps: 1.0,
    };
}

/// Build the replica of `s` on `m` at tensor-parallel size `tp` (`None`: the weights or one
/// request do not fit).
pub fn build(
    s: &Scenario,
    fit: &FitResult,
    m: &Machine,
    acc: &Accelerator,
    st: &FitSettings,
    tp: u64,
) -> Option<Built> {
    build_stages(s, fit, m, acc, st, tp, Stages::ONE)
}

/// One GPU's memory and its usable part, or every GPU's of the machine pooled where the engine
/// splits layers across them (llama.cpp: one replica over all GPUs).
fn replica_memory(
    acc: &Accelerator,
    fit: &FitResult,
    gpus_in_machine: u64,
    layer_split: bool,
) -> (crate::core::units::Bytes, crate::core::units::Bytes) {
    if layer_split {
        (
            acc.memory.saturating_mul(gpus_in_machine),
            fit.gpu_capacity.saturating_mul(gpus_in_machine),
        )
    } else {
        (acc.memory, fit.gpu_capacity)
    }
}

/// The kernel family a replica's GEMMs run: ggml's on llama.cpp, else the one for the weights.
fn kernel_for(
    backend: Backend,
    weights: crate::core::precision::WeightPrecision,
    gpu: &GpuDevice,
) -> Kernel {
    if backend.is_llama_cpp() {
        Kernel::Ggml
    } else {
        Kernel::for_weights(weights, gpu)
    }
}

/// The speculative drafter of the target's scenario on the same GPUs: its own step model (its
/// scenario and estimate, the target's GPU, profile and links) joins `step`, and the plan's
/// speculative line is returned beside it (`None`, and `step` as it was, without a drafter).
fn attach_drafter(
    target: &StepInputs<'_>,
    engine: Engine,
    backend: Backend,
    step: StepModel,
) -> (StepModel, Option<ServingSpec>) {
    let (es, gpu, profile, est_gpus) = (target.scenario, target.gpu, target.profile, target.tp);
    let Some(Ok((ds, extra))) = crate::core::estimate::draft_scenario(es, &es.model) else {
        return (step, None);
    };
    let dest = estimate_with(&ds, false);
    let dkernel = kernel_for(backend, ds.weights, &gpu);
    let mut draft = StepModel::new(&StepInputs {
        scenario: &ds,
        est: &dest,
        kernel: dkernel,
        ..*target
    });
    // EAGLE-3's wider q/k/v and fc, MTP's projection: parameters its layer shape lacks.
    let extra_bytes = extra as f64 * ds.weights.bits_per_weight() / 8.0 / est_gpus as f64;
    draft.dense_bytes += extra_bytes;
    draft.active_params += extra as f64 / est_gpus as f64;
    if dkernel == Kernel::Ggml {
        draft.vector_s_per_token = (dest.params.active + extra) as f64
            * profile.dot_flops_per_weight
            / (gpu.vector_tflops.max(0.01) * 1e12);
    }
    let sp = es.speculative.as_ref().expect("draft_scenario needs it");
    let (g, a) = (sp.tokens(), sp.acceptance());
    let e = crate::core::speculative::tokens_per_step(a, g);
    let spec = ServingSpec {
        method: sp.method,
        draft_tokens: g,
        acceptance: a,
        tokens_per_step: e,
        draft_weights_per_gpu: dest
            .per_gpu_kind(crate::core::estimate::ComponentKind::Weights)
            .saturating_add(crate::core::units::Bytes::from_f64(extra_bytes))
            .saturating_sub(
                crate::core::estimate::shared_with_model(sp.method, &dest).div_ceil(est_gpus),
            ),
        draft_kv_bytes_per_token: draft.kv_seq_bytes(1.0),
        speedup_one_user: None,
        speedup_at_best: None,
        plain_best_users: None,
    };
    let mut step = step.with_speculation(draft, g, e);
    if engine == Engine::Sglang {
        // SGLang turns its overlap scheduler off for EAGLE speculative decoding
        // (`server_args.py`: "The radix cache, chunked prefill, and overlap scheduler are
        // disabled because of using eagle speculative decoding"; v0.5: "Overlap scheduler
        // is disabled because of using eagle3 or standalone speculative decoding"): the CPU
        // step it hid is paid in full, as vLLM's is.
        step.costs = StepCosts::of(Backend::Vllm);
    }
    (step, Some(spec))
}

/// [`build`] with the layers split into pipeline stages of `tp` GPUs each (vLLM
/// `--pipeline-parallel-size`): each GPU holds its stage's share of the weights and of the KV
/// cache, and a step passes every stage ([`StepModel::time`]).
pub fn build_stages(
    s: &Scenario,
    fit: &FitResult,
    m: &Machine,
    acc: &Accelerator,
    st: &FitSettings,
    tp: u64,
    stages: Stages,
) -> Option<Built> {
    let pp = stages.count.max(1);
    let s = s.clamped();
    let inputs = s.serving.clamped();
    let engine = engine::resolve_engine(&s, &inputs, Some(acc));
    let layer_split = engine.splits_layers();
    // Layer split pools the GPUs' memory behind one GPU's speed.
    let est_gpus = if layer_split { 1 } else { tp.max(1) };
    let mut es = engine_scenario(&s, engine, est_gpus);
    if !es
        .speculative
        .as_ref()
        .is_some_and(|sp| speculation_runs(engine, pp, sp.method))
    {
        es.speculative = None;
    }
    let est = estimate_with(&es, false);
    let backend = backend_for(es.runtime, Some(acc));
    let profile = st.speed.profiles.get(backend);
    let gpu = GpuDevice::from_accelerator(acc);
    let kernel = kernel_for(backend, s.weights, &gpu);
    let (gpu_link, nvlink) = match acc.gpu_link_gbs {
        Some(g) if g > 0.0 => (GbPerSec(g / 2.0), true),
        _ => (
            acc.pcie.map(|p| p.bandwidth()).unwrap_or(GbPerSec(16.0)),
            false,
        ),
    };
    let bandwidth_factor = st
        .calibration
        .as_ref()
        .filter(|c| c.machine.as_str() == &*m.id)
        .map_or(1.0, |c| c.tuning.bandwidth_factor);
    let target = StepInputs {
        scenario: &es,
        est: &est,
        gpu,
        profile,
        kernel,
        costs: step_costs(engine),
        tp: est_gpus,
        gpu_link,
        nvlink,
        consts: &st.speed,
        bandwidth_factor,
    };
    let mut step = StepModel::new(&target);
    if engine == Engine::Transformers {
        step.dispatch_bound = true;
        step.kv_passes = crate::core::speed::step::DYNAMIC_CACHE_KV_PASSES;
    }
    if pp > 1 {
        step = step.pipelined(pp, stages.hop_latency_s, stages.hop_bps);
    }
    if kernel == Kernel::Ggml {
        step.vector_s_per_token = est.params.active as f64 * profile.dot_flops_per_weight
            / (gpu.vector_tflops.max(0.01) * 1e12);
    }
    let (step, spec) = attach_drafter(&target, engine, backend, step);
    let gpus_in_machine = machine_gpus(m, acc);
    let (memory, usable) = replica_memory(acc, fit, gpus_in_machine, layer_split);
    let settings = engine::settings(engine, &inputs, acc);
    let kv_pool = pool::pool(
        &settings,
        &es.model,
        &est,
        &step,
        pool::GpuBudget {
            memory,
            usable,
            tp: est_gpus,
            vllm_utilization: es.gpu_memory_utilization,
            sglang_fraction: inputs.mem_fraction_static,
            weight_share: stage_weight_share(&est, pp),
        },
    );
    let context = s.context.max(1);
    let prompt = s.prompt_tokens.clamp(1, context) as f64;
    let output = (inputs.output_tokens as f64).min((context as f64 - prompt).max(1.0));
    let prefix = if settings.prefix_caching {
        inputs.prefix_share
    } else {
        0.0
    };
    let slots = slots_for(&settings, &kv_pool, &step, prompt, output, prefix, context);
    if slots == 0 {
        return None;
    }
    Some(Built {
        engine,
        max_seqs_at_context: kv_pool.sequences_at(&step, context),
        settings,
        kernel,
        backend,
        step,
        pool: kv_pool,
        tp: est_gpus,
        replicas_per_machine: if layer_split {
            1
        } else {
            (gpus_in_machine / (tp.max(1) * pp)).max(1)
        },
        pp,
        prompt,
        prompt_computed: (prompt * (1.0 - prefix)).max(1.0),
        output,
        slots,
        spec,
    })
}

/// Whether a replica runs the scenario's speculative decoding: vLLM and SGLang verify drafted
/// tokens for every running sequence in one batched pass with any of the three drafters;
/// llama-server drafts with a separate model only (`-md`); transformers' assisted generation
/// runs one sequence only (`generation/utils.py`: "assisted generate is only supported for
/// batch_size = 1"); and speculation is not modelled across pipeline stages.
pub fn speculation_runs(
    engine: Engine,
    pp: u64,
    method: crate::core::speculative::SpecMethod,
) -> bool {
    let by_engine = match engine {
        Engine::Vllm | Engine::Sglang | Engine::Auto => true,
        Engine::LlamaServer => method == crate::core::speculative::SpecMethod::DraftModel,
        Engine::Transformers => false,
    };
    by_engine && pp <= 1
}

/// Speculative decoding in a serving plan: the drafter's memory in the pool and the speed it
/// buys against the same replica without it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingSpec {
    pub method: crate::core::speculative::SpecMethod,
    /// Tokens drafted per step (γ).
    pub draft_tokens: u64,
    /// Per-token acceptance rate (α).
    pub acceptance: f64,
    /// Tokens a sequence gains per step, `(1 − α^(γ+1)) / (1 − α)`.
    pub tokens_per_step: f64,
    /// The drafter's weights per GPU (part of the pool's `weights_per_gpu`).
    pub draft_weights_per_gpu: crate::core::units::Bytes,
    /// The drafter's KV bytes per token of one sequence per GPU (in every block of the pool).
    pub draft_kv_bytes_per_token: f64,
    /// Output tokens/s with speculation over the same replica without it, at one user.
    pub speedup_one_user: Option<f64>,
    /// The same at the plan's most users that meet the target (each replica with its own pool).
    pub speedup_at_best: Option<f64>,
    /// The most users the replica holds at the target without speculation.
    pub plain_best_users: Option<u64>,
}

/// The plan of replica `b` of `s` on machine `m`: the loads it holds, what they cost, and its
/// curve.
pub fn plan_of(
    b: Built,
    s: &Scenario,
    m: &Machine,
    acc: &Accelerator,
    st: &FitSettings,
) -> ServingPlan {
    let inputs = s.serving.clamped();
    let replica = b.replica();
    let target = inputs.target;
    let single = replica.at_users(1.0);
    let best = replica.max_users(&target);
    let asked = inputs
        .load
        .map(|load| asked_load(&replica, load, &target, best, b.replicas_per_machine));
    let hourly = machine_hourly_usd(m, Some(acc), st);
    let (basis, point) = match (&asked, &best) {
        (Some(a), _) => (CostBasis::Asked, a.per_replica),
        (None, Some((_, p))) => (CostBasis::Target, *p),
        (None, None) => (CostBasis::SingleUser, single),
    };
    // Per machine: its replicas each at `point` (for an asked load, every replica of the rented
    // machines carries its share).
    let cost = hourly.map(|h| cost_at(h, &point, b.replicas_per_machine, basis));
    let curve = CURVE_USERS
        .iter()
        .take_while(|u| **u <= b.slots.saturating_mul(2).max(8))
        .map(|u| replica.at_users(*u as f64))
        .collect();
    let settings = EngineSettings {
        max_num_seqs: if b.settings.seqs_fixed {
            b.settings.max_num_seqs
        } else {
            b.settings.max_num_seqs.min(b.slots.max(1))
        },
        ..b.settings
    };
    ServingPlan {
        machine: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind,
        engine: b.engine,
        blocker: None,
        settings: Some(settings),
        kernel: Some(b.kernel),
        backend: Some(b.backend),
        tp: b.tp,
        pp: b.pp,
        replicas_per_machine: b.replicas_per_machine,
        max_seqs_at_context: b.max_seqs_at_context,
        slots: b.slots,
        pool: Some(b.pool.clone()),
        single: Some(single),
        best_users: best.map(|x| x.0),
        best: best.map(|x| x.1),
        asked,
        cost,
        curve,
        speculative: b.spec,
    }
}

/// Requests that run at once: the pool at the traffic's mean occupancy (a shared prefix kept
/// once) and the engine's `max_num_seqs`. llama-server slots reserve the whole context each.
fn slots_for(
    set: &EngineSettings,
    kv_pool: &KvPool,
    step: &StepModel,
    prompt: f64,
    output: f64,
    prefix: f64,
    context: u64,
) -> u64 {
    let kv = kv_pool.kv_per_gpu.as_f64();
    let by_pool = match set.engine {
        Engine::LlamaServer | Engine::Transformers => {
            let per = step.kv_seq_bytes(context as f64);
            if per > 0.0 { (kv / per).floor() } else { 0.0 }
        }
        _ => {
            let shared = step.kv_seq_bytes(prompt * prefix);
            let own = step.kv_seq_bytes(prompt * (1.0 - prefix) + output / 2.0);
            if own > 0.0 && kv > shared {
                ((kv - shared) / own).floor()
            } else {
                0.0
            }
        }
    };
    // Every request must fit at its longest.
    if step.kv_seq_bytes(prompt + output) > kv {
        return 0;
    }
    (by_pool as u64).min(set.max_num_seqs)
}

/// What an asked load takes: enough replicas that each meets the target (or, when no load
/// does, that each runs its share at once), rounded up to whole machines, and the load spread
/// over every replica of the machines rented.
fn asked_load(
    replica: &load::Replica,
    load: Load,
    target: &Target,
    best: Option<(u64, LoadPoint)>,
    per_machine: u64,
) -> AskedLoad {
    let needed = match (load, best) {
        (Load::Users(n), Some((u, _))) => n.div_ceil(u.max(1)),
        (Load::RequestsPerSecond(r), Some((_, b))) => {
            (r / b.requests_per_s.max(1e-12)).ceil().max(1.0) as u64
        }
        (Load::Users(n), None) => n.div_ceil(replica.slots.max(1.0) as u64),
        (Load::RequestsPerSecond(r), None) => {
            let full = replica.at_users(replica.slots.max(1.0));
            (r / full.requests_per_s.max(1e-12)).ceil().max(1.0) as u64
        }
    }
    .max(1);
    let machines = needed.div_ceil(per_machine.max(1));
    let replicas = machines.saturating_mul(per_machine.max(1));
    let share = match load {
        Load::Users(n) => Load::Users(n.div_ceil(replicas).max(1)),
        Load::RequestsPerSecond(r) => Load::RequestsPerSecond(r / replicas as f64),
    };
    let per_replica = replica.at(share);
    AskedLoad {
        load,
        replicas,
        machines,
        meets_target: per_replica.meets(target),
        per_replica,
    }
}

/// An hour of the machine: the cloud price, or for an owned machine its power at the
/// electricity price plus its purchase price over [`AMORTISATION_YEARS`].
pub fn machine_hourly_usd(m: &Machine, acc: Option<&Accelerator>, st: &FitSettings) -> Option<f64> {
    let running = hourly_usd(m, acc, st)?;
    Some(match &m.price {
        Some(Price::Purchase { usd, .. }) => running + usd / (AMORTISATION_YEARS * HOURS_PER_YEAR),
        _ => running,
    })
}

fn cost_at(hourly: f64, pt: &LoadPoint, replicas: u64, basis: CostBasis) -> ServeCost {
    let n = replicas.max(1) as f64;
    let per_million = |share: f64, tok_s: f64| {
        if tok_s > 0.0 {
            hourly * share * 1e6 / (tok_s * n * 3600.0)
        } else {
            f64::INFINITY
        }
    };
    ServeCost {
        usd_per_hour: hourly,
        usd_per_million_output: per_million(1.0, pt.output_tokens_per_s),
        usd_per_million_input_split: per_million(pt.prefill_share, pt.input_tokens_per_s),
        usd_per_million_output_split: per_million(1.0 - pt.prefill_share, pt.output_tokens_per_s),
        basis,
    }
}

/// Plans for every fitted machine (same order as `fits`).
pub fn plan_all(
    s: &Scenario,
    fits: &[FitResult],
    cat: &Catalog,
    st: &FitSettings,
) -> Vec<ServingPlan> {
    // Serving plans generation: training and embedding passes have no decode to batch.
    if s.mode != crate::core::scenario::Mode::Inference {
        return Vec::new();
    }
    fits.iter()
        .filter_map(|f| {
            let m = cat.machine(&f.machine)?;
            let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id));
            Some(plan(s, f, m, acc, st))
        })
        .collect()
}

/// The load a serving cost is for, in words: "at the most users that meet TTFT p95 ≤ 2.00 s,
/// ≥ 20.0 tok/s per user" or "at 500 users in flight".
pub fn load_text(s: &Scenario) -> String {
    use crate::core::format;
    let v = s.serving.clamped();
    let t = v.target;
    let target = format!(
        "TTFT p95 ≤ {}, ≥ {} per user",
        format::duration(t.ttft_p95_s),
        format::tokens_per_s(t.min_tokens_per_s)
    );
    match v.load {
        Some(Load::Users(n)) => {
            format!("at {} users in flight ({target})", format::group_digits(n))
        }
        Some(Load::RequestsPerSecond(r)) => format!("at {} requests/s ({target})", format::rate(r)),
        None => format!("at the most users that meet {target}"),
    }
}

/// What speculative decoding does in the first servable plan that runs it (for `serve`'s
/// table, the report's serving section and the window's Serving tab): "Speculative
/// decoding on AWS p5.4xlarge (EAGLE-3 head, 3 drafted, acceptance 75 %: 2.73 tokens a step):
/// 2.37× at 1 user, 1.50× at the target's 40 users (46 without it); its 810 MiB of weights and
/// 4.00 KiB of KV per token of each sequence come out of the KV pool."
pub fn speculative_text(plans: &[ServingPlan]) -> String {
    use crate::core::format;
    let Some((p, x)) = plans
        .iter()
        .find_map(|p| p.speculative.as_ref().map(|x| (p, x)))
    else {
        if plans.iter().all(|p| p.blocker.is_some()) {
            return "Speculative decoding: no machine here serves the model.".into();
        }
        return "Speculative decoding: not run by these engines (llama-server drafts with a separate model only; transformers' assisted generation runs one sequence at a time).".into();
    };
    let at_best = match (x.speedup_at_best, p.best_users) {
        (Some(r), Some(u)) => format!(
            ", {} at the target's {} ({} without it)",
            format::times(r),
            format::count(u, "user", "users"),
            x.plain_best_users
                .map(format::group_digits)
                .unwrap_or_else(|| "none".into())
        ),
        _ => String::new(),
    };
    format!(
        "Speculative decoding on {} ({}, {} drafted, acceptance {}: {} tokens a step): {} at 1 user{at_best}; its {} of weights and {} of KV per token of each sequence come out of the KV pool.",
        p.name,
        x.method.label(),
        x.draft_tokens,
        format::percent(x.acceptance),
        format::rate(x.tokens_per_step),
        x.speedup_one_user
            .map(format::times)
            .unwrap_or_else(|| format::MISSING.into()),
        format::bytes(x.draft_weights_per_gpu),
        format::bytes(crate::core::units::Bytes::from_f64(
            x.draft_kv_bytes_per_token
        )),
    )
}
