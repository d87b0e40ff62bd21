//! Mixture-of-experts models: MXFP4 and FP8 block-scaled weights, the presets'
//! publisher precisions and expert shapes, and llama.cpp's expert offload (`--n-cpu-moe`).
//! Every number is worked out by hand in the comments.

use headroom::core::WeightPrecision;
use headroom::core::estimate::{estimate, routed_experts};
use headroom::core::model::ModelSpec;
use headroom::core::precision::{KvPrecision, KvTypes};
use headroom::core::scenario::Scenario;
use headroom::io::catalog::builtin;

fn preset(id: &str) -> ModelSpec {
    builtin()
        .model(id)
        .unwrap_or_else(|| panic!("preset {id}"))
        .spec
        .clone()
}

/// gpt-oss-120b's routed experts per layer, from config.json (hidden 2880, intermediate 2880,
/// 128 experts, 4 per token, biases on the experts):
///   gate_up: 2 × 2880 × 2880 × 128 = 2,123,366,400 weights in rows of 2880 = 90 MXFP4 blocks of
///            17 bytes = 1530 bytes a row; 737,280 rows → 1,128,038,400 bytes;
///   down:    2880 × 2880 × 128 = 1,061,683,200 weights, 368,640 rows of 1530 → 564,019,200;
///   biases:  (2 × 2880 + 2880) × 128 = 1,105,920 in BF16 → 2,211,840 bytes.
/// One layer: 1,694,269,440 bytes; per token 4 of 128 experts: 1,694,269,440 × 4/128 = 52,945,920.
const GPT_OSS_LAYER_EXPERTS: u64 = 1_128_038_400 + 564_019_200 + 2_211_840;

#[test]
fn gpt_oss_120b_in_mxfp4_is_65_2_gb_as_published() {
    let spec = preset("gpt-oss-120b");
    assert_eq!(
        builtin().model("gpt-oss-120b").unwrap().default_weights(),
        WeightPrecision::Mxfp4
    );
    let inv = routed_experts(&spec, WeightPrecision::Mxfp4);
    assert_eq!(inv.len(), 36);
    assert!(inv.iter().all(|r| r.bytes == GPT_OSS_LAYER_EXPERTS));
    assert_eq!(inv[0].active_bytes, GPT_OSS_LAYER_EXPERTS / 32);
    // Everything else in BF16: 116,829,156,672 parameters − 36 × 3,186,155,520 expert elements
    // = 2,127,557,952 × 2 B = 4,255,115,904 bytes. Total 36 × 1,694,269,440 + 4,255,115,904
    // = 65,248,815,744 bytes = 60.77 GiB (the openai/gpt-oss-120b safetensors: 65.2 GB).
    let e = estimate(&Scenario {
        model: spec,
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    });
    let w = e.kind_total(headroom::core::estimate::ComponentKind::Weights);
    assert_eq!(w.0, 36 * GPT_OSS_LAYER_EXPERTS + 4_255_115_904);
}

#[test]
fn mxfp4_on_a_dense_model_quantises_its_linear_layers() {
    // Llama-3-8B: 32 layers × 218,112,000 − norms 32 × 8192 = 6,979,321,856 matrix weights in
    // MXFP4 (rows of 4096 or 14336, whole blocks of 32: × 17/32) = 3,707,764,736 bytes; the
    // embedding, head and norms (2 × 525,336,576 + 32 × 8192 + 4096) in BF16 = 2,101,878,784.
    let e = estimate(&Scenario {
        model: ModelSpec::default(),
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    });
    let w = e.kind_total(headroom::core::estimate::ComponentKind::Weights);
    assert_eq!(w.0, 3_707_764_736 + 2_101_878_784);
    assert!(routed_experts(&ModelSpec::default(), WeightPrecision::Mxfp4).is_empty());
}

#[test]
fn deepseek_v3_ships_fp8_with_128_block_scales() {
    let p = builtin().model("deepseek-v3").unwrap();
    assert_eq!(p.default_weights(), WeightPrecision::Fp8Block);
    // 8 + 32 / (128 × 128) bits on the decoder's linear layers.
    assert!((WeightPrecision::Fp8Block.bits_per_weight() - 8.001953125).abs() < 1e-12);
    // Other presets ship BF16.
    assert_eq!(
        builtin().model("qwen3-30b-a3b").unwrap().default_weights(),
        WeightPrecision::Bf16
    );
    assert_eq!(
        WeightPrecision::from_cli("mxfp4"),
        Some(WeightPrecision::Mxfp4)
    );
    assert_eq!(
        WeightPrecision::from_cli("fp8-block"),
        Some(WeightPrecision::Fp8Block)
    );
}

