//! Launch settings: the command line or config file that runs a scenario on a fitted machine.
//!
//! Flag spellings are taken from each tool's own documentation (checked, and cited where used):
//! - llama.cpp `llama-server`: tools/server/README.md ("Common params" / "Server-specific params",
//!   generated from common/arg.cpp by llama-gen-docs),
//!   <https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md>.
//! - vLLM `vllm serve`: engine arguments, <https://docs.vllm.ai/en/latest/configuration/engine_args.html>
//!   (vllm/engine/arg_utils.py; `--kv-cache-dtype` values from vllm/config/cache.py `CacheDType`,
//!   `--cpu-offload-gb` "space in GiB to offload to CPU, per GPU" from vllm/config/offload.py).
//! - DeepSpeed: configuration JSON, <https://www.deepspeed.ai/docs/config-json/>
//!   (deepspeedai/DeepSpeed docs/_pages/config-json.md).
//! - accelerate: `from_pretrained(device_map="auto", max_memory=…, offload_folder=…)`,
//!   <https://huggingface.co/docs/accelerate/usage_guides/big_modeling>; `accelerate launch`
//!   flags, <https://huggingface.co/docs/accelerate/package_reference/cli>
//!   (huggingface/accelerate docs/source/package_reference/cli.md).

use super::text::{py_str, shell, slug};
use crate::core::estimate::{ComponentKind, estimate};
use crate::core::fit::{FitResult, Verdict};
use crate::core::format;
use crate::core::precision::{KvPrecision, WeightPrecision};
use crate::core::scenario::{Checkpointing, Mode, Offload, Optimizer, Runtime, Scenario};
use crate::core::speculative::SpecMethod;
use crate::core::units::{Bytes, GIB};
use serde::Serialize;
use serde_json::json;

/// Which tool a launch setting is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Launcher {
    /// `llama-server` command line.
    LlamaCpp,
    /// `vllm serve` command line.
    Vllm,
    /// transformers + accelerate `from_pretrained(device_map="auto", …)` (Python).
    Accelerate,
    /// A DeepSpeed configuration file (JSON).
    #[serde(rename = "deepspeed")]
    DeepSpeed,
    /// `accelerate launch --use_deepspeed …` command line.
    AccelerateLaunch,
    /// `torchrun` on every node of a cluster (DeepSpeed or Megatron-LM).
    Torchrun,
    /// A DeepSpeed hostfile (one `host slots=N` line per node).
    Hostfile,
    /// An accelerate config file (YAML) for FSDP across nodes.
    AccelerateConfig,
    /// `ray start` on every node, then `vllm serve` on the head.
    Ray,
    /// `rpc-server` on every other machine, then `llama-server --rpc` on the host.
    LlamaRpc,
    /// `mlx_lm.server` / `mlx_lm.generate` (MLX on Apple silicon).
    Mlx,
}

impl Launcher {
    pub const fn label(self) -> &'static str {
        match self {
            Launcher::LlamaCpp => "llama.cpp",
            Launcher::Vllm => "vLLM",
            Launcher::Accelerate => "accelerate",
            Launcher::DeepSpeed => "DeepSpeed",
            Launcher::AccelerateLaunch => "accelerate launch",
            Launcher::Torchrun => "torchrun",
            Launcher::Hostfile => "DeepSpeed hostfile",
            Launcher::AccelerateConfig => "accelerate config",
            Launcher::Ray => "Ray + vLLM",
            Launcher::LlamaRpc => "llama.cpp RPC",
            Launcher::Mlx => "MLX (mlx-lm)",
        }
    }
    /// The language of [`LaunchSetting::text`], for code fences: "sh", "python" or "json".
    pub const fn language(self) -> &'static str {
        match self {
            Launcher::LlamaCpp
            | Launcher::Vllm
            | Launcher::AccelerateLaunch
            | Launcher::Torchrun
            | Launcher::Ray
            | Launcher::LlamaRpc
            | Launcher::Mlx => "sh",
            Launcher::Accelerate => "python",
            Launcher::DeepSpeed => "json",
            Launcher::AccelerateConfig => "yaml",
            Launcher::Hostfile => "text",
        }
    }
}

/// A ready-to-use command line, config file or code snippet, with a note on what to adjust.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchSetting {
    pub runtime: Launcher,
    /// "llama.cpp server", "DeepSpeed config (ds_config.json)", …
    pub title: String,
    /// The command line, config file or code, to copy as is.
    pub text: String,
    /// What to replace and what the numbers mean.
    pub note: String,
}

