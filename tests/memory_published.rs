//! Memory against published numbers: llama.cpp's tied embeddings and sliding-window caches, and
//! training peaks that projects measured and published with their exact setup.

use headroom::core::estimate::{ComponentKind, Estimate, estimate};
use headroom::core::model::{FileWeights, ModelSpec, SlidingWindow};
use headroom::core::precision::WeightPrecision;
use headroom::core::scenario::{
    Checkpointing, Framework, LoraTargets, Mode, Optimizer, Runtime, Scenario,
};
use headroom::core::units::{Bytes, GIB, MIB};

// ---------------------------------------------------------------------------------------------
// llama.cpp: tied embeddings
// ---------------------------------------------------------------------------------------------

/// A tied model read from a GGUF whose token embedding takes `table` bytes.
fn tied(
    name: &str,
    (layers, hidden, heads, kv_heads, head_dim, ffn, vocab): (u64, u64, u64, u64, u64, u64, u64),
    table: u64,
) -> ModelSpec {
    // The file's other tensors: any size will do, the test is about the table.
    let total = table + 1_000_000_000;
    ModelSpec {
        name: name.into(),
        arch: "llama".into(),
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate: ffn,
        vocab,
        tied_embeddings: true,
        file_weights: Some(FileWeights {
            path: format!("{name}.gguf"),
            total_bytes: total,
            params: 1,
            layer_bytes: total - table,
            runtime_extra_bytes: table,
            format: "GGUF".into(),
            expert_bytes_by_layer: Vec::new(),
        }),
        ..ModelSpec::default()
    }
}

const QWEN25_05B: (u64, u64, u64, u64, u64, u64, u64) = (24, 896, 14, 2, 64, 4864, 151_936);
const LLAMA32_1B: (u64, u64, u64, u64, u64, u64, u64) = (16, 2048, 32, 8, 64, 8192, 128_256);
const GEMMA2_2B: (u64, u64, u64, u64, u64, u64, u64) = (26, 2304, 8, 4, 256, 9216, 256_000);

/// ggml block sizes (ggml/src/ggml-common.h): Q4_0 18 B / 32, Q8_0 34 B / 32, Q6_K 210 B / 256.
fn table_bytes(shape: (u64, u64, u64, u64, u64, u64, u64), bytes: u64, per: u64) -> u64 {
    shape.1 * shape.6 / per * bytes
}

fn llama_cpp(model: ModelSpec, gpus: u64) -> Estimate {
    estimate(&Scenario {
        model,
        runtime: Runtime::LlamaCpp,
        gpus,
        ..Scenario::default()
    })
}

#[test]
fn tied_embedding_on_the_cpu_is_held_once_unless_repacked() {
    // llama.cpp returns the already-loaded token_embd for the TENSOR_DUPLICATED output when both
    // land in the same buffer type (src/llama-model-loader.cpp, `create_tensor`); on the CPU the
    // output goes to CPU_REPACK only for the types ggml-cpu repacks (repack.cpp,
    // `ggml_repack_get_optimal_repack_type`: Q4_0, IQ4_NL, Q4_K, Q2_K).
    for (name, shape) in [
        ("Qwen2.5-0.5B", QWEN25_05B),
        ("Llama-3.2-1B", LLAMA32_1B),
        ("Gemma-2-2B", GEMMA2_2B),
    ] {
        for (ty, table) in [
            ("Q8_0", table_bytes(shape, 34, 32)),
            ("Q6_K", table_bytes(shape, 210, 256)),
            ("F16", shape.1 * shape.6 * 2),
        ] {
            let m = tied(name, shape, table);
            let file = m.file_weights.as_ref().unwrap().total_bytes;
            let e = llama_cpp(m, 0);
            assert_eq!(
                e.kind_total(ComponentKind::Weights).0,
                file,
                "{name} {ty}: the CPU holds the table once"
            );
        }
        let table = table_bytes(shape, 18, 32);
        let m = tied(name, shape, table);
        let file = m.file_weights.as_ref().unwrap().total_bytes;
        let cpu = llama_cpp(m.clone(), 0);
        assert_eq!(
            cpu.kind_total(ComponentKind::Weights).0,
            file + table,
            "{name} Q4_0: CPU + CPU_REPACK copies"
        );
        // Offloaded: the output copy sits on the GPU, the input table stays in host RAM.
        let gpu = llama_cpp(m, 1);
        assert_eq!(gpu.per_gpu_kind(ComponentKind::Weights).0, file);
        assert_eq!(gpu.host_kind(ComponentKind::Weights).0, table);
    }
}