#[test]
fn every_moe_preset_carries_its_expert_shapes() {
    for id in [
        "gpt-oss-20b",
        "gpt-oss-120b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "deepseek-v3",
        "deepseek-r1",
        "grok-1",
        "glm-4.5-air",
        "llama-4-scout",
    ] {
        let s = preset(id);
        let m = s.moe.as_ref().unwrap_or_else(|| panic!("{id}: no MoE"));
        assert!(
            m.experts > 1 && m.active_experts >= 1 && m.expert_ffn > 0,
            "{id}"
        );
        assert!(s.moe_layer_count() > 0, "{id}");
    }
    // GLM-4.5-Air (zai-org/GLM-4.5-Air config.json): layer 0 dense, 45 MoE layers of 128 experts
    // of width 1408, 8 active, one shared expert.
    let glm = preset("glm-4.5-air");
    assert_eq!(glm.moe_layer_count(), 45);
    assert!(!glm.is_moe_layer(0) && glm.is_moe_layer(1));
    // Llama 4 Scout (meta-llama/Llama-4-Scout-17B-16E config.json): every layer MoE, 16 experts,
    // top-1 plus a shared expert. Active per token: attention 2 × 5120 × (5120 + 1024) = 62.9M,
    // router 5120 × 16, one routed + one shared expert 2 × 3 × 5120 × 8192 = 251.7M, norms 10240
    // per layer → 48 × 314,664,960 = 15.10B; + head 202048 × 5120 = 1.03B + one embedding row
    // and the final norm = 16.14B ("17B active" counts the whole embedding: + 1.03B).
    let scout = preset("llama-4-scout");
    assert_eq!(scout.moe_layer_count(), 48);
    let a = scout.param_count().active;
    assert_eq!(a, 48 * 314_664_960 + 202_048 * 5120 + 2 * 5120);
}

// ---------------------------------------------------------------------------------------------
// Expert offload in the fit engine.

use headroom::core::catalog::{Catalog, Machine};
use headroom::core::fit::{FitResult, FitSettings, OffloadStyle, Verdict, fit_all};
use headroom::core::placement::experts::{self, expert_offload_at};
use headroom::core::scenario::Runtime;
use headroom::core::units::Bytes;