/// The launch settings that apply to the scenario's mode on the fitted machine: inference →
/// llama.cpp, vLLM and accelerate (the scenario's runtime first; under MLX its two mlx-lm
/// commands lead); training → a DeepSpeed config and the `accelerate launch` line that uses it.
pub fn launch_settings(s: &Scenario, fit: &FitResult) -> Vec<LaunchSetting> {
    if s.mode.is_training() {
        return vec![deepspeed(s, fit), accelerate_launch(s, fit)];
    }
    let mut v = vec![llama_cpp(s, fit), vllm(s, fit), accelerate(s, fit)];
    if s.runtime == Runtime::Mlx {
        let mut m = super::launch_mlx::mlx_settings(s, fit);
        m.append(&mut v);
        return m;
    }
    let first = match s.runtime {
        Runtime::Vllm => Some(Launcher::Vllm),
        Runtime::Transformers => Some(Launcher::Accelerate),
        Runtime::LlamaCpp | Runtime::Generic | Runtime::Mlx => None,
    };
    if let Some(f) = first {
        v.sort_by_key(|l| l.runtime != f);
    }
    v
}

/// A model read from the Hub: its source is `ENDPOINT/ORG/NAME@REVISION` (see
/// `io::hub::fetch_hub`). Returns the repo id and the revision.
pub(super) fn hub_repo(path: &str) -> Option<(String, String)> {
    let (_, rest) = path.split_once("://")?;
    let (left, rev) = rest.rsplit_once('@')?;
    let lower = rev.to_ascii_lowercase();
    if lower.ends_with(".gguf") || lower.ends_with(".safetensors") {
        return None;
    }
    // The authority, then at least ORG/NAME.
    let mut segs = left.rsplit('/');
    let (name, org) = (segs.next()?, segs.next()?);
    segs.next()?;
    let repo = format!("{org}/{name}");
    crate::io::hub::parse_repo(&format!("{repo}@{rev}")).ok()
}

/// The revision of a Hub model when it is not `main`: the engines' `--revision`.
pub(super) fn hub_revision(s: &Scenario) -> Option<String> {
    let fw = s.model.file_weights.as_ref()?;
    let (_, rev) = hub_repo(&fw.path)?;
    (rev != "main").then_some(rev)
}

/// The model argument: the imported file when it suits the tool (a Hub checkpoint by its repo
/// id, as vLLM and transformers take it), else a placeholder.
pub(super) fn model_arg(s: &Scenario, gguf: bool) -> (String, bool) {
    if let Some(fw) = &s.model.file_weights {
        if let Some((repo, _)) = hub_repo(&fw.path) {
            // A GGUF repo is not a checkpoint vLLM or transformers load by id.
            if !gguf && !fw.format.starts_with("GGUF") {
                return (repo, false);
            }
        } else {
            let is_gguf = fw.path.to_ascii_lowercase().ends_with(".gguf");
            if !fw.path.is_empty() && is_gguf == gguf {
                return (fw.path.clone(), false);
            }
        }
    }
    if gguf {
        let quant = match s.weights {
            WeightPrecision::Fp32 => "F32".to_string(),
            WeightPrecision::Fp16 => "F16".to_string(),
            WeightPrecision::Bf16 => "BF16".to_string(),
            WeightPrecision::Fp8 | WeightPrecision::Fp8Block | WeightPrecision::Int8 => {
                "Q8_0".to_string()
            }
            // ggml-org's gpt-oss GGUFs keep the experts in MXFP4 (file type MXFP4_MOE).
            WeightPrecision::Mxfp4 => "MXFP4".to_string(),
            // llama.cpp's NVFP4 type (GGML_TYPE_NVFP4, file type LLAMA_FTYPE_MOSTLY_NVFP4).
            WeightPrecision::Nvfp4 => "NVFP4".to_string(),
            p if p.is_gguf() => p.cli_name().to_ascii_uppercase(),
            _ => "Q4_K_M".to_string(),
        };
        (format!("{}-{quant}.gguf", slug(&s.model.name)), true)
    } else {
        ("MODEL".into(), true)
    }
}

/// The model argument for the tools that load a Hugging Face checkpoint (vLLM, transformers),
/// and the first notes: the fit warning, then what to put in place of the placeholder.
fn checkpoint_arg(s: &Scenario, fit: &FitResult) -> (String, Vec<String>) {
    let (model, placeholder) = model_arg(s, false);
    let mut notes: Vec<String> = fit_warning(fit).into_iter().collect();
    if placeholder {
        notes.push(format!(
            "Replace MODEL with the Hugging Face repo id or local folder of {}.",
            s.model.name
        ));
    }
    (model, notes)
}

fn fit_warning(fit: &FitResult) -> Option<String> {
    (fit.verdict == Verdict::None).then(|| {
        format!(
            "This scenario does not fit on {}: expect an out-of-memory error with these settings.",
            fit.name
        )
    })
}

