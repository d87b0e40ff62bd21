//! Gemma 3n from config.json (issue 32 item 1): per-layer embeddings (PLE), AltUp, LAuReL and
//! KV sharing over the last layers.
//!
//! Fixtures: tests/fixtures/configs/gemma3n/ (SOURCES.md there says where each comes from).
//! Every expected number is computed by hand in the comment above it, and the parameter totals
//! are the `general.parameter_count` of llama.cpp's GGUFs of the published checkpoints.

use headroom::core::estimate::{ComponentKind, Estimate, estimate};
use headroom::core::hf_config::parse_hf_config;
use headroom::core::model::ModelSpec;
use headroom::core::scenario::Scenario;
use std::path::Path;
use std::process::Command;

const E4B: &str = include_str!("fixtures/configs/gemma3n/transformers_Gemma3nTextConfig_E4B.json");
const E2B: &str = include_str!("fixtures/configs/gemma3n/Gemma3nTextConfig_E2B.json");

fn e4b() -> ModelSpec {
    parse_hf_config(E4B).expect("Gemma 3n E4B parses")
}

fn e2b() -> ModelSpec {
    parse_hf_config(E2B).expect("Gemma 3n E2B parses")
}

/// BF16 weights, F16 KV, the default runtime's contiguous cache, `batch` sequences of
/// `context` tokens.
fn run(model: ModelSpec, context: u64, batch: u64) -> Estimate {
    estimate(&Scenario {
        model,
        context,
        batch,
        ..Scenario::default()
    })
}

fn kv(e: &Estimate) -> u64 {
    e.kind_total(ComponentKind::KvCache).0
}

/// `config` with `text_config.key` set to `value` (JSON), or removed with `None`.
fn with(config: &str, key: &str, value: Option<serde_json::Value>) -> String {
    let mut v: serde_json::Value = serde_json::from_str(config).unwrap();
    let m = v["text_config"].as_object_mut().unwrap();
    match value {
        Some(x) => {
            m.insert(key.into(), x);
        }
        None => {
            m.remove(key);
        }
    }
    v.to_string()
}

#[test]
fn e4b_shape_from_its_text_config() {
    let s = e4b();
    assert_eq!(s.arch, "gemma3n");
    assert_eq!((s.layers, s.hidden, s.intermediate), (35, 2048, 16_384));
    assert_eq!((s.heads, s.kv_heads, s.head_dim), (8, 2, 256));
    assert!(s.tied_embeddings && s.qk_norm);
    assert_eq!(s.norms_per_layer, 4);
    let g = s.gemma3n.as_ref().expect("PLE, AltUp, LAuReL");
    assert_eq!(
        (g.ple_dim, g.ple_vocab, g.altup_inputs, g.laurel_rank),
        (256, 262_144, 4, 64)
    );
    assert_eq!(s.kv_shared_layers, 15);
    // layer_types: full attention at every 5th layer → 7 of 35 full, 28 sliding (window 512).
    assert_eq!(s.local_layers(), (28, 512));
    // Only layers 0..19 keep a cache: 20 layers, of which 20 − ⌊20/5⌋ = 16 sliding.
    assert_eq!(s.kv_cache_layers(), (20, 16));
}

#[test]
fn e4b_parameters_are_the_gguf_parameter_count_exactly() {
    // h = 2048, L = 35, I = 16,384, 8 heads × 256, 2 KV heads, n = 4, r = 64, p = 256,
    // V = 262,400 (tied), V_p = 262,144.
    // Per layer: q, o 2048 × 2048 = 4,194,304 each; k, v 2048 × 512 = 1,048,576 each
    //   (stored in the KV-shared layers too) → 10,485,760; q/k norms 2 × 256 = 512;
    //   MLP 3 × 2048 × 16,384 = 100,663,296; four norms 4 × 2048 = 8192;
    //   AltUp: router 2048 × 4 = 8192, correction 4 × 4 = 16, prediction 4 × 16 = 64,
    //   output scale + router norm 2 × 2048 = 4096 → 12,368;
    //   LAuReL 2 × 2048 × 64 = 262,144 + norm 2048; PLE gate + projection 2 × 2048 × 256 =
    //   1,048,576 + norm 2048 → 112,484,944 per layer; × 35 = 3,936,973,040.
    // Outside: embedding 262,400 × 2048 = 537,395,200; final norm 2048; per-layer table
    //   262,144 × (35 × 256 = 8960) = 2,348,810,240; per-layer projection 2048 × 8960 =
    //   18,350,080 + its norm 256; AltUp projections 2 × 3 × 2048² = 25,165,824
    //   → 2,929,723,648.
    // Total 6,866,696,688: llama.cpp's GGUF of gemma-3n-E4B-it, `general.parameter_count`
    // 6866696688 (ollama show --verbose of gemma3n:e4b); text only, no vision/audio tower.
    let p = e4b().param_count();
    assert_eq!(p.total, 6_866_696_688);
}