fn fit_on(s: &Scenario, cat: &Catalog, machine: &str) -> FitResult {
    let m = cat
        .machine(machine)
        .unwrap_or_else(|| panic!("machine {machine}"));
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

#[test]
fn gpt_oss_120b_on_a_24_gb_gpu_with_64_gb_keeps_24_layers_experts_in_ram() {
    // desktop-rtx4090-64gb: 24 GiB = 25,769,803,776 bytes of VRAM; RAM 64 GiB less the OS
    // reserve max(2 GiB, 10 %) = 61,847,529,062 usable.
    // The whole model on one GPU (generic runtime, 8K context) needs
    //   weights 65,248,815,744 (above) + KV 2 × 8 × 64 × 2 B × 36 layers × 8,192 tokens with
    //   half the layers' windows of 128 = 306,708,480 + prefill activations 52,428,800 + logits
    //   804,352 + runtime overhead 536,870,912 = 66,145,628,288 bytes.
    // Expert offload: each layer's routed experts are 1,694,269,440 bytes; the GPU must shed
    // 66,145,628,288 − 25,769,803,776 = 40,375,824,512 → ⌈23.83⌉ = 24 layers (--n-cpu-moe 24):
    //   RAM  24 × 1,694,269,440 = 40,662,466,560 bytes (≤ 61,847,529,062),
    //   GPU  66,145,628,288 − 40,662,466,560 = 25,483,161,728 bytes (≤ 25,769,803,776; with 23
    //        layers it would be 27,177,431,168, too much).
    let s = Scenario {
        model: preset("gpt-oss-120b"),
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    };
    let r = fit_on(&s, builtin(), "desktop-rtx4090-64gb");
    assert_eq!(r.gpu_required.0, 66_145_628_288, "{r:?}");
    assert_eq!(r.verdict, Verdict::Offload, "{r:?}");
    assert_eq!(r.offload_style, Some(OffloadStyle::Experts));
    assert_eq!(r.gpu_layers, 36);
    let x = r.expert_split.as_ref().unwrap();
    assert_eq!(x.cpu_moe_layers, 24);
    assert_eq!(x.moe_layers_in_ram, 24);
    assert_eq!(x.ram_bytes, Bytes(24 * GPT_OSS_LAYER_EXPERTS));
    assert_eq!(x.ram_bytes.0, 40_662_466_560);
    assert_eq!(x.gpu_required.0, 25_483_161_728);
    assert_eq!(r.ram_required.0, 40_662_466_560);
    // Per token the CPU reads 4 of 128 experts in 24 layers: 24 × 52,945,920 = 1,270,702,080.
    assert_eq!(x.ram_active_bytes.0, 1_270_702_080);
    assert_eq!(r.verdict_text(), "expert offload 24/36");
    // Faster than whole layers on the CPU would be (every offloaded layer then also reads its
    // attention from RAM and the output head runs there).
    assert!(r.decode_tokens_per_s > 10.0, "{}", r.decode_tokens_per_s);
}

#[test]
fn qwen3_30b_a3b_q4_k_m_on_an_8_gb_laptop_gpu() {
    // Qwen3-30B-A3B: 48 layers of 128 experts (width 768, hidden 2048), 8 per token. At Q4_K_M
    // llama.cpp keeps gate/up at Q4_K (144 B per 256) and ffn_down at Q6_K (210 B per 256) in
    // the "more bits" layers (i < 6, i ≥ 42, (i − 6) % 3 = 2), Q4_K elsewhere (llama-quant.cpp):
    //   gate+up 2 × 2048 × 768 × 128 = 402,653,184 × 144/256 = 226,492,416 bytes a layer;
    //   down 201,326,592 × 210/256 = 165,150,720 (Q6_K) or × 144/256 = 113,246,208 (Q4_K).
    // A Q6_K layer holds 391,643,136 bytes of experts, a Q4_K layer 339,738,624.
    let s = Scenario {
        model: preset("qwen3-30b-a3b"),
        weights: WeightPrecision::Q4KM,
        ..Scenario::default()
    };
    let inv = routed_experts(&s.model, s.weights);
    assert_eq!(inv.len(), 48);
    assert_eq!(inv[0].bytes, 391_643_136);
    assert_eq!(inv[6].bytes, 339_738_624);
    assert_eq!(inv[8].bytes, 391_643_136);
    let r = fit_on(&s, builtin(), "laptop-rtx4060-16gb");
    assert_eq!(r.verdict, Verdict::Offload, "{r:?}");
    assert_eq!(r.offload_style, Some(OffloadStyle::Experts));
    let x = r.expert_split.as_ref().unwrap();
    // The 8 GiB GPU (8,589,934,592 bytes) sheds the experts of the first N layers until what
    // is left fits: N is the first with need − RAM(N) ≤ 8 GiB.
    let need = r.gpu_required.0;
    let ram = |n: u64| {
        inv.iter()
            .filter(|e| e.layer < n)
            .map(|e| e.bytes)
            .sum::<u64>()
    };
    let n = (0..=48).find(|&n| need - ram(n) <= 8 << 30).unwrap();
    assert_eq!(x.cpu_moe_layers, n);
    assert_eq!(n, 32);
    // Layers 0–31: 14 in Q6_K (0–5, 8, 11, …, 29), 18 in Q4_K:
    // 14 × 391,643,136 + 18 × 339,738,624 = 5,483,003,904 + 6,115,295,232 = 11,598,299,136.
    assert_eq!(x.ram_bytes.0, 11_598_299_136);
    assert_eq!(x.gpu_required.0, need - 11_598_299_136);
    assert!(x.gpu_required.0 <= 8 << 30);
    assert!(need - ram(31) > 8 << 30);
}

#[test]
fn dense_models_never_get_expert_offload() {
    for (id, w) in [
        ("llama-3-70b", WeightPrecision::Q4KM),
        ("qwen2.5-32b", WeightPrecision::Q4KM),
        ("llama-3-8b", WeightPrecision::Bf16),
    ] {
        let s = Scenario {
            model: preset(id),
            weights: w,
            ..Scenario::default()
        };
        let cat = builtin();
        for r in fit_all(&s, &cat.machines, cat, &FitSettings::default()) {
            assert!(r.expert_split.is_none(), "{id} on {}", r.machine);
            assert_ne!(r.offload_style, Some(OffloadStyle::Experts), "{id}");
            if r.verdict == Verdict::Offload {
                assert_eq!(r.offload_style, Some(OffloadStyle::Layers), "{id}");
            }
        }
        assert!(routed_experts(&s.model, w).is_empty());
        assert!(
            expert_offload_at(
                &s,
                cat.machine("desktop-rtx4090-64gb").unwrap(),
                cat,
                &FitSettings::default(),
                10
            )
            .is_none()
        );
    }
}

#[test]
fn vllm_does_not_offload_experts() {
    let s = Scenario {
        model: preset("gpt-oss-120b"),
        weights: WeightPrecision::Mxfp4,
        runtime: Runtime::Vllm,
        ..Scenario::default()
    };
    let r = fit_on(&s, builtin(), "desktop-rtx4090-64gb");
    assert!(r.expert_split.is_none(), "{r:?}");
}

#[test]
fn a_sparse_gguf_splits_its_bytes_by_tensor_name() {
    // tests/fixtures/import/tiny_moe.gguf (make_fixtures.py, make_moe): layer 0 dense; layer 1
    // ffn_gate_exps MXFP4 8 rows × 17 = 136 + ffn_up_exps Q4_0 8 × 18 = 144 + ffn_down_exps
    // Q8_0 8 × 34 = 272 → 552 bytes (its router ffn_gate_inp, 136, and shared expert
    // ffn_up_shexp, 68, are not experts); layer 2 ffn_gate_up_exps Q4_0 16 × 18 = 288 +
    // ffn_down_exps 144 + ffn_down_exps.bias F32 8 × 4 = 32 → 464 bytes.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/tiny_moe.gguf");
    let m = headroom::io::import::import_path(&path).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    assert_eq!(fw.expert_bytes_by_layer, vec![0, 552, 464]);
    assert_eq!(fw.total_bytes, 2072);
    let inv = routed_experts(&m.spec, m.weights.unwrap_or(WeightPrecision::Q8_0));
    assert_eq!(
        inv.iter().map(|r| (r.layer, r.bytes)).collect::<Vec<_>>(),
        vec![(1, 552), (2, 464)]
    );
    // 2 of 4 experts per token: half of each layer's expert bytes.
    assert_eq!(inv[0].active_bytes, 276);
    assert_eq!(inv[1].active_bytes, 232);
    // --n-cpu-moe 1 covers only the dense layer 0; 2 moves layer 1; 3 moves both.
    assert_eq!(experts::split(&inv, 1).ram_bytes, Bytes(0));
    assert_eq!(experts::split(&inv, 2).ram_bytes, Bytes(552));
    assert_eq!(experts::split(&inv, 3).ram_bytes, Bytes(1016));
    assert_eq!(experts::split(&inv, 3).all_expert_bytes, Bytes(1016));
}

// ---------------------------------------------------------------------------------------------
// Published expert-offload measurements (llama.cpp `-ngl 99 --n-cpu-moe N`), decode tok/s.

/// The catalog plus a machine the catalog lacks: its GPU cloned from a catalog card and given
/// the published figures, its CPU and RAM as the source describes them.
#[allow(clippy::too_many_arguments)]
fn machine_with(
    base_acc: &str,
    acc_id: &str,
    vram_gib: u64,
    bandwidth: f64,
    fp16_tflops: f64,
    int8_tops: f64,
    pcie_gen: u8,
    cpu: &str,
    cores: u32,
    ram_gib: u64,
    ram_bandwidth: f64,
) -> (Catalog, Machine) {
    let mut cat = builtin().clone();
    let mut a = cat.accelerator(base_acc).unwrap().clone();
    a.id = acc_id.into();
    a.memory = Bytes::gib(vram_gib);
    a.bandwidth = headroom::core::units::GbPerSec(bandwidth);
    a.fp16_tflops = fp16_tflops;
    a.int8_tops = Some(int8_tops);
    if let Some(p) = a.pcie.as_mut() {
        p.generation = pcie_gen;
    }
    cat.accelerators.push(a);
    let mut m = cat.machine("desktop-rtx3060-32gb").unwrap().clone();
    m.id = format!("test-{acc_id}").into();
    m.gpu = Some(acc_id.into());
    m.cpu = cpu.into();
    m.cpu_cores = cores;
    m.ram = Bytes::gib(ram_gib);
    m.ram_bandwidth = headroom::core::units::GbPerSec(ram_bandwidth);
    (cat, m)
}

/// RTX 2080 (NVIDIA Turing whitepaper, appendix table: 8 GB GDDR6 at 448 GB/s, 40.3 TFLOPS FP16
/// tensor with FP32 accumulate, 161.1 INT8 TOPS, PCIe 3.0 x16) in an i9-10900X host (10 cores,
/// quad-channel DDR4, "~102 GB/s measured" per the PR below, 62 GB RAM shown → 64 GiB).
fn rtx2080_host() -> (Catalog, Machine) {
    machine_with(
        "rtx-3060-12gb",
        "rtx-2080",
        8,
        448.0,
        40.3,
        161.1,
        3,
        "Intel Core i9-10900X",
        10,
        64,
        102.0,
    )
}

/// DeepSeek-Coder-V2-Lite (deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct config.json).
const DEEPSEEK_CODER_V2_LITE: &str = r#"{
  "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
  "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
  "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
  "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
  "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": null,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
  "vocab_size": 102400, "max_position_embeddings": 163840, "tie_word_embeddings": false
}"#;