/// llama.cpp's name for a KV-cache type (`-ctk`/`-ctv` accept f32, f16, bf16, q8_0, q4_0,
/// q4_1, iq4_nl, q5_0, q5_1: tools/server/README.md). FP8 has no llama.cpp cache type; q8_0
/// (8.5 bits) is the nearest.
pub fn llama_cache_type(k: KvPrecision) -> &'static str {
    match k {
        KvPrecision::Fp32 => "f32",
        KvPrecision::Fp16 => "f16",
        KvPrecision::Bf16 => "bf16",
        KvPrecision::Fp8 | KvPrecision::Q8_0 => "q8_0",
        KvPrecision::Q4_0 => "q4_0",
    }
}

/// `llama-server` for the scenario on the fitted machine.
pub fn llama_cpp(s: &Scenario, fit: &FitResult) -> LaunchSetting {
    let sc = s.clamped();
    let (model, mut notes) = gguf_arg(s, fit);
    let ngl = ngl_flag(&sc, fit, &mut notes);
    if fit.gpus > 1 && fit.verdict != Verdict::Cpu {
        notes.push(format!(
            "llama.cpp splits the layers across the {} GPUs (-sm layer, the default).",
            fit.gpus
        ));
    }
    // -c is the context of all slots together: each of -np N slots gets c / N tokens.
    let ctx = sc.context.saturating_mul(sc.batch);
    let (ctk, ctv, fa) = llama_cache_flags(&sc, &mut notes);
    let ub = sc.ubatch;
    let b = ub.max(2048);
    let mut lines = vec![
        format!("llama-server -m {}", shell(&model)),
        match &fit.expert_split {
            Some(x) if fit.verdict == Verdict::Offload => format!(
                "-c {ctx} -ngl {ngl} --n-cpu-moe {} -fa {fa}",
                x.cpu_moe_layers
            ),
            _ => format!("-c {ctx} -ngl {ngl} -fa {fa}"),
        },
    ];
    let mut last = format!("-ctk {ctk} -ctv {ctv} -b {b} -ub {ub}");
    if sc.batch > 1 {
        last.push_str(&format!(" -np {}", sc.batch));
        notes.push(format!(
            "-c {ctx} is the context of all {} slots together (-np {}): {} tokens each.",
            sc.batch, sc.batch, sc.context
        ));
    }
    lines.push(last);
    if let Some(v) = &sc.vision {
        // tools/server/README.md: `-mm, --mmproj FILE`, `--no-mmproj-offload`.
        let file = if v.encoder.file.is_empty() || v.encoder.in_checkpoint {
            "mmproj.gguf".to_string()
        } else {
            v.encoder.file.clone()
        };
        if v.encoder.in_checkpoint {
            // convert_hf_to_gguf.py --mmproj writes the tower of a transformers checkpoint.
            notes.push(
                "mmproj.gguf: the checkpoint's vision tower converted with llama.cpp's convert_hf_to_gguf.py --mmproj."
                    .into(),
            );
        }
        let mut line = format!("--mmproj {}", shell(&file));
        if v.on_cpu {
            line.push_str(" --no-mmproj-offload");
        }
        lines.push(line);
    }
    if sc.mode.is_embed() {
        // tools/server/README.md: `--embedding` restricts the server to the embedding use case
        // (`/v1/embeddings`); `--reranking` enables `/v1/rerank` for a reranker.
        lines.push("--embedding".into());
        notes.push(
            "--embedding serves /v1/embeddings (the pooling type comes from the GGUF; --pooling overrides it); a reranker takes --reranking instead."
                .into(),
        );
    }
    if let Some(line) = llama_cpp_draft(&sc, &mut notes) {
        lines.push(line);
    }
    if s.runtime != Runtime::LlamaCpp {
        notes.push(format!(
            "The estimate was made for the {} runtime; llama.cpp's own buffers differ (choose runtime llama.cpp for its exact numbers).",
            s.runtime.label()
        ));
    }
    LaunchSetting {
        runtime: Launcher::LlamaCpp,
        title: "llama.cpp server".into(),
        text: lines.join(" \\\n  "),
        note: notes.join(" "),
    }
}

/// The GGUF argument of `llama-server -m` and the first notes: the fit warning, the placeholder
/// to replace, and which GGUF to pick when the estimate is for another format.
fn gguf_arg(s: &Scenario, fit: &FitResult) -> (String, Vec<String>) {
    let (model, placeholder) = model_arg(s, true);
    let mut notes: Vec<String> = fit_warning(fit).into_iter().collect();
    if placeholder {
        notes.push(format!("Replace {model} with the path of your GGUF file."));
    }
    let plain = matches!(
        s.weights,
        WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
    );
    if !s.weights.is_gguf()
        && !plain
        && s.weights != WeightPrecision::Mxfp4
        && s.weights != WeightPrecision::Nvfp4
        && s.model.file_weights.is_none()
    {
        notes.push(format!(
            "llama.cpp runs GGUF files; the estimate is for {} weights, so pick a GGUF of the same size (8-bit → Q8_0, 4-bit → Q4_K_M).",
            s.weights.label()
        ));
    }
    (model, notes)
}