#[test]
fn cpu_only_overhead_does_not_say_per_gpu() {
    let e = llama_cpp(tied("Qwen2.5-0.5B", QWEN25_05B, 1_000_000), 0);
    let o = e
        .components
        .iter()
        .find(|c| c.kind == ComponentKind::Overhead)
        .unwrap();
    assert!(!o.formula.contains("per GPU"), "{}", o.formula);
    assert!(o.formula.contains("host RAM"), "{}", o.formula);
}

// ---------------------------------------------------------------------------------------------
// llama.cpp: sliding-window caches
// ---------------------------------------------------------------------------------------------

/// Gemma 2 9B (google/gemma-2-9b config.json): 42 layers, 8 KV heads × 256, sliding window 4096
/// on every other layer.
fn gemma2_9b() -> ModelSpec {
    ModelSpec {
        name: "Gemma 2 9B".into(),
        arch: "gemma2".into(),
        layers: 42,
        hidden: 3584,
        heads: 16,
        kv_heads: 8,
        head_dim: 256,
        intermediate: 14336,
        vocab: 256_000,
        tied_embeddings: true,
        sliding: Some(SlidingWindow {
            window: 4096,
            local_layers: 21,
            period: 2,
        }),
        max_context: 8192,
        ..ModelSpec::default()
    }
}

#[test]
fn gemma2_sliding_layers_keep_window_plus_ubatch() {
    // src/llama-kv-cache-iswa.cpp, `llama_kv_cache_iswa` constructor, swa_full = false:
    // SWA cells = GGML_PAD(min(n_ctx, n_swa · n_seq + n_ubatch), 256) = pad(4096 + 512) = 4608;
    // the 21 global layers keep n_ctx cells. F16 K+V: 2 × 8 × 256 × 2 B = 8 KiB per cell/layer.
    for (ctx, want_mib) in [
        (8192u64, 21 * 8192 * 8 / 1024 + 21 * 4608 * 8 / 1024),
        (32768, 21 * 32768 * 8 / 1024 + 21 * 4608 * 8 / 1024),
    ] {
        let e = estimate(&Scenario {
            model: gemma2_9b(),
            runtime: Runtime::LlamaCpp,
            context: ctx,
            ubatch: 512,
            ..Scenario::default()
        });
        assert_eq!(
            e.kind_total(ComponentKind::KvCache).0,
            want_mib * MIB,
            "ctx {ctx}"
        );
    }
    // 8K: 1344 + 756 = 2100 MiB; 32K: 5376 + 756 = 6132 MiB.
    assert_eq!(21 * 8192 * 8 / 1024 + 21 * 4608 * 8 / 1024, 2100);
}

// ---------------------------------------------------------------------------------------------
// Training peaks
// ---------------------------------------------------------------------------------------------

/// What a source measured.
#[derive(Clone, Copy, Debug)]
enum Peak {
    /// `torch.cuda.max_memory_allocated`.
    Allocated,
    /// `torch.cuda.max_memory_reserved`, or the VRAM a run just fits in.
    Reserved,
}

struct Case {
    name: String,
    source: &'static str,
    scenario: Scenario,
    measured_gib: f64,
    peak: Peak,
    /// A case outside ±15 % whose cause we know and do not model; it must stay within ±25 %.
    known_miss: Option<&'static str>,
}