struct Measured {
    source: &'static str,
    scenario: Scenario,
    catalog: Catalog,
    machine: Machine,
    n_cpu_moe: u64,
    decode: f64,
}

fn measurements() -> Vec<Measured> {
    let llama = |model: ModelSpec, weights, context| Scenario {
        model,
        weights,
        context,
        prompt_tokens: 128.min(context),
        runtime: Runtime::LlamaCpp,
        ..Scenario::default()
    };
    let (cat, m) = rtx2080_host();
    let mut v = vec![
        // github.com/AlexsJones/llmfit/pull/755: Qwen3-30B-A3B-Instruct-2507 Q4_K_M, `-ngl 99
        // --n-cpu-moe 36`, "pure generation speed measured by the server itself is 36.7 tok/s".
        Measured {
            source: "llmfit PR 755: RTX 2080 + i9-10900X, Qwen3-30B-A3B Q4_K_M, --n-cpu-moe 36",
            scenario: llama(preset("qwen3-30b-a3b"), WeightPrecision::Q4KM, 4096),
            catalog: cat.clone(),
            machine: m.clone(),
            n_cpu_moe: 36,
            decode: 36.7,
        },
        // github.com/AlexsJones/llmfit/pull/778: DeepSeek-Coder-V2-Lite Q4_K_M, `--n-cpu-moe 16`,
        // context 4096, 49.6 tok/s (llmfit bench average, prompt processing included).
        Measured {
            source: "llmfit PR 778: RTX 2080 + i9-10900X, DeepSeek-Coder-V2-Lite Q4_K_M, --n-cpu-moe 16",
            scenario: llama(
                headroom::core::hf_config::parse_hf_config(DEEPSEEK_CODER_V2_LITE).unwrap(),
                WeightPrecision::Q4KM,
                4096,
            ),
            catalog: cat.clone(),
            machine: m.clone(),
            n_cpu_moe: 16,
            decode: 49.6,
        },
        // github.com/AlexsJones/llmfit/pull/775: gpt-oss-20B (MXFP4 GGUF), `--n-cpu-moe 12`,
        // context 4096, 36.4 tok/s (bench average, prompt processing included).
        Measured {
            source: "llmfit PR 775: RTX 2080 + i9-10900X, gpt-oss-20b MXFP4, --n-cpu-moe 12",
            scenario: llama(preset("gpt-oss-20b"), WeightPrecision::Mxfp4, 4096),
            catalog: cat,
            machine: m,
            n_cpu_moe: 12,
            decode: 36.4,
        },
    ];
    // A Reddit post quoted at gokawiil.com/article/74814 (u/Wrong-Historian): gpt-oss-120b
    // `--n-cpu-moe 36 --n-gpu-layers 999 -c 0 -fa` on a Core i9-14900K with "about 8GB" of VRAM
    // in use: "eval time = 76741.17 ms / 1966 tokens ( 39.03 ms per token, 25.62 tokens per
    // second)" after a 12,717-token prompt. The post names neither the GPU nor the RAM speed:
    // the 14900K's rated DDR5-5600 dual channel (89.6 GB/s, Intel ARK) and a 24 GB RTX 3090 are
    // assumed; the GPU holds ~5 GB of attention and KV that it reads in a few ms.
    let (cat, m) = machine_with(
        "rtx-3090",
        "rtx-3090-test",
        24,
        936.2,
        71.0,
        284.0,
        4,
        "Intel Core i9-14900K",
        24,
        96,
        89.6,
    );
    v.push(Measured {
        source: "gokawiil.com/article/74814 (Reddit): i9-14900K + 8 GB used, gpt-oss-120b MXFP4, --n-cpu-moe 36",
        scenario: Scenario {
            prompt_tokens: 12_717,
            ..llama(preset("gpt-oss-120b"), WeightPrecision::Mxfp4, 16_384)
        },
        catalog: cat,
        machine: m,
        n_cpu_moe: 36,
        decode: 25.62,
    });
    v.extend(measurements_2());
    v
}

