//! Measured reference points (published llama-bench results, `catalogs/benchmarks.ron`), the
//! prediction of one such measurement, and calibration from the user's own llama-bench run.

use super::{Backend, CpuIsa, SpeedConstants, SpeedQuery, Tuning, placement_speed};
use crate::core::catalog::{Catalog, Machine, MachineKind, Vendor};
use crate::core::estimate::{Estimate, estimate_with};
use crate::core::model::{FileWeights, ModelSpec};
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Runtime, Scenario};
use crate::core::units::{Bytes, GbPerSec};
use serde::{Deserialize, Serialize};

/// A machine a benchmark ran on when no catalog machine matches it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchMachineSpec {
    /// Accelerator id from the catalog (`None`: CPU only).
    #[serde(default)]
    pub gpu: Option<String>,
    /// System RAM bandwidth, GB/s.
    pub ram_bandwidth: f64,
    pub cpu_cores: u32,
    /// The int8 dot-product path the run's build used for these weights, where it is not the
    /// one the CPU's name gives (`speed::cpu`): a build before the kernel for the CPU's best
    /// path existed (llama.cpp's i8mm Q4_0 repack came in late 2024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_isa: Option<CpuIsa>,
    /// The CPU's sustained clock, GHz, where the CPU's name does not give it (`speed::cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ghz: Option<f64>,
    /// System RAM, GiB, where it matters (a unified-memory machine holding a model over 64 GiB);
    /// 64 when not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram_gib: Option<u64>,
}

impl BenchMachineSpec {
    /// The CPU of `q` as this spec states it.
    fn apply_cpu(&self, q: &mut SpeedQuery<'_>) {
        if let Some(isa) = self.cpu_isa {
            q.cpu.isa = isa;
        }
        if let Some(g) = self.cpu_ghz.filter(|g| *g > 0.0) {
            q.cpu.ghz = g;
        }
    }
}

/// One published llama-bench result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    pub id: String,
    /// Catalog machine id, when one matches.
    #[serde(default)]
    pub machine: Option<String>,
    /// The machine, when no catalog machine matches.
    #[serde(default)]
    pub spec: Option<BenchMachineSpec>,
    /// The machine as the source names it.
    pub published_machine: String,
    /// Catalog model id.
    pub model: String,
    /// Weight precision (CLI name: "q4_0", "q4_k_m", "fp16").
    pub weights: String,
    pub backend: Backend,
    /// Prompt tokens/s over a 512-token batch from an empty cache.
    pub pp512: f64,
    /// Generated tokens/s over 128 tokens from an empty cache.
    pub tg128: f64,
    /// Primary source URL.
    pub source: String,
    /// Where in the source, and how the numbers were read.
    #[serde(default)]
    pub detail: Option<String>,
    /// Date of the post ("2024-01-10", or the month "2023-11").
    pub date: String,
    #[serde(default)]
    pub notes: Option<String>,
}

/// A measured reference point shown beside a prediction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub benchmark: String,
    pub backend: Backend,
    pub decode_tokens_per_s: f64,
    pub prefill_tokens_per_s: f64,
    pub source: String,
    pub date: String,
}

impl Measured {
    pub fn from_benchmark(b: &Benchmark) -> Measured {
        Measured {
            benchmark: b.id.clone(),
            backend: b.backend,
            decode_tokens_per_s: b.tg128,
            prefill_tokens_per_s: b.pp512,
            source: b.source.clone(),
            date: b.date.clone(),
        }
    }
    /// "measured 118 tok/s decode, 1030 tok/s prefill (llama.cpp Metal, 2023-11, URL)".
    pub fn text(&self) -> String {
        format!(
            "measured {:.0} tok/s decode, {:.0} tok/s prefill ({}, {}, {})",
            self.decode_tokens_per_s,
            self.prefill_tokens_per_s,
            self.backend.label(),
            self.date,
            self.source
        )
    }
}

