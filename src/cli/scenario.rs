//! The scenario from the command line: a saved scenario first, then each option over it.

use super::app::CliError;
use super::args::ScenarioArgs;
use crate::core::catalog::Catalog;
use crate::core::fit::FitSettings;
use crate::core::model::ModelSpec;
use crate::core::scenario::{KvAllocation, Scenario};
use crate::core::serving::{Load, ServingInputs};

/// The serving options over the scenario's serving inputs (a mix was applied before).
fn apply_serving(a: &ScenarioArgs, v: &mut ServingInputs) {
    if let Some(n) = a.users {
        v.load = Some(Load::Users(n));
    }
    if let Some(r) = a.rate {
        v.load = Some(Load::RequestsPerSecond(r));
    }
    if let Some(o) = a.output_tokens {
        v.output_tokens = o;
        v.mix = v.mix.filter(|_| a.mix.is_some());
    }
    if let Some(p) = a.prefix_share {
        v.prefix_share = p;
    }
    if let Some(t) = a.ttft {
        v.target.ttft_p95_s = t;
    }
    if let Some(t) = a.user_tokens_per_s {
        v.target.min_tokens_per_s = t;
    }
    if let Some(e) = a.engine {
        v.engine = e;
    }
    if a.tp.is_some() {
        v.tensor_parallel = a.tp;
    }
    if a.max_num_seqs.is_some() {
        v.max_num_seqs = a.max_num_seqs;
    }
    if a.max_num_batched_tokens.is_some() {
        v.max_num_batched_tokens = a.max_num_batched_tokens;
    }
    if a.prefix_caching.is_some() {
        v.prefix_caching = a.prefix_caching;
    }
}

/// Build the scenario from the arguments (a saved scenario first, then the options over it).
pub fn build_scenario(a: &ScenarioArgs, cat: &Catalog) -> Result<Scenario, CliError> {
    let mut s = match &a.scenario {
        Some(p) => {
            let text = crate::io::read_text_limited(p, crate::io::limits::SCENARIO_FILE)
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
        // The precision the publisher ships; --weights overrides it below.
        s.weights = p.default_weights();
    }
    if let Some(path) = &a.config {
        let text = crate::io::read_text_limited(path, crate::io::limits::JSON_FILE)
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
        // A chosen --kv-alloc (applied above) wins over the runtime's own allocation.
        let chosen = a.kv_alloc.is_some() || s.kv_allocation == KvAllocation::Paged;
        s.set_runtime(v, chosen);
    }
    if let Some(v) = a.gpu_memory_utilization {
        s.gpu_memory_utilization = v;
    }
    if a.pure_bf16 {
        s.pure_bf16 = true;
    }
    if let Some(mix) = a.mix {
        s.prompt_tokens = s.serving.apply_mix(mix);
    }
    if let Some(v) = a.prompt {
        s.prompt_tokens = v;
    }
    apply_serving(a, &mut s.serving);
    if let Some(v) = a.train_tokens {
        s.train_tokens = v;
    }
    // The scenario rules the window applies too (the context to the model's trained length, the
    // prompt to the context), each change said on stderr.
    let (s, clamps) = s.normalized();
    for c in clamps {
        eprintln!("headroom: note: {c}");
    }
    Ok(s)
}

/// The fit settings every command runs with: this machine's stored calibration, the electricity
/// price (`--electricity`, never below zero) and the GPU-limit raise (`--raise-gpu-limit`).
pub fn fit_settings(a: &ScenarioArgs, electricity: Option<f64>) -> FitSettings {
    let mut st = FitSettings {
        calibration: super::calibrate::stored(),
        raise_gpu_limit: a.raise_gpu_limit,
        ..FitSettings::default()
    };
    if let Some(e) = electricity {
        st.electricity_usd_per_kwh = e.max(0.0);
    }
    st
}