/// A catalog machine's GPU (as the catalog has it) in a host the source describes.
fn host_with(
    acc: &str,
    cpu: &str,
    cores: u32,
    ram_gib: u64,
    ram_bandwidth: f64,
) -> (Catalog, Machine) {
    let cat = builtin().clone();
    let mut m = cat.machine("desktop-rtx3060-32gb").unwrap().clone();
    m.id = format!("test-{acc}-{cores}").into();
    m.gpu = Some(acc.into());
    m.cpu = cpu.into();
    m.cpu_cores = cores;
    m.ram = Bytes::gib(ram_gib);
    m.ram_bandwidth = headroom::core::units::GbPerSec(ram_bandwidth);
    (cat, m)
}

/// The rows collected for the Speed II check (each source read; what it leaves out is assumed
/// as said at the row).
fn measurements_2() -> Vec<Measured> {
    let llama = |model: ModelSpec, weights, context, prompt: u64| Scenario {
        model,
        weights,
        context,
        prompt_tokens: prompt.min(context),
        runtime: Runtime::LlamaCpp,
        ..Scenario::default()
    };
    let q8 = KvTypes::same(KvPrecision::Q8_0);
    let mut v = Vec::new();
    // r/LocalLLaMA post 1rei65v "Qwen3.5-35B-A3B … CPU/GPU offloading" (snapshot 2026-02-25 at
    // reddit.sentinel-team.org/posts/1rei65v): RTX 5080 16 GB, Ryzen 9 9950X, 128 GB DDR5-4800
    // dual channel ("~77 GB/s"), PCIe 5.0 x16; 20 threads, 65K context, flash attention,
    // --no-mmap, KV q8_0. tok/s (short prompt): Q8_0 `-ot "exps=CPU"` 35.7; Q4_K_M
    // `-ot "exps=CPU"` 51.0; Q4_K_M `--n-cpu-moe 24` 69.6. `-ot exps=CPU` is --n-cpu-moe 40.
    let (cat, m) = host_with("rtx-5080", "AMD Ryzen 9 9950X", 16, 128, 76.8);
    let qwen35 = |w| Scenario {
        kv: q8,
        ..llama(preset("qwen3.5-35b-a3b"), w, 65_536, 64)
    };
    for (source, w, n, decode) in [
        (
            "r/LocalLLaMA 1rei65v: RTX 5080 + 9950X DDR5-4800, Qwen3.5-35B-A3B Q8_0, -ot exps=CPU",
            WeightPrecision::Q8_0,
            40,
            35.7,
        ),
        (
            "r/LocalLLaMA 1rei65v: RTX 5080 + 9950X DDR5-4800, Qwen3.5-35B-A3B Q4_K_M, -ot exps=CPU",
            WeightPrecision::Q4KM,
            40,
            51.0,
        ),
        (
            "r/LocalLLaMA 1rei65v: RTX 5080 + 9950X DDR5-4800, Qwen3.5-35B-A3B Q4_K_M, --n-cpu-moe 24",
            WeightPrecision::Q4KM,
            24,
            69.6,
        ),
    ] {
        v.push(Measured {
            source,
            scenario: qwen35(w),
            catalog: cat.clone(),
            machine: m.clone(),
            n_cpu_moe: n,
            decode,
        });
    }
    // github.com/ikawrakow/ik_llama.cpp/issues/2199: RTX A1000 8 GB + Core i9-9900T (8C/16T),
    // Qwen3.6-35B-A3B UD-Q4_K_M (llama.cpp arch qwen35moe, the Qwen3.5-35B-A3B shape: llama-bench
    // names the same file "qwen35moe 35B.A3B Q4_K - Medium, 21.10 GiB, 35.51 B" in llama.cpp PR 26678),
    // `llama-bench -ngl 99 --n-cpu-moe 99 -t 12 -fa 1 -ctk q4_0 -ctv q8_0 -p 512 -n 128`;
    // mainline build 10155: tg128 26.15 t/s. RAM size not given (the model's 21 GB fit it);
    // its speed is the 9900T's rated dual-channel DDR4-2666, 41.6 GB/s (Intel ARK). RTX A1000
    // (NVIDIA datasheet): 8 GB GDDR6 at 192 GB/s, PCIe 4.0 x8, 26.9 dense FP16 tensor TFLOPS.
    let (cat, m) = machine_with(
        "rtx-3060-12gb",
        "rtx-a1000",
        8,
        192.0,
        26.9,
        107.6,
        4,
        "Intel Core i9-9900T",
        8,
        32,
        41.6,
    );
    v.push(Measured {
        source: "ik_llama.cpp issue 2199: RTX A1000 + i9-9900T DDR4-2666, Qwen3.6-35B-A3B Q4_K_M, --n-cpu-moe 99",
        scenario: Scenario {
            kv: KvTypes {
                k: KvPrecision::Q4_0,
                v: KvPrecision::Q8_0,
            },
            ..llama(preset("qwen3.5-35b-a3b"), WeightPrecision::Q4KM, 4096, 512)
        },
        catalog: cat,
        machine: m,
        n_cpu_moe: 40,
        decode: 26.15,
    });
    // r/LocalLLaMA 1ofxt6s "Optimizing gpt-oss-120B on AMD RX 6900 XT 16GB: Achieving 19
    // tokens/sec": RX 6900 XT (16 GB, 512 GB/s), Ryzen 9 7900 (12 cores), 2 × 32 GB DDR5-5600
    // dual channel (89.6 GB/s), ROCm 6.2.4, the MoE of 28 layers on the CPU; 19 t/s. RX 6900 XT
    // (AMD spec page): 46.08 FP16 TFLOPS, PCIe 4.0 x16.
    let (cat, m) = machine_with(
        "rx-7900-xtx",
        "rx-6900-xt",
        16,
        512.0,
        46.08,
        92.2,
        4,
        "AMD Ryzen 9 7900",
        12,
        64,
        89.6,
    );
    v.push(Measured {
        source: "r/LocalLLaMA 1ofxt6s: RX 6900 XT + Ryzen 9 7900 DDR5-5600, gpt-oss-120b MXFP4, --n-cpu-moe 28",
        scenario: llama(preset("gpt-oss-120b"), WeightPrecision::Mxfp4, 8192, 128),
        catalog: cat,
        machine: m,
        n_cpu_moe: 28,
        decode: 19.0,
    });
    // github.com/ggml-org/llama.cpp/pull/15077 (the PR adding --n-cpu-moe), comment by g0t4
    // 2025-08-07: "108T/s with gpt-oss:120b on my dual 5090s" with `--ctx-size 0 --flash-attn
    // --n-gpu-layers 99 --n-cpu-moe 3`. The host is not given: a 16-core desktop with dual-channel
    // DDR5-6000 (96 GB/s) is assumed; 3 layers' experts (159 MB a token) are all it reads.
    let (cat, mut m) = host_with("rtx-5090", "AMD Ryzen 9 9950X", 16, 128, 96.0);
    m.gpu_count = 2;
    v.push(Measured {
        source: "llama.cpp PR 15077: 2 × RTX 5090 (host assumed), gpt-oss-120b MXFP4, --n-cpu-moe 3",
        scenario: Scenario {
            gpus: 2,
            ..llama(preset("gpt-oss-120b"), WeightPrecision::Mxfp4, 131_072, 128)
        },
        catalog: cat,
        machine: m,
        n_cpu_moe: 3,
        decode: 108.0,
    });
    // hardware-corner.net/gpt-oss-offloading-moe-layers (Allan Witt, 2025-11-10): RTX 3090 +
    // EPYC 7343 (16 cores) + 64 GB DDR4-3200, `--n-gpu-layers 99 --n-cpu-moe 27`: 1.81 t/s at an
    // 85-token context. The DIMM count is not given: eight channels of DDR4-3200, 204.8 GB/s, as
    // the platform is rated (AMD EPYC 7003 spec).
    let (cat, m) = host_with("rtx-3090", "AMD EPYC 7343", 16, 64, 204.8);
    v.push(Measured {
        source: "hardware-corner.net: RTX 3090 + EPYC 7343 DDR4-3200, gpt-oss-120b MXFP4, --n-cpu-moe 27",
        scenario: llama(preset("gpt-oss-120b"), WeightPrecision::Mxfp4, 8192, 85),
        catalog: cat,
        machine: m,
        n_cpu_moe: 27,
        decode: 1.81,
    });
    v
}

