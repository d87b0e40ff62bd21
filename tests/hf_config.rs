//! `parse_hf_config` end to end on published config.json files (tests/fixtures/configs/, named
//! `<org>_<repo>.json` after the Hugging Face repository they come from), with golden parameter
//! counts. Each count cites where it is published:
//!
//! - "index": the repository's `model.safetensors.index.json` `metadata.total_size` in bytes,
//!   divided by 2 bytes per BF16/FP16 parameter.
//! - "Hub": the Hugging Face Hub API `safetensors.total` (the "Model size" shown on the model
//!   page), as recorded in public registries (debaditc/kvfit `scripts/build_registry.py`).
//! - model cards and papers where only a rounded figure is published (asserted within a
//!   stated tolerance).

use headroom::core::hf_config::{ConfigError, SUPPORTED_ARCHS, parse_hf_config};
use headroom::core::model::ModelSpec;
use proptest::prelude::*;

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("fixtures/configs/", $name, ".json")),
        )
    };
}

fn parse(f: (&str, &str)) -> ModelSpec {
    parse_hf_config(f.1).unwrap_or_else(|e| panic!("{}: {e}", f.0))
}

/// (fixture, exact total parameters). Sources in the comments.
fn goldens() -> Vec<((&'static str, &'static str), u64)> {
    vec![
        // index: 16,060,522,496 B / 2 (meta-llama/Meta-Llama-3-8B).
        (fixture!("meta-llama_Meta-Llama-3-8B"), 8_030_261_248),
        // Hub: 8,030,261,248 (meta-llama/Llama-3.1-8B-Instruct, same shape as 3-8B).
        (fixture!("meta-llama_Llama-3.1-8B"), 8_030_261_248),
        // Hub: 3,212,749,824 (meta-llama/Llama-3.2-3B-Instruct); tied embeddings, explicit head_dim.
        (fixture!("meta-llama_Llama-3.2-3B"), 3_212_749_824),
        // transformers num_parameters(): 6,738,415,616 (PEFT "all params: 6738415616";
        // KerasHub llama_7b_en "params": 6738415616). The .bin index's 13,476,839,424 B also
        // holds the rotary inv_freq buffers, which are not parameters.
        (fixture!("meta-llama_Llama-2-7b-hf"), 6_738_415_616),
        // index: 14,483,464,192 B / 2 (mistralai/Mistral-7B-v0.1).
        (fixture!("mistralai_Mistral-7B-v0.1"), 7_241_732_096),
        // Hub: 12,247,782,400 (Mistral-Nemo-Instruct-2407); head_dim 128 ≠ 5120 / 32.
        (fixture!("mistralai_Mistral-Nemo-Base-2407"), 12_247_782_400),
        // index: 93,405,585,408 B / 2 (Mixtral-8x7B); KerasHub mixtral_8_7b_en "params": 46702792704.
        (fixture!("mistralai_Mixtral-8x7B-v0.1"), 46_702_792_704),
        // index: 15,231,233,024 B / 2 (Qwen/Qwen2.5-7B); q/k/v biases.
        (fixture!("Qwen_Qwen2.5-7B"), 7_615_616_512),
        // Hub: 3,085,938,688 (Qwen/Qwen2.5-3B); tied.
        (fixture!("Qwen_Qwen2.5-3B"), 3_085_938_688),
        // transformers num_parameters() and llama.cpp n_params: 494,032,768 (model card "0.49B").
        (fixture!("Qwen_Qwen2.5-0.5B"), 494_032_768),
        // Hub: 8,190,735,360 (Qwen/Qwen3-8B); q/k norms.
        (fixture!("Qwen_Qwen3-8B"), 8_190_735_360),
        // Qwen3NextConfig's defaults (Qwen3-Next-80B-A3B; not the Hub file, see
        // fixtures/configs/hybrid/SOURCES.md): "80B total"; hand count in tests/hybrid.rs.
        (
            fixture!("hybrid/transformers_Qwen3NextConfig_defaults"),
            79_674_391_296,
        ),
        // Gemma3nTextConfig's defaults (the gemma-3n-E4B shape; see
        // fixtures/configs/gemma3n/SOURCES.md): llama.cpp's GGUF general.parameter_count; hand
        // count in tests/gemma3n.rs.
        (
            fixture!("gemma3n/transformers_Gemma3nTextConfig_E4B"),
            6_866_696_688,
        ),
        // JambaConfig's defaults (the Jamba-v0.1 shape): the paper's "52B"; hand count in
        // tests/hybrid.rs.
        (
            fixture!("hybrid/transformers_JambaConfig_defaults"),
            51_570_323_328,
        ),
        // Mamba2Config's defaults (the Mamba-Codestral-7B shape): Mistral AI's
        // "7,285,403,648 parameters"; hand count in tests/hybrid.rs.
        (
            fixture!("hybrid/transformers_Mamba2Config_defaults"),
            7_285_403_648,
        ),
        // LiquidAI/LFM2-1.2B model card: "Parameters: 1,170,340,608" (see
        // fixtures/configs/hybrid/SOURCES.md); hand count in tests/hybrid_blocks.rs.
        (fixture!("hybrid/LiquidAI_LFM2-1.2B_config"), 1_170_340_608),
        // Nemotron-H-8B (config as quoted by Megatron-Bridge, see SOURCES.md): "8B"; hand count
        // in tests/hybrid_blocks.rs.
        (
            fixture!("hybrid/Megatron-Bridge_Nemotron-H-8B_config"),
            8_100_852_736,
        ),
        // index: 61,064,245,248 B / 2 (Qwen/Qwen3-30B-A3B); model card "30.5B".
        (fixture!("Qwen_Qwen3-30B-A3B"), 30_532_122_624),
        // KerasHub qwen1.5_moe_2.7b_en "params": 14315784192 (model card "14.3B"); shared expert + gate.
        (fixture!("Qwen_Qwen1.5-MoE-A2.7B"), 14_315_784_192),
        // KerasHub gemma_2b_en "params": 2506172416 (PEFT "all params: 2506172416"); Gemma 1 ties
        // its embedding by default and its config.json does not say so.
        (fixture!("google_gemma-2b"), 2_506_172_416),
        // index: 18,483,411,968 B / 2 (google/gemma-2-9b); KerasHub gemma2_9b_en 9241705984.
        (fixture!("google_gemma-2-9b-it"), 9_241_705_984),
        // Hub: 999,885,952 (google/gemma-3-1b-it).
        (fixture!("google_gemma-3-1b-it"), 999_885_952),
        // index: 8,600,158,944 B / 2 (medgemma-4b, the Gemma 3 4B architecture); Hub 4,300,079,472
        // (google/gemma-3-4b-it). Includes the SigLIP vision tower and projector (419,816,304).
        (fixture!("google_gemma-3-4b-it"), 4_300_079_472),
        // Hub: 12,187,325,040 (google/gemma-3-12b-it).
        (fixture!("google_gemma-3-12b-it"), 12_187_325_040),
        // Hub: 27,432,406,640 (google/gemma-3-27b-it).
        (fixture!("google_gemma-3-27b-it"), 27_432_406_640),
        // index: 7,642,159,104 B / 2 (microsoft/Phi-3-mini-4k-instruct); fused qkv / gate_up.
        (fixture!("microsoft_Phi-3-mini-4k-instruct"), 3_821_079_552),
        // Main model "671B" (DeepSeek-V3 README_WEIGHTS); the exact figure is reconciled with the
        // Hub's 684,531,386,000 in `deepseek_v3_reconciles_with_the_checkpoint` below.
        (fixture!("deepseek-ai_DeepSeek-V3"), 671_026_419_200),
        // chatllm.cpp "15706484224 parameters" for DeepSeek-V2-Lite (model card "15.7B").
        (fixture!("deepseek-ai_DeepSeek-V2-Lite"), 15_706_484_224),
        // Hub: 20,914,757,184 (openai/gpt-oss-20b); GGUF general.parameter_count the same.
        (fixture!("openai_gpt-oss-20b"), 20_914_757_184),
        // Hub: 116,829,156,672 (openai/gpt-oss-120b); GGUF general.parameter_count the same.
        (fixture!("openai_gpt-oss-120b"), 116_829_156_672),
        // Hub: 8.29B (Qwen/Qwen2.5-VL-7B-Instruct): Qwen2.5-7B's 7,615,616,512 + the ViT's
        // 676,550,144 (hand count in tests/vlm_config.rs).
        (
            fixture!("qwen2_5_vl/Qwen_Qwen2.5-VL-7B-Instruct"),
            8_292_166_656,
        ),
        // Hub: 7.06B (llava-hf/llava-1.5-7b-hf): Llama-2-7B at vocab 32,064 (6,738,939,904) +
        // CLIP ViT-L/14-336 303,507,456 + projector 20,979,712 (tests/vlm_config.rs).
        (fixture!("llava/llava-hf_llava-1.5-7b-hf"), 7_063_427_072),
        // Model card: 7.57B (llava-hf/llava-v1.6-mistral-7b-hf): Mistral-7B at vocab 32,064
        // (7,242,256,384) + the CLIP tower, projector and image_newline 324,491,264
        // (tests/vlm_config.rs).
        (
            fixture!("llava/llava-hf_llava-v1.6-mistral-7b-hf"),
            7_566_747_648,
        ),
        // Model card: "11B (10.6B)", Hub 10.7B (meta-llama/Llama-3.2-11B-Vision): a 40-layer
        // Llama decoder at vocab 128,256 (9,775,157,248) + the tower and projector 895,028,755
        // (hand count in tests/vlm_config.rs).
        (
            fixture!("mllama/meta-llama_Llama-3.2-11B-Vision"),
            10_670_186_003,
        ),
    ]
}

