//! Vision towers read from a VLM's config.json (`core::hf_config::vision_tower`): Qwen2.5-VL's
//! parameters hand-counted against the published 675M, its dynamic-resolution tokens per image,
//! the estimate rows and the CLI flags (`--images`, `--image-size`), bad input.

use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::hf_config::{parse_hf_config, vision_tower};
use headroom::core::scenario::Scenario;
use headroom::core::vision::VisionInputs;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/configs/qwen2_5_vl")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn tower(name: &str) -> headroom::core::vision::VisionEncoder {
    let v: serde_json::Value = serde_json::from_str(&text(name)).unwrap();
    vision_tower(&v).unwrap().expect("a vision tower")
}

const Q7: &str = "Qwen_Qwen2.5-VL-7B-Instruct.json";
const Q32: &str = "Qwen_Qwen2.5-VL-32B-Instruct-AWQ.json";

/// Qwen2.5-VL-7B's ViT (h 1280, I 3420, 32 blocks, 16 heads, o 3584), transformers
/// `modeling_qwen2_5_vl.py`:
/// patch Conv3d 3 × 2 × 14² × 1280 = 1,505,280;
/// block: norms 2,560 + qkv 1280 × 3840 + 3840 = 4,919,040 + proj 1,639,680
///        + gate/up 2 × (1280 × 3420 + 3420) = 8,762,040 + down 3420 × 1280 + 1280 = 4,378,880
///        = 19,702,200, × 32 = 630,470,400;
/// merger: norm 1,280 + 5120² + 5120 = 26,219,520 + 5120 × 3584 + 3584 = 18,353,664
///        = 44,574,464.
/// Total 676,550,144: the "675M" ViT of the Qwen2.5-VL report (arXiv 2502.13923, Table 1).
#[test]
fn qwen2_5_vl_7b_tower_is_the_published_675m() {
    let t = tower(Q7);
    assert_eq!(t.params, 676_550_144);
    assert!((t.params as f64 / 675e6 - 1.0).abs() < 0.005);
    // BF16 as stored.
    assert_eq!(t.weight_bytes, 2 * 676_550_144);
    assert_eq!((t.layers, t.hidden, t.heads, t.ffn), (32, 1280, 16, 3420));
    assert_eq!((t.patch_size, t.merge), (14, 2));
    assert!(t.dynamic && t.in_checkpoint);
    // Sized at 560² by default (llama.cpp's converter): 40² patches / 2² = 400 tokens.
    assert_eq!(
        (t.image_size, t.patches(), t.tokens_per_image()),
        (560, 1600, 400)
    );

    // The whole checkpoint: Qwen2.5-7B's decoder (7,615,616,512, qkv biases as Qwen2) plus the
    // tower = 8,292,166,656, the "8.29B params" of the model card's safetensors.
    let spec = parse_hf_config(&text(Q7)).unwrap();
    assert_eq!(spec.vision_params, 676_550_144);
    assert!(spec.qkv_bias);
    assert_eq!(spec.param_count().total, 8_292_166_656);
    assert_eq!(spec.param_count().total - spec.vision_params, 7_615_616_512);
}

/// The 32B's vision_config names only what differs from `Qwen2_5_VLVisionConfig`'s defaults
/// (depth 32, 16 heads, 14-px patches, 2 × 2 merge) and I = 3456, o = 5120:
/// block 2,560 + 4,919,040 + 1,639,680 + 2 × (1280 × 3456 + 3456) = 8,854,272
///       + 3456 × 1280 + 1280 = 4,424,960 → 19,840,512, × 32 = 634,896,384;
/// merger 1,280 + 26,219,520 + 5120 × 5120 + 5120 = 26,219,520 → 52,440,320;
/// + patch 1,505,280 = 688,841,984.
#[test]
fn qwen2_5_vl_32b_tower_takes_the_class_defaults() {
    let t = tower(Q32);
    assert_eq!(t.params, 688_841_984);
    assert_eq!((t.layers, t.heads, t.patch_size, t.merge), (32, 16, 14, 2));
    // AWQ leaves the tower unquantised (modules_to_not_convert: visual): BF16.
    assert_eq!(t.weight_bytes, 2 * 688_841_984);
}

#[test]
fn a_text_only_config_has_no_tower() {
    let v: serde_json::Value = serde_json::json!({"model_type": "qwen2", "hidden_size": 8});
    assert_eq!(vision_tower(&v).unwrap(), None);
}