/// Measurements the model misses by more than ±35 %, each with its cause (docs/moe.md) and a
/// bound on its error, so a regression still fails:
/// - llmfit PR 778: the llmfit bench average includes prompt processing, and DeepSeek-Coder-V2-
///   Lite's small experts (6 of 64 of width 1408, ~31 MB a layer and token) make the fixed cost
///   of each offloaded layer's graph split weigh most.
/// - hardware-corner.net: the same page measures the plain layer split (13 of 36 layers on the
///   GPU) at 0.90 t/s, 20× below what the host's DDR4 delivers for the ~2 GB such a token reads:
///   that host was not bound by its RAM bandwidth, which no model of the placement can see.
const KNOWN_MISSES: [(&str, f64); 2] = [("llmfit PR 778", 0.60), ("hardware-corner.net", 30.0)];

/// Speed II target for expert offload: within ±35 % on at least 70 % of the published runs.
#[test]
fn published_expert_offload_decode_within_35_percent() {
    let st = FitSettings::default();
    let mut table = Vec::new();
    let mut bad = Vec::new();
    let mut within = 0;
    let runs = measurements();
    for x in &runs {
        let (split, sp) = expert_offload_at(&x.scenario, &x.machine, &x.catalog, &st, x.n_cpu_moe)
            .unwrap_or_else(|| panic!("{}: no expert offload", x.source));
        assert!(split.ram_bytes.0 > 0, "{}", x.source);
        let err = sp.decode_tokens_per_s / x.decode - 1.0;
        let line = format!(
            "{}: measured {:.1}, predicted {:.1} tok/s ({:+.0} %)",
            x.source,
            x.decode,
            sp.decode_tokens_per_s,
            err * 100.0
        );
        let bound = KNOWN_MISSES
            .iter()
            .find(|(k, _)| x.source.starts_with(k))
            .map_or(0.35, |(_, b)| *b);
        if err.abs() <= 0.35 {
            within += 1;
        }
        if err.abs() > bound {
            bad.push(line.clone());
        }
        table.push(line);
    }
    println!("{}", table.join("\n"));
    assert!(bad.is_empty(), "{}", table.join("\n"));
    assert!(runs.len() >= 11, "{}", runs.len());
    assert!(within * 10 >= runs.len() * 7, "{}", table.join("\n"));
}