/// Llama 2 7B (meta-llama/Llama-2-7b-hf config.json).
fn llama2_7b() -> ModelSpec {
    ModelSpec {
        name: "Llama 2 7B".into(),
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 32,
        head_dim: 128,
        intermediate: 11008,
        vocab: 32000,
        max_context: 4096,
        ..ModelSpec::default()
    }
}

const UNSLOTH: &str = "github.com/unslothai/unsloth README.md, context-length table: Llama 3.1 (8B) Instruct, 4-bit QLoRA on q,k,v,o,gate,up,down, rank 32, batch 1, sequences padded to the maximum length";
const ANSWERAI: &str = "github.com/AnswerDotAI/fsdp_qlora benchmarks_03_2024.md: Llama-2 7B on 2 × RTX 3090, train.py defaults (FSDP, LoRA rank 64, bf16, AdamW), gradient checkpointing on";

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // Unsloth's table: the longest context that fits each VRAM size. "Hugging Face + FA2" is
    // transformers + PEFT + bitsandbytes (prepare_model_for_kbit_training turns on gradient
    // checkpointing); Unsloth uses its offloaded checkpointing. Unsloth's notebooks train with
    // adamw_8bit.
    let qlora_8b = |framework, ctx: u64| Scenario {
        model: ModelSpec::default(),
        mode: Mode::Qlora,
        weights: WeightPrecision::Nf4DoubleQuant,
        lora_rank: 32,
        lora_targets: LoraTargets::AllLinear,
        optimizer: Optimizer::AdamW8bit,
        checkpointing: Checkpointing::Full,
        flash_attention: true,
        batch: 1,
        context: ctx,
        gpus: 1,
        framework,
        ..Scenario::default()
    };
    for (gb, ctx) in [
        (12.0, 932u64),
        (16.0, 2551),
        (24.0, 5789),
        (40.0, 12264),
        (48.0, 15502),
        (80.0, 28454),
    ] {
        v.push(Case {
            name: format!("Llama 3.1 8B QLoRA, transformers + FA2, {ctx} tokens fit {gb} GB"),
            source: UNSLOTH,
            scenario: qlora_8b(Framework::Transformers, ctx),
            measured_gib: gb,
            peak: Peak::Reserved,
            known_miss: None,
        });
    }
    for (gb, ctx) in [
        (8.0, 2972u64),
        (12.0, 21848),
        (16.0, 40724),
        (24.0, 78475),
        (40.0, 153977),
        (48.0, 191728),
        (80.0, 342733),
    ] {
        v.push(Case {
            name: format!("Llama 3.1 8B QLoRA, Unsloth, {ctx} tokens fit {gb} GB"),
            source: UNSLOTH,
            scenario: qlora_8b(Framework::Unsloth, ctx),
            measured_gib: gb,
            peak: Peak::Reserved,
            known_miss: None,
        });
    }
    // Answer.AI's FSDP runs (2 GPUs; "DDP" rows keep a full copy on each GPU).
    let answerai = |mode, gpus, batch: u64, ctx: u64| Scenario {
        model: llama2_7b(),
        mode,
        weights: if mode == Mode::Qlora {
            WeightPrecision::Nf4
        } else {
            WeightPrecision::Bf16
        },
        lora_rank: 64,
        lora_targets: LoraTargets::AllLinear,
        optimizer: Optimizer::AdamW,
        pure_bf16: true,
        checkpointing: Checkpointing::Full,
        flash_attention: true,
        batch,
        context: ctx,
        gpus,
        framework: Framework::Fsdp,
        ..Scenario::default()
    };
    for (mode, gpus, batch, ctx, gib, peak) in [
        (Mode::Lora, 2, 1, 512u64, 8.28, Peak::Allocated),
        (Mode::Lora, 2, 1, 2048, 9.16, Peak::Allocated),
        (Mode::Lora, 2, 1, 512, 10.24, Peak::Reserved),
        (Mode::Lora, 2, 1, 2048, 10.22, Peak::Reserved),
        (Mode::Qlora, 2, 1, 512, 4.98, Peak::Reserved),
        (Mode::Qlora, 2, 1, 2048, 5.21, Peak::Reserved),
        (Mode::Qlora, 2, 4, 2048, 11.22, Peak::Reserved),
        (Mode::Qlora, 2, 10, 2048, 20.97, Peak::Reserved),
        (Mode::Lora, 2, 4, 2048, 16.14, Peak::Reserved),
        (Mode::Lora, 2, 6, 2048, 21.35, Peak::Reserved),
        (Mode::Qlora, 1, 8, 2048, 20.94, Peak::Reserved),
        (Mode::Lora, 1, 4, 2048, 22.04, Peak::Reserved),
    ] {
        v.push(Case {
            name: format!(
                "Llama 2 7B {} FSDP {}, batch {batch}, {ctx} tokens",
                mode.label(),
                if gpus == 1 { "DDP" } else { "2 GPUs" },
            ),
            source: ANSWERAI,
            scenario: answerai(mode, gpus, batch, ctx),
            measured_gib: gib,
            peak,
            known_miss: match (mode, gpus, batch, ctx) {
                (Mode::Qlora, 2, 1, 512) => Some(
                    "the source reports 3.72 GiB reserved right after loading, against 1.8 GiB of weight shards: what the loader leaves in the cache is not modelled",
                ),
                (Mode::Qlora, 2, 10, 2048) => Some(
                    "activations dominate; the allocator keeps less than our 10 % reserve on top of them",
                ),
                _ => None,
            },
        });
    }
    v
}

