//! The scenario from the command line: a saved scenario first, then each option over it.

use super::app::CliError;
use super::args::ScenarioArgs;
use crate::core::catalog::Catalog;
use crate::core::fit::FitSettings;
use crate::core::format::{group_digits, input_value, one_line};
use crate::core::model::ModelSpec;
use crate::core::scenario::{Input, KvAllocation, Mode, Scenario};
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

/// Build the scenario from the arguments (a saved scenario first, then the options over it),
/// in phases: the saved scenario, the model source, the other flags, the checks, the rules.
pub fn build_scenario(a: &ScenarioArgs, cat: &Catalog) -> Result<Scenario, CliError> {
    // `--command "llama-server …"`: the runtime's own flags, under the ones given here.
    // Image generation is sized by `core::diffusion` (estimate and fit only).
    super::image::refuse_elsewhere(a)?;
    let merged = super::launch_line::merge(a)?;
    let a = &merged;
    let mut s = saved_or_default(a)?;
    apply_model_source(a, cat, &mut s)?;
    // The precision the file's exact bytes hold at: what the import (or the saved scenario) set.
    let stored = s.model.file_weights.as_ref().map(|_| s.weights);
    apply_flags(a, &mut s);
    apply_speculative(a, cat, &mut s)?;
    apply_vision(a, &mut s)?;
    check_flags(a, &s)?;
    // The scenario rules the window applies too (the prompt to the context, every number in its
    // domain), each change said on stderr.
    let (normal, clamps) = s.normalized();
    s = normal;
    for c in clamps {
        eprintln!("headroom: note: {c}");
    }
    // A file's exact bytes hold at its own precision only: another one (an explicit --weights,
    // or QLoRA's NF4 / a full fine-tune's BF16) is sized from the architecture at that precision.
    if let Some(stored) = stored {
        let held = crate::io::import::held_precision(s.mode, s.weights);
        if let Some(note) = crate::io::import::resize_weights(&mut s.model, Some(stored), held) {
            eprintln!("headroom: note: {note}");
        }
    }
    Ok(s)
}

/// The `--scenario` file, held to the flags' ranges, or the default scenario.
pub(super) fn saved_or_default(a: &ScenarioArgs) -> Result<Scenario, CliError> {
    Ok(match &a.scenario {
        Some(p) => {
            let text = crate::io::read_text_limited(p, crate::io::limits::SCENARIO_FILE)
                .map_err(|e| CliError::input(format!("{}: {e}", p.display())))?;
            let loaded = crate::io::export::load_scenario(&p.display().to_string(), &text)
                .map_err(|e| CliError::input(e.to_string()))?;
            // A file is held to the flags' ranges (Scenario::problems, the one set of rules).
            if let Some(why) = problems_text(&loaded.problems(), |p| p.to_string()) {
                return Err(CliError::input(format!("{}: {why}", p.display())));
            }
            loaded
        }
        None => Scenario::default(),
    })
}