/// `-ngl`, the layers llama.cpp keeps in VRAM, with the note that explains the split.
fn ngl_flag(sc: &Scenario, fit: &FitResult, notes: &mut Vec<String>) -> String {
    // -ngl: "max. number of layers to store in VRAM, either an exact number, 'auto', or 'all'"
    // (README). 999 means every layer and the output layer on older builds too.
    match fit.verdict {
        Verdict::Gpu | Verdict::Unified | Verdict::None => {
            notes.push("-ngl 999 puts every layer, and the output layer, on the GPU.".into());
            "999".to_string()
        }
        Verdict::Offload if fit.expert_split.is_some() => {
            let x = fit.expert_split.as_ref().expect("checked");
            notes.push(format!(
                "-ngl 99 keeps every layer, the KV cache and the output layer on the GPU; --n-cpu-moe {n} keeps the routed experts (ffn_*_exps) of layers 0-{last} — {m} MoE layers, {ram} — in RAM, where the CPU runs the {k} experts each token picks; attention, router and shared experts stay on the GPU ({gpu} per GPU).",
                n = x.cpu_moe_layers,
                last = x.cpu_moe_layers.saturating_sub(1),
                m = x.moe_layers_in_ram,
                ram = x.ram_bytes.display_gib(),
                k = sc.model.moe.as_ref().map_or(0, |m| m.active_experts),
                gpu = x.gpu_required.display_gib(),
            ));
            "99".to_string()
        }
        Verdict::Offload => {
            notes.push(format!(
                "-ngl {k} keeps {k} of {l} layers on the GPU; the other {} layers and the output layer run on the CPU from {}.",
                fit.total_layers.saturating_sub(fit.gpu_layers),
                if fit.unified {
                    "the same memory (unified: nothing crosses a link)"
                } else {
                    "RAM"
                },
                k = fit.gpu_layers,
                l = fit.total_layers
            ));
            fit.gpu_layers.to_string()
        }
        Verdict::Cpu => {
            notes.push("-ngl 0: everything runs on the CPU from RAM.".into());
            "0".to_string()
        }
        Verdict::Disk => {
            // src/llama-mmap.cpp: the GGUF is memory-mapped by default, so pages RAM cannot hold
            // are read again from the file; --no-mmap copies it into RAM and --mlock pins it.
            notes.push(format!(
                "-ngl {k}: {k} of {l} layers on the GPU, the rest from RAM; {} of weights stay on the disk and are read through the page cache (llama.cpp memory-maps the GGUF by default). Do not pass --no-mmap or --mlock: both need the whole model in RAM.",
                crate::core::format::bytes(fit.disk_bytes),
                k = fit.gpu_layers,
                l = fit.total_layers
            ));
            fit.gpu_layers.to_string()
        }
    }
}

/// `-ctk`, `-ctv` and `-fa`: llama.cpp's cache types for the scenario's, and FlashAttention
/// (forced on by a quantised V cache).
fn llama_cache_flags(
    sc: &Scenario,
    notes: &mut Vec<String>,
) -> (&'static str, &'static str, &'static str) {
    let ctk = llama_cache_type(sc.kv.k);
    let ctv = llama_cache_type(sc.kv.v);
    if sc.kv.k == KvPrecision::Fp8 || sc.kv.v == KvPrecision::Fp8 {
        notes.push("llama.cpp has no FP8 cache type; q8_0 (8.5 bits) is the nearest.".into());
    }
    let v_quantized = matches!(
        sc.kv.v,
        KvPrecision::Q8_0 | KvPrecision::Q4_0 | KvPrecision::Fp8
    );
    let fa = if sc.flash_attention {
        "on"
    } else if v_quantized {
        notes.push("A quantised V cache needs FlashAttention in llama.cpp, so -fa is on (it only lowers memory).".into());
        "on"
    } else {
        "off"
    };
    (ctk, ctv, fa)
}

/// vLLM's `--kv-cache-dtype` (auto, fp8, fp8_e4m3, fp8_e5m2, …: vllm/config/cache.py): 16-bit
/// caches are "auto" (the model dtype); every 8-bit-or-smaller type maps to fp8.
pub(super) fn vllm_kv_dtype(s: &Scenario) -> (&'static str, Option<&'static str>) {
    let small =
        |k: KvPrecision| matches!(k, KvPrecision::Fp8 | KvPrecision::Q8_0 | KvPrecision::Q4_0);
    if small(s.kv.k) && small(s.kv.v) {
        let note = (s.kv.k != KvPrecision::Fp8 || s.kv.v != KvPrecision::Fp8)
            .then_some("vLLM has no q8_0/q4_0 cache; fp8 is its 8-bit cache type.");
        ("fp8", note)
    } else {
        let note = (s.kv.k == KvPrecision::Fp32 || s.kv.v == KvPrecision::Fp32).then_some(
            "vLLM keeps the cache in the model dtype (auto); it has no FP32 cache option.",
        );
        ("auto", note)
    }
}