#[test]
fn e2b_parameters_are_the_gguf_parameter_count_exactly() {
    // As E4B with L = 30, I = 8192: per layer 10,485,760 + 512 + 3 × 2048 × 8192 (50,331,648)
    //   + 8192 + 12,368 + 264,192 + 1,050,624 = 62,153,296; × 30 = 1,864,598,880.
    // Outside: 537,395,200 + 2048 + 262,144 × 7680 (2,013,265,920) + 2048 × 7680
    //   (15,728,640) + 256 + 25,165,824 = 2,591,557,888.
    // Total 4,456,156,768 = `general.parameter_count` of gemma3n:e2b's GGUF.
    let p = e2b().param_count();
    assert_eq!(p.total, 4_456_156_768);
}

#[test]
fn a_token_reads_one_row_of_the_per_layer_table() {
    // The per-layer table is a lookup: per token one row of L × p (E4B 8960 values) of its
    // 2,348,810,240; the tied embedding is read whole (it is the output head).
    // 6,866,696,688 − 2,348,810,240 + 8960 = 4,517,895,408.
    let s = e4b();
    assert_eq!(s.per_token_params().active, 4_517_895_408);
    assert_eq!(s.per_layer_embedding_elements(), 2_348_810_240);
    // Google's "effective" count leaves out the per-layer table and the token embedding:
    // 6,866,696,688 − 2,348,810,240 − 537,395,200 = 3,980,491,248 ≈ "E4B".
    let effective = s.param_count().total - s.per_layer_embedding_elements() - 262_400 * 2048;
    assert_eq!(effective, 3_980_491_248);
}

#[test]
fn kv_cache_only_for_the_twenty_layers_before_the_shared_ones() {
    // F16 K and V: 2 × 2 KV heads × 256 × 2 B = 2048 B per token per layer.
    // 20 cache layers: 4 full + 16 sliding. At 32,768 tokens, one sequence:
    //   full 4 × 2048 × 32,768 = 268,435,456; sliding 16 × 2048 × 512 = 16,777,216
    //   → 285,212,672 B (272 MiB).
    // Without sharing, 35 layers (7 full, 28 sliding) would hold 7 × 2048 × 32,768 +
    //   28 × 2048 × 512 = 469,762,048 + 29,360,128 = 499,122,176 B.
    let e = run(e4b(), 32_768, 1);
    assert_eq!(kv(&e), 285_212_672);
    assert_eq!(e.kv_cache_per_token.0, 20 * 2048);
    let mut unshared = e4b();
    unshared.kv_shared_layers = 0;
    assert_eq!(kv(&run(unshared, 32_768, 1)), 499_122_176);
    // E2B: 30 layers less 10 shared = the same 20 cache layers, the same cache.
    assert_eq!(kv(&run(e2b(), 32_768, 1)), 285_212_672);
    // Two sequences: twice the cache.
    assert_eq!(kv(&run(e4b(), 32_768, 2)), 2 * 285_212_672);
}

#[test]
fn every_attention_layer_still_reads_a_cache_at_decode() {
    // Reads at full context per token: 7 full layers × 2048 × 32,768 + 28 sliding × 2048 × 512
    // = 499,122,176 B: the shared layers read their producer's cache.
    let e = run(e4b(), 32_768, 1);
    assert_eq!(e.workload.kv_read_per_token.0, 499_122_176);
}

#[test]
fn bf16_weights_are_two_bytes_per_parameter() {
    // 6,866,696,688 × 2 B = 13,733,393,376 B: norms and AltUp coefficients are BF16 too.
    let e = run(e4b(), 4096, 1);
    assert_eq!(e.kind_total(ComponentKind::Weights).0, 13_733_393_376);
}

#[test]
fn a_single_intermediate_size_and_absent_keys_take_the_class_defaults() {
    // Gemma3nTextConfig expands one width to every layer.
    let one = parse_hf_config(&with(E4B, "intermediate_size", Some(16_384.into()))).unwrap();
    assert_eq!(one, e4b());
    // A text_config written as a diff against the class defaults (the E4B shape).
    let mut v: serde_json::Value = serde_json::from_str(E4B).unwrap();
    v["text_config"] = serde_json::json!({"model_type": "gemma3n_text"});
    let d = parse_hf_config(&v.to_string()).unwrap();
    assert_eq!(d.param_count().total, 6_866_696_688);
    assert_eq!(d.kv_cache_layers(), (20, 16));
}

#[test]
fn bad_gemma3n_keys_are_refused_by_name() {
    let mixed: Vec<u64> = (0..35)
        .map(|i| if i < 20 { 16_384 } else { 8192 })
        .collect();
    let e = parse_hf_config(&with(E4B, "intermediate_size", Some(mixed.into())))
        .unwrap_err()
        .to_string();
    assert!(e.contains("text_config.intermediate_size"), "{e}");
    assert!(!e.contains('\n'));
    let e = parse_hf_config(&with(
        E4B,
        "intermediate_size",
        Some(vec![16_384; 3].into()),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("text_config.intermediate_size") && e.contains("35"),
        "{e}"
    );
    let e = parse_hf_config(&with(E4B, "num_kv_shared_layers", Some(36.into())))
        .unwrap_err()
        .to_string();
    assert!(e.contains("text_config.num_kv_shared_layers"), "{e}");
    let e = parse_hf_config(&with(E4B, "laurel_rank", Some("64".into())))
        .unwrap_err()
        .to_string();
    assert!(e.contains("text_config.laurel_rank"), "{e}");
}

#[test]
fn the_cli_estimates_both_from_their_config_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/gemma3n");
    for (file, params) in [
        ("transformers_Gemma3nTextConfig_E4B.json", 6_866_696_688u64),
        ("Gemma3nTextConfig_E2B.json", 4_456_156_768),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(["estimate", "--config"])
            .arg(dir.join(file))
            .arg("--json")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["params"], params, "{file}");
        // 20 cache layers × 2048 B (F16).
        assert_eq!(v["kv_cache_per_token"], 40_960, "{file}");
    }
}

