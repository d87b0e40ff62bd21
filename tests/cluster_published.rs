//! The cluster training model against published training throughput with the exact setup
//! (tests/data/training_throughput.ron; every row cites its source, listed with what was taken
//! from it in tests/data/SOURCES-training.md): predicted tokens/s per GPU within ±25 %. The
//! issue's bar is 75 % of the rows; the model reaches 38 of 50 (76 %; the A100 rows, Megatron's
//! H100 rows and torchtitan's 70B/405B rows hold; llm-foundry's smaller H100 rows and
//! torchtitan's 8B rows are still over-predicted by 25–58 %; of Megatron-Core's three Qwen3
//! 235B expert-parallel rows two hold, −23 % and +18 %, the third is +86 %), and this test holds
//! that level so it cannot slip. Rows with context parallelism (which headroom does not model)
//! are listed as not modelled, not counted.

use headroom::core::catalog::{Accelerator, Machine, MachineKind, Network, NetworkKind};
use headroom::core::cluster::{Cluster, ClusterInputs, Layout, Sharding, train_plan};
use headroom::core::fit::FitSettings;
use headroom::core::model::{MlpKind, ModelSpec};
use headroom::core::precision::WeightPrecision;
use headroom::core::scenario::{Checkpointing, Framework, Mode, Scenario};
use headroom::core::units::{Bytes, GbPerSec};
use headroom::io::catalog::builtin;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Row {
    source: String,
    model: String,
    /// The catalog preset whose architecture the row ran (MoE rows: experts, widths, norms);
    /// `None`: the architecture from the row's shape numbers.
    #[serde(default)]
    preset: Option<String>,
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    ffn: u64,
    vocab: u64,
    moe_experts: u64,
    moe_active: u64,
    params: f64,
    seq_len: u64,
    gpu: String,
    gpus_per_node: u64,
    nodes: u64,
    network_gbps_per_node: f64,
    tp: u64,
    pp: u64,
    dp: u64,
    cp: u64,
    ep: u64,
    sharding: String,
    micro_batch: u64,
    global_batch: u64,
    checkpointing: String,
    precision: String,
    metric: String,
    value: f64,
    flops_formula: String,
    notes: String,
    /// The part's dense BF16 peak where the source's GPU differs from the catalog part `gpu`
    /// (torchtitan's 500 W H100s: "between SXM and NVL"), TFLOP/s.
    #[serde(default)]
    gpu_peak_tflops: Option<f64>,
    /// The part's memory bandwidth where the source states one the catalog part lacks, GB/s.
    #[serde(default)]
    gpu_bandwidth_gbs: Option<f64>,
    /// Sequences per pipeline micro-batch where the source's engine sets it (torchtitan: its
    /// rank's batch over as many micro-batches as stages); `None`: the planner's 1.
    #[serde(default)]
    pp_micro_batch: Option<u64>,
}

fn rows() -> Vec<Row> {
    let text = include_str!("data/training_throughput.ron");
    ron::from_str(text).expect("training_throughput.ron parses")
}

fn spec(r: &Row) -> ModelSpec {
    let llama = r.model.to_ascii_lowercase().contains("llama");
    ModelSpec {
        name: r.model.clone(),
        arch: if llama { "llama" } else { "gpt2" }.into(),
        layers: r.layers,
        hidden: r.hidden,
        heads: r.heads,
        kv_heads: r.kv_heads,
        head_dim: r.hidden / r.heads.max(1),
        intermediate: r.ffn,
        vocab: r.vocab,
        // GPT (Megatron) and MPT: a plain 4h GELU MLP; Llama: SwiGLU.
        mlp: if llama {
            MlpKind::Gated
        } else {
            MlpKind::Plain
        },
        max_context: r.seq_len,
        ..ModelSpec::default()
    }
}

fn machine(r: &Row) -> Machine {
    Machine {
        gpu: Some(r.gpu.as_str().into()),
        gpu_count: r.gpus_per_node as u32,
        ram: Bytes::gib(2048),
        ram_bandwidth: GbPerSec(400.0),
        cpu_cores: 64,
        network: Some(Network {
            kind: NetworkKind::InfiniBand,
            gbps: r.network_gbps_per_node.max(1.0),
            nics: r.gpus_per_node as u32,
            source: r.source.clone(),
        }),
        source: r.source.clone(),
        ..Machine::bare(
            "published",
            &format!("{} × {}", r.gpus_per_node, r.gpu),
            MachineKind::Cloud,
        )
    }
}

fn sharding(s: &str) -> Sharding {
    match s {
        "none" => Sharding::None,
        "zero1" => Sharding::Zero1,
        "zero2" => Sharding::Zero2,
        "zero3" => Sharding::Zero3,
        "fsdp" => Sharding::Fsdp,
        "hsdp" => Sharding::Hsdp,
        other => panic!("unknown sharding {other}"),
    }
}

/// The catalog part `a` as the row's source ran it: its stated peak (the FP8 peak, twice the
/// BF16 one on Hopper, and the measured matmul ceiling scaled with it: the same chip at a lower
/// clock) and memory bandwidth where the row overrides them.
fn as_published(a: &Accelerator, r: &Row) -> Accelerator {
    let mut a = a.clone();
    if let Some(peak) = r.gpu_peak_tflops {
        let scale = peak / a.fp16_tflops;
        a.fp16_tflops = peak;
        a.int8_tops = a.int8_tops.map(|x| x * scale);
        a.mamf_tflops = a.mamf_tflops.map(|x| x * scale);
    }
    if let Some(bw) = r.gpu_bandwidth_gbs {
        a.bandwidth = GbPerSec(bw);
    }
    a
}