#[test]
fn teaching_curve_of_tok_s_against_n_cpu_moe() {
    let cat = builtin();
    let m = cat.machine("desktop-rtx4090-64gb").unwrap();
    let acc = cat.accelerator(m.gpu.as_deref().unwrap());
    let st = FitSettings::default();
    let s = Scenario {
        model: preset("gpt-oss-120b"),
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    };
    let t = headroom::core::teach::teach_curves(&s, &st, m, acc, &[]);
    // One point per --n-cpu-moe 0 … 36; the first that fits is the fit engine's 24.
    assert_eq!(t.expert_offload.len(), 37);
    assert_eq!(t.n_cpu_moe_fit, Some(24));
    let r = fit_on(&s, cat, "desktop-rtx4090-64gb");
    assert!((t.expert_offload[24][1] - r.decode_tokens_per_s).abs() < 1e-9);
    // More experts in RAM never decodes faster.
    for w in t.expert_offload.windows(2) {
        assert!(w[1][1] <= w[0][1] + 1e-9, "{w:?}");
    }
    // Dense: no curve.
    let dense = Scenario {
        model: preset("llama-3-70b"),
        weights: WeightPrecision::Q4KM,
        ..Scenario::default()
    };
    let t = headroom::core::teach::teach_curves(&dense, &st, m, acc, &[]);
    assert!(t.expert_offload.is_empty() && t.n_cpu_moe_fit.is_none());
}