#[test]
fn the_presets_are_the_config_files() {
    // The gemma-3n-e2b / -e4b presets hold the shape their config.json parses to (name,
    // source and everything else the same).
    let c = headroom::io::catalog::builtin();
    for (id, parsed) in [("gemma-3n-e4b", e4b()), ("gemma-3n-e2b", e2b())] {
        let p = c.models.iter().find(|m| m.id == id).expect(id);
        let mut spec = p.spec.clone();
        spec.name = parsed.name.clone();
        assert_eq!(spec, parsed, "{id}");
        assert_eq!(p.published_params, Some(parsed.param_count().total), "{id}");
    }
}

/// llama.cpp keeps the per-layer embedding table in host RAM (src/llama-arch.cpp classes
/// `per_layer_token_embd` as an input-layer tensor and `llama_model::load_tensors` keeps the
/// input layer on the CPU); transformers keeps it on the GPU. E4B's table is 262,144 × 35 × 256
/// = 2,348,810,240 elements, 4,697,620,480 bytes in BF16.
#[test]
fn llama_cpp_keeps_the_per_layer_table_in_host_ram() {
    use headroom::core::estimate::Placement;
    use headroom::core::precision::WeightPrecision;
    use headroom::core::scenario::Runtime;
    let table = 2_348_810_240_u64 * 2;
    let at = |runtime: Runtime, gpus: u64| {
        estimate(&Scenario {
            model: e4b(),
            weights: WeightPrecision::Bf16,
            runtime,
            gpus,
            ..Scenario::default()
        })
    };
    let host_table = |e: &Estimate| {
        e.components
            .iter()
            .filter(|c| c.name.starts_with("Per-layer embedding table"))
            .map(|c| (c.bytes.0, c.placement))
            .next()
    };
    let cpp = at(Runtime::LlamaCpp, 1);
    let hf = at(Runtime::Transformers, 1);
    assert_eq!(host_table(&cpp), Some((table, Placement::Host)));
    assert_eq!(host_table(&hf), None);
    // The GPU holds the rest: 6,866,696,688 × 2 B − the table.
    let all = 6_866_696_688_u64 * 2;
    assert_eq!(hf.per_gpu_kind(ComponentKind::Weights).0, all);
    assert_eq!(cpp.per_gpu_kind(ComponentKind::Weights).0, all - table);
    assert_eq!(cpp.kind_total(ComponentKind::Weights).0, all);
    assert!(cpp.host_total().0 >= table);
    // Offload and layer split place the remaining outer weights only: the table is held once.
    assert_eq!(
        hf.workload.outer_weights.0 - cpp.workload.outer_weights.0,
        table
    );
    // A CPU-only run has everything in RAM already: no separate row.
    assert_eq!(host_table(&at(Runtime::LlamaCpp, 0)), None);
    assert!(
        cpp.notes
            .iter()
            .any(|n| n.contains("per-layer embedding table") && n.contains("host RAM"))
    );
}

/// The fit places the table in RAM for llama.cpp: E4B in BF16 (12.8 GiB of weights) runs whole
/// on a 16 GiB laptop RTX 4090 because 4.38 GiB of it sit in RAM; transformers must offload.
#[test]
fn the_fit_puts_the_table_in_ram_for_llama_cpp() {
    use headroom::core::fit::{EstimateCache, FitSettings, Verdict, fit_machine};
    use headroom::core::precision::WeightPrecision;
    use headroom::core::scenario::Runtime;
    let cat = headroom::io::catalog::builtin();
    let m = cat
        .machine("laptop-rtx4090-32gb")
        .expect("16 GiB laptop RTX 4090");
    let fit = |runtime: Runtime| {
        let s = Scenario {
            model: e4b(),
            weights: WeightPrecision::Bf16,
            runtime,
            ..Scenario::default()
        };
        fit_machine(&mut EstimateCache::new(&s), m, cat, &FitSettings::default())
    };
    let cpp = fit(Runtime::LlamaCpp);
    assert_eq!(cpp.verdict, Verdict::Gpu);
    assert!(
        cpp.ram_required.0 >= 2_348_810_240 * 2,
        "{:?}",
        cpp.ram_required
    );
    assert!(cpp.gpu_required.0 < 6_866_696_688 * 2 - 2_348_810_240 * 2 + (2 << 30));
    assert_ne!(fit(Runtime::Transformers).verdict, Verdict::Gpu);
}
