//! MLX (mlx-lm) on Apple silicon: its weights in the affine layout, its KV cache in 256-token
//! steps, where it may run, its launch lines, and its speed against published mlx-lm runs
//! (docs/measurements/mlx_speed.md). `cargo test --test mlx -- --nocapture` prints the table.

use headroom::core::WeightPrecision;
use headroom::core::catalog::Machine;
use headroom::core::estimate::{ComponentKind, Estimate, estimate_with};
use headroom::core::fit::{FitResult, FitSettings, Verdict, fit_all};
use headroom::core::placement::note::Note;
use headroom::core::precision::{KvPrecision, KvTypes};
use headroom::core::scenario::{Runtime, Scenario};
use headroom::core::speed::{Backend, SpeedConstants, SpeedQuery, placement_speed};
use headroom::io::catalog::builtin;

fn scenario(model: &str, w: WeightPrecision, runtime: Runtime) -> Scenario {
    let p = builtin().model(model).unwrap_or_else(|| panic!("{model}"));
    let mut s = Scenario {
        model: p.spec.clone(),
        model_id: Some(model.into()),
        weights: w,
        context: 8192,
        ..Scenario::default()
    };
    s.set_runtime(runtime, false);
    s
}

fn machine(id: &str) -> &'static Machine {
    builtin().machine(id).unwrap_or_else(|| panic!("{id}"))
}

fn fit(s: &Scenario, m: &str) -> FitResult {
    fit_all(s, [machine(m)], builtin(), &FitSettings::default()).remove(0)
}