/// `vllm serve` for the scenario on the fitted machine.
pub fn vllm(s: &Scenario, fit: &FitResult) -> LaunchSetting {
    let sc = s.clamped();
    let (model, mut notes) = checkpoint_arg(s, fit);
    let mut lines = vec![format!("vllm serve {}", shell(&model))];
    if let Some(rev) = hub_revision(s) {
        lines[0].push_str(&format!(" --revision {}", shell(&rev)));
    }
    let util = sc.gpu_memory_utilization;
    if fit.gpus == 0 || fit.verdict == Verdict::Cpu {
        notes.push(format!(
            "No GPU holds this model on {}: vLLM needs a GPU (or its separate CPU build); llama.cpp suits this machine better.",
            fit.name
        ));
        lines.push(format!(
            "--max-model-len {} --max-num-seqs {}",
            sc.context, sc.batch
        ));
    } else {
        let tp = fit.gpus.max(1);
        if tp > 1 && !s.model.heads.is_multiple_of(tp) {
            notes.push(format!(
                "vLLM needs the {} attention heads to divide by --tensor-parallel-size {tp}; use a divisor or pipeline parallelism.",
                s.model.heads
            ));
        }
        lines.push(format!(
            "--tensor-parallel-size {tp} --max-model-len {}",
            sc.context
        ));
        let (kv, kv_note) = vllm_kv_dtype(&sc);
        if let Some(n) = kv_note {
            notes.push(n.into());
        }
        lines.push(format!(
            "--gpu-memory-utilization {} --kv-cache-dtype {kv}",
            format::fraction(util)
        ));
        let mut last = format!(
            "--max-num-seqs {} --max-num-batched-tokens {}",
            sc.batch,
            sc.ubatch.max(sc.batch)
        );
        // The budget vLLM works within on each GPU: VRAM × utilisation (the fit already applied
        // it when the scenario runtime is vLLM).
        let budget = if s.runtime == Runtime::Vllm {
            fit.gpu_capacity
        } else {
            fit.gpu_capacity.scale(util)
        };
        let short = fit.gpu_required.saturating_sub(budget);
        if short.0 > 0 && fit.verdict != Verdict::None {
            let gb = short.0.div_ceil(GIB);
            last.push_str(&format!(" --cpu-offload-gb {gb}"));
            notes.push(format!(
                "--cpu-offload-gb {gb}: each GPU needs {} but vLLM may use {} ({} of its VRAM), so {gb} GiB of weights per GPU stay in RAM and cross PCIe every step (slow).",
                fit.gpu_required.display_gib(),
                budget.display_gib(),
                format::percent(util)
            ));
        }
        lines.push(last);
        let mut extra = Vec::new();
        if sc.mode.is_embed() {
            // docs.vllm.ai "Pooling Models": `--runner pooling` runs the model for embeddings /
            // scores (`/v1/embeddings`, `/score`) instead of generation.
            extra.push("--runner pooling");
        }
        match sc.weights {
            WeightPrecision::Bf16 => extra.push("--dtype bfloat16"),
            WeightPrecision::Fp16 => extra.push("--dtype float16"),
            WeightPrecision::Fp32 => extra.push("--dtype float32"),
            WeightPrecision::Fp8 => extra.push("--quantization fp8"),
            WeightPrecision::Int8 | WeightPrecision::Nf4 | WeightPrecision::Nf4DoubleQuant => {
                extra.push("--quantization bitsandbytes")
            }
            WeightPrecision::Awq4 => extra.push("--quantization awq"),
            WeightPrecision::Gptq4 => extra.push("--quantization gptq"),
            WeightPrecision::Int4 => {}
            // vLLM reads these from the checkpoint's quantization_config.
            WeightPrecision::Mxfp4 | WeightPrecision::Fp8Block | WeightPrecision::Nvfp4 => {}
            _ => notes.push("vLLM's GGUF support is experimental: give it the .gguf file, or serve the Hugging Face checkpoint with a vLLM quantisation (AWQ/GPTQ/FP8).".into()),
        }
        if !extra.is_empty() {
            lines.push(extra.join(" "));
        }
        if let Some(line) = vllm_speculative(&sc) {
            lines.push(line);
        }
        notes.push(format!(
            "vLLM reserves {} of each GPU and fills what weights, activations and CUDA graphs leave with KV blocks.",
            format::percent(util)
        ));
        if on_apple_gpu(fit) {
            notes.push("vLLM has no Apple-silicon (Metal) backend: on a Mac use llama.cpp.".into());
        }
    }
    if s.runtime != Runtime::Vllm {
        notes.push(format!(
            "The estimate was made for the {} runtime; choose runtime vLLM for vLLM's own reservation.",
            s.runtime.label()
        ));
    }
    LaunchSetting {
        runtime: Launcher::Vllm,
        title: "vLLM server".into(),
        text: lines.join(" \\\n  "),
        note: notes.join(" "),
    }
}

