//! `--command "llama-server -m model.gguf -ngl 40 -c 32768 -fa on -ctk q8_0 --n-cpu-moe 20"` or
//! `--command "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 …"`: the
//! runtime's own command line, read by [`crate::core::launch_line`], as the scenario flags it
//! means. Flags given to headroom directly win over the command's.

use super::app::CliError;
use super::args::ScenarioArgs;
use super::values::SplitArg;
use crate::core::launch_line::{LaunchLine, parse};
use std::path::PathBuf;

/// `a` with the command line's settings filled in where `a` leaves them unset.
pub fn merge(a: &ScenarioArgs) -> Result<ScenarioArgs, CliError> {
    let Some(line) = a.command.as_deref() else {
        return Ok(a.clone());
    };
    let l = parse(line).map_err(|e| CliError::usage(format!("--command: {e}")))?;
    for n in &l.notes {
        eprintln!("headroom: note: --command: {n}");
    }
    Ok(fill(a.clone(), args_of(l)))
}

/// The command line's settings as the options they mean.
fn args_of(l: LaunchLine) -> ScenarioArgs {
    let mut a = ScenarioArgs {
        gguf: l.gguf.map(PathBuf::from),
        hf: l.hf,
        hf_file: l.hf_file,
        weights: l.weights,
        kv: l.kv,
        context: l.context,
        batch: l.batch,
        ubatch: l.ubatch,
        prompt: l.prompt,
        runtime: l.runtime,
        flash_attention: l.flash_attention,
        gpu_layers: l.gpu_layers,
        n_cpu_moe: l.n_cpu_moe,
        tensor_split: l.tensor_split.map(SplitArg),
        threads: l.threads,
        prefill_step: l.prefill_step,
        mmproj: l.mmproj.map(PathBuf::from),
        no_mmproj_offload: l.no_mmproj_offload,
        tp: l.tp,
        gpu_memory_utilization: l.gpu_memory_utilization,
        max_num_seqs: l.max_num_seqs,
        max_num_batched_tokens: l.max_num_batched_tokens,
        prefix_caching: l.prefix_caching,
        ..ScenarioArgs::default()
    };
    if let Some(m) = l.served_model {
        model_arg(&m, &mut a);
    }
    a
}

/// vLLM's model: a Hub repo id (`org/name`) or a local folder of safetensors.
fn model_arg(m: &str, a: &mut ScenarioArgs) {
    let p = PathBuf::from(m);
    if p.is_dir() || m.starts_with('/') || m.starts_with('.') {
        a.safetensors = Some(p);
    } else {
        a.hf = Some(m.to_string());
    }
}

