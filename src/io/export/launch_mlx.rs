//! Launch settings for MLX (mlx-lm): `mlx_lm.server` and `mlx_lm.generate`.
//!
//! Flags from mlx-lm's own argument parsers (ml-explore/mlx-lm, `mlx_lm/server.py` `main`:
//! `--model`, `--host` (default 127.0.0.1), `--port` (default 8080), `--prefill-step-size`
//! (default 2048), `--decode-concurrency` (default 32), `--prompt-concurrency` (default 8),
//! `--max-tokens`; `mlx_lm/generate.py` `setup_arg_parser`: `--model`, `--prompt`,
//! `--max-tokens`, `--max-kv-size`, `--kv-bits`, `--kv-group-size`, `--quantized-kv-start`).
//! mlx-lm's server has no KV-quantisation flag; `mlx_lm.generate` has no prefill-step flag.

use super::launch::{LaunchSetting, Launcher, model_arg};
use super::text::{shell, slug};
use crate::core::fit::{FitResult, Verdict};
use crate::core::precision::WeightPrecision;
use crate::core::scenario::Scenario;

/// mlx-community's repo suffix for a precision (`-4bit`, `-8bit`, `-bf16`, …).
pub fn mlx_community_suffix(w: WeightPrecision) -> String {
    match w {
        WeightPrecision::Bf16 => "bf16".into(),
        WeightPrecision::Fp16 => "fp16".into(),
        WeightPrecision::Fp32 => "fp32".into(),
        WeightPrecision::Mxfp4 => "MXFP4".into(),
        p => match p.mlx_bits() {
            Some(b) => format!("{b}bit"),
            None => mlx_community_suffix(crate::core::mlx::nearest_precision(p)),
        },
    }
}

/// The `--model` argument: the imported Hub repo when there is one, else the mlx-community repo
/// named after the model and precision, with the note to check it.
fn mlx_model(s: &Scenario, notes: &mut Vec<String>) -> String {
    let (model, placeholder) = model_arg(s, false);
    if !placeholder {
        return model;
    }
    let repo = format!(
        "mlx-community/{}-{}",
        slug(&s.model.name),
        mlx_community_suffix(s.weights)
    );
    notes.push(format!(
        "{repo} is the mlx-community naming for {} at this precision; check the repo exists (or convert: mlx_lm.convert --hf-path <repo> -q --q-bits N).",
        s.model.name
    ));
    if !crate::core::mlx::loads_weights(s.weights) {
        notes.push(format!(
            "MLX does not load {} weights; the estimate's size is for them, the command for the nearest MLX precision.",
            s.weights.label()
        ));
    }
    repo
}

/// Both mlx-lm commands for the scenario on the fitted machine: the OpenAI-compatible server
/// first, then a one-off generation.
pub fn mlx_settings(s: &Scenario, fit: &FitResult) -> Vec<LaunchSetting> {
    let sc = s.clamped();
    let mut notes: Vec<String> = Vec::new();
    if fit.verdict == Verdict::None {
        notes.push(format!(
            "This scenario does not run on {} with MLX: {}",
            fit.name,
            fit.notes
                .first()
                .map_or_else(|| "it does not fit".to_string(), ToString::to_string)
        ));
    }
    let model = mlx_model(&sc, &mut notes);
    vec![
        server(&sc, &model, notes.clone()),
        generate(&sc, &model, notes),
    ]
}

/// `mlx_lm.server`: the model, the address and the prefill step.
fn server(sc: &Scenario, model: &str, mut notes: Vec<String>) -> LaunchSetting {
    let step = sc
        .launch
        .prefill_step
        .unwrap_or(crate::core::mlx::PREFILL_STEP_SIZE);
    let mut lines = vec![
        format!("mlx_lm.server --model {}", shell(model)),
        format!("--host 127.0.0.1 --port 8080 --prefill-step-size {step}"),
    ];
    if sc.batch > 1 {
        lines.push(format!("--decode-concurrency {}", sc.batch));
        notes.push(format!(
            "--decode-concurrency {} decodes that many requests together; each keeps its own KV cache (mlx-lm's BatchKVCache).",
            sc.batch
        ));
    }
    notes.push(
        "mlx_lm.server wires up to Metal's recommended working set at start (mx.set_wired_limit); it has no --kv-bits: a quantised cache needs mlx_lm.generate."
            .into(),
    );
    LaunchSetting {
        runtime: Launcher::Mlx,
        title: "MLX server (mlx_lm.server)".into(),
        text: lines.join(" \\\n  "),
        note: notes.join(" "),
    }
}

/// `mlx_lm.generate`: one prompt, with the cache quantised when the scenario asks for it.
fn generate(sc: &Scenario, model: &str, mut notes: Vec<String>) -> LaunchSetting {
    let out = sc.context.saturating_sub(sc.prompt_tokens).max(1);
    let mut lines = vec![
        format!("mlx_lm.generate --model {}", shell(model)),
        format!("--max-tokens {out} --prompt -"),
    ];
    if let (Some(k), Some(v)) = (
        crate::core::mlx::kv_bits(sc.kv.k),
        crate::core::mlx::kv_bits(sc.kv.v),
    ) {
        lines.push(format!(
            "--kv-bits {} --kv-group-size {} --quantized-kv-start 0",
            k.max(v),
            crate::core::mlx::KV_GROUP_SIZE
        ));
        notes.push(
            "--quantized-kv-start 0 quantises the cache from the first token (the default, 5000, keeps the first 5000 tokens 16-bit)."
                .into(),
        );
    }
    notes.push(
        "--prompt - reads the prompt from standard input; --max-kv-size N would make every cache a rotating window of N tokens."
            .into(),
    );
    LaunchSetting {
        runtime: Launcher::Mlx,
        title: "MLX one-off generation (mlx_lm.generate)".into(),
        text: lines.join(" \\\n  "),
        note: notes.join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_follow_mlx_community() {
        assert_eq!(mlx_community_suffix(WeightPrecision::Mlx4), "4bit");
        assert_eq!(mlx_community_suffix(WeightPrecision::Mlx8), "8bit");
        assert_eq!(mlx_community_suffix(WeightPrecision::Bf16), "bf16");
        assert_eq!(mlx_community_suffix(WeightPrecision::Q4_0), "4bit");
    }
}