/// The fit ran on an Apple GPU (llama.cpp's Metal backend): vLLM and CUDA-only tools do not.
/// llama.cpp's draft model (`-md FILE --draft-max N`, all its layers on the GPU with `-ngld`);
/// llama-server has no EAGLE-3 or MTP drafter, which a note says.
pub(super) fn llama_cpp_draft(sc: &Scenario, notes: &mut Vec<String>) -> Option<String> {
    let sp = sc.speculative.as_ref()?;
    if sp.method != SpecMethod::DraftModel {
        notes.push(format!(
            "llama-server drafts with a separate model only (-md): the {} is a vLLM / SGLang drafter.",
            sp.method.label()
        ));
        return None;
    }
    let draft = sp.draft_id.clone().unwrap_or_else(|| "DRAFT.gguf".into());
    let file = if draft.ends_with(".gguf") {
        draft
    } else {
        notes.push(format!(
            "Replace DRAFT.gguf with the GGUF file of {draft} (same tokenizer as the model)."
        ));
        "DRAFT.gguf".into()
    };
    Some(format!(
        "-md {} -ngld 999 --draft-max {}",
        shell(&file),
        sp.tokens()
    ))
}

/// vLLM's `--speculative-config` for the drafter (docs.vllm.ai "Speculative Decoding").
pub(super) fn vllm_speculative(sc: &Scenario) -> Option<String> {
    let sp = sc.speculative.as_ref()?;
    let n = sp.tokens();
    let json = match sp.method {
        SpecMethod::DraftModel => format!(
            r#"{{"model": "{}", "num_speculative_tokens": {n}}}"#,
            sp.draft_id.as_deref().unwrap_or("DRAFT_MODEL")
        ),
        SpecMethod::Eagle3 => format!(
            r#"{{"method": "eagle3", "model": "EAGLE3_HEAD", "num_speculative_tokens": {n}}}"#
        ),
        SpecMethod::Mtp => format!(r#"{{"method": "mtp", "num_speculative_tokens": {n}}}"#),
    };
    Some(format!("--speculative-config '{json}'"))
}

fn on_apple_gpu(fit: &FitResult) -> bool {
    fit.backend == Some(crate::core::speed::Backend::Metal)
}

/// Whole GiB, rounded down, at least 1: "22GiB".
fn gib_floor(b: Bytes) -> String {
    format!("{}GiB", (b.0 / GIB).max(1))
}

/// transformers + accelerate big-model loading: `device_map="auto"` with `max_memory` per GPU
/// and for the CPU, and an `offload_folder` for what fits in neither.
pub fn accelerate(s: &Scenario, fit: &FitResult) -> LaunchSetting {
    let sc = s.clamped();
    let (model, mut notes) = checkpoint_arg(s, fit);
    let gpus = if fit.verdict == Verdict::Cpu {
        0
    } else {
        fit.gpus
    };
    // max_memory caps the WEIGHTS accelerate places on each device: leave each GPU room for
    // the KV cache, activations and runtime overhead of this scenario.
    let e = estimate(&Scenario {
        gpus: gpus.max(1),
        ..sc.clone()
    });
    let non_weights = e
        .per_gpu_total()
        .saturating_sub(e.per_gpu_kind(ComponentKind::Weights));
    // The fit gives vLLM's share of VRAM when the scenario runs on vLLM; accelerate sees it all.
    let vram = if s.runtime == Runtime::Vllm && sc.gpu_memory_utilization > 0.0 {
        fit.gpu_capacity.scale(1.0 / sc.gpu_memory_utilization)
    } else {
        fit.gpu_capacity
    };
    let per_gpu = vram.saturating_sub(non_weights);
    let mut mm: Vec<String> = (0..gpus.min(64))
        .map(|i| format!("{i}: \"{}\"", gib_floor(per_gpu)))
        .collect();
    mm.push(format!("\"cpu\": \"{}\"", gib_floor(fit.ram_capacity)));
    if gpus > 0 {
        notes.push(format!(
            "max_memory caps the weights per device: {} per GPU leaves {} for the KV cache, activations and overhead; layers beyond GPU and CPU go to offload_folder on disk.",
            gib_floor(per_gpu),
            non_weights.display_gib()
        ));
    }
    if fit.verdict == Verdict::Unified && on_apple_gpu(fit) {
        notes.push("On Apple silicon PyTorch uses the \"mps\" device: device_map=\"mps\" loads the whole model there.".into());
    } else if on_apple_gpu(fit) {
        notes.push("On Apple silicon PyTorch's GPU device is \"mps\" and it shares RAM with the CPU: the GPU and CPU caps above come out of the same memory.".into());
    }
    if fit.verdict == Verdict::Disk {
        // accelerate big_modeling: modules mapped to "disk" are saved to offload_folder and
        // loaded on every forward pass.
        notes.push(format!(
            "About {} of weights go to offload_folder (put it on the fastest SSD) and are read from disk on every forward pass.",
            crate::core::format::bytes(fit.disk_bytes)
        ));
    }
    // An embedding model loads without its language-model head (transformers `AutoModel`, as
    // sentence-transformers does).
    let class = if sc.mode.is_embed() {
        "AutoModel"
    } else {
        "AutoModelForCausalLM"
    };
    let mut imports = vec![class];
    let mut args = vec![py_str(&model)];
    if let Some(rev) = hub_revision(s) {
        args.push(format!("revision={}", py_str(&rev)));
    }
    args.extend([
        "device_map=\"auto\"".into(),
        format!("max_memory={{{}}}", mm.join(", ")),
        "offload_folder=\"offload\"".into(),
    ]);
    match sc.weights {
        WeightPrecision::Bf16 => args.push("dtype=torch.bfloat16".into()),
        WeightPrecision::Fp16 => args.push("dtype=torch.float16".into()),
        WeightPrecision::Fp32 => args.push("dtype=torch.float32".into()),
        WeightPrecision::Int8 => {
            imports.push("BitsAndBytesConfig");
            args.push("quantization_config=BitsAndBytesConfig(load_in_8bit=True)".into());
        }
        WeightPrecision::Nf4 | WeightPrecision::Nf4DoubleQuant => {
            imports.push("BitsAndBytesConfig");
            args.push(format!(
                "quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant={}, bnb_4bit_compute_dtype=torch.bfloat16)",
                if sc.weights == WeightPrecision::Nf4DoubleQuant { "True" } else { "False" }
            ));
        }
        WeightPrecision::Fp8 | WeightPrecision::Int4 | WeightPrecision::Gptq4 | WeightPrecision::Awq4 => {
            notes.push("A GPTQ/AWQ/FP8 checkpoint carries its quantisation config; from_pretrained reads it.".into());
        }
        _ => notes.push("transformers dequantises GGUF files to 16 bits when loading (gguf_file=…); for GGUF use llama.cpp.".into()),
    }
    if args.iter().any(|a| a.starts_with("dtype=")) {
        notes.push("transformers before 4.56 spells dtype= as torch_dtype=.".into());
    }
    let text = format!(
        "from transformers import {}\nimport torch\n\nmodel = {class}.from_pretrained(\n    {},\n)\n",
        imports.join(", "),
        args.join(",\n    ")
    );
    LaunchSetting {
        runtime: Launcher::Accelerate,
        title: "transformers + accelerate (Python)".into(),
        text,
        note: notes.join(" "),
    }
}

/// The ZeRO stage the config uses: the scenario's, raised to 1 when optimiser offload is on
/// (ZeRO-Offload partitions the optimiser states: stages 1–3).
fn ds_stage(s: &Scenario) -> u8 {
    let z = s.zero.min(3);
    if s.offload != Offload::None && z == 0 {
        1
    } else {
        z
    }
}

/// A DeepSpeed configuration file for the training scenario on the fitted machine.
pub fn deepspeed(s: &Scenario, fit: &FitResult) -> LaunchSetting {
    let sc = s.clamped();
    let gpus = fit.gpus.max(1);
    let stage = ds_stage(&sc);
    let mut notes = vec!["Save as ds_config.json.".to_string()];
    if let Some(w) = fit_warning(fit) {
        notes.push(w);
    }
    if stage != sc.zero {
        notes.push(format!(
            "ZeRO-Offload needs stage 1 or above, so stage {stage} is used."
        ));
    }
    let mut zero = json!({ "stage": stage });
    // ZeRO-Infinity (verdict disk): the offloaded states go to NVMe at nvme_path (DeepSpeed
    // config docs: offload_optimizer / offload_param, "device": "nvme").
    let nvme = fit.verdict == Verdict::Disk;
    let target = if nvme {
        notes.push(format!(
            "ZeRO-Infinity: {} of offloaded states live on NVMe; set nvme_path to a folder on the local NVMe drive (not network storage).",
            crate::core::format::bytes(fit.disk_bytes)
        ));
        json!({ "device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true })
    } else {
        json!({ "device": "cpu", "pin_memory": true })
    };
    if sc.offload != Offload::None {
        zero["offload_optimizer"] = target.clone();
    }
    if sc.offload == Offload::OptimizerParams {
        if stage >= 3 {
            zero["offload_param"] = target;
        } else {
            notes.push(
                "Parameter offload (offload_param) needs ZeRO stage 3; it is left out.".into(),
            );
        }
    }
    if stage >= 2 {
        zero["overlap_comm"] = json!(true);
        zero["contiguous_gradients"] = json!(true);
    }
    let mut cfg = json!({
        "train_batch_size": sc.batch.saturating_mul(gpus),
        "train_micro_batch_size_per_gpu": sc.batch,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "zero_optimization": zero,
    });
    let weights = if sc.mode == Mode::Qlora {
        WeightPrecision::Bf16
    } else {
        sc.weights
    };
    match weights {
        WeightPrecision::Fp16 => cfg["fp16"] = json!({ "enabled": true }),
        WeightPrecision::Fp32 => {
            notes.push("FP32 training: neither bf16 nor fp16 is enabled.".into())
        }
        _ => cfg["bf16"] = json!({ "enabled": true }),
    }
    match sc.mode {
        Mode::Lora => notes.push(format!(
            "LoRA: wrap the model with peft LoraConfig(r={}, target_modules={}).",
            sc.lora_rank,
            peft_targets(&sc)
        )),
        Mode::Qlora => notes.push(format!(
            "QLoRA: load the base with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True) and LoraConfig(r={}, target_modules={}); ZeRO-3 with a 4-bit base needs bnb_4bit_quant_storage=torch.bfloat16.",
            sc.lora_rank,
            peft_targets(&sc)
        )),
        _ => {}
    }
    notes.push(format!("Optimizer: {}.", optimizer_hint(&sc)));
    if sc.checkpointing != Checkpointing::None {
        notes.push("Gradient checkpointing is set in the training script: model.gradient_checkpointing_enable() (Trainer: gradient_checkpointing=True).".into());
    }
    let text = serde_json::to_string_pretty(&cfg).unwrap_or_default() + "\n";
    LaunchSetting {
        runtime: Launcher::DeepSpeed,
        title: "DeepSpeed config (ds_config.json)".into(),
        text,
        note: notes.join(" "),
    }
}

fn peft_targets(s: &Scenario) -> &'static str {
    use crate::core::scenario::LoraTargets;
    match s.lora_targets {
        LoraTargets::QV => "[\"q_proj\", \"v_proj\"]",
        LoraTargets::Attention => "[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"]",
        LoraTargets::AllLinear => "\"all-linear\"",
    }
}

/// The transformers Trainer `optim` name for the scenario's optimiser.
fn optimizer_hint(s: &Scenario) -> &'static str {
    match (s.optimizer, s.mode) {
        (Optimizer::AdamW, Mode::Qlora) => {
            "optim=\"paged_adamw_32bit\" (paged AdamW spills to CPU RAM under pressure)"
        }
        (Optimizer::AdamW8bit, Mode::Qlora) => "optim=\"paged_adamw_8bit\" (paged 8-bit AdamW)",
        (Optimizer::AdamW, _) => {
            "optim=\"adamw_torch\" (DeepSpeed swaps in its CPU Adam when offloading)"
        }
        (Optimizer::AdamW8bit, _) => "optim=\"adamw_bnb_8bit\" (bitsandbytes)",
        (Optimizer::Sgd, _) => "optim=\"sgd\" with momentum",
        (Optimizer::Adafactor, _) => "optim=\"adafactor\"",
    }
}