#[test]
fn golden_parameter_counts() {
    let mut wrong = Vec::new();
    for (f, want) in goldens() {
        let s = parse(f);
        let got = s.param_count().total;
        if got != want {
            wrong.push(format!(
                "{}: got {got}, published {want} (off by {})",
                f.0,
                got as i128 - want as i128
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_count_is_the_inventory_sum() {
    for (f, _) in goldens() {
        let s = parse(f);
        let layers: u64 = (0..s.layers).map(|i| s.layer_params(i).total).sum();
        let outer: u64 = s.outer_tensors().iter().map(|t| t.elements).sum();
        assert_eq!(s.param_count().total, layers + outer, "{}", f.0);
        let active: u64 = (0..s.layers).map(|i| s.layer_params(i).active).sum::<u64>()
            + s.outer_tensors()
                .iter()
                .map(|t| t.active_elements)
                .sum::<u64>();
        assert_eq!(s.per_token_params().active, active, "{}", f.0);
        assert!(s.param_count().active <= s.param_count().total, "{}", f.0);
        if s.moe.is_none() {
            // Dense: every parameter is active.
            assert_eq!(s.param_count().active, s.param_count().total, "{}", f.0);
        }
    }
}

/// Published active counts. DeepSeek and OpenAI count the output head but not the input
/// embedding table (as we do: one row is read per token); Mistral and Qwen count the whole table,
/// so their figures are compared with `active + V·h − h`.
#[test]
fn active_parameters_match_the_published_figures() {
    let near = |got: u64, want: f64, tol: f64, what: &str| {
        assert!(
            (got as f64 - want).abs() <= tol,
            "{what}: {got} vs published {want}"
        );
    };
    let with_table = |s: &ModelSpec| s.param_count().active + s.vocab * s.hidden - s.hidden;

    // DeepSeek-V3 README_WEIGHTS: "Activation parameters: 36.6B (including 0.9B for the output Head)".
    let ds = parse(fixture!("deepseek-ai_DeepSeek-V3"));
    near(ds.param_count().active, 36.6e9, 0.05e9, "DeepSeek-V3");
    // DeepSeek-V2-Lite model card: "2.4B are activated for each token".
    let lite = parse(fixture!("deepseek-ai_DeepSeek-V2-Lite"));
    near(lite.param_count().active, 2.4e9, 0.06e9, "DeepSeek-V2-Lite");
    // gpt-oss model card: active 3.61B (20b) and 5.13B (120b).
    near(
        parse(fixture!("openai_gpt-oss-20b")).param_count().active,
        3.61e9,
        0.01e9,
        "gpt-oss-20b",
    );
    near(
        parse(fixture!("openai_gpt-oss-120b")).param_count().active,
        5.13e9,
        0.01e9,
        "gpt-oss-120b",
    );
    // Mistral: "only uses 12.9B parameters per token".
    near(
        with_table(&parse(fixture!("mistralai_Mixtral-8x7B-v0.1"))),
        12.9e9,
        0.05e9,
        "Mixtral",
    );
    // Qwen3-30B-A3B model card: "3.3B activated"; Qwen1.5-MoE-A2.7B: "2.7B activated".
    near(
        with_table(&parse(fixture!("Qwen_Qwen3-30B-A3B"))),
        3.3e9,
        0.06e9,
        "Qwen3-30B-A3B",
    );
    near(
        with_table(&parse(fixture!("Qwen_Qwen1.5-MoE-A2.7B"))),
        2.7e9,
        0.05e9,
        "Qwen1.5-MoE-A2.7B",
    );
    // A dense untied model reads all but V·h − h of its parameters per token, and reports
    // every parameter as active.
    let l3 = parse(fixture!("meta-llama_Meta-Llama-3-8B"));
    assert_eq!(
        l3.per_token_params().active + l3.vocab * l3.hidden - l3.hidden,
        8_030_261_248
    );
    assert_eq!(l3.param_count().active, 8_030_261_248);
    // A tied one reads all of them.
    let q05 = parse(fixture!("Qwen_Qwen2.5-0.5B"));
    assert_eq!(q05.param_count().active, 494_032_768);
}

/// The Hub lists DeepSeek-V3 at 684,531,386,000 parameters: the 671B main model, plus the MTP
/// module (one more MoE layer, enorm + hnorm, eh_proj 2h → h, shared_head.norm, and copies of
/// the embedding and output head), plus the FP8 checkpoint's `weight_scale_inv` tensors (one f32
/// per 128 × 128 block of every quantised linear weight). Adding them up from the parsed shape
/// lands on the Hub figure to the parameter, which pins the main-model count.
#[test]
fn deepseek_v3_reconciles_with_the_checkpoint() {
    let s = parse(fixture!("deepseek-ai_DeepSeek-V3"));
    assert_eq!(s.mtp_layers, 1);
    let main = s.param_count().total;
    let h = s.hidden;
    let moe_layer = s.layer_params(s.layers - 1).total;
    let mtp = moe_layer + 2 * h + 2 * h * h + h + 2 * s.vocab * h;

    let mla = s.mla.clone().unwrap();
    let moe = s.moe.clone().unwrap();
    let blocks = |o: u64, i: u64| o.div_ceil(128) * i.div_ceil(128);
    let heads = s.heads;
    let attn = blocks(mla.q_lora_rank, h)
        + blocks(
            heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim),
            mla.q_lora_rank,
        )
        + blocks(mla.kv_lora_rank + mla.qk_rope_head_dim, h)
        + blocks(
            heads * (mla.qk_nope_head_dim + mla.v_head_dim),
            mla.kv_lora_rank,
        )
        + blocks(h, heads * mla.v_head_dim);
    let mlp = |w: u64| 2 * blocks(w, h) + blocks(h, w);
    let dense_scales = attn + mlp(s.intermediate);
    let moe_scales = attn + (moe.experts + moe.shared_experts) * mlp(moe.expert_ffn);
    let dense_n = moe.first_dense_layers;
    // 58 MoE layers in the main model + the MTP layer.
    let scales = dense_n * dense_scales + (s.layers - dense_n + 1) * moe_scales;

    assert_eq!(main + mtp + scales, 684_531_386_000);
}

#[test]
fn kv_cache_shapes() {
    // Llama-3-8B: 2 · 32 layers · 8 kv heads · 128 · 2 bytes = 131,072 B per token at FP16.
    let l3 = parse(fixture!("meta-llama_Meta-Llama-3-8B"));
    let (k, v) = l3.kv_elements_per_token_layer();
    assert_eq!((k + v) * l3.layers * 2, 131_072);
    assert_eq!(l3.local_layers(), (0, 0));
    assert_eq!(l3.max_context, 8192);

    // DeepSeek MLA: kv_lora_rank + qk_rope_head_dim.
    assert_eq!(
        parse(fixture!("deepseek-ai_DeepSeek-V3")).kv_elements_per_token_layer(),
        (576, 0)
    );
    assert_eq!(
        parse(fixture!("deepseek-ai_DeepSeek-V2-Lite")).kv_elements_per_token_layer(),
        (576, 0)
    );

    // Llama-2-7B is MHA: n_kv defaults to n_h.
    let l2 = parse(fixture!("meta-llama_Llama-2-7b-hf"));
    assert_eq!((l2.heads, l2.kv_heads, l2.head_dim), (32, 32, 128));
}

#[test]
fn sliding_windows() {
    // Mistral v0.1: 4096 on every layer.
    let m = parse(fixture!("mistralai_Mistral-7B-v0.1"));
    assert_eq!(m.local_layers(), (32, 4096));
    // Later Mistrals: sliding_window null.
    assert_eq!(
        parse(fixture!("mistralai_Mistral-Nemo-Base-2407")).local_layers(),
        (0, 0)
    );
    assert_eq!(
        parse(fixture!("mistralai_Mixtral-8x7B-v0.1")).local_layers(),
        (0, 0)
    );
    // Qwen2.5 carries sliding_window but use_sliding_window false.
    for f in [
        fixture!("Qwen_Qwen2.5-7B"),
        fixture!("Qwen_Qwen2.5-0.5B"),
        fixture!("Qwen_Qwen1.5-MoE-A2.7B"),
    ] {
        assert_eq!(parse(f).sliding, None, "{}", f.0);
    }
    // Gemma 2: every other layer, starting with layer 0.
    let g1 = parse(fixture!("google_gemma-2b"));
    assert!(g1.tied_embeddings && g1.norms_per_layer == 2 && g1.sliding.is_none());
    assert_eq!((g1.heads, g1.kv_heads, g1.head_dim), (8, 1, 256));
    let g2 = parse(fixture!("google_gemma-2-9b-it"));
    assert_eq!(g2.local_layers(), (21, 4096));
    assert!(
        g2.is_local_layer(0)
            && !g2.is_local_layer(1)
            && g2.is_local_layer(40)
            && !g2.is_local_layer(41)
    );
    // Gemma 3: five local, one global; 4B window 1024, 1B window 512.
    let g3 = parse(fixture!("google_gemma-3-4b-it"));
    assert_eq!(g3.local_layers(), (29, 1024));
    let global: Vec<u64> = (0..g3.layers).filter(|&i| !g3.is_local_layer(i)).collect();
    assert_eq!(global, vec![5, 11, 17, 23, 29]);
    assert_eq!(
        parse(fixture!("google_gemma-3-1b-it")).local_layers(),
        (22, 512)
    );
    // gpt-oss: layer_types alternate sliding (128) and full.
    let oss = parse(fixture!("openai_gpt-oss-20b"));
    assert_eq!(oss.local_layers(), (12, 128));
    assert!(oss.is_local_layer(0) && !oss.is_local_layer(1));
    // Phi-3-mini: 2047 on every layer.
    assert_eq!(
        parse(fixture!("microsoft_Phi-3-mini-4k-instruct")).local_layers(),
        (32, 2047)
    );
}

#[test]
fn architecture_details() {
    let q = parse(fixture!("Qwen_Qwen2.5-7B"));
    assert!(q.qkv_bias && !q.o_bias && !q.qk_norm && !q.tied_embeddings);
    assert!(parse(fixture!("Qwen_Qwen2.5-0.5B")).tied_embeddings);

    let q3 = parse(fixture!("Qwen_Qwen3-30B-A3B"));
    let moe = q3.moe.clone().unwrap();
    assert!(q3.qk_norm && !q3.qkv_bias);
    assert_eq!(
        (
            moe.experts,
            moe.active_experts,
            moe.expert_ffn,
            moe.shared_experts
        ),
        (128, 8, 768, 0)
    );
    assert_eq!(q3.moe_layer_count(), 48);

    let qm = parse(fixture!("Qwen_Qwen1.5-MoE-A2.7B")).moe.unwrap();
    assert_eq!(
        (
            qm.experts,
            qm.active_experts,
            qm.shared_experts,
            qm.shared_ffn
        ),
        (60, 4, 1, 5632)
    );
    assert!(qm.shared_expert_gate);

    // Gemma 3 4B: the text_config omits heads, kv heads, head_dim and vocab (transformers defaults),
    // and the embedding is tied by default.
    let g3 = parse(fixture!("google_gemma-3-4b-it"));
    assert_eq!(
        (g3.heads, g3.kv_heads, g3.head_dim, g3.vocab),
        (8, 4, 256, 262_208)
    );
    assert_eq!(
        (g3.norms_per_layer, g3.qk_norm, g3.tied_embeddings),
        (4, true, true)
    );
    assert_eq!(g3.max_context, 131_072);
    assert_eq!(g3.vision_params, 419_816_304);
    assert_eq!(g3.arch, "gemma3");
    let g1 = parse(fixture!("google_gemma-2b"));
    assert!(g1.tied_embeddings && g1.norms_per_layer == 2 && g1.sliding.is_none());
    assert_eq!((g1.heads, g1.kv_heads, g1.head_dim), (8, 1, 256));
    let g2 = parse(fixture!("google_gemma-2-9b-it"));
    assert!(g2.tied_embeddings && !g2.qk_norm && g2.norms_per_layer == 4 && g2.vision_params == 0);

    let ds = parse(fixture!("deepseek-ai_DeepSeek-V3"));
    let m = ds.moe.clone().unwrap();
    assert_eq!(
        (
            m.experts,
            m.active_experts,
            m.shared_experts,
            m.first_dense_layers
        ),
        (256, 8, 1, 3)
    );
    assert!(m.router_bias, "noaux_tc keeps e_score_correction_bias");
    assert_eq!(ds.mla.clone().unwrap().q_lora_rank, 1536);
    assert_eq!(ds.moe_layer_count(), 58);
    let lite = parse(fixture!("deepseek-ai_DeepSeek-V2-Lite"));
    assert_eq!(
        lite.mla.clone().unwrap().q_lora_rank,
        0,
        "q_lora_rank: null"
    );
    assert!(!lite.moe.clone().unwrap().router_bias);
    assert_eq!(lite.mtp_layers, 0);

    let oss = parse(fixture!("openai_gpt-oss-20b"));
    assert!(oss.qkv_bias && oss.o_bias && oss.mlp_bias && oss.attn_sinks);
    assert!(oss.moe.clone().unwrap().router_bias);
    assert_eq!((oss.heads, oss.kv_heads, oss.head_dim), (64, 8, 64));

    let phi = parse(fixture!("microsoft_Phi-3-mini-4k-instruct"));
    assert!(!phi.qkv_bias && !phi.tied_embeddings && phi.kv_heads == 32);

    let nemo = parse(fixture!("mistralai_Mistral-Nemo-Base-2407"));
    assert_eq!((nemo.hidden, nemo.heads, nemo.head_dim), (5120, 32, 128));
}

#[test]
fn names_come_from_name_or_path_or_the_arch() {
    assert_eq!(
        parse(fixture!("meta-llama_Llama-2-7b-hf")).name,
        "meta-llama/Llama-2-7b-hf"
    );
    assert_eq!(
        parse(fixture!("google_gemma-2-9b-it")).name,
        "google/gemma-2-9b-it"
    );
    assert_eq!(
        parse(fixture!("microsoft_Phi-3-mini-4k-instruct")).name,
        "Phi-3-mini-4k-instruct"
    );
    assert_eq!(
        parse(fixture!("meta-llama_Meta-Llama-3-8B")).name,
        "llama (config.json)"
    );
    let local = r#"{"_name_or_path": "/data/models/my-finetune", "model_type": "llama", "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}"#;
    assert_eq!(parse_hf_config(local).unwrap().name, "my-finetune");
    // A JSON escape decodes to a newline: shown escaped, so labels and summaries stay one line.
    let odd = local
        .replace("/data/models/my-finetune", "my\\nmodel")
        .replace("\"llama\"", "\"lla\\u0000ma\"");
    let spec = parse_hf_config(&odd).unwrap();
    assert_eq!(spec.name, "my\\nmodel");
    assert_eq!(spec.arch, "lla\\u{0}ma");
}

#[test]
fn every_supported_arch_parses_from_a_fixture() {
    let archs: Vec<String> = goldens().iter().map(|(f, _)| parse(*f).arch).collect();
    for a in SUPPORTED_ARCHS {
        assert!(archs.iter().any(|x| x == a), "no fixture for {a}");
    }
}

const SMALL: &str = r#"{
  "model_type": "my_new_lm",
  "hidden_size": 1024,
  "num_hidden_layers": 4,
  "num_attention_heads": 8,
  "intermediate_size": 4096,
  "vocab_size": 1000
}"#;

/// Replace (or with `None` remove) one key of [`SMALL`].
fn small_with(key: &str, value: Option<&str>) -> String {
    let mut v: serde_json::Value = serde_json::from_str(SMALL).unwrap();
    let m = v.as_object_mut().unwrap();
    match value {
        Some(x) => {
            m.insert(key.into(), serde_json::from_str(x).unwrap());
        }
        None => {
            m.remove(key);
        }
    }
    v.to_string()
}

#[test]
fn unknown_arch_with_standard_keys_is_a_llama_style_decoder() {
    let s = parse_hf_config(SMALL).unwrap();
    assert_eq!(s.arch, "my_new_lm");
    assert_eq!((s.kv_heads, s.head_dim), (8, 128));
    // Per layer 4·1024² + 3·1024·4096 + 2·1024; tied by default (PretrainedConfig): V·h once, + final norm.
    let layer = 4 * 1024 * 1024 + 3 * 1024 * 4096 + 2 * 1024;
    assert!(s.tied_embeddings);
    assert_eq!(s.param_count().total, 4 * layer + 1000 * 1024 + 1024);
    let untied = parse_hf_config(&small_with("tie_word_embeddings", Some("false"))).unwrap();
    assert_eq!(
        untied.param_count().total,
        4 * layer + 2 * 1000 * 1024 + 1024
    );
    // attention_bias / mlp_bias add q, k, v, o and gate, up, down biases.
    let biased = small_with("attention_bias", Some("true"));
    let biased = parse_hf_config(&biased).unwrap();
    assert_eq!(
        biased.param_count().total - s.param_count().total,
        4 * (3 * 1024 + 1024)
    );
    let mlp_b = parse_hf_config(&small_with("mlp_bias", Some("true"))).unwrap();
    assert_eq!(
        mlp_b.param_count().total - s.param_count().total,
        4 * (2 * 4096 + 1024)
    );
    // A sliding window on an unknown arch applies to every layer.
    let sw = parse_hf_config(&small_with("sliding_window", Some("256"))).unwrap();
    assert_eq!(sw.local_layers(), (4, 256));
}

#[test]
fn qwen_moe_layer_layout_keys() {
    let cfg = r#"{
      "model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 8, "num_attention_heads": 4,
      "intermediate_size": 256, "vocab_size": 100, "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "shared_expert_intermediate_size": 0,
      "decoder_sparse_step": 2, "mlp_only_layers": [3]
    }"#;
    let s = parse_hf_config(cfg).unwrap();
    let moe: Vec<u64> = (0..8).filter(|&i| s.is_moe_layer(i)).collect();
    assert_eq!(moe, vec![1, 5, 7]);
    assert_eq!(s.moe.as_ref().unwrap().shared_experts, 0);
    // Dense layers need intermediate_size.
    let no_i = cfg.replace(r#""intermediate_size": 256, "#, "");
    assert_eq!(
        parse_hf_config(&no_i),
        Err(ConfigError::MissingKey("intermediate_size".into()))
    );
    // An all-MoE model does not.
    let all_moe = no_i.replace(
        r#""decoder_sparse_step": 2, "mlp_only_layers": [3]"#,
        r#""decoder_sparse_step": 1"#,
    );
    assert_eq!(parse_hf_config(&all_moe).unwrap().moe_layer_count(), 8);
    // Layers that do not exist.
    let bad = cfg.replace("[3]", "[3, 8]");
    assert!(
        matches!(parse_hf_config(&bad), Err(ConfigError::BadValue { key, .. }) if key == "mlp_only_layers")
    );
    // Qwen-MoE needs moe_intermediate_size (intermediate_size is the dense width there).
    let no_moe_i = cfg.replace(r#""moe_intermediate_size": 32, "#, "");
    assert_eq!(
        parse_hf_config(&no_moe_i),
        Err(ConfigError::MissingKey("moe_intermediate_size".into()))
    );
    // And the top-k.
    let no_k = cfg.replace(r#""num_experts_per_tok": 2,"#, "");
    assert_eq!(
        parse_hf_config(&no_k),
        Err(ConfigError::MissingKey("num_experts_per_tok".into()))
    );
}

#[test]
fn deepseek_moe_layer_freq_expands_to_dense_layers() {
    let mut v: serde_json::Value = serde_json::from_str(include_str!(
        "fixtures/configs/deepseek-ai_DeepSeek-V2-Lite.json"
    ))
    .unwrap();
    v["moe_layer_freq"] = 2.into();
    let s = parse_hf_config(&v.to_string()).unwrap();
    // Layers ≥ 1 with i % 2 == 0 are MoE: 2, 4, …, 26.
    assert_eq!(s.moe_layer_count(), 13);
    assert!(!s.is_moe_layer(1) && s.is_moe_layer(2) && !s.is_moe_layer(3));
}

#[test]
fn missing_keys_are_named() {
    for key in [
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "vocab_size",
        "intermediate_size",
    ] {
        let e = parse_hf_config(&small_with(key, None)).unwrap_err();
        assert_eq!(e, ConfigError::MissingKey(key.into()));
        assert_eq!(e.to_string(), format!("missing key \"{key}\""));
    }
    // null means absent.
    assert_eq!(
        parse_hf_config(&small_with("num_hidden_layers", Some("null"))),
        Err(ConfigError::MissingKey("num_hidden_layers".into()))
    );
    // Optional keys take their defaults: num_key_value_heads = heads, head_dim = hidden / heads.
    let s = parse_hf_config(&small_with("num_key_value_heads", Some("null"))).unwrap();
    assert_eq!(s.kv_heads, 8);
    // MLA needs its head dimensions.
    let mut v: serde_json::Value = serde_json::from_str(include_str!(
        "fixtures/configs/deepseek-ai_DeepSeek-V3.json"
    ))
    .unwrap();
    v.as_object_mut().unwrap().remove("qk_rope_head_dim");
    assert_eq!(
        parse_hf_config(&v.to_string()),
        Err(ConfigError::MissingKey("qk_rope_head_dim".into()))
    );
}

#[test]
fn nested_keys_carry_their_prefix() {
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/configs/google_gemma-3-4b-it.json")).unwrap();
    v["text_config"]["hidden_size"] = "2560".into();
    let e = parse_hf_config(&v.to_string()).unwrap_err();
    match &e {
        ConfigError::BadValue { key, message } => {
            assert_eq!(key, "text_config.hidden_size");
            assert!(message.contains("string"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string()
            .starts_with("key \"text_config.hidden_size\": ")
    );
    v["text_config"]["hidden_size"] = 2560.into();
    v["vision_config"]["patch_size"] = (-14).into();
    assert!(
        matches!(parse_hf_config(&v.to_string()), Err(ConfigError::BadValue { key, .. }) if key == "vision_config.patch_size")
    );
}

#[test]
fn bad_json_reports_line_and_column() {
    let text =
        "{\n  \"hidden_size\": 4096,\n  \"num_hidden_layers\": 32,,\n  \"vocab_size\": 32000\n}";
    match parse_hf_config(text) {
        Err(ConfigError::Json {
            line,
            column,
            message,
        }) => {
            assert_eq!(line, 3);
            assert_eq!(column, 27);
            assert!(
                !message.is_empty() && !message.contains("at line"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let e = parse_hf_config("{\"hidden_size\": 4096").unwrap_err();
    assert!(matches!(e, ConfigError::Json { line: 1, .. }), "{e:?}");
    assert!(e.to_string().starts_with("line 1:"), "{e}");
    assert!(matches!(parse_hf_config(""), Err(ConfigError::Json { .. })));
    // Valid JSON that is not an object.
    assert!(matches!(
        parse_hf_config("[1, 2]"),
        Err(ConfigError::BadValue { .. })
    ));
}

#[test]
fn wrong_types_negative_and_absurd_values_are_bad_values() {
    let cases: &[(&str, &str, &str)] = &[
        ("num_hidden_layers", "-32", "negative"),
        ("num_hidden_layers", "0", "between"),
        ("num_hidden_layers", "1000000", "between"),
        ("hidden_size", "1e12", "between"),
        ("hidden_size", "\"4096\"", "string"),
        ("num_attention_heads", "32.5", "whole"),
        ("vocab_size", "[32000]", "list"),
        ("intermediate_size", "{}", "object"),
        ("num_key_value_heads", "3", "divide"),
        ("num_key_value_heads", "16", "between"),
        ("tie_word_embeddings", "\"yes\"", "true or false"),
        ("max_position_embeddings", "-1", "negative"),
        ("sliding_window", "-4096", "negative"),
        ("layer_types", "[\"sliding_attention\"]", "entries"),
    ];
    for (key, value, says) in cases {
        match parse_hf_config(&small_with(key, Some(value))) {
            Err(ConfigError::BadValue { key: k, message }) => {
                assert_eq!(&k, key, "{key}={value}: {message}");
                assert!(message.contains(says), "{key}={value}: {message}");
            }
            other => panic!("{key}={value}: {other:?}"),
        }
    }
    // A hidden size that heads do not divide, without head_dim.
    let odd = small_with("hidden_size", Some("1001"));
    assert!(
        matches!(parse_hf_config(&odd), Err(ConfigError::BadValue { key, .. }) if key == "num_attention_heads")
    );
    // Each value within bounds, but the whole beyond any real model.
    let huge = r#"{"model_type": "x", "hidden_size": 1048576, "num_hidden_layers": 4096, "num_attention_heads": 8192,
        "intermediate_size": 4194304, "vocab_size": 1000}"#;
    assert!(
        matches!(parse_hf_config(huge), Err(ConfigError::BadValue { key, .. }) if key == "num_hidden_layers")
    );
    // Whole floats are numbers like any other.
    assert_eq!(
        parse_hf_config(&small_with("hidden_size", Some("1024.0")))
            .unwrap()
            .hidden,
        1024
    );
}

proptest! {
    /// Whatever numbers a config holds, parsing never panics, and what it accepts is sane.
    #[test]
    fn never_panics(
        h in prop_oneof![Just(-1i64), 0i64..5000, Just(i64::MAX)],
        l in prop_oneof![Just(-1i64), 0i64..200, Just(1i64 << 40)],
        n in 0i64..70,
        kv in 0i64..70,
        i in prop_oneof![0i64..20000, Just(i64::MAX)],
        v in 0i64..300000,
        e in 0i64..300,
        k in 0i64..20,
        w in -2i64..10000,
    ) {
        let text = format!(
            r#"{{"model_type": "mixtral", "hidden_size": {h}, "num_hidden_layers": {l}, "num_attention_heads": {n},
               "num_key_value_heads": {kv}, "intermediate_size": {i}, "vocab_size": {v},
               "num_local_experts": {e}, "num_experts_per_tok": {k}, "sliding_window": {w}}}"#
        );
        if let Ok(s) = parse_hf_config(&text) {
            let p = s.param_count();
            prop_assert!(p.total <= 1_000_000_000_000_000);
            prop_assert!(p.active <= p.total);
            prop_assert!(s.heads.is_multiple_of(s.kv_heads));
            prop_assert!(s.local_layers().0 <= s.layers);
        }
    }
}

/// Found by the hf_config fuzz target: a top-level JSON string holding "\n" was quoted raw in the
/// error, which then ran over two lines in the CLI and the import dialog.
#[test]
fn strings_quoted_in_errors_stay_on_one_line() {
    let err = parse_hf_config(r#""a\nb""#).unwrap_err();
    let msg = err.to_string();
    assert_eq!(
        msg,
        "key \"(top level)\": expected an object {…}, got the string \"a\\nb\""
    );
    let text = r#"{"model_type": "llama", "hidden_size": "4096\r\n", "num_hidden_layers": 32,
        "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}"#;
    let msg = parse_hf_config(text).unwrap_err().to_string();
    assert!(!msg.contains(char::is_control), "{msg}");
    assert!(msg.contains("4096\\r\\n"), "{msg}");
}