/// The model: a preset (`--model`), a config.json, a parameter count, a model file or a Hub
/// repo, each over the one before.
fn apply_model_source(a: &ScenarioArgs, cat: &Catalog, s: &mut Scenario) -> Result<(), CliError> {
    if let Some(id) = &a.model {
        let p = cat
            .model(id)
            .ok_or_else(|| CliError::usage(unknown_model(id, cat)))?;
        s.model = p.spec.clone();
        s.model_id = Some(p.id.clone());
        // The precision the publisher ships; --weights overrides it below.
        s.weights = p.default_weights();
    }
    if let Some(path) = &a.config {
        let text = crate::io::read_text_limited(path, crate::io::limits::JSON_FILE)
            .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
        s.model = crate::io::import::hf::config_spec(path, &text)?;
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
    .map_err(CliError::from)?;
    let local = [&a.gguf, &a.safetensors].into_iter().flatten();
    let local = local.map(|p| crate::io::import::import_path(p).map_err(CliError::from));
    for imp in local.chain(remote.map(Ok)) {
        let imp = imp?;
        for n in &imp.notes {
            eprintln!("headroom: note: {}", one_line(n));
        }
        s.model = imp.spec;
        s.model_id = None;
        match imp.weights {
            Some(w) => s.weights = w,
            None if a.weights.is_none() => eprintln!(
                "headroom: note: the file's precision matches no preset: the weights are its exact bytes, and the precision shown ({}) is not the file's (--weights sizes them at one)",
                s.weights.label()
            ),
            None => {}
        }
    }
    Ok(())
}

/// `--mmproj FILE`, `--images`, `--image-tokens`, `--image-size`, `--no-mmproj-offload`: a
/// vision-language model's encoder read from its mmproj GGUF, or from the model's own config.json
/// (`--config`, `--safetensors`: Qwen2.5-VL's `vision_config`) when an image flag asks for it.
fn apply_vision(a: &ScenarioArgs, s: &mut Scenario) -> Result<(), CliError> {
    let asked = a.images.is_some()
        || a.image_tokens.is_some()
        || a.image_size.is_some()
        || a.no_mmproj_offload;
    let encoder = match &a.mmproj {
        Some(path) => Some(crate::io::import::mmproj::read_mmproj(path).map_err(CliError::from)?),
        None if asked && s.vision.is_none() => config_tower(a)?,
        None => None,
    };
    let Some(encoder) = encoder else {
        if asked && s.vision.is_none() {
            return Err(CliError::usage(
                "--images / --image-tokens / --image-size / --no-mmproj-offload need --mmproj FILE (the model's vision projector GGUF) or a --config / --safetensors whose config.json has a vision tower (qwen2_5_vl, llava, llava_next)"
                    .to_string(),
            ));
        }
        if let Some(v) = s.vision.as_mut() {
            v.images = a.images.unwrap_or(v.images);
            v.image_tokens = a.image_tokens.unwrap_or(v.image_tokens);
            v.on_cpu |= a.no_mmproj_offload;
            if let Some((w, h)) = a.image_size {
                v.encoder = sized(&v.encoder, w, h)?;
            }
        }
        return Ok(());
    };
    if s.mode != Mode::Inference {
        return Err(CliError::usage(
            "--mmproj / --images: images are sized for inference (--mode inference)".to_string(),
        ));
    }
    let encoder = match a.image_size {
        Some((w, h)) => sized(&encoder, w, h)?,
        None => encoder,
    };
    s.vision = Some(crate::core::vision::VisionInputs {
        encoder,
        images: a.images.unwrap_or(1),
        image_tokens: a.image_tokens.unwrap_or(0),
        on_cpu: a.no_mmproj_offload,
    });
    Ok(())
}

/// The vision tower of the `--config` or `--safetensors` model's config.json, if it has one.
fn config_tower(a: &ScenarioArgs) -> Result<Option<crate::core::vision::VisionEncoder>, CliError> {
    for path in [&a.safetensors, &a.config].into_iter().flatten() {
        if let Some(t) = crate::io::import::hf::vision_tower_of(path).map_err(CliError::from)? {
            return Ok(Some(t));
        }
    }
    Ok(None)
}

/// `--image-size` on a tower that takes any size (dynamic or tiling); a fixed-size one is one
/// line naming the flag.
fn sized(
    e: &crate::core::vision::VisionEncoder,
    w: u64,
    h: u64,
) -> Result<crate::core::vision::VisionEncoder, CliError> {
    e.at_image(w, h).ok_or_else(|| {
        CliError::usage(format!(
            "--image-size: this vision encoder ({}) takes {}² images only; --image-tokens sets the tokens per image",
            if e.projector.is_empty() {
                "mmproj"
            } else {
                e.projector.as_str()
            },
            e.image_size
        ))
    })
}

/// `headroom serve` and `headroom cluster` plan generation; an embedding pass is sized by
/// `estimate`, `fit` and `recommend`.
pub fn refuse_embed(s: &Scenario, command: &str) -> Result<(), CliError> {
    if s.mode.is_embed() {
        return Err(CliError::usage(format!(
            "--mode embed: `headroom {command}` plans text generation; size an embedding model with `headroom fit --mode embed` (sequences/s per machine)"
        )));
    }
    Ok(())
}

/// `--speculative`, `--draft`, `--draft-weights`, `--draft-tokens`, `--acceptance`: the drafter
/// read like the model (a preset id or a local file), checked against the model now so a
/// mismatch is one line naming the flag.
fn apply_speculative(a: &ScenarioArgs, cat: &Catalog, s: &mut Scenario) -> Result<(), CliError> {
    use crate::core::speculative::{SpecMethod, default_method, draft_spec};
    let asked = a.speculative.is_some()
        || a.draft.is_some()
        || a.draft_tokens.is_some()
        || a.acceptance.is_some()
        || a.draft_weights.is_some();
    if !asked {
        return Ok(());
    }
    let fresh = s.speculative.is_none();
    let mut sp = s.speculative.clone().unwrap_or_default();
    match a.speculative {
        Some(m) => sp.method = m,
        None if a.draft.is_some() => sp.method = SpecMethod::DraftModel,
        // `--draft-tokens` / `--acceptance` alone: the drafter the window turns on too.
        None if fresh => sp.method = default_method(&s.model),
        None => {}
    }
    if let Some(d) = &a.draft {
        let (spec, id) = match cat.model(d) {
            Some(p) => (p.spec.clone(), p.id.clone()),
            None => {
                let path = std::path::Path::new(d);
                if !path.exists() {
                    return Err(CliError::usage(format!(
                        "--draft {d}: neither a preset nor a file; {}",
                        unknown_model(d, cat)
                    )));
                }
                let imp = if path.extension().is_some_and(|e| e == "json") {
                    let text = crate::io::read_text_limited(path, crate::io::limits::JSON_FILE)
                        .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
                    crate::io::import::hf::config_spec(path, &text)?
                } else {
                    let imp = crate::io::import::import_path(path).map_err(CliError::from)?;
                    if sp.draft_weights.is_none() {
                        sp.draft_weights = imp.weights;
                    }
                    imp.spec
                };
                (imp, d.clone())
            }
        };
        sp.draft = Some(spec);
        sp.draft_id = Some(id);
    }
    if let Some(w) = a.draft_weights {
        sp.draft_weights = Some(w);
    }
    if let Some(n) = a.draft_tokens {
        sp.tokens = n;
    }
    if let Some(x) = a.acceptance {
        sp.acceptance = Some(x);
    }
    if s.mode != Mode::Inference {
        return Err(CliError::usage(
            "--speculative: speculative decoding is for inference (--mode inference)".to_string(),
        ));
    }
    draft_spec(&s.model, &sp)
        .map_err(|e| CliError::usage(format!("--speculative {}: {e}", sp.method.cli_name())))?;
    s.speculative = Some(sp);
    Ok(())
}

/// Every other option over the scenario.
fn apply_flags(a: &ScenarioArgs, s: &mut Scenario) {
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
    if a.gpu_layers.is_some() || a.n_cpu_moe.is_some() {
        s.launch.gpu_layers = a.gpu_layers;
        s.launch.n_cpu_moe = a.n_cpu_moe;
    }
    if let Some(v) = &a.tensor_split {
        s.launch.tensor_split = v.0.clone();
    }
    if a.threads.is_some() {
        s.launch.threads = a.threads;
    }
    if a.prefill_step.is_some() {
        s.launch.prefill_step = a.prefill_step;
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
}

/// What the options ask that cannot be: a prompt longer than the context asked with it, a LoRA
/// rank above the hidden size, any value outside the rules.
fn check_flags(a: &ScenarioArgs, s: &Scenario) -> Result<(), CliError> {
    // Asked for both: the user means it, so say which cannot be (a default or a mix's prompt
    // over a shorter --context is lowered by the scenario rules below, with a note).
    if let Some(p) = a.prompt
        && p > s.context
    {
        return Err(CliError::usage(format!(
            "--prompt {} is longer than the context ({} tokens): a prompt must fit in --context",
            group_digits(p),
            group_digits(s.context)
        )));
    }
    // llama.cpp applies -ts to the layers; the expert split (--n-cpu-moe) is modelled on even
    // GPUs only.
    if !s.launch.tensor_split.is_empty() && s.launch.n_cpu_moe.is_some() {
        return Err(CliError::usage(
            "--tensor-split with --n-cpu-moe: headroom models the expert split over even GPUs only; drop one",
        ));
    }
    // LoRA adapts a d × k matrix with r × (d + k) parameters; a rank past the hidden size is
    // larger than the matrices it adapts (Hu et al. 2021, "LoRA", §4.1: r ≪ min(d, k)).
    if matches!(s.mode, Mode::Lora | Mode::Qlora) && s.lora_rank > s.model.hidden.max(1) {
        return Err(CliError::usage(format!(
            "--lora-rank {} is above the model's hidden size ({}): the adapters would be larger than the matrices they adapt",
            group_digits(s.lora_rank),
            group_digits(s.model.hidden)
        )));
    }
    // The whole scenario within the rules: a model read from a file (0 layers, 0 heads) or any
    // value no flag could set.
    if let Some(why) = problems_text(&s.problems(), |p| match p.input {
        Input::Model(_) => format!("{}: {p}", model_source(a)),
        i => format!(
            "{} {} is outside {} … {}",
            i.flag(),
            input_value(p.value),
            input_value(p.lo),
            input_value(p.hi)
        ),
    }) {
        return Err(CliError::input(why));
    }
    Ok(())
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

/// Where the model came from, for a message about its shape.
fn model_source(a: &ScenarioArgs) -> String {
    let path = [&a.config, &a.gguf, &a.safetensors]
        .into_iter()
        .flatten()
        .next()
        .map(|p| p.display().to_string());
    path.or_else(|| a.hf.as_ref().map(|h| format!("--hf {h}")))
        .or_else(|| a.url.clone())
        .or_else(|| a.scenario.as_ref().map(|p| p.display().to_string()))
        .unwrap_or_else(|| "the model".into())
}

/// The first problem as a line, "(and N more)" when there are others.
fn problems_text(
    problems: &[crate::core::scenario::Problem],
    show: impl Fn(&crate::core::scenario::Problem) -> String,
) -> Option<String> {
    let first = problems.first()?;
    let more = match problems.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(format!("{}{more}", show(first)))
}

/// `--gpus` on a command that fits each machine with its own GPUs is refused, not ignored.
pub fn refuse_gpus(a: &ScenarioArgs, command: &str) -> Result<(), CliError> {
    match a.gpus {
        Some(n) => Err(CliError::usage(format!(
            "--gpus {n}: `{command}` uses each machine's own GPUs (pick machines with --machine or --kind); --gpus sets the GPUs of `estimate` and `report`"
        ))),
        None => Ok(()),
    }
}

/// "--model: unknown preset 'llama3-8b' (nearest: llama-3-8b, …)": the preset ids nearest to
/// `id` by edit distance, else where to list them all.
fn unknown_model(id: &str, cat: &Catalog) -> String {
    let shown = one_line(id);
    let near = nearest_ids(id, cat.models.iter().map(|m| m.id.as_str()), 5);
    if near.is_empty() {
        format!("--model: unknown preset '{shown}' (list them: headroom catalog models)")
    } else {
        format!(
            "--model: unknown preset '{shown}' (nearest: {}; all: headroom catalog models)",
            near.join(", ")
        )
    }
}

/// Up to `n` of `ids` nearest to `typed` by Levenshtein distance (case-insensitive), nearest
/// first; only those within a third of the longer name (at least 2 edits), so a wild guess gets
/// no list.
pub fn nearest_ids<'a>(typed: &str, ids: impl Iterator<Item = &'a str>, n: usize) -> Vec<&'a str> {
    let t: Vec<char> = typed.trim().to_lowercase().chars().take(128).collect();
    let mut scored: Vec<(usize, &str)> = ids
        .filter_map(|id| {
            let c: Vec<char> = id.to_lowercase().chars().collect();
            let d = levenshtein(&t, &c);
            let bound = (t.len().max(c.len()) / 3).max(2);
            // A prefix typed in full ("qwen3" for qwen3-8b) is near too.
            let prefix = t.len() >= 3 && c.starts_with(&t);
            (d <= bound || prefix).then_some((if prefix { d.min(bound) } else { d }, id))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(n).map(|(_, id)| id).collect()
}

/// Edit distance (insertions, deletions, substitutions), two rows.
fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_ids_by_edit_distance() {
        let ids = [
            "llama-3-8b",
            "llama-3-70b",
            "qwen2.5-0.5b",
            "qwen3-8b",
            "mixtral-8x7b",
        ];
        let near = nearest_ids("llama3-8b", ids.iter().copied(), 5);
        assert_eq!(near.first(), Some(&"llama-3-8b"), "{near:?}");
        assert!(!near.contains(&"qwen2.5-0.5b"), "{near:?}");
        assert_eq!(
            nearest_ids("QWEN3-8B", ids.iter().copied(), 5)[0],
            "qwen3-8b"
        );
        assert!(nearest_ids("zzzzzzzzzzzz", ids.iter().copied(), 5).is_empty());
        assert_eq!(levenshtein(&['a', 'b'], &['b']), 1);
    }
}