fn ours(c: &Case) -> f64 {
    let e = estimate(&c.scenario);
    let b: Bytes = match c.peak {
        Peak::Allocated => e.peak_allocated(),
        Peak::Reserved => e.peak_reserved(),
    };
    b.0 as f64 / GIB as f64
}

#[test]
fn training_peaks_match_published_measurements() {
    let mut misses = Vec::new();
    println!("| case | peak | measured GiB | ours GiB | error |");
    for c in cases() {
        let got = ours(&c);
        let err = (got - c.measured_gib) / c.measured_gib;
        println!(
            "| {} | {:?} | {:.2} | {:.2} | {:+.1} % |",
            c.name,
            c.peak,
            c.measured_gib,
            got,
            err * 100.0
        );
        let tolerance = if c.known_miss.is_some() { 0.25 } else { 0.15 };
        if err.abs() > tolerance {
            misses.push(format!("{} ({}): {:+.1} %", c.name, c.source, err * 100.0));
        }
    }
    assert!(
        misses.is_empty(),
        "outside tolerance:\n{}",
        misses.join("\n")
    );
    let within = cases().iter().filter(|c| c.known_miss.is_none()).count();
    assert!(within >= 12, "{within} cases within ±15 %");
}

#[test]
fn deepspeed_follows_its_estimator_and_shows_the_paper() {
    // deepspeed/runtime/zero/stage_1_and_2.py `estimate_zero2_model_states_mem_needs` (after
    // DeepSpeed PR 5099): 2Ψ + 18Ψ/N per GPU; stage3.py `estimate_zero3_model_states_mem_needs`:
    // 4 × largest-layer params + 18Ψ/N.
    let psi = 7_000_000_000u64;
    let n = 8u64;
    let s = |zero, framework| Scenario {
        model: ModelSpec::generic(psi),
        mode: Mode::Full,
        gpus: n,
        zero,
        framework,
        ..Scenario::default()
    };
    let e2 = estimate(&s(2, Framework::DeepSpeed));
    let want2 = 2 * psi + 18 * psi / n;
    let got2 = e2.per_gpu_model_states().0;
    assert!(got2.abs_diff(want2) <= 8, "{got2} vs {want2}");
    // The ZeRO paper's count for the same run: 2Ψ + (2 + 12)Ψ/N.
    let paper2 = estimate(&s(2, Framework::Transformers))
        .per_gpu_model_states()
        .0;
    assert!(paper2.abs_diff(2 * psi + 14 * psi / n) <= 8);
    let note = e2
        .notes
        .iter()
        .find(|n| n.contains("DeepSpeed's estimator"))
        .expect("a note compares the two conventions");
    assert!(
        note.contains("ZeRO paper") && note.contains("PR 5099"),
        "{note}"
    );

    let e3 = estimate(&s(3, Framework::DeepSpeed));
    let gathered = e3
        .components
        .iter()
        .find(|c| c.name.contains("DeepSpeed estimator"))
        .unwrap()
        .per_device
        .0;
    let got3 = e3.per_gpu_model_states().0;
    let want3 = gathered + 18 * psi / n;
    assert!(got3.abs_diff(want3) <= 8, "{got3} vs {want3}");
    assert!(
        got3 > estimate(&s(3, Framework::Transformers))
            .per_gpu_model_states()
            .0
    );
}