/// `accelerate launch` with the DeepSpeed config, one process per GPU.
pub fn accelerate_launch(s: &Scenario, fit: &FitResult) -> LaunchSetting {
    let gpus = fit.gpus.max(1);
    let mut notes = vec![
        "train.py is your training script (HF Trainer, TRL SFTTrainer or an Accelerator loop); precision, ZeRO stage and offload come from ds_config.json.".to_string(),
    ];
    if let Some(w) = fit_warning(fit) {
        notes.push(w);
    }
    if s.mode.is_training() && fit.gpus == 0 {
        notes.push("This machine has no GPU: DeepSpeed training needs one.".into());
    }
    let text = [
        "accelerate launch --use_deepspeed --deepspeed_config_file ds_config.json".to_string(),
        format!("--num_processes {gpus} train.py"),
    ]
    .join(" \\\n  ");
    LaunchSetting {
        runtime: Launcher::AccelerateLaunch,
        title: "accelerate launch with DeepSpeed".into(),
        text,
        note: notes.join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::hub_repo;

    #[test]
    fn hub_sources_give_the_repo_and_revision() {
        let r = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(
            hub_repo("https://huggingface.co/Qwen/Qwen2.5-7B@main"),
            r("Qwen/Qwen2.5-7B", "main")
        );
        assert_eq!(
            hub_repo("http://127.0.0.1:8080/mirror/org/ok@refs/pr/1"),
            r("org/ok", "refs/pr/1")
        );
        // Files and URLs are not Hub sources.
        assert_eq!(hub_repo("/models/llama/model.safetensors"), None);
        assert_eq!(hub_repo("https://example.org/a/model-Q4_K_M.gguf"), None);
        assert_eq!(hub_repo("https://user@example.org/a/b.gguf"), None);
    }
}