#[test]
fn a_bad_vision_key_is_named() {
    let bad = text(Q7).replace("\"num_heads\": 16", "\"num_heads\": 7");
    let v: serde_json::Value = serde_json::from_str(&bad).unwrap();
    let e = vision_tower(&v).unwrap_err().to_string();
    assert!(e.contains("vision_config.num_heads"), "{e}");
    let bad = text(Q7).replace("\"depth\": 32", "\"depth\": -1");
    let e = parse_hf_config(&bad).unwrap_err().to_string();
    assert!(e.contains("vision_config.depth"), "{e}");
}

/// The same rows the mmproj path gives, the tower moved out of the weights (counted once).
#[test]
fn the_estimate_sizes_the_tower_and_one_image() {
    let spec = parse_hf_config(&text(Q7)).unwrap();
    let enc = tower(Q7).resized(1024, 768);
    let with = Scenario {
        model: spec.clone(),
        vision: Some(VisionInputs {
            encoder: enc.clone(),
            images: 2,
            ..VisionInputs::default()
        }),
        ..Scenario::default()
    };
    let without = Scenario {
        model: spec,
        ..Scenario::default()
    };
    let (a, b) = (estimate(&with), estimate(&without));
    let of = |e: &headroom::core::estimate::Estimate, name: &str| {
        e.components
            .iter()
            .find(|c| c.name == name)
            .map(|c| (c.kind, c.bytes.0))
    };
    assert_eq!(
        of(&a, "Vision encoder + projector (config.json)"),
        Some((ComponentKind::Weights, 2 * 676_550_144))
    );
    // 1036 × 756 → 74 × 54 = 3,996 patches; FlashAttention on: q/k/v 3996 × 1280 × 12 B
    // = 61,378,560 over the FFN's 3996 × 3420 × 4 B = 54,665,280, + residual 3996 × 1280 × 16 B
    // = 81,838,080: 143,216,640 B.
    assert_eq!(
        of(&a, "Vision compute buffer (one image)"),
        Some((ComponentKind::Activations, 143_216_640))
    );
    assert_eq!(with.vision.as_ref().unwrap().tokens_per_request(), 2 * 999);
    // The tower's weights leave the model's weights row: the difference is exactly them.
    let w = |e: &headroom::core::estimate::Estimate| of(e, "Weights").unwrap().1;
    assert_eq!(w(&b) - w(&a), 2 * 676_550_144);
}

fn headroom(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-cli-test-no-user-catalogs"),
        )
        .output()
        .unwrap()
}