/// Published tokens/s per GPU: given, or from TFLOP/s per GPU or MFU by the publisher's FLOP
/// count per token (Megatron-LM's `96·l·h²·(1 + s/6h + V/16lh)`, which counts the recompute;
/// otherwise PaLM's `6N + 12·l·h·s`).
fn published_tokens_per_gpu(r: &Row, peak_tflops: f64) -> f64 {
    let (l, h, s, v) = (
        r.layers as f64,
        r.hidden as f64,
        r.seq_len as f64,
        r.vocab as f64,
    );
    let per_token = match r.flops_formula.as_str() {
        "megatron" => 96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h)),
        "6N" => 6.0 * r.params,
        _ => 6.0 * r.params + 12.0 * l * h * s,
    };
    match r.metric.as_str() {
        "tokens_per_s_per_gpu" => r.value,
        "tflops_per_gpu" => r.value * 1e12 / per_token,
        "mfu" => r.value * peak_tflops * 1e12 / per_token,
        m => panic!("unknown metric {m}"),
    }
}

#[test]
fn training_throughput_matches_published_rows() {
    let cat = builtin();
    let st = FitSettings::default();
    let rows = rows();
    assert!(rows.len() >= 24, "the open set has {} rows", rows.len());
    let (mut within, mut modelled) = (0, 0);
    let mut table = String::new();
    for r in &rows {
        if r.cp > 1 || (r.moe_experts > 0 && r.preset.is_none()) {
            table.push_str(&format!(
                "  not modelled (context/expert parallel): {} on {} × {}\n",
                r.model,
                r.nodes * r.gpus_per_node,
                r.gpu
            ));
            continue;
        }
        let acc = &as_published(
            cat.accelerator(&r.gpu)
                .unwrap_or_else(|| panic!("gpu {}", r.gpu)),
            r,
        );
        let model = match &r.preset {
            Some(id) => cat.model(id).expect("preset").spec.clone(),
            None => spec(r),
        };
        let s = Scenario {
            model,
            model_id: None,
            mode: Mode::Full,
            weights: match r.precision.as_str() {
                "fp16" => WeightPrecision::Fp16,
                "fp8" => WeightPrecision::Fp8,
                _ => WeightPrecision::Bf16,
            },
            batch: r.micro_batch.max(1),
            context: r.seq_len,
            checkpointing: match r.checkpointing.as_str() {
                "full" => Checkpointing::Full,
                "selective" => Checkpointing::Selective,
                _ => Checkpointing::None,
            },
            // FlashAttention (2022) postdates the Megatron-LM 2021 runs.
            flash_attention: !r.source.contains("2104.04473"),
            framework: match r.sharding.as_str() {
                "fsdp" | "hsdp" => Framework::Fsdp,
                "none" => Framework::Transformers,
                _ => Framework::DeepSpeed,
            },
            ..Scenario::default()
        };
        let m = machine(r);
        let c = Cluster::new(&m, acc, r.nodes, None);
        let layout = Layout {
            tp: r.tp,
            pp: r.pp,
            dp: r.dp,
            sharding: sharding(&r.sharding),
            ep: r.ep,
        };
        assert_eq!(layout.gpus(), c.gpus(), "{}: layout × = GPUs", r.source);
        let inputs = ClusterInputs {
            global_batch: Some(r.global_batch),
            pp_micro_batch: r.pp_micro_batch,
            ..ClusterInputs::default()
        };
        let p = train_plan(&s, &c, layout, &inputs, &st);
        let predicted = p.tokens_per_s / c.gpus() as f64;
        let published = published_tokens_per_gpu(r, acc.fp16_tflops);
        let err = predicted / published - 1.0;
        modelled += 1;
        let ok = err.abs() <= 0.25;
        within += ok as usize;
        table.push_str(&format!(
            "  {} {:<14} {:>4} × {:<14} {:<28} predicted {:>9.0} published {:>9.0} tok/s/GPU  {:+6.1} %  (MFU {:.2}; step {:.0} % compute, {:.0} % TP, {:.0} % PP, {:.0} % DP, {:.0} % optimizer, {:.0} % EP)\n",
            if ok { "✓" } else { "✗" },
            r.model,
            c.gpus(),
            r.gpu,
            layout.to_string(),
            predicted,
            published,
            err * 100.0,
            p.mfu,
            100.0 * p.step.compute / p.step_seconds,
            100.0 * p.step.tensor_parallel / p.step_seconds,
            100.0 * p.step.pipeline / p.step_seconds,
            100.0 * p.step.data_parallel / p.step_seconds,
            100.0 * p.step.optimizer / p.step_seconds,
            100.0 * p.step.expert_parallel / p.step_seconds,
        ));
    }
    eprintln!("{table}within ±25 %: {within} of {modelled}");
    assert!(modelled >= 24, "{modelled} rows modelled");
    assert!(
        within * 100 >= modelled * 76,
        "within ±25 % on {within} of {modelled} rows (need 76 %)\n{table}"
    );
}