/// The published measurement of `model` at `weights` on machine `machine`, if there is one.
pub fn measured_for<'a>(
    benchmarks: &'a [Benchmark],
    machine: &str,
    model: Option<&str>,
    weights: WeightPrecision,
) -> Option<&'a Benchmark> {
    let model = model?;
    benchmarks.iter().find(|b| {
        b.machine.as_deref() == Some(machine)
            && b.model.eq_ignore_ascii_case(model)
            && WeightPrecision::from_cli(&b.weights) == Some(weights)
    })
}

/// The machine a benchmark ran on: the catalog's, or one built from its spec.
pub fn bench_machine(b: &Benchmark, cat: &Catalog) -> Option<Machine> {
    if let Some(id) = &b.machine {
        return cat.machine(id).cloned();
    }
    let sp = b.spec.as_ref()?;
    Some(Machine {
        id: b.id.as_str().into(),
        name: b.published_machine.as_str().into(),
        kind: MachineKind::Desktop,
        gpu: sp.gpu.as_deref().map(Into::into),
        gpu_count: 1,
        ram: Bytes::gib(sp.ram_gib.unwrap_or(64).max(1)),
        ram_bandwidth: GbPerSec(sp.ram_bandwidth),
        cpu: b.published_machine.as_str().into(),
        cpu_cores: sp.cpu_cores.max(1),
        source: b.source.clone(),
        ..Machine::bare("", "", MachineKind::Cloud)
    })
}

/// A prediction next to its measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchCheck {
    pub id: String,
    pub machine: String,
    /// Vendor group: "Apple", "NVIDIA", "AMD", "Intel" or "CPU" (CPU backend).
    pub group: &'static str,
    pub backend: Backend,
    pub measured_tg: f64,
    pub predicted_tg: f64,
    pub measured_pp: f64,
    pub predicted_pp: f64,
}

impl BenchCheck {
    pub fn tg_error(&self) -> f64 {
        self.predicted_tg / self.measured_tg - 1.0
    }
    pub fn pp_error(&self) -> f64 {
        self.predicted_pp / self.measured_pp - 1.0
    }
}

/// The scenario llama-bench runs: one sequence, ubatch 512, FA off, llama.cpp.
fn bench_scenario(model: ModelSpec, model_id: Option<String>, w: WeightPrecision) -> Scenario {
    Scenario {
        model,
        model_id,
        weights: w,
        context: 640,
        batch: 1,
        ubatch: 512,
        prompt_tokens: 512,
        flash_attention: false,
        runtime: Runtime::LlamaCpp,
        ..Scenario::default()
    }
}

/// tg128 and pp512 of scenario `s` on `m` with `backend`, every layer on the GPU.
pub fn predict_llama_bench(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    backend: Backend,
    tuning: Tuning,
    k: &SpeedConstants,
) -> (f64, f64) {
    predict_on(s, m, None, cat, backend, tuning, k)
}

/// [`predict_llama_bench`] with the CPU facts a published row states (`spec`).
fn predict_on(
    s: &Scenario,
    m: &Machine,
    spec: Option<&BenchMachineSpec>,
    cat: &Catalog,
    backend: Backend,
    tuning: Tuning,
    k: &SpeedConstants,
) -> (f64, f64) {
    let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id));
    let gpu_run = backend != Backend::Cpu && acc.is_some();
    let est: Estimate = estimate_with(
        &Scenario {
            gpus: u64::from(gpu_run),
            ..s.clone()
        },
        false,
    );
    let mut q = SpeedQuery::on_machine(s, &est, m, acc, k);
    if gpu_run {
        q.backend = backend;
        q.gpus = 1;
    } else {
        q = q.cpu_only();
    }
    q.tuning = tuning;
    if let Some(sp) = spec {
        sp.apply_cpu(&mut q);
    }
    // tg128: 128 tokens from an empty cache, on average at depth 64.
    q.depth = 64;
    let tg = placement_speed(&q, k).decode_tokens_per_s;
    // pp512: one 512-token ubatch from depth 0.
    q.depth = 0;
    q.ubatch = 512;
    let pp = placement_speed(&q, k).prefill_tokens_per_s;
    (tg, pp)
}

