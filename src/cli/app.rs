//! The command line: `headroom estimate | fit | report | detect | catalog`. Names and JSON fields
//! are a contract; add freely, never rename.

use crate::core::catalog::{Catalog, Machine, MachineKind};
use crate::core::estimate::{ComponentKind, Estimate, estimate, group_digits};
use crate::core::fit::{FitResult, FitSettings, fit_all};
use crate::core::model::ModelSpec;
use crate::core::precision::{KvTypes, WeightPrecision};
use crate::core::scenario::{
    Checkpointing, Framework, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime,
    Scenario, limits,
};
use crate::core::units::{display_signed_gib, parse_count};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "headroom",
    version,
    about = "What hardware do I need for this LLM, and will it run on mine?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Memory needed by a scenario, component by component.
    Estimate(EstimateArgs),
    /// Fit a scenario on catalog machines (and this one: --machine local).
    Fit(FitArgs),
    /// Write a sizing report (Markdown, HTML or JSON).
    Report(ReportArgs),
    /// Which machine to buy or rent for a scenario, per kind, and what would make this one fit.
    Recommend(crate::cli::recommend::RecommendArgs),
    /// Detect this machine: RAM, CPU, GPUs.
    Detect {
        #[arg(long)]
        json: bool,
        /// Also measure memory bandwidth (≤ 300 ms).
        #[arg(long)]
        bench: bool,
    },
    /// Fit this machine's speed constants to its own llama-bench output (JSON, CSV or table).
    Calibrate { file: PathBuf },
    /// The built-in and user catalogs.
    Catalog {
        #[command(subcommand)]
        command: CatalogCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum CatalogCommand {
    /// List machines.
    List {
        #[arg(long, value_parser = parse_kind_filter)]
        kind: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Validate a catalog RON file.
    Validate { file: PathBuf },
}

/// Everything that defines a scenario, shared by estimate, fit and report.
#[derive(Args, Debug, Clone, Default)]
pub struct ScenarioArgs {
    /// A model preset id (see `headroom catalog models`), e.g. llama-3-8b.
    #[arg(long, group = "source")]
    pub model: Option<String>,
    /// A Hugging Face config.json.
    #[arg(long, group = "source")]
    pub config: Option<PathBuf>,
    /// A parameter count: 7e9, 7B, 70b, 1.5T (the shape is then estimated).
    #[arg(long, group = "source", value_parser = parse_params)]
    pub params: Option<u64>,
    /// A GGUF file (header only is read).
    #[arg(long, group = "source")]
    pub gguf: Option<PathBuf>,
    /// A safetensors file or a folder of shards (headers only).
    #[arg(long, group = "source")]
    pub safetensors: Option<PathBuf>,
    /// A Hugging Face Hub repo, ORG/NAME[@REVISION]: headers only are read over the network.
    #[arg(long, group = "source")]
    pub hf: Option<String>,
    /// With --hf: the file to read (one GGUF quant, a .safetensors file, config.json).
    #[arg(long, requires = "hf")]
    pub hf_file: Option<String>,
    /// A .gguf or .safetensors file at a URL (headers only, by range requests).
    #[arg(long, group = "source")]
    pub url: Option<String>,
    /// A saved scenario (RON); other options override it.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    #[arg(long, value_parser = parse_weights)]
    pub weights: Option<WeightPrecision>,
    /// KV cache type, or K/V types: fp16, q8_0/q4_0.
    #[arg(long, value_parser = parse_kv)]
    pub kv: Option<KvTypes>,
    #[arg(long, value_parser = parse_context)]
    pub context: Option<u64>,
    #[arg(long, value_parser = parse_batch)]
    pub batch: Option<u64>,
    #[arg(long, value_parser = parse_ubatch)]
    pub ubatch: Option<u64>,
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    #[arg(long, value_parser = parse_optimizer)]
    pub optimizer: Option<Optimizer>,
    #[arg(long, value_parser = parse_checkpointing)]
    pub checkpointing: Option<Checkpointing>,
    #[arg(long, value_parser = parse_on_off)]
    pub flash_attention: Option<bool>,
    /// KV allocation: contiguous or paged (PagedAttention, 16-token blocks).
    #[arg(long, value_parser = parse_kv_alloc)]
    pub kv_alloc: Option<KvAllocation>,
    #[arg(long, value_parser = parse_lora_rank)]
    pub lora_rank: Option<u64>,
    #[arg(long, value_parser = parse_lora_targets)]
    pub lora_targets: Option<LoraTargets>,
    /// GPUs to spread the job over (0 = CPU only).
    #[arg(long, value_parser = parse_gpus)]
    pub gpus: Option<u64>,
    #[arg(long, value_parser = parse_zero)]
    pub zero: Option<u8>,
    #[arg(long, value_parser = parse_offload)]
    pub offload: Option<Offload>,
    #[arg(long, value_parser = parse_runtime)]
    pub runtime: Option<Runtime>,
    /// Training framework: transformers, torchtune, unsloth, deepspeed, fsdp.
    #[arg(long, value_parser = parse_framework)]
    pub framework: Option<Framework>,
    /// vLLM --gpu-memory-utilization (0.05–1.0).
    #[arg(long, value_parser = parse_fraction)]
    pub gpu_memory_utilization: Option<f64>,
    /// Train with pure BF16 states (no FP32 master copy).
    #[arg(long)]
    pub pure_bf16: bool,
    /// Prompt tokens for time-to-first-token.
    #[arg(long, value_parser = parse_context)]
    pub prompt: Option<u64>,
    /// Tokens of a training run (for its time and cost), e.g. 1B.
    #[arg(long, value_parser = parse_params)]
    pub train_tokens: Option<u64>,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct EstimateArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct FitArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Machine ids (repeatable); `local` is this machine.
    #[arg(long = "machine")]
    pub machines: Vec<String>,
    #[arg(long, value_parser = parse_kind_filter)]
    pub kind: Option<String>,
    #[arg(long)]
    pub fits_only: bool,
    /// Electricity price for owned machines, USD/kWh.
    #[arg(long)]
    pub electricity: Option<f64>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct ReportArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Machine ids (repeatable; `local` is this machine). Default: this machine and the
    /// recommended picks.
    #[arg(long = "machine")]
    pub machines: Vec<String>,
    /// Every catalog machine of this kind instead of the picks.
    #[arg(long, value_parser = parse_kind_filter)]
    pub kind: Option<String>,
    #[arg(long, value_parser = ["md", "markdown", "html", "json"], default_value = "md")]
    pub format: String,
    /// Output file, or - for stdout.
    #[arg(short = 'o', long = "output", default_value = "-")]
    pub output: String,
}

/// A CLI failure: one line for stderr and the exit code (2 for bad input).
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: i32,
}

impl CliError {
    pub fn input(m: impl Into<String>) -> Self {
        CliError {
            message: m.into(),
            code: 2,
        }
    }
}

fn parse_params(s: &str) -> Result<u64, String> {
    let n = parse_count(s)?;
    if n == 0 || n > limits::MAX_PARAMS {
        return Err(format!("'{s}' is outside 1 … 10^13"));
    }
    Ok(n)
}
fn ranged(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let n = parse_count(s)?;
    if n < lo || n > hi {
        return Err(format!("'{s}' is outside {lo} … {}", group_digits(hi)));
    }
    Ok(n)
}
fn parse_context(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_CONTEXT)
}
fn parse_batch(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_BATCH)
}
fn parse_ubatch(s: &str) -> Result<u64, String> {
    ranged(s, 1, 1 << 20)
}
fn parse_gpus(s: &str) -> Result<u64, String> {
    ranged(s, 0, limits::MAX_GPUS)
}
fn parse_lora_rank(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_LORA_RANK)
}
fn parse_zero(s: &str) -> Result<u8, String> {
    match s {
        "0" | "1" | "2" | "3" => Ok(s.parse().expect("digit")),
        _ => Err(format!("'{s}' is not a ZeRO stage (0, 1, 2 or 3)")),
    }
}
fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(0.05..=1.0).contains(&v) {
        return Err(format!("'{s}' is outside 0.05 … 1.0"));
    }
    Ok(v)
}
fn one_of<T: Copy>(s: &str, all: &[T], name: fn(T) -> &'static str) -> Result<T, String> {
    let t = s.trim().to_ascii_lowercase();
    all.iter().copied().find(|v| name(*v) == t).ok_or_else(|| {
        format!(
            "'{s}' is not one of: {}",
            all.iter().map(|v| name(*v)).collect::<Vec<_>>().join(", ")
        )
    })
}
fn parse_weights(s: &str) -> Result<WeightPrecision, String> {
    WeightPrecision::from_cli(s).ok_or_else(|| {
        format!(
            "'{s}' is not a weight precision: {}",
            WeightPrecision::ALL
                .iter()
                .map(|p| p.cli_name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}
fn parse_kv(s: &str) -> Result<KvTypes, String> {
    KvTypes::parse(s).ok_or_else(|| {
        format!("'{s}' is not a KV type: fp32, fp16, bf16, fp8, q8_0, q4_0 (or K/V like q8_0/q4_0)")
    })
}
fn parse_mode(s: &str) -> Result<Mode, String> {
    one_of(s, &Mode::ALL, Mode::cli_name)
}
fn parse_optimizer(s: &str) -> Result<Optimizer, String> {
    one_of(s, &Optimizer::ALL, Optimizer::cli_name)
}
fn parse_checkpointing(s: &str) -> Result<Checkpointing, String> {
    one_of(s, &Checkpointing::ALL, Checkpointing::cli_name)
}
fn parse_offload(s: &str) -> Result<Offload, String> {
    one_of(s, &Offload::ALL, Offload::cli_name)
}
fn parse_framework(s: &str) -> Result<Framework, String> {
    one_of(s, &Framework::ALL, Framework::cli_name)
}
fn parse_runtime(s: &str) -> Result<Runtime, String> {
    let t = if s.eq_ignore_ascii_case("llamacpp") || s.eq_ignore_ascii_case("llama-cpp") {
        "llama.cpp"
    } else {
        s
    };
    one_of(t, &Runtime::ALL, Runtime::cli_name)
}
fn parse_lora_targets(s: &str) -> Result<LoraTargets, String> {
    one_of(s, &LoraTargets::ALL, LoraTargets::cli_name)
}
fn parse_kv_alloc(s: &str) -> Result<KvAllocation, String> {
    match s.to_ascii_lowercase().as_str() {
        "contiguous" => Ok(KvAllocation::Contiguous),
        "paged" => Ok(KvAllocation::Paged),
        _ => Err(format!("'{s}' is not contiguous or paged")),
    }
}
fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}
fn parse_kind_filter(s: &str) -> Result<String, String> {
    let t = s.to_ascii_lowercase();
    if MachineKind::ALL.iter().any(|k| k.cli_name() == t) {
        Ok(t)
    } else {
        Err(format!(
            "'{s}' is not a machine kind: {}",
            MachineKind::ALL
                .iter()
                .map(|k| k.cli_name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Build the scenario from the arguments (a saved scenario first, then the options over it).
pub fn build_scenario(a: &ScenarioArgs, cat: &Catalog) -> Result<Scenario, CliError> {
    let mut s = match &a.scenario {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| CliError::input(format!("{}: {e}", p.display())))?;
            crate::io::export::load_scenario(&p.display().to_string(), &text)
                .map_err(|e| CliError::input(e.to_string()))?
        }
        None => Scenario::default(),
    };
    if let Some(id) = &a.model {
        let p = cat.model(id).ok_or_else(|| {
            CliError::input(format!(
                "--model: unknown preset '{id}' (try one of: {})",
                cat.models
                    .iter()
                    .take(12)
                    .map(|m| m.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        s.model = p.spec.clone();
        s.model_id = Some(p.id.clone());
    }
    if let Some(path) = &a.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
        s.model = crate::core::hf_config::parse_hf_config(&text)
            .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
        s.model_id = None;
    }
    if let Some(n) = a.params {
        s.model = ModelSpec::generic(n);
        s.model_id = None;
    }
    let remote = crate::io::hub::import_for_cli(
        a.hf.as_deref(),
        a.hf_file.as_deref(),
        a.url.as_deref(),
        a.weights,
    )
    .map_err(|e| CliError::input(e.to_string()))?;
    let local = [&a.gguf, &a.safetensors].into_iter().flatten();
    let local = local
        .map(|p| crate::io::import::import_path(p).map_err(|e| CliError::input(e.to_string())));
    for imp in local.chain(remote.map(Ok)) {
        let imp = imp?;
        s.model = imp.spec;
        s.model_id = None;
        if let Some(w) = imp.weights
            && a.weights.is_none()
        {
            s.weights = w;
        }
    }
    if let Some(v) = a.weights {
        s.weights = v;
    }
    if let Some(v) = a.kv {
        s.kv = v;
    }
    if let Some(v) = a.context {
        s.context = v;
    }
    if let Some(v) = a.batch {
        s.batch = v;
    }
    if let Some(v) = a.ubatch {
        s.ubatch = v;
    }
    if let Some(v) = a.mode {
        s.mode = v;
    }
    if let Some(v) = a.optimizer {
        s.optimizer = v;
    }
    if let Some(v) = a.checkpointing {
        s.checkpointing = v;
    }
    if let Some(v) = a.flash_attention {
        s.flash_attention = v;
    }
    if let Some(v) = a.kv_alloc {
        s.kv_allocation = v;
    }
    if let Some(v) = a.lora_rank {
        s.lora_rank = v;
    }
    if let Some(v) = a.lora_targets {
        s.lora_targets = v;
    }
    if let Some(v) = a.gpus {
        s.gpus = v;
    }
    if let Some(v) = a.zero {
        s.zero = v;
    }
    if let Some(v) = a.offload {
        s.offload = v;
    }
    if let Some(v) = a.framework {
        s.framework = v;
    }
    if let Some(v) = a.runtime {
        s.runtime = v;
        if v == Runtime::Vllm && a.kv_alloc.is_none() {
            s.kv_allocation = KvAllocation::Paged;
        }
    }
    if let Some(v) = a.gpu_memory_utilization {
        s.gpu_memory_utilization = v;
    }
    if a.pure_bf16 {
        s.pure_bf16 = true;
    }
    if let Some(v) = a.prompt {
        s.prompt_tokens = v;
    }
    if let Some(v) = a.train_tokens {
        s.train_tokens = v;
    }
    if s.prompt_tokens > s.context {
        s.prompt_tokens = s.context;
    }
    Ok(s)
}

/// The readable table of `headroom estimate`.
pub fn estimate_table(s: &Scenario, e: &Estimate) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let m = &s.model;
    let _ = writeln!(
        o,
        "{}: {} params ({} active){}",
        m.name,
        group_digits(e.params.total),
        group_digits(e.params.active),
        if m.is_estimated() {
            ", shape estimated"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "{} · weights {} · KV {} · context {} · batch {} · {} · {} GPU(s){}",
        s.mode.label(),
        s.weights.label(),
        s.kv.cli_name(),
        group_digits(s.context),
        s.batch,
        s.runtime.label(),
        s.gpus,
        if s.mode.is_training() {
            format!(" · ZeRO-{} · offload {}", s.zero, s.offload.cli_name())
        } else {
            String::new()
        }
    );
    let _ = writeln!(o);
    let w = e
        .components
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        o,
        "{:<w$}  {:>11}  {:>11}  {:<5}  {:<9}  formula",
        "component", "total", "per GPU", "where", "source"
    );
    for c in &e.components {
        let per = match c.placement {
            crate::core::Placement::Gpu => c.per_device.display_gib(),
            crate::core::Placement::Host => "—".into(),
        };
        let place = match c.placement {
            crate::core::Placement::Gpu => "GPU",
            crate::core::Placement::Host => "host",
        };
        let _ = writeln!(
            o,
            "{:<w$}  {:>11}  {:>11}  {:<5}  {:<9}  {}",
            c.name,
            c.bytes.display_gib(),
            per,
            place,
            c.provenance.label(),
            c.formula
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{:<w$}  {:>11}", "total", e.total().display_gib());
    if e.gpus > 0 {
        let _ = writeln!(
            o,
            "per GPU: {} (model states {}) · host RAM: {}",
            e.per_gpu_total().display_gib(),
            e.per_gpu_model_states().display_gib(),
            e.host_total().display_gib()
        );
    } else {
        let _ = writeln!(
            o,
            "CPU only: everything in host RAM: {}",
            e.host_total().display_gib()
        );
    }
    if e.kind_total(ComponentKind::KvCache).0 > 0 {
        let _ = writeln!(
            o,
            "KV cache per token: {} bytes",
            group_digits(e.kv_cache_per_token.0)
        );
    }
    for n in &e.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// The readable table of `headroom fit`.
pub fn fit_table(rs: &[FitResult]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let w = rs
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 48);
    let _ = writeln!(
        o,
        "{:<w$}  {:<12}  {:>11}  {:>9}  {:>10}  {:>8}  {:>10}",
        "machine", "verdict", "headroom", "decode/s", "prefill/s", "TTFT", "$/1M tok"
    );
    for r in rs {
        let name: String = r.name.chars().take(w).collect();
        let usd = r
            .usd_per_million_tokens
            .map(|u| format!("{u:.2}"))
            .unwrap_or_else(|| "—".into());
        let (d, p, t) = if r.fits() && r.training.is_none() {
            (
                format!("{:.1}", r.decode_tokens_per_s),
                format!("{:.0}", r.prefill_tokens_per_s),
                format!("{:.2}s", r.ttft_s),
            )
        } else {
            ("—".into(), "—".into(), "—".into())
        };
        let _ = writeln!(
            o,
            "{:<w$}  {:<12}  {:>11}  {:>9}  {:>10}  {:>8}  {:>10}",
            name,
            r.verdict_text(),
            display_signed_gib(r.headroom_bytes),
            d,
            p,
            t,
            usd
        );
        if let Some(tr) = &r.training {
            let _ = writeln!(
                o,
                "{:<w$}  training: {:.0} tok/s, step {:.2}s, run {:.1} h{}",
                "",
                tr.tokens_per_s,
                tr.step_seconds,
                tr.run_hours,
                tr.run_usd.map(|u| format!(", ${u:.0}")).unwrap_or_default()
            );
        }
    }
    o
}

/// Machines to fit: the named ones (`local` = this machine), else the catalog filtered by kind.
pub fn select_machines(
    cat: &mut Catalog,
    ids: &[String],
    kind: Option<&str>,
) -> Result<Vec<Machine>, CliError> {
    let mut out = Vec::new();
    if ids.is_empty() {
        for m in &cat.machines {
            if kind.is_none_or(|k| kind_matches(cat, m, k)) {
                out.push(m.clone());
            }
        }
        return Ok(out);
    }
    for id in ids {
        if id == "local" {
            use crate::io::detect::Detector;
            let d = crate::io::detect::SystemDetector::new(cat.clone()).detect();
            let (m, accs) = crate::io::detect::local_machine(&d, cat);
            for a in accs {
                if cat.accelerator(&a.id).is_none() {
                    cat.accelerators.push(a);
                }
            }
            out.push(m);
        } else {
            let m = find_machine(cat, id).ok_or_else(|| {
                CliError::input(format!(
                    "--machine: unknown machine '{id}' (see `headroom catalog list`)"
                ))
            })?;
            out.push(m.clone());
        }
    }
    Ok(out)
}

/// A machine by id, forgiving about the provider prefix and dots: `p5.48xlarge` finds
/// `aws-p5-48xlarge`.
pub fn find_machine<'a>(cat: &'a Catalog, id: &str) -> Option<&'a Machine> {
    if let Some(m) = cat.machine(id) {
        return Some(m);
    }
    let norm = id.trim().to_ascii_lowercase().replace(['.', '_', ' '], "-");
    let suffix = format!("-{norm}");
    let mut hits = cat
        .machines
        .iter()
        .filter(|m| m.id == norm || m.id.ends_with(&suffix));
    let first = hits.next()?;
    if hits.next().is_some() {
        None
    } else {
        Some(first)
    }
}

/// `--kind` semantics: `apple` = any machine with an Apple GPU; `desktop` includes workstations.
pub fn kind_matches(cat: &Catalog, m: &Machine, kind: &str) -> bool {
    match kind {
        "apple" => m
            .gpu
            .as_deref()
            .and_then(|g| cat.accelerator(g))
            .is_some_and(|a| a.vendor == crate::core::catalog::Vendor::Apple),
        "desktop" => matches!(m.kind, MachineKind::Desktop | MachineKind::Workstation),
        k => m.kind.cli_name() == k,
    }
}

/// Run the CLI. Returns the text for stdout.
pub fn run(cli: Cli) -> Result<String, CliError> {
    let (mut cat, warnings) = crate::io::catalog::load_default();
    for w in &warnings {
        eprintln!("headroom: {w}");
    }
    match cli.command {
        None => Ok(String::new()),
        Some(Command::Estimate(a)) => {
            let s = build_scenario(&a.scenario, &cat)?;
            let e = estimate(&s);
            if a.json {
                Ok(format!(
                    "{}\n",
                    serde_json::to_string_pretty(&crate::io::json::estimate_json(&e))
                        .expect("json")
                ))
            } else {
                Ok(estimate_table(&s, &e))
            }
        }
        Some(Command::Fit(a)) => {
            let s = build_scenario(&a.scenario, &cat)?;
            let machines = select_machines(&mut cat, &a.machines, a.kind.as_deref())?;
            let mut st = FitSettings {
                calibration: stored_calibration(),
                ..FitSettings::default()
            };
            if let Some(e) = a.electricity {
                st.electricity_usd_per_kwh = e.max(0.0);
            }
            let mut rs = fit_all(&s, &machines, &cat, &st);
            if a.fits_only {
                rs.retain(|r| r.fits());
            }
            if a.json {
                let v: Vec<_> = rs.iter().map(crate::io::json::fit_json).collect();
                Ok(format!(
                    "{}\n",
                    serde_json::to_string_pretty(&v).expect("json")
                ))
            } else {
                Ok(fit_table(&rs))
            }
        }
        Some(Command::Report(a)) => {
            let s = build_scenario(&a.scenario, &cat)?;
            let st = FitSettings {
                calibration: stored_calibration(),
                ..FitSettings::default()
            };
            let machines = if a.machines.is_empty() && a.kind.is_none() {
                crate::cli::recommend::report_machines(&s, &mut cat, &st)
            } else {
                select_machines(&mut cat, &a.machines, a.kind.as_deref())?
            };
            let e = estimate(&s);
            let rs = fit_all(&s, &machines, &cat, &st);
            let format = match a.format.as_str() {
                "html" => crate::io::export::ReportFormat::Html,
                "json" => crate::io::export::ReportFormat::Json,
                _ => crate::io::export::ReportFormat::Markdown,
            };
            let input = crate::io::export::ReportInput {
                scenario: &s,
                estimate: &e,
                fits: &rs,
                catalog: &cat,
                settings: &st,
                generated: today(),
                version: env!("CARGO_PKG_VERSION"),
            };
            crate::cli::report::run(&input, format, &a.output).map_err(CliError::input)
        }
        Some(Command::Recommend(a)) => crate::cli::recommend::run(&a, &mut cat),
        Some(Command::Detect { json, bench }) => {
            Ok(crate::cli::detect::run_with(&cat, json, bench))
        }
        Some(Command::Calibrate { file }) => {
            let d = crate::io::detect::Detector::detect(&crate::io::detect::SystemDetector::new(
                cat.clone(),
            ));
            let c = crate::io::detect::catalog_with_local(&d, &cat);
            let m = c
                .machine(crate::io::detect::LOCAL_MACHINE_ID)
                .cloned()
                .ok_or_else(|| CliError::input("this machine could not be described"))?;
            let dir = crate::io::calibration::config_dir().ok_or_else(|| {
                CliError::input("no config directory on this system (set HEADROOM_CONFIG_DIR)")
            })?;
            crate::cli::calibrate::calibrate_file(&file, &m, &c, &dir, &today())
                .map_err(CliError::input)
        }
        Some(Command::Catalog { command }) => match command {
            CatalogCommand::List { kind, json } => {
                Ok(crate::cli::catalog::list(&cat, kind.as_deref(), json))
            }
            CatalogCommand::Validate { file } => {
                crate::cli::catalog::validate_file(&file).map_err(CliError::input)
            }
        },
    }
}

/// This machine's stored calibration (`headroom calibrate`); a broken file is a warning.
fn stored_calibration() -> Option<crate::core::speed::bench::Calibration> {
    crate::io::calibration::load_default().unwrap_or_else(|e| {
        eprintln!("headroom: {e} (ignored)");
        None
    })
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}