#[test]
fn reserved_peak_is_allocated_plus_context_and_allocator_reserve() {
    let e = estimate(&Scenario {
        mode: Mode::Lora,
        ..Scenario::default()
    });
    let over = e.per_gpu_kind(ComponentKind::Overhead);
    assert_eq!(e.peak_reserved(), e.peak_allocated() + over);
    assert_eq!(e.peak_reserved(), e.per_gpu_total());
    assert!(over > Bytes::mib(512), "context plus a reserve: {over}");
    // Unsloth sets expandable segments: a smaller reserve for the same allocation.
    let u = estimate(&Scenario {
        mode: Mode::Lora,
        framework: Framework::Unsloth,
        ..Scenario::default()
    });
    assert!(u.per_gpu_kind(ComponentKind::Overhead) < over);
}

#[test]
fn loss_path_follows_the_framework() {
    let logits = |framework| {
        let e = estimate(&Scenario {
            mode: Mode::Full,
            context: 4096,
            framework,
            ..Scenario::default()
        });
        e.components
            .iter()
            .find(|c| c.name == "Logits and loss")
            .unwrap()
            .bytes
            .0
    };
    // Llama 3 8B: 4096 tokens × 128,256 vocab.
    let elems = 4096u64 * 128_256;
    assert_eq!(logits(Framework::Transformers), elems * 18);
    assert_eq!(logits(Framework::Torchtune), elems * 10);
    assert_eq!(logits(Framework::Unsloth), 0);
}

#[test]
fn scenario_files_without_a_framework_still_load() {
    let s: Scenario = ron::from_str("(context: 4096, mode: Lora)").unwrap();
    assert_eq!(s.framework, Framework::Transformers);
    assert_eq!(s.context, 4096);
}

#[test]
fn bitsandbytes_inputs_only_without_full_recompute_and_with_peft_upcast() {
    let extra = |framework, checkpointing| {
        estimate(&Scenario {
            mode: Mode::Qlora,
            context: 2048,
            framework,
            checkpointing,
            ..Scenario::default()
        })
        .components
        .iter()
        .filter(|c| c.name.contains("bitsandbytes") || c.name.contains("FP32 upcast"))
        .map(|c| c.per_device.0)
        .sum::<u64>()
    };
    // Llama 3 8B, all-linear adapters: 2048 tokens × (4096 + 4096 + 4096 + 14336) × 32 layers
    // × 2 B of saved inputs, plus 2 B × (2 × 525,336,576 embedding/head + 65 × 4096 norm) params.
    let inputs = 2048u64 * (4096 * 3 + 14336) * 32 * 2;
    let upcast = 2 * (2 * 525_336_576 + 65 * 4096);
    assert_eq!(
        extra(Framework::Transformers, Checkpointing::None),
        inputs + upcast
    );
    assert_eq!(extra(Framework::Transformers, Checkpointing::Full), upcast);
    assert_eq!(extra(Framework::Torchtune, Checkpointing::None), 0);
    assert_eq!(extra(Framework::Unsloth, Checkpointing::None), 0);
}