/// Predict every benchmark whose machine and model are known.
pub fn check_benchmarks(
    benchmarks: &[Benchmark],
    cat: &Catalog,
    k: &SpeedConstants,
) -> Vec<BenchCheck> {
    benchmarks
        .iter()
        .filter_map(|b| {
            let m = bench_machine(b, cat)?;
            let preset = cat.model(&b.model)?;
            let w = WeightPrecision::from_cli(&b.weights)?;
            let s = bench_scenario(preset.spec.clone(), Some(preset.id.clone()), w);
            let spec = b.spec.as_ref().filter(|_| b.machine.is_none());
            let (tg, pp) = predict_on(&s, &m, spec, cat, b.backend, Tuning::default(), k);
            let vendor = m
                .gpu
                .as_deref()
                .and_then(|g| cat.accelerator(g))
                .map(|a| a.vendor);
            let group = match (b.backend, vendor) {
                (Backend::Cpu, _) | (_, None) => "CPU",
                (_, Some(Vendor::Apple)) => "Apple",
                (_, Some(Vendor::Nvidia)) => "NVIDIA",
                (_, Some(Vendor::Amd)) => "AMD",
                (_, Some(Vendor::Intel)) => "Intel",
            };
            Some(BenchCheck {
                id: b.id.clone(),
                machine: m.id.to_string(),
                group,
                backend: b.backend,
                measured_tg: b.tg128,
                predicted_tg: tg,
                measured_pp: b.pp512,
                predicted_pp: pp,
            })
        })
        .collect()
}

/// One test of the user's own llama-bench run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRun {
    /// llama-bench `model_type` ("llama 7B Q4_0").
    pub model_type: String,
    pub model_size: u64,
    pub model_n_params: u64,
    pub backend: Backend,
    /// Prompt tokens (pp test) or 0.
    pub n_prompt: u64,
    /// Generated tokens (tg test) or 0.
    pub n_gen: u64,
    /// Tokens already in the cache (`-d`), 0 for plain pp/tg.
    pub n_depth: u64,
    pub avg_ts: f64,
    /// `test_time` (ISO 8601) or "" when the format has none.
    pub date: String,
    pub build: String,
}

/// What `headroom calibrate` stores: this machine's efficiency multipliers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The machine it applies to ("local": the detected machine).
    pub machine: String,
    pub backend: Backend,
    pub tuning: Tuning,
    /// Date of the llama-bench run (its `test_time`, else the day it was imported).
    pub date: String,
    /// The file it came from.
    pub source_file: String,
    pub build: String,
    pub runs: usize,
}

impl Calibration {
    pub fn note(&self) -> String {
        format!(
            "calibrated from your run of {} ({} test{}, {}): bandwidth × {:.2}, prefill × {:.2}",
            self.date,
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.backend.label(),
            self.tuning.bandwidth_factor,
            self.tuning.prefill_factor
        )
    }
}

/// The weight precision llama-bench's `model_type` names ("llama 7B Q4_K - Medium" → Q4_K_M).
pub fn weights_from_model_type(t: &str) -> Option<WeightPrecision> {
    let u = t.to_ascii_uppercase();
    let table: [(&str, WeightPrecision); 12] = [
        ("Q4_K - MEDIUM", WeightPrecision::Q4KM),
        ("Q5_K - MEDIUM", WeightPrecision::Q5KM),
        ("Q3_K - MEDIUM", WeightPrecision::Q3KM),
        ("Q2_K", WeightPrecision::Q2K),
        ("Q6_K", WeightPrecision::Q6K),
        ("Q8_0", WeightPrecision::Q8_0),
        ("Q5_0", WeightPrecision::Q5_0),
        ("Q4_0", WeightPrecision::Q4_0),
        ("BF16", WeightPrecision::Bf16),
        ("F16", WeightPrecision::Fp16),
        ("F32", WeightPrecision::Fp32),
        ("Q4_K", WeightPrecision::Q4KM),
    ];
    table
        .into_iter()
        .find(|(k, _)| u.contains(k))
        .map(|(_, w)| w)
}