#[test]
fn cli_fit_json_shows_the_style_and_split() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args([
            "fit",
            "--model",
            "gpt-oss-120b",
            "--weights",
            "mxfp4",
            "--kind",
            "desktop",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v.as_array().unwrap();
    let r = rows
        .iter()
        .find(|r| r["machine"] == "desktop-rtx4090-64gb")
        .unwrap();
    assert_eq!(r["verdict"], "offload");
    assert_eq!(r["style"], "experts");
    assert_eq!(r["cpu_moe_layers"], 24);
    assert_eq!(r["gpu_layers"], 36);
    assert_eq!(r["expert_split"]["ram_expert_bytes"], 40_662_466_560u64);
    assert_eq!(r["expert_split"]["gpu_required_bytes"], 25_483_161_728u64);
    // Rows without an offload carry no style.
    assert!(
        rows.iter()
            .filter(|r| r["verdict"] != "offload")
            .all(|r| r.get("style").is_none())
    );
}

#[test]
fn llama_cpp_launch_line_has_n_cpu_moe() {
    let s = Scenario {
        model: preset("gpt-oss-120b"),
        weights: WeightPrecision::Mxfp4,
        runtime: Runtime::LlamaCpp,
        ..Scenario::default()
    };
    let r = fit_on(&s, builtin(), "desktop-rtx4090-64gb");
    assert_eq!(r.offload_style, Some(OffloadStyle::Experts));
    let n = r.expert_split.as_ref().unwrap().cpu_moe_layers;
    let l = headroom::io::export::launch::llama_cpp(&s, &r);
    assert!(
        l.text.contains(&format!("-ngl 99 --n-cpu-moe {n}")),
        "{}",
        l.text
    );
    assert!(l.note.contains("ffn_*_exps"), "{}", l.note);
    // The GGUF gpt-oss ships in (ggml-org: experts in MXFP4), not a "pick a 4-bit GGUF" hint.
    assert!(l.text.contains("MXFP4.gguf"), "{}", l.text);
    assert!(!l.note.contains("pick a GGUF"), "{}", l.note);
    assert_eq!(
        r.offload_split_text(),
        format!("the experts of {n} of 36 layers in RAM")
    );
}