fn component(e: &Estimate, k: ComponentKind) -> u64 {
    e.kind_total(k).0
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

/// Qwen3-4B (config.json: 36 layers, hidden 2560, 32 heads of 128, 8 KV heads, intermediate
/// 9728, vocab 151,936, tied embeddings; 4,022,468,096 parameters) as
/// mlx-community/Qwen3-4B-Instruct-2507-4bit stores it: every matrix and the embedding at 4 bits
/// + a 16-bit scale and bias per 64 (4.5 bits), the 196,096 norm weights at 16 bits.
///   matrices: 36 × (2560 × (4096 + 1024 + 1024) + 4096 × 2560 + 3 × 2560 × 9728) = 3,633,315,840
///   embedding: 151,936 × 2560 = 388,956,160
///   (3,633,315,840 + 388,956,160) × 4.5 / 8 = 2,262,528,000 B; norms 392,192 B.
#[test]
fn qwen3_4b_4bit_weights_by_hand() {
    let s = scenario("qwen3-4b", WeightPrecision::Mlx4, Runtime::Mlx);
    let e = estimate_with(&s, true);
    let hand = 2_262_528_000u64 + 392_192;
    assert_eq!(component(&e, ComponentKind::Weights), hand);
    // The same model at 8 bits: 8.5 bits per weight.
    let s8 = scenario("qwen3-4b", WeightPrecision::Mlx8, Runtime::Mlx);
    let e8 = estimate_with(&s8, false);
    assert_eq!(
        component(&e8, ComponentKind::Weights),
        4_022_272_000u64 * 85 / 80 + 392_192
    );
}

/// Llama 3.1 8B (4096 hidden, 32 layers, 14,336 intermediate, 8 KV heads, vocab 128,256, untied)
/// as mlx-community/Meta-Llama-3.1-8B-Instruct-4bit: 8,030,261,248 parameters of which 266,240
/// are norms; (8,030,261,248 − 266,240) × 4.5 / 8 + 266,240 × 2 = 4,517,529,792 B.
#[test]
fn llama_31_8b_4bit_weights_by_hand() {
    let s = scenario("llama-3.1-8b", WeightPrecision::Mlx4, Runtime::Mlx);
    let e = estimate_with(&s, false);
    let quantised = 8_030_261_248u64 - 266_240;
    assert_eq!(
        component(&e, ComponentKind::Weights),
        quantised * 45 / 80 + 266_240 * 2
    );
}

/// mlx-lm's `KVCache` grows in steps of 256 tokens: 1 … 256 tokens hold 256, 257 holds 512.
/// Qwen3-4B caches 36 × 8 × 128 × 2 × 2 B = 147,456 B per token.
#[test]
fn kv_cache_grows_in_steps_of_256() {
    let kv = |ctx: u64| {
        let s = Scenario {
            context: ctx,
            prompt_tokens: ctx.min(512),
            ..scenario("qwen3-4b", WeightPrecision::Mlx4, Runtime::Mlx)
        };
        component(&estimate_with(&s, false), ComponentKind::KvCache)
    };
    assert_eq!(kv(1), 256 * 147_456);
    assert_eq!(kv(256), 256 * 147_456);
    assert_eq!(kv(257), 512 * 147_456);
    assert_eq!(kv(2176), 2304 * 147_456);
    // llama.cpp pads n_ctx to 256 too; vLLM's pages are 16 tokens.
    let paged = Scenario {
        context: 257,
        ..scenario("qwen3-4b", WeightPrecision::Bf16, Runtime::Vllm)
    };
    assert_eq!(
        component(&estimate_with(&paged, false), ComponentKind::KvCache),
        272 * 147_456
    );
    // `--kv-bits 8` (group 64): 8.5 bits per element, the bytes of q8_0.
    let q8 = Scenario {
        context: 2176,
        prompt_tokens: 512,
        kv: KvTypes::same(KvPrecision::Q8_0),
        ..scenario("qwen3-4b", WeightPrecision::Mlx4, Runtime::Mlx)
    };
    assert_eq!(
        component(&estimate_with(&q8, false), ComponentKind::KvCache),
        2304 * 36 * 2 * (8 * 128 * 17 / 16)
    );
}

/// Sliding-window layers keep a `RotatingKVCache` of the window (+ a prefill step − 1 while a
/// chunk is appended), not the context: Gemma 3 12B at 32K holds far less than 48 full layers.
#[test]
fn sliding_window_layers_keep_their_window() {
    let at = |rt| {
        let s = Scenario {
            context: 32_768,
            ..scenario("gemma-3-12b", WeightPrecision::Mlx4, rt)
        };
        component(&estimate_with(&s, false), ComponentKind::KvCache)
    };
    let full = {
        let s = Scenario {
            context: 32_768,
            ..scenario("gemma-3-12b", WeightPrecision::Mlx4, Runtime::Mlx)
        };
        let spec = &s.model;
        spec.layers * 2 * spec.kv_heads * spec.head_dim * 2 * 32_768
    };
    let mlx = at(Runtime::Mlx);
    assert!(mlx < full / 3, "{mlx} vs {full}");
}

/// mlx-lm's benchmark table (mlx_lm/BENCHMARKS.md, M4 Max, `-p 2048 -g 128`) gives the peak
/// memory of each run (`mx.get_peak_memory`): the estimate's weights + KV cache + prefill
/// working set is within −20 % … +5 % of it (the rest is MLX's transient buffers, unmodelled).
#[test]
fn peak_memory_against_mlx_lm_benchmarks() {
    let rows = [
        ("qwen3-4b", WeightPrecision::Bf16, 9.02),
        ("qwen3-4b", WeightPrecision::Mlx8, 5.254),
        ("qwen3-4b", WeightPrecision::Mlx6, 4.25),
        ("qwen3-4b", WeightPrecision::Mlx5, 3.86),
        ("qwen3-4b", WeightPrecision::Mlx4, 3.35),
        ("qwen3-30b-a3b", WeightPrecision::Mlx8, 33.46),
        ("qwen3-30b-a3b", WeightPrecision::Mlx6, 25.82),
        ("qwen3-30b-a3b", WeightPrecision::Mlx5, 22.01),
        ("qwen3-30b-a3b", WeightPrecision::Mlx4, 18.20),
    ];
    println!(
        "{:<16} {:<16} {:>9} {:>9} {:>6}",
        "model", "weights", "peak GB", "est. GB", "err"
    );
    for (model, w, peak) in rows {
        let s = Scenario {
            context: 2048 + 128,
            prompt_tokens: 2048,
            ..scenario(model, w, Runtime::Mlx)
        };
        let e = estimate_with(&s, false);
        // Arrays only: the runtime reserve is not in mx.get_peak_memory().
        let arrays = [
            ComponentKind::Weights,
            ComponentKind::KvCache,
            ComponentKind::Activations,
        ]
        .iter()
        .map(|k| component(&e, *k))
        .sum::<u64>() as f64
            / 1e9;
        let err = arrays / peak - 1.0;
        println!(
            "{model:<16} {:<16} {peak:>9.2} {arrays:>9.2} {:>+5.0}%",
            w.cli_name(),
            err * 100.0
        );
        assert!((-0.20..=0.05).contains(&err), "{model} {w:?}: {err:+.3}");
    }
}

// ---------------------------------------------------------------------------------------------
// Where MLX runs
// ---------------------------------------------------------------------------------------------

/// MLX on a machine without an Apple GPU: verdict none, with the reason; the same scenario under
/// llama.cpp runs there.
#[test]
fn mlx_is_refused_off_apple_silicon() {
    let s = scenario("llama-3.1-8b", WeightPrecision::Mlx4, Runtime::Mlx);
    let r = fit(&s, "desktop-rtx4090-64gb");
    assert_eq!(r.verdict, Verdict::None);
    assert_eq!(r.decode_tokens_per_s, 0.0);
    assert!(r.notes.contains(&Note::NeedsAppleSilicon), "{:?}", r.notes);
    let llama = scenario("llama-3.1-8b", WeightPrecision::Q4KM, Runtime::LlamaCpp);
    assert_eq!(fit(&llama, "desktop-rtx4090-64gb").verdict, Verdict::Gpu);
    // Over the whole catalog: every non-Apple machine is "none" for MLX, every Mac that holds
    // the model runs it on the GPU.
    let all = fit_all(&s, &builtin().machines, builtin(), &FitSettings::default());
    let mut macs = 0;
    for (m, r) in builtin().machines.iter().zip(&all) {
        let apple = m
            .gpu
            .as_deref()
            .and_then(|g| builtin().accelerator(g))
            .is_some_and(|a| a.vendor == headroom::core::catalog::Vendor::Apple);
        if apple {
            macs += 1;
            assert_ne!(r.verdict, Verdict::Gpu, "{}", m.id);
            if r.verdict == Verdict::Unified {
                assert_eq!(r.backend, Some(Backend::Mlx), "{}", m.id);
            }
        } else {
            assert_eq!(r.verdict, Verdict::None, "{}", m.id);
            assert!(r.notes.contains(&Note::NeedsAppleSilicon), "{}", m.id);
        }
    }
    assert!(macs >= 20, "{macs} Macs");
}

/// MLX keeps every layer on the GPU: Llama 3.3 70B at 4 bits (39.7 GB) on a 48 GB M3 Max (36 GiB
/// GPU share) does not run under MLX, where llama.cpp offloads layers to the CPU.
#[test]
fn mlx_has_no_layer_offload() {
    let m = "macbook-pro-16-m3-max-48gb";
    let s = scenario("llama-3.3-70b", WeightPrecision::Mlx4, Runtime::Mlx);
    let r = fit(&s, m);
    assert_eq!(r.verdict, Verdict::None, "{:?}", r.notes);
    assert!(
        r.notes
            .iter()
            .any(|n| matches!(n, Note::MlxAllOnGpu { .. })),
        "{:?}",
        r.notes
    );
    // The Why column says so, and the wired-limit warning (for a model that fits near the
    // limit) stays out of a model that does not fit at all.
    let why = headroom::core::placement::explain::verdict_reason(&r, false);
    assert!(why.starts_with("MLX keeps every layer on the GPU"), "{why}");
    assert!(
        !r.notes
            .iter()
            .any(|n| matches!(n, Note::MlxNearWiredLimit { .. })),
        "{:?}",
        r.notes
    );
    let pc = fit(&s, "desktop-rtx4090-64gb");
    let why = headroom::core::placement::explain::verdict_reason(&pc, false);
    assert!(why.starts_with("MLX runs only on Apple silicon"), "{why}");
    let llama = scenario("llama-3.3-70b", WeightPrecision::Q4_0, Runtime::LlamaCpp);
    assert_eq!(fit(&llama, m).verdict, Verdict::Offload);
}

// ---------------------------------------------------------------------------------------------
// Speed against published runs
// ---------------------------------------------------------------------------------------------

/// One published run: machine, model, precision, runtime, prompt and generated tokens, measured
/// decode and prompt tokens/s (`None`: not comparable), source.
struct Row {
    machine: &'static str,
    model: &'static str,
    weights: WeightPrecision,
    runtime: Runtime,
    prompt: u64,
    generated: u64,
    tg: f64,
    pp: Option<f64>,
    source: &'static str,
}

const BENCH_MD: &str = "mlx-lm BENCHMARKS.md (M4 Max 64 GB, mlx 0.29.2, mlx-lm 0.28.2)";
const EX1029: &str = "ml-explore/mlx-examples#1029 (chigkim, M3 Max 64 GB, 2024-12-16)";

#[rustfmt::skip]
fn rows() -> Vec<Row> {
    use Runtime::{LlamaCpp, Mlx};
    use WeightPrecision as W;
    let r = |machine, model, weights, runtime, prompt, generated, tg, pp, source| Row {
        machine, model, weights, runtime, prompt, generated, tg, pp, source,
    };
    let m4max = "mac-studio-m4-max-64gb";
    // The catalog's M3 Max of the same 40-core chip and 400 GB/s (the run's Mac had 64 GB).
    let m3max = "macbook-pro-16-m3-max-128gb";
    vec![
        r(m4max, "qwen3-4b", W::Bf16, Mlx, 2048, 128, 52.47, Some(1780.63), BENCH_MD),
        r(m4max, "qwen3-4b", W::Mlx8, Mlx, 2048, 128, 86.907, Some(1606.573), BENCH_MD),
        r(m4max, "qwen3-4b", W::Mlx6, Mlx, 2048, 128, 104.68, Some(1576.73), BENCH_MD),
        r(m4max, "qwen3-4b", W::Mlx5, Mlx, 2048, 128, 116.39, Some(1584.33), BENCH_MD),
        r(m4max, "qwen3-4b", W::Mlx4, Mlx, 2048, 128, 134.52, Some(1622.27), BENCH_MD),
        r(m4max, "qwen3-30b-a3b", W::Mlx8, Mlx, 2048, 128, 83.16, Some(1719.47), BENCH_MD),
        r(m4max, "qwen3-30b-a3b", W::Mlx6, Mlx, 2048, 128, 94.14, Some(1667.45), BENCH_MD),
        r(m4max, "qwen3-30b-a3b", W::Mlx5, Mlx, 2048, 128, 101.00, Some(1664.24), BENCH_MD),
        r(m4max, "qwen3-30b-a3b", W::Mlx4, Mlx, 2048, 128, 113.33, Some(1753.90), BENCH_MD),
        r("macbook-pro-14-m3-pro-18gb", "qwen3-4b", W::Mlx4, Mlx, 2048, 128, 44.62, Some(615.28),
          "ml-explore/mlx-lm PR 1569 (M3 Pro 18 GB, mlx 0.32.0, mlx-lm 0.31.3)"),
        r(m3max, "llama-3.3-70b", W::Mlx4, Mlx, 260, 309, 9.351, Some(75.871), EX1029),
        r(m3max, "llama-3.3-70b", W::Mlx4, Mlx, 2173, 776, 9.123, Some(83.092), EX1029),
        // The same run deeper into the context: the KV cache read at depth.
        r(m3max, "llama-3.3-70b", W::Mlx4, Mlx, 8015, 786, 8.520, Some(74.840), EX1029),
        r(m3max, "llama-3.3-70b", W::Mlx4, Mlx, 16_003, 459, 7.779, Some(67.948), EX1029),
        r(m3max, "llama-3.3-70b", W::Mlx4, Mlx, 30_136, 27, 6.784, Some(58.080), EX1029),
        r(m3max, "llama-3.3-70b", W::Q4_0, LlamaCpp, 260, 1999, 9.07, Some(73.86), EX1029),
        r(m3max, "llama-3.3-70b", W::Q4KM, LlamaCpp, 260, 599, 8.15, Some(67.86), EX1029),
        r(m3max, "llama-3.3-70b", W::Q4_0, LlamaCpp, 2173, 857, 8.90, Some(78.71), EX1029),
        r(m3max, "llama-3.3-70b", W::Q4KM, LlamaCpp, 2173, 799, 7.87, Some(71.87), EX1029),
        r("mac-studio-m2-ultra-192gb", "llama-3-70b", W::Bf16, Mlx, 16, 100, 4.7, None,
          "ml-explore/mlx-examples PR 1069 (M2 Ultra, wired, 2024-10-24)"),
        r("mac-mini-m4-pro-64gb", "llama-3.1-8b", W::Mlx4, Mlx, 32_159, 1000, 23.146, Some(261.786),
          "ml-explore/mlx-examples#1029 (ilterpehlivan, M4 Pro 64 GB, mlx-lm 0.21.4, 2025-02-11)"),
    ]
}

/// (decode, prefill) predicted for a row: decode at the run's average depth (prompt + half the
/// generated tokens), prefill of one chunk at the prompt's average chunk depth.
fn predict(r: &Row) -> (f64, f64) {
    let m = machine(r.machine);
    let acc = m.gpu.as_deref().and_then(|g| builtin().accelerator(g));
    let s = Scenario {
        context: r.prompt + r.generated,
        prompt_tokens: r.prompt,
        ..scenario(r.model, r.weights, r.runtime)
    };
    let est = estimate_with(&s, false);
    let k = SpeedConstants::default();
    let mut q = SpeedQuery::on_machine(&s, &est, m, acc, &k);
    q.depth = r.prompt + r.generated / 2;
    let tg = placement_speed(&q, &k).decode_tokens_per_s;
    if r.runtime == Runtime::LlamaCpp {
        q.ubatch = r.prompt.min(512);
    }
    // The prompt's chunks at their average depth (one chunk from an empty cache for ≤ 2048).
    q.depth = r.prompt.saturating_sub(q.ubatch) / 2;
    let pp = placement_speed(&q, &k).prefill_tokens_per_s;
    (tg, pp)
}

#[test]
fn mlx_speed_table_meets_the_target() {
    println!(
        "{:<28} {:<14} {:<10} {:<9} {:>6} {:>8} {:>8} {:>6}   {:>8} {:>8} {:>6}",
        "machine",
        "model",
        "weights",
        "runtime",
        "prompt",
        "tg meas",
        "tg pred",
        "err",
        "pp meas",
        "pp pred",
        "err"
    );
    let (mut n, mut ok, mut pn, mut pok) = (0, 0, 0, 0);
    for r in rows() {
        let (tg, pp) = predict(&r);
        let e = tg / r.tg - 1.0;
        let pe = r.pp.map(|p| pp / p - 1.0);
        println!(
            "{:<28} {:<14} {:<10} {:<9} {:>6} {:>8.2} {:>8.2} {:>+5.0}%   {:>8} {:>8.0} {:>6}",
            r.machine,
            r.model,
            r.weights.cli_name(),
            r.runtime.cli_name(),
            r.prompt,
            r.tg,
            tg,
            e * 100.0,
            r.pp.map_or("–".into(), |p| format!("{p:.0}")),
            pp,
            pe.map_or("–".into(), |x| format!("{:+.0}%", x * 100.0)),
        );
        assert!(!r.source.is_empty());
        if r.runtime == Runtime::Mlx {
            n += 1;
            ok += usize::from(e.abs() <= 0.25);
            if let Some(pe) = pe {
                pn += 1;
                pok += usize::from(pe.abs() <= 0.30);
            }
        }
    }
    let share = ok as f64 / n as f64;
    println!(
        "MLX decode within ±25 %: {ok} of {n} rows ({:.0} %)",
        share * 100.0
    );
    println!("MLX prefill within ±30 %: {pok} of {pn} rows");
    assert!(share >= 0.75, "{ok} of {n}");
    assert!(pok as f64 >= 0.75 * pn as f64, "prefill {pok} of {pn}");
}

/// chigkim's runs of the same 70B on the same M3 Max with MLX and llama.cpp: both within ±25 %,
/// and MLX 4-bit (4.5 bits, 63 µs per layer) ahead of llama.cpp Q4_K_M (4.9 bits, 156 µs) as
/// measured (9.35 vs 8.15 tok/s).
#[test]
fn same_mac_mlx_and_llama_cpp() {
    let rows = rows();
    let same: Vec<&Row> = rows.iter().filter(|r| r.source == EX1029).collect();
    assert!(same.len() >= 6);
    for r in &same {
        let (tg, _) = predict(r);
        let e = tg / r.tg - 1.0;
        assert!(
            e.abs() <= 0.25,
            "{} {:?}: {:+.0} %",
            r.runtime.cli_name(),
            r.weights,
            e * 100.0
        );
    }
    let at = |rt, w| {
        let r = same
            .iter()
            .find(|r| r.runtime == rt && r.weights == w && r.prompt == 260)
            .expect("row");
        predict(r).0
    };
    let mlx = at(Runtime::Mlx, WeightPrecision::Mlx4);
    let q4km = at(Runtime::LlamaCpp, WeightPrecision::Q4KM);
    assert!(mlx > q4km, "MLX {mlx} vs llama.cpp Q4_K_M {q4km}");
}

/// MoE decode pays the router's kernels: Qwen3-30B-A3B's 48 MoE layers add 48 × 42 µs =
/// 2.02 ms to each token over what its active bytes and per-layer cost take (the Metal profile
/// of llama.cpp has no such term).
#[test]
fn moe_layers_pay_the_router() {
    let m = machine("mac-studio-m4-max-64gb");
    let acc = m.gpu.as_deref().and_then(|g| builtin().accelerator(g));
    let s = scenario("qwen3-30b-a3b", WeightPrecision::Mlx4, Runtime::Mlx);
    let est = estimate_with(&s, false);
    let t = |k: &SpeedConstants| {
        let q = SpeedQuery::on_machine(&s, &est, m, acc, k);
        1.0 / placement_speed(&q, k).decode_tokens_per_s
    };
    let with = SpeedConstants::default();
    let mut without = with.clone();
    without.profiles.mlx.moe_layer_overhead_us = 0.0;
    let extra_ms = (t(&with) - t(&without)) * 1e3;
    assert!((extra_ms - 48.0 * 0.042).abs() < 1e-6, "{extra_ms} ms");
    assert_eq!(with.profiles.metal.moe_layer_overhead_us, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Launch settings
// ---------------------------------------------------------------------------------------------

#[test]
fn launch_settings_lead_with_mlx_lm() {
    let s = scenario("qwen3-4b", WeightPrecision::Mlx4, Runtime::Mlx);
    let r = fit(&s, "mac-studio-m4-max-64gb");
    assert_eq!(r.verdict, Verdict::Unified);
    let l = headroom::io::export::launch_settings(&s, &r);
    assert_eq!(l[0].runtime, headroom::io::export::Launcher::Mlx);
    assert_eq!(
        l[0].text,
        "mlx_lm.server --model mlx-community/Qwen3-4B-4bit \\\n  --host 127.0.0.1 --port 8080 --prefill-step-size 2048"
    );
    assert!(
        l[1].text
            .starts_with("mlx_lm.generate --model mlx-community/Qwen3-4B-4bit")
    );
    // A quantised cache goes to mlx_lm.generate (the server has no --kv-bits).
    let q = Scenario {
        kv: KvTypes::same(KvPrecision::Q8_0),
        ..s.clone()
    };
    let l = headroom::io::export::launch_settings(&q, &r);
    assert!(
        l[1].text.contains("--kv-bits 8 --kv-group-size 64"),
        "{}",
        l[1].text
    );
    assert!(!l[0].text.contains("--kv-bits"));
    // The line headroom writes reads back as the same settings.
    let back = headroom::core::launch_line::parse(&l[0].text).unwrap();
    assert_eq!(back.runtime, Some(Runtime::Mlx));
    assert_eq!(back.weights, Some(WeightPrecision::Mlx4));
    assert_eq!(back.prefill_step, Some(2048));
}

/// recommend under MLX: the desktop and cloud groups say MLX needs Apple silicon (not that a
/// GPU or RAM is short), the Apple group picks a Mac, and no vLLM cluster is offered.
#[test]
fn recommend_says_why_non_apple_groups_are_empty() {
    use headroom::core::recommend::{Constraints, Group, Unmet, recommend};
    let cat = builtin();
    let s = scenario("llama-3.1-8b", WeightPrecision::Mlx4, Runtime::Mlx);
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &FitSettings::default(),
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let g = |x: Group| r.groups.iter().find(|p| p.group == x).expect("group");
    for x in [Group::Desktop, Group::Cloud] {
        let p = g(x);
        assert!(p.picks.is_empty(), "{x:?}");
        assert!(
            p.unmet
                .iter()
                .any(|u| matches!(u, Unmet::NeedsApple { .. })),
            "{x:?}: {:?}",
            p.unmet
        );
    }
    let apple = g(Group::Apple).best().expect("a Mac");
    assert!(
        machine(&apple.machine)
            .gpu
            .as_deref()
            .unwrap()
            .starts_with("apple-")
    );
    assert!(r.cluster.is_none());
    // This machine without Apple silicon: no change is offered, and its card says why rather
    // than "Runs it on the GPU as it is.".
    let pc = cat
        .machines
        .iter()
        .find(|m| m.gpu.as_deref() == Some("rtx-4090"))
        .unwrap();
    let r = recommend(
        &s,
        &cat.machines,
        Some(pc),
        cat,
        &FitSettings::default(),
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let t = r.this_machine.expect("this machine");
    assert!(t.upgrades.is_empty(), "{:?}", t.upgrades);
    assert!(
        t.as_it_is()
            .starts_with("Does not run it: MLX runs only on Apple silicon"),
        "{}",
        t.as_it_is()
    );
}

/// mlx-lm warns "This can be slow" past 0.9 of the wired limit: Llama 3.3 70B at 5 bits (5.5
/// bits a weight, 45.2 GiB) in a 64 GB Mac's 48 GiB share fits, with that note; at 4 bits
/// (37.0 GiB) it fits without.
#[test]
fn near_the_wired_limit_mlx_lm_warns() {
    let m = "mac-mini-m4-pro-64gb";
    let at = |w| {
        let s = Scenario {
            context: 2048,
            prompt_tokens: 512,
            ..scenario("llama-3.3-70b", w, Runtime::Mlx)
        };
        fit(&s, m)
    };
    let near = |r: &FitResult| {
        r.notes
            .iter()
            .any(|n| matches!(n, Note::MlxNearWiredLimit { .. }))
    };
    let q5 = at(WeightPrecision::Mlx5);
    assert_eq!(q5.verdict, Verdict::Unified, "{:?}", q5.notes);
    assert!(near(&q5), "{:?}", q5.notes);
    let q4 = at(WeightPrecision::Mlx4);
    assert_eq!(q4.verdict, Verdict::Unified);
    assert!(!near(&q4), "{:?}", q4.notes);
}

/// A folder as mlx-lm writes a 4-bit model (`mlx_lm.convert -q`): config.json with its
/// `quantization` block, and each matrix as a uint32 `weight` (8 values a word), a BF16
/// `scales` and `biases` per 64 values. The import reads MLX 4-bit, takes the parameter count
/// from the architecture (the packed words are not parameters), and the file's exact bytes are
/// the bytes the affine formula gives for the same architecture without the file.
#[test]
fn an_mlx_community_folder_imports_at_its_exact_bytes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type":"llama","architectures":["LlamaForCausalLM"],"hidden_size":64,
        "intermediate_size":128,"num_attention_heads":2,"num_hidden_layers":1,
        "num_key_value_heads":2,"vocab_size":128,"tie_word_embeddings":false,
        "max_position_embeddings":4096,"torch_dtype":"bfloat16",
        "quantization":{"group_size":64,"bits":4},
        "quantization_config":{"group_size":64,"bits":4}}"#,
    )
    .unwrap();
    // (name, rows, columns) of each matrix; norms separately.
    let matrices = [
        ("model.embed_tokens", 128u64, 64u64),
        ("model.layers.0.self_attn.q_proj", 64, 64),
        ("model.layers.0.self_attn.k_proj", 64, 64),
        ("model.layers.0.self_attn.v_proj", 64, 64),
        ("model.layers.0.self_attn.o_proj", 64, 64),
        ("model.layers.0.mlp.gate_proj", 128, 64),
        ("model.layers.0.mlp.up_proj", 128, 64),
        ("model.layers.0.mlp.down_proj", 64, 128),
        ("lm_head", 128, 64),
    ];
    let mut entries: Vec<(String, &str, Vec<u64>, u64)> = Vec::new();
    for (name, rows, cols) in matrices {
        entries.push((
            format!("{name}.weight"),
            "U32",
            vec![rows, cols / 8],
            rows * cols / 2,
        ));
        for p in ["scales", "biases"] {
            entries.push((
                format!("{name}.{p}"),
                "BF16",
                vec![rows, cols / 64],
                rows * cols / 64 * 2,
            ));
        }
    }
    for n in [
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight",
        "model.norm.weight",
    ] {
        entries.push((n.to_string(), "BF16", vec![64], 128));
    }
    let mut header = serde_json::Map::new();
    let mut at = 0u64;
    for (name, dtype, shape, bytes) in &entries {
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + bytes]}),
        );
        at += bytes;
    }
    let h = serde_json::Value::Object(header).to_string();
    let mut file = (h.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(h.as_bytes());
    file.resize(file.len() + at as usize, 0);
    std::fs::write(dir.path().join("model.safetensors"), file).unwrap();

    let m = headroom::io::import::import_path(dir.path()).unwrap();
    assert_eq!(m.weights, Some(WeightPrecision::Mlx4), "{:?}", m.notes);
    let fw = m.spec.file_weights.clone().expect("exact bytes");
    assert_eq!(fw.total_bytes, at);
    assert_eq!(fw.params, 0, "packed words are not parameters");
    // The same architecture without the file, at mlx-4bit: the same bytes.
    let mut arch = m.spec.clone();
    arch.file_weights = None;
    let s = Scenario {
        model: arch,
        model_id: None,
        weights: WeightPrecision::Mlx4,
        runtime: Runtime::Mlx,
        ..Scenario::default()
    };
    assert_eq!(
        component(&estimate_with(&s, false), ComponentKind::Weights),
        at
    );
}