/// The scenario of one run: a generic model of the run's parameter count whose weights are the
/// file's bytes, at the run's precision.
/// The shape is the catalog preset of the same architecture and parameter count (within 2 %) when
/// there is one ("llama 7B" with 6.74 B parameters → Llama 2 7B), else estimated from the count.
pub fn scenario_of_run(r: &BenchRun, cat: &Catalog) -> Option<Scenario> {
    let w = weights_from_model_type(&r.model_type)?;
    let n = r.model_n_params.max(1);
    let arch = r
        .model_type
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let preset = cat.models.iter().find(|p| {
        let pn = p.spec.param_count().total as f64;
        p.spec.arch.eq_ignore_ascii_case(&arch) && (pn / n as f64 - 1.0).abs() < 0.02
    });
    let mut spec = match preset {
        Some(p) => p.spec.clone(),
        None => ModelSpec::generic(n),
    };
    spec.file_weights = Some(FileWeights {
        path: r.model_type.clone(),
        total_bytes: r.model_size,
        params: r.model_n_params,
        layer_bytes: 0,
        runtime_extra_bytes: 0,
        format: "llama-bench".into(),
        ..FileWeights::default()
    });
    let mut s = bench_scenario(spec, None, w);
    s.context = (r.n_depth + r.n_prompt + r.n_gen).max(640);
    Some(s)
}

/// Solve `f` in [lo, hi] with `pred(f) = target` for a prediction increasing in `f` (bisection on
/// a log scale).
fn solve_factor(target: f64, pred: impl Fn(f64) -> f64) -> Option<f64> {
    let (mut lo, mut hi) = (0.05f64, 20.0f64);
    if target.is_nan() || target <= 0.0 || pred(hi) < target || pred(lo) > target {
        return None;
    }
    for _ in 0..40 {
        let mid = (lo * hi).sqrt();
        if pred(mid) < target {
            lo = mid
        } else {
            hi = mid
        }
    }
    Some((lo * hi).sqrt())
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Fit this machine's bandwidth and prefill multipliers to its own llama-bench runs: for every
/// test the factor that makes the prediction equal the measurement, then the median per kind.
pub fn calibrate(
    runs: &[BenchRun],
    m: &Machine,
    cat: &Catalog,
    k: &SpeedConstants,
    source_file: &str,
    today: &str,
) -> Result<Calibration, String> {
    if runs.is_empty() {
        return Err("no llama-bench results in it".into());
    }
    let backend = runs[0].backend;
    if backend != Backend::Cpu && m.gpu.is_none() {
        return Err(format!(
            "a {} run, but this machine has no GPU headroom knows: calibrate with a run made on this machine",
            backend.label()
        ));
    }
    let mut bw = Vec::new();
    let mut pf = Vec::new();
    for r in runs {
        let Some(s) = scenario_of_run(r, cat) else {
            continue;
        };
        if r.n_gen > 0 && r.n_prompt == 0 {
            let f = solve_factor(r.avg_ts, |f| {
                let t = Tuning {
                    bandwidth_factor: f,
                    prefill_factor: 1.0,
                };
                predict_llama_bench(&s, m, cat, r.backend, t, k).0
            });
            bw.extend(f);
        } else if r.n_prompt > 0 && r.n_gen == 0 {
            let f = solve_factor(r.avg_ts, |f| {
                let t = Tuning {
                    bandwidth_factor: 1.0,
                    prefill_factor: f,
                };
                predict_llama_bench(&s, m, cat, r.backend, t, k).1
            });
            pf.extend(f);
        }
    }
    if bw.is_empty() && pf.is_empty() {
        return Err("no usable pp/tg test (unknown weight type, or a speed more than 20x off the model: a run from another machine?)".into());
    }
    let date = runs
        .iter()
        .map(|r| r.date.get(..10).unwrap_or(&r.date).to_string())
        .find(|d| !d.is_empty())
        .unwrap_or_else(|| today.to_string());
    Ok(Calibration {
        machine: m.id.to_string(),
        backend,
        tuning: Tuning {
            bandwidth_factor: median(bw).unwrap_or(1.0),
            prefill_factor: median(pf).unwrap_or(1.0),
        },
        date,
        source_file: source_file.to_string(),
        build: runs[0].build.clone(),
        runs: runs.len(),
    })
}

/// Which llama-bench test a [`SpeedCase`] measured.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CaseTest {
    /// `pp N`: prompt tokens/s of an `N`-token prompt (in ubatches of 512).
    Pp,
    /// `tg N`: generated tokens/s of `N` tokens.
    Tg,
}