#[test]
fn cli_images_from_the_config_tower() {
    let cfg = fixture(Q7);
    let cfg = cfg.to_str().unwrap();
    let out = headroom(&[
        "estimate",
        "--config",
        cfg,
        "--images",
        "2",
        "--image-size",
        "1024x768",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("Vision encoder + projector (config.json)"),
        "{s}"
    );
    assert!(s.contains("one 1036 × 756 image = 3,996 patches"), "{s}");

    let out = headroom(&[
        "fit",
        "--config",
        cfg,
        "--images",
        "2",
        "--image-size",
        "1024x768",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let vis = v
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m.get("vision"))
        .expect("a machine that runs it has a vision object");
    assert_eq!(vis["images"], 2);
    assert_eq!(vis["tokens_per_image"], 999);
    assert!(vis["encode_s_per_image"].as_f64().unwrap() > 0.0);
}

#[test]
fn cli_image_flags_without_a_tower_are_one_line() {
    let out = headroom(&["estimate", "--model", "llama-3.1-8b", "--image-size", "800"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("--image-size"), "{e}");
    let cfg = fixture(Q7);
    let out = headroom(&[
        "estimate",
        "--config",
        cfg.to_str().unwrap(),
        "--image-size",
        "0x10",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside 1"));
}

fn llava_text() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/configs/llava/llava-hf_llava-1.5-7b-hf.json"),
    )
    .unwrap()
}

/// llava-1.5-7b-hf: CLIP ViT-L/14-336 (h 1024, I 4096, 24 layers), transformers
/// `modeling_clip.py` `CLIPVisionTransformer`:
/// embeddings: class 1,024 + patch Conv2d 3 × 14² × 1024 = 602,112 + positions 577 × 1024 =
///   590,848 → 1,193,984; pre- and post-LayerNorm 2 × 2,048;
/// layer: q/k/v/out 4 × (1024² + 1024) = 4,198,400 + LayerNorms 4,096 + fc1 4,194,304 + 4,096 +
///   fc2 4,194,304 + 1,024 → 12,596,224, × 24 = 302,309,376; tower 303,507,456.
/// `LlavaMultiModalProjector`: 1024 × 4096 + 4096 + 4096² + 4096 = 20,979,712.
/// Checkpoint total 7,063,427,072 = the model card's "7.06B": Llama-2-7B's decoder from
/// LlamaConfig's defaults (text_config names none of its widths) at vocab 32,064, plus the tower.
#[test]
fn llava_1_5_is_clip_vit_l_336_and_a_two_layer_projector() {
    let v: serde_json::Value = serde_json::from_str(&llava_text()).unwrap();
    let t = vision_tower(&v).unwrap().expect("a CLIP tower");
    assert_eq!(t.params, 303_507_456 + 20_979_712);
    // torch_dtype float16.
    assert_eq!(t.weight_bytes, 2 * t.params);
    assert_eq!((t.layers, t.hidden, t.heads, t.ffn), (24, 1024, 16, 4096));
    // (336 / 14)² = 576 patches, one token each (no merge), the class token dropped.
    assert_eq!((t.patches(), t.tokens_per_image()), (576, 576));
    assert!(!t.dynamic);
    assert_eq!(t.projector, "mlp");

    let spec = parse_hf_config(&llava_text()).unwrap();
    assert_eq!(
        (spec.hidden, spec.layers, spec.intermediate),
        (4096, 32, 11_008)
    );
    assert_eq!(spec.vocab, 32_064);
    assert_eq!(spec.param_count().total, 7_063_427_072);
    assert_eq!(spec.vision_params, 324_487_168);
}

#[test]
fn llava_bad_and_fixed_size_input_is_named() {
    // A SigLIP tower under a llava model_type is refused by name, not sized as CLIP.
    let siglip = llava_text().replace("clip_vision_model", "siglip_vision_model");
    let e = parse_hf_config(&siglip).unwrap_err().to_string();
    assert!(e.contains("vision_config.model_type"), "{e}");
    // A fixed-size tower takes no --image-size.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.json");
    std::fs::write(&cfg, llava_text()).unwrap();
    let out = headroom(&[
        "estimate",
        "--config",
        cfg.to_str().unwrap(),
        "--image-size",
        "672",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("takes 336² images only"), "{e}");
    let out = headroom(&[
        "estimate",
        "--config",
        cfg.to_str().unwrap(),
        "--images",
        "3",
    ]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("324,487,168 params of the mlp vision encoder"),
        "{s}"
    );
}

/// A safetensors import's exact bytes hold the tower too (`visual.*`, outside the decoder's
/// layers): with the images asked, the tower's bytes leave the weights row once, not twice.
#[test]
fn exact_file_bytes_do_not_count_the_tower_twice() {
    use headroom::core::model::FileWeights;
    let mut spec = parse_hf_config(&text(Q7)).unwrap();
    let total = 2 * 8_292_166_656u64;
    spec.file_weights = Some(FileWeights {
        path: "model.safetensors.index.json".into(),
        total_bytes: total,
        params: 8_292_166_656,
        // The decoder's 28 layers: everything but the embedding, head, final norm and tower.
        layer_bytes: total - 2 * (2 * 152_064 * 3584 + 3584) - 2 * 676_550_144,
        format: "safetensors BF16".into(),
        ..FileWeights::default()
    });
    let with = Scenario {
        model: spec.clone(),
        vision: Some(VisionInputs {
            encoder: tower(Q7),
            ..VisionInputs::default()
        }),
        ..Scenario::default()
    };
    let without = Scenario {
        model: spec,
        ..Scenario::default()
    };
    let row = |s: &Scenario, name: &str| {
        estimate(s)
            .components
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.bytes.0)
            .sum::<u64>()
    };
    assert_eq!(row(&without, "Weights"), total);
    assert_eq!(row(&with, "Weights"), total - 2 * 676_550_144);
    assert_eq!(
        row(&with, "Weights") + row(&with, "Vision encoder + projector (config.json)"),
        total
    );
}

fn llava_next_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/configs/llava/llava-hf_llava-v1.6-mistral-7b-hf.json")
}

/// llava-v1.6-mistral-7b-hf: LLaVA-1.5's CLIP ViT-L/14-336 (303,507,456) and projector
/// (1024 × 4096 + 4096 + 4096² + 4096 = 20,979,712, text width 4096 from MistralConfig) plus
/// `image_newline` (4,096) = 324,491,264; Mistral-7B's decoder at vocab 32,064: 32 × (q/o
/// 2 × 4096² + k/v 2 × 4096 × 1024 + MLP 3 × 4096 × 14,336 + norms 8,192) = 6,979,584,000 +
/// embeddings and head 2 × 32,064 × 4096 = 262,668,288 + final norm 4,096 = 7,242,256,384.
/// Checkpoint total 7,566,747,648: the model card's "7.57B".
#[test]
fn llava_next_is_llava_1_5_tiled_over_its_grid_pinpoints() {
    let text = std::fs::read_to_string(llava_next_path()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let t = vision_tower(&v).unwrap().expect("a CLIP tower");
    assert_eq!(t.params, 303_507_456 + 20_979_712 + 4_096);
    assert_eq!(t.weight_bytes, 2 * t.params);
    assert_eq!((t.tile, t.patch_size, t.grid_pinpoints.len()), (336, 14, 5));
    // Sized at its largest pinpoint, 672²: 4 tiles + the base, 2,928 tokens (48² + 48 + 576).
    assert_eq!((t.image_size, t.height()), (672, 672));
    assert_eq!((t.crops(), t.tokens_per_image()), (5, 2_928));
    // One pass of the tower is one 336² tile.
    assert_eq!(t.patches(), 576);

    let spec = parse_hf_config(&text).unwrap();
    assert_eq!(
        (spec.hidden, spec.layers, spec.intermediate, spec.kv_heads),
        (4096, 32, 14_336, 8)
    );
    assert_eq!(spec.param_count().total, 7_566_747_648);
    assert_eq!(spec.vision_params, 324_491_264);

    // Pinpoints the tiles cannot cut are named.
    let bad = text.replace("[1008, 336]", "[1000, 336]");
    let e = parse_hf_config(&bad).unwrap_err().to_string();
    assert!(e.contains("image_grid_pinpoints"), "{e}");
    let bad = text.replace("[1008, 336]", "[1008]");
    assert!(parse_hf_config(&bad).is_err());
    // Without pinpoints LlavaNextConfig's defaults apply: the same five.
    let mut v2 = v.clone();
    v2.as_object_mut().unwrap().remove("image_grid_pinpoints");
    assert_eq!(
        vision_tower(&v2).unwrap().unwrap().tokens_per_image(),
        2_928
    );
}

#[test]
fn cli_llava_next_takes_an_image_size_and_tiles_it() {
    let cfg = llava_next_path();
    let cfg = cfg.to_str().unwrap();
    let out = headroom(&["estimate", "--config", cfg, "--image-size", "1024x768"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("one 336² tile (of 5 per 1024 × 768 image) = 576 patches"),
        "{s}"
    );
    let out = headroom(&["fit", "--config", cfg, "--image-size", "1024x768", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let vis = v
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m.get("vision"))
        .expect("a machine that runs it has a vision object");
    // 36 × 48 unpadded + 36 newlines + 576 base (core::vision's hand count).
    assert_eq!(vis["tokens_per_image"], 2_340);
}

fn mllama_text() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/configs/mllama/meta-llama_Llama-3.2-11B-Vision.json"),
    )
    .unwrap()
}

/// Llama-3.2-11B-Vision's tower, transformers `modeling_mllama.py` `MllamaVisionModel` (h 1280,
/// I 5120, 32 local + 8 global layers, 560² tiles of 14 px, 4 tiles, 9 aspect-ratio rows):
/// patch Conv2d 3 × 14² × 1280 = 752,640; class 1,280; gated positions 1 + 1601 × 1280 +
/// 9 × 4 × 1601 × 1280 = 75,823,361; pre/post tile embeddings 2 × (9 × 4 × 1280 + 1) = 92,162;
/// LayerNorms pre/post 5,120; layer 4 × 1280² + 1280 × 5120 + 5120 + 5120 × 1280 + 1280 +
/// 4 × 1280 = 19,672,320, × 32, + 8 × (19,672,320 + 2 gates) → 863,567,379; projector 7680 ×
/// 4096 + 4096 = 31,461,376. Tower and projector 895,028,755.
/// Text model: 40 layers × 218,112,000 + embeddings and head 2 × 128,256 × 4096 + norm =
/// 9,775,157,248 (`MllamaTextModel` also has 8 extra embedding rows and q/k norms and two gates
/// per cross-attention layer, 34,832 params not counted). Total 10,670,186,003: the card's
/// "11B (10.6B)", the Hub's 10.7B.
#[test]
fn mllama_tower_and_cross_attention_layers() {
    let text = mllama_text();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let t = vision_tower(&v).unwrap().expect("an mllama tower");
    assert_eq!(t.params, 895_028_755);
    assert_eq!(t.weight_bytes, 2 * t.params);
    assert_eq!((t.layers, t.hidden, t.heads, t.ffn), (40, 1280, 16, 5120));
    // Four 560² tiles of 40² patches and a class token each, in one pass: 6,404 positions, the
    // K/V of the cross-attention layers; one <|image|> token in the context.
    assert_eq!(t.patches(), 6_404);
    assert_eq!(t.cross_tokens_per_image(), 6_404);
    assert_eq!(t.tokens_per_image(), 1);
    assert_eq!(t.crops(), 1);

    let spec = parse_hf_config(&text).unwrap();
    assert_eq!((spec.layers, spec.cross_attention_layers), (40, 8));
    assert_eq!(spec.vision_params, 895_028_755);
    let total = spec.param_count().total;
    assert_eq!(total, 9_775_157_248 + 895_028_755);
    // Within 1 % of the card's 10.6B and the Hub's 10.7B.
    assert!((total as f64 / 10.6e9 - 1.0).abs() < 0.01, "{total}");
    // Only the 32 self-attention layers cache text tokens.
    assert_eq!(spec.kv_cache_layers().0, 32);
}

/// The images' K/V in the cross-attention layers: 8 layers × 6,404 tokens × 2 × 8 KV heads ×
/// 128 × 2 B (F16) = 209,846,272 B per image and sequence; the text KV cache is the 32
/// self-attention layers' only.
#[test]
fn mllama_estimate_sizes_the_cross_attention_kv() {
    let spec = parse_hf_config(&mllama_text()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&mllama_text()).unwrap();
    let s = Scenario {
        model: spec.clone(),
        context: 4096,
        vision: Some(VisionInputs {
            encoder: vision_tower(&v).unwrap().unwrap(),
            images: 2,
            ..VisionInputs::default()
        }),
        ..Scenario::default()
    };
    let e = estimate(&s);
    let row = |name: &str| {
        e.components
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.bytes.0)
            .sum::<u64>()
    };
    assert_eq!(
        row("Cross-attention K/V (image tokens)"),
        2 * 8 * 6_404 * 2 * 8 * 128 * 2
    );
    let kv: u64 = e
        .components
        .iter()
        .filter(|c| {
            c.kind == ComponentKind::KvCache && c.name != "Cross-attention K/V (image tokens)"
        })
        .map(|c| c.bytes.0)
        .sum();
    // 32 layers × 2 × 8 × 128 × 2 B = 131,072 B per token, × 4096 tokens.
    assert_eq!(kv, 32 * 2 * 8 * 128 * 2 * 4096);
}

/// The VLM presets are their config.json files as the reader parses them: the same parameters
/// (decoder and tower), the same KV cache layers and context.
#[test]
fn vlm_presets_match_their_configs() {
    let cat = headroom::io::catalog::builtin();
    for (id, path) in [
        (
            "qwen2.5-vl-7b",
            "qwen2_5_vl/Qwen_Qwen2.5-VL-7B-Instruct.json",
        ),
        (
            "llava-v1.6-mistral-7b",
            "llava/llava-hf_llava-v1.6-mistral-7b-hf.json",
        ),
        (
            "llama-3.2-11b-vision",
            "mllama/meta-llama_Llama-3.2-11B-Vision.json",
        ),
    ] {
        let text = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/configs")
                .join(path),
        )
        .unwrap();
        let parsed = parse_hf_config(&text).unwrap();
        let preset = &cat
            .models
            .iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("no preset {id}"))
            .spec;
        assert_eq!(
            preset.param_count().total,
            parsed.param_count().total,
            "{id}"
        );
        assert_eq!(preset.vision_params, parsed.vision_params, "{id}");
        assert_eq!(preset.kv_cache_layers(), parsed.kv_cache_layers(), "{id}");
        assert_eq!(preset.max_context, parsed.max_context, "{id}");
        assert_eq!(preset.arch, parsed.arch, "{id}");
    }
}