/// `a` with every option it leaves unset taken from `from` (the model source only when `a`
/// names none).
fn fill(mut a: ScenarioArgs, from: ScenarioArgs) -> ScenarioArgs {
    let named = a.model.is_some()
        || a.config.is_some()
        || a.params.is_some()
        || a.gguf.is_some()
        || a.safetensors.is_some()
        || a.hf.is_some()
        || a.url.is_some();
    if !named {
        a.gguf = from.gguf;
        a.safetensors = from.safetensors;
        a.hf = from.hf;
        a.hf_file = a.hf_file.or(from.hf_file);
    }
    macro_rules! take {
        ($($f:ident),*) => { $( a.$f = a.$f.or(from.$f); )* };
    }
    take!(
        weights,
        kv,
        context,
        batch,
        ubatch,
        prompt,
        runtime,
        flash_attention,
        tp,
        gpu_memory_utilization,
        max_num_seqs,
        max_num_batched_tokens,
        prefix_caching,
        mmproj,
        images,
        image_tokens,
        threads,
        prefill_step
    );
    if a.tensor_split.is_none() {
        a.tensor_split = from.tensor_split;
    }
    a.no_mmproj_offload |= from.no_mmproj_offload;
    // The split is one setting: an explicit --gpu-layers or --n-cpu-moe replaces the command's.
    if a.gpu_layers.is_none() && a.n_cpu_moe.is_none() {
        a.gpu_layers = from.gpu_layers;
        a.n_cpu_moe = from.n_cpu_moe;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::precision::{KvPrecision, KvTypes, WeightPrecision};
    use crate::core::scenario::Runtime;

    fn args(line: &str) -> ScenarioArgs {
        merge(&ScenarioArgs {
            command: Some(line.into()),
            ..ScenarioArgs::default()
        })
        .unwrap_or_else(|e| panic!("{line}: {}", e.message))
    }

    #[test]
    fn llama_server_line() {
        let a = args(
            "llama-server -m x.gguf -ngl 40 -c 32768 -fa on -ctk q8_0 -ctv q4_0 --n-cpu-moe 20 --port 8080",
        );
        assert_eq!(a.gguf, Some(PathBuf::from("x.gguf")));
        assert_eq!((a.gpu_layers, a.n_cpu_moe), (None, Some(20)));
        assert_eq!(a.context, Some(32768));
        assert_eq!(a.flash_attention, Some(true));
        assert_eq!(
            a.kv,
            Some(KvTypes {
                k: KvPrecision::Q8_0,
                v: KvPrecision::Q4_0
            })
        );
        assert_eq!(a.runtime, Some(Runtime::LlamaCpp));
    }

    /// Command lines as the runtimes' own documentation writes them.
    #[test]
    fn real_command_lines() {
        // llama.cpp tools/server/README.md, Quick Start (commit 00dc805).
        let a = args("./llama-server -m models/7B/ggml-model.gguf -c 2048");
        assert_eq!(a.gguf, Some(PathBuf::from("models/7B/ggml-model.gguf")));
        assert_eq!(
            (a.context, a.runtime),
            (Some(2048), Some(Runtime::LlamaCpp))
        );
        let w = args("llama-server.exe -m models\\7B\\ggml-model.gguf -c 2048");
        assert_eq!(w.gguf, Some(PathBuf::from("models\\7B\\ggml-model.gguf")));
        // llama.cpp README.md, Quick start and the recommended server command (commit 003fb84).
        let h = args("llama serve -hf ggml-org/Qwen3.5-0.8B-GGUF");
        assert_eq!(h.hf.as_deref(), Some("ggml-org/Qwen3.5-0.8B-GGUF"));
        let r = args("llama-server -m model.gguf -ngl 99 -c 65536 --parallel 1");
        assert_eq!(
            (r.gpu_layers, r.context, r.batch),
            (Some(99), Some(65536), Some(1))
        );
        // The -hf quant tag is the precision: ggml-org/GLM-4.7-Flash-GGUF:Q4_K_M (server README).
        let q = args("llama-server -hf ggml-org/GLM-4.7-Flash-GGUF:Q4_K_M");
        assert_eq!(q.weights, Some(WeightPrecision::Q4KM));
        // vLLM's docs: distributed serving, and the XPU page's pipeline-parallel example.
        let v = args("vllm serve facebook/opt-13b \\\n     --tensor-parallel-size 4");
        assert_eq!((v.hf.as_deref(), v.tp), (Some("facebook/opt-13b"), Some(4)));
        assert_eq!(v.runtime, Some(Runtime::Vllm));
        let x = args(
            "vllm serve facebook/opt-13b --dtype=bfloat16 --max_model_len=1024 --distributed-executor-backend=mp --pipeline-parallel-size=2 -tp=8",
        );
        assert_eq!(x.weights, Some(WeightPrecision::Bf16));
        assert_eq!((x.context, x.tp), (Some(1024), Some(8)));
        // llama-bench's comma lists: the first run's values.
        let b = args("llama-bench -m m.gguf -ngl 10,20 -ub 256,512 -fa 1");
        assert_eq!(
            (b.gpu_layers, b.ubatch, b.flash_attention),
            (Some(10), Some(256), Some(true))
        );
    }

    /// `-ts` and `-t` as llama.cpp writes them: `common/arg.cpp` "--tensor-split" ("comma-separated
    /// list of proportions, e.g. 3,1") and tools/llama-bench/README.md (`-ts <ts0/ts1/..>`, runs
    /// separated by commas; `-t` a comma list of thread counts).
    #[test]
    fn tensor_split_and_threads() {
        let a = args("llama-server -m x.gguf -ngl 99 -ts 3,2 -t 8");
        assert_eq!(a.tensor_split.map(|s| s.0), Some(vec![3.0, 2.0]));
        assert_eq!(a.threads, Some(8));
        let b = args("llama-bench -m x.gguf -ts 1/1,3/1 -t 4,8");
        assert_eq!(b.tensor_split.map(|s| s.0), Some(vec![1.0, 1.0]));
        assert_eq!(b.threads, Some(4));
        let c = args("llama-cli -m x.gguf --tensor-split=0.6/0.4 --threads=16");
        assert_eq!(c.tensor_split.map(|s| s.0), Some(vec![0.6, 0.4]));
        assert_eq!(c.threads, Some(16));
    }

    #[test]
    fn slots_share_the_context_and_explicit_flags_win() {
        let a = merge(&ScenarioArgs {
            command: Some("llama-server -m x.gguf -c 16384 -np 4 -ngl 20".into()),
            gpu_layers: Some(30),
            context: Some(2048),
            ..ScenarioArgs::default()
        })
        .unwrap();
        assert_eq!(
            (a.context, a.batch, a.gpu_layers),
            (Some(2048), Some(4), Some(30))
        );
        let b = args("llama-server -m x.gguf -c 16384 -np 4");
        assert_eq!((b.context, b.batch), (Some(4096), Some(4)));
    }

    #[test]
    fn bad_lines_name_the_flag() {
        let err = |line: &str| {
            merge(&ScenarioArgs {
                command: Some(line.into()),
                ..ScenarioArgs::default()
            })
            .unwrap_err()
            .message
        };
        assert!(err("llama-server -m x.gguf --frobnicate 3").contains("--frobnicate"));
        assert!(err("llama-server -m x.gguf -c lots").contains("-c lots"));
        assert!(err("llama-server -m x.gguf -ctk q5_1").contains("-ctk q5_1"));
        assert!(err("ollama run llama3").contains("'ollama'"));
        assert!(err("vllm serve x --quantization squeezellm").contains("squeezellm"));
        assert!(err("llama-server -ngl").contains("-ngl needs a value"));
        assert!(err("llama-server -m x.gguf -nkvo").contains("KV cache in RAM"));
        assert!(err("llama-server -m x.gguf -ts 3,-1").contains("-ts 3,-1"));
        assert!(err("llama-server -m x.gguf -t 0").contains("-t 0"));
    }
}