/// A published llama-bench test beyond the scoreboards' pp512/tg128 from an empty cache: a
/// longer prompt, a depth (`-d`), FlashAttention, a mixture of experts, a 70B model. The open
/// check set of the prompt-processing and depth mechanisms (catalogs/speed_cases.ron,
/// docs/speed.md "Beyond pp512").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeedCase {
    pub id: String,
    pub spec: BenchMachineSpec,
    /// The machine as the source names it.
    pub published_machine: String,
    /// Catalog model id.
    pub model: String,
    /// Weight precision (CLI name).
    pub weights: String,
    pub backend: Backend,
    pub test: CaseTest,
    /// `n_prompt` of a pp test, `n_gen` of a tg test.
    pub tokens: u64,
    /// Tokens in the cache before the test (`-d`).
    #[serde(default)]
    pub depth: u64,
    /// `-fa 1`.
    #[serde(default)]
    pub flash_attention: bool,
    /// `-ub N` when the run set it (llama-bench's default: 512).
    #[serde(default)]
    pub ubatch: Option<u64>,
    /// Tokens/s.
    pub measured: f64,
    /// The mechanism the row checks ("moe", "long prompt", "decode at depth", "70B", "dense").
    pub mechanism: String,
    pub source: String,
    #[serde(default)]
    pub detail: Option<String>,
    pub date: String,
}

/// The cases of catalogs/speed_cases.ron.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedCases {
    pub cases: Vec<SpeedCase>,
}

/// The model's tokens/s for case `c` with constants `k` (`None`: unknown model, weights or GPU).
/// A pp test is the prompt of `tokens` from depth `depth`; a tg test decodes at its average
/// depth, `depth + tokens ÷ 2`.
pub fn predict_case(c: &SpeedCase, cat: &Catalog, k: &SpeedConstants) -> Option<f64> {
    let preset = cat.model(&c.model)?;
    let w = WeightPrecision::from_cli(&c.weights)?;
    let b = Benchmark {
        id: c.id.clone(),
        machine: None,
        spec: Some(c.spec.clone()),
        published_machine: c.published_machine.clone(),
        model: c.model.clone(),
        weights: c.weights.clone(),
        backend: c.backend,
        pp512: 0.0,
        tg128: 0.0,
        source: c.source.clone(),
        detail: None,
        date: c.date.clone(),
        notes: None,
    };
    let m = bench_machine(&b, cat)?;
    let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id));
    let gpu_run = c.backend != Backend::Cpu && acc.is_some();
    let mut s = bench_scenario(preset.spec.clone(), Some(preset.id.clone()), w);
    s.context = c.depth + c.tokens + 1;
    s.flash_attention = c.flash_attention;
    let ubatch = c.ubatch.unwrap_or(512).max(1);
    s.ubatch = ubatch;
    s.prompt_tokens = match c.test {
        CaseTest::Pp => c.tokens,
        CaseTest::Tg => 1,
    };
    let est = estimate_with(
        &Scenario {
            gpus: u64::from(gpu_run),
            ..s.clone()
        },
        false,
    );
    let mut q = SpeedQuery::on_machine(&s, &est, &m, acc, k);
    if gpu_run {
        q.backend = c.backend;
        q.gpus = 1;
    } else {
        q = q.cpu_only();
    }
    q.ubatch = ubatch;
    c.spec.apply_cpu(&mut q);
    let sp = match c.test {
        CaseTest::Pp => {
            q.depth = c.depth + c.tokens;
            placement_speed(&q, k).prefill_tokens_per_s
        }
        CaseTest::Tg => {
            q.depth = c.depth + c.tokens / 2;
            placement_speed(&q, k).decode_tokens_per_s
        }
    };
    Some(sp)
}
