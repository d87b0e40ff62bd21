//! The third tier: what fits in neither VRAM nor RAM runs from the disk. Hand-checkable
//! placements, the reasons for "none", ZeRO-Infinity's published figures, and published
//! measurements of llama.cpp running models larger than RAM.

use headroom::core::WeightPrecision;
use headroom::core::catalog::{
    Catalog, Machine, MachineKind, Storage, StorageKind, default_storage,
};
use headroom::core::fit::{FitResult, FitSettings, Verdict, fit_all};
use headroom::core::model::{MlpKind, ModelSpec, MoeSpec};
use headroom::core::placement::disk::{zero_infinity_model_states, zero_infinity_working_memory};
use headroom::core::scenario::{Runtime, Scenario};
use headroom::core::units::{Bytes, GbPerSec};
use headroom::io::catalog::builtin;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn preset(id: &str) -> ModelSpec {
    builtin()
        .model(id)
        .unwrap_or_else(|| panic!("preset {id}"))
        .spec
        .clone()
}

fn fit_on(s: &Scenario, m: &Machine, cat: &Catalog) -> FitResult {
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

fn laptop() -> Machine {
    builtin()
        .machine("laptop-rtx4060-32gb")
        .expect("catalog laptop")
        .clone()
}

fn l70_q4km() -> Scenario {
    Scenario {
        model: preset("llama-3.1-70b"),
        weights: WeightPrecision::Q4KM,
        runtime: Runtime::LlamaCpp,
        context: 4096,
        prompt_tokens: 512,
        ..Scenario::default()
    }
}

#[test]
fn llama_70b_q4_k_m_on_a_32_gb_8_gb_laptop_runs_from_the_ssd() {
    // RTX 4060 Laptop (8 GiB VRAM), 32 GiB RAM, no storage entry → the laptop default, a PCIe
    // 4.0 NVMe at 7.0 GB/s (Samsung 980/990 PRO class). Llama 3.1 70B Q4_K_M, llama.cpp, 4K.
    let m = laptop();
    assert!(m.storage.is_none());
    let r = fit_on(&l70_q4km(), &m, builtin());
    assert_eq!(r.verdict, Verdict::Disk, "{r:#?}");
    assert!(!r.fits() && r.runs());
    assert_eq!(
        r.verdict_text(),
        format!("disk {}", headroom::core::format::bytes(r.disk_bytes))
    );
    let e = headroom::core::estimate(&Scenario {
        gpus: 1,
        ..l70_q4km()
    });
    let w = &e.workload;
    let g = |b: u64| b as f64 / GIB;
    // The estimate's numbers: layer weights 38.20 GiB + outer (embedding, output) 1.35 GiB =
    // 39.55 GiB file; KV 80 layers × 8 heads × 128 × 2 (K, V) × 2 B × 4096 = 1.25 GiB; fixed
    // GPU buffers 0.56 GiB.
    assert!((g(w.layer_weights.0) - 38.20).abs() < 0.01);
    assert!((g(w.outer_weights.0) - 1.35).abs() < 0.01);
    assert_eq!(w.kv_total.0, 80 * 8 * 128 * 2 * 2 * 4096);
    // GPU: (38.20 + 1.25) / 80 = 0.493 GiB per layer; (8 − 0.56) / 0.493 = 15.09 → 15 layers.
    assert_eq!(r.gpu_layers, 15);
    // RAM: 32 GiB − max(2 GiB, 10 %) = 28.8 GiB usable. Must stay resident: buffers 0.02 GiB +
    // KV of the 65 CPU layers 1.25 × 65/80 = 1.02 GiB → 1.04 GiB; page cache 27.76 GiB.
    // Host weights 38.20 × 65/80 + 1.35 = 32.39 GiB → 27.76 resident, 4.63 GiB on disk.
    assert!((g(r.ram_capacity.0) - 28.8).abs() < 0.001);
    assert_eq!(r.ram_required, r.ram_capacity);
    assert!(
        (g(r.disk_bytes.0) - 4.63).abs() < 0.01,
        "{}",
        g(r.disk_bytes.0)
    );
    // Decode: a dense model's 65 host layers are read in the same order every token; 32 GiB of
    // them cycle through a 27.8 GiB cache, so every page is evicted before its next use and the
    // whole host read (active 39.00 − 1.35 outer) × 65/80 + 1.35 = 31.94 GiB = 34.30 GB comes
    // from the SSD each token: 34.30 / 7.0 = 4.90 s, plus the resident part from the speed
    // model (≈ 0.7 s): ≈ 5.6 s per token, 0.18 tok/s.
    let host_read = (w.active_weight_bytes_per_token.0 - w.outer_weights.0) as f64 * 65.0 / 80.0
        + w.outer_weights.0 as f64;
    assert!((host_read / GIB - 31.94).abs() < 0.01);
    let t_disk = host_read / 7.0e9;
    let t = 1.0 / r.decode_tokens_per_s;
    assert!(
        t > t_disk + 0.2 && t < t_disk + 1.5,
        "t {t:.2} s, disk part {t_disk:.2} s"
    );
    assert!(
        (0.15..0.2).contains(&r.decode_tokens_per_s),
        "{}",
        r.decode_tokens_per_s
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.to_string().starts_with("runs, but at 0.1")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_disk_too_small_for_the_file_gives_none_with_that_reason() {
    // The same laptop with a 32 GB SATA SSD: the ≈ 39.6 GiB file does not fit.
    let mut m = laptop();
    m.storage = Some(Storage::new(StorageKind::Sata, Bytes::gb(32)));
    let r = fit_on(&l70_q4km(), &m, builtin());
    assert_eq!(r.verdict, Verdict::None);
    assert!(
        r.notes
            .iter()
            .any(|n| n.to_string().contains("does not fit on the disk either")),
        "{:?}",
        r.notes
    );
}

#[test]
fn vllm_has_no_disk_tier() {
    let s = Scenario {
        runtime: Runtime::Vllm,
        ..l70_q4km()
    };
    let r = fit_on(&s, &laptop(), builtin());
    assert_eq!(r.verdict, Verdict::None);
    assert!(
        r.notes.iter().any(|n| n.to_string().contains("vLLM")),
        "{:?}",
        r.notes
    );
}

#[test]
fn accelerate_reads_only_the_offloaded_part_each_pass() {
    // accelerate keeps what max_memory puts on the CPU in RAM and loads only offload_folder's
    // modules each forward pass: faster than llama.cpp's thrashing page cache on the same split.
    let s = Scenario {
        runtime: Runtime::Transformers,
        ..l70_q4km()
    };
    let m = laptop();
    let acc = fit_on(&s, &m, builtin());
    let lcpp = fit_on(&l70_q4km(), &m, builtin());
    assert_eq!(acc.verdict, Verdict::Disk);
    assert!(acc.decode_tokens_per_s > lcpp.decode_tokens_per_s);
}

#[test]
fn zero_infinity_paper_table_1_one_trillion_row() {
    // ZeRO-Infinity (Rajbhandari et al. 2021, arXiv 2104.07857), §3 and Table 1, the 1T-parameter
    // row: 128 layers, hidden 25K (25,600), 256 heads → 1.01 T parameters; model states 18.31 TB
    // (= 240 · n_l · h² bytes, in binary TB) and a model-state working memory of 9.77 GB per GPU
    // (4 · h · 4h bytes). Hand check: 12 × 128 × 25,600² = 1.0066e12 parameters; × 20 B =
    // 2.0133e13 B = 18.31 TiB; 16 × 25,600² = 1.0486e10 B = 9.77 GiB.
    let spec = ModelSpec {
        name: "ZeRO-Infinity 1T".into(),
        layers: 128,
        hidden: 25_600,
        heads: 256,
        kv_heads: 256,
        head_dim: 100,
        intermediate: 4 * 25_600,
        mlp: MlpKind::Plain,
        vocab: 8,
        tied_embeddings: true,
        norms_per_layer: 0,
        ..ModelSpec::default()
    };
    let p = spec.param_count().total;
    assert!((p as f64 / 1e12 - 1.0066).abs() < 0.001, "{p}");
    let states = zero_infinity_model_states(p).0 as f64 / (GIB * 1024.0);
    assert!((states - 18.31).abs() < 0.01, "{states}");
    let mswm = zero_infinity_working_memory(&spec).0 as f64 / GIB;
    assert!((mswm - 9.77).abs() < 0.01, "{mswm}");
}

#[test]
fn zero_infinity_puts_offloaded_states_on_nvme() {
    use headroom::core::scenario::{Framework, Mode, Offload};
    // Full fine-tune of a 7B model with ZeRO-3 + optimiser and parameter offload on one 24 GiB
    // GPU and 32 GiB of RAM: the offloaded optimiser states and master weights (7e9 × 12 B =
    // 84 GB) and the parameters fit no RAM, so DeepSpeed writes them to NVMe (device: nvme).
    let s = Scenario {
        model: ModelSpec::generic(7_000_000_000),
        weights: WeightPrecision::Bf16,
        mode: Mode::Full,
        zero: 3,
        offload: Offload::OptimizerParams,
        framework: Framework::DeepSpeed,
        checkpointing: headroom::core::scenario::Checkpointing::Full,
        context: 1024,
        ..Scenario::default()
    };
    let cat = builtin();
    let mut m = cat.machine("desktop-rtx4090-64gb").unwrap().clone();
    m.ram = Bytes::gib(32);
    m.storage = Some(Storage::new(StorageKind::NvmeGen4, Bytes::gb(2000)));
    let r = fit_on(&s, &m, cat);
    assert_eq!(r.verdict, Verdict::Disk, "{r:#?}");
    assert!(r.disk_bytes.0 as f64 >= 7e9 * 12.0, "{}", r.disk_bytes);
    eprintln!("ZeRO-Infinity 7B: {:?} {:?}", r.disk_bytes, r.notes);
    assert!(r.ram_required <= r.ram_capacity);
    assert!(r.training.as_ref().is_some_and(|t| t.step_seconds > 0.0));
    // FSDP offloads to CPU memory only: no disk tier, and it says so.
    let f = fit_on(
        &Scenario {
            framework: Framework::Fsdp,
            ..s
        },
        &m,
        cat,
    );
    assert_eq!(f.verdict, Verdict::None);
    assert!(
        f.notes
            .iter()
            .any(|n| n.to_string().contains("ZeRO-Infinity")),
        "{:?}",
        f.notes
    );
}

/// A machine built for a published measurement.
fn bench_machine(
    id: &str,
    gpu: Option<&str>,
    ram_gib: u64,
    ram_gbs: f64,
    cores: u32,
    disk: Storage,
) -> Machine {
    Machine {
        id: id.into(),
        name: id.into(),
        kind: MachineKind::Desktop,
        gpu: gpu.map(Into::into),
        gpu_count: 1,
        ram: Bytes::gib(ram_gib),
        ram_bandwidth: GbPerSec(ram_gbs),
        cpu: "test".into(),
        cpu_cores: cores,
        vcpus: None,
        gpu_memory_limit: None,
        price: None,
        power_w: None,
        storage: Some(disk),
        fabric: None,
        network: None,
        source: "test".into(),
        notes: None,
    }
}

/// The PR 711 run: the scenario and the laptop.
fn pr711_case() -> (Scenario, Machine) {
    // github.com/ggml-org/llama.cpp/pull/711, comment by patrakov (2023-04-03): "I tried a 30B
    // model (so, a 20 GB file) on a 16 GB 2-in-1 laptop. It works. But it also spends 20 seconds
    // per token (with a crappy laptoppy NVMe that only boasts 1 GB/s sequential read speed)".
    // LLaMA-30B shape (60 layers, hidden 6656, 52 heads, FFN 17920, vocab 32000), Q4_0, CPU
    // only, dual-channel DDR4-3200 (51.2 GB/s), NVMe at 1 GB/s.
    let spec = ModelSpec {
        name: "LLaMA 30B".into(),
        layers: 60,
        hidden: 6656,
        heads: 52,
        kv_heads: 52,
        head_dim: 128,
        intermediate: 17920,
        vocab: 32000,
        max_context: 2048,
        ..ModelSpec::default()
    };
    let s = Scenario {
        model: spec,
        weights: WeightPrecision::Q4_0,
        runtime: Runtime::LlamaCpp,
        context: 512,
        prompt_tokens: 64,
        gpus: 0,
        ..Scenario::default()
    };
    let disk = Storage {
        read_gbs: Some(1.0),
        ..Storage::new(StorageKind::NvmeGen3, Bytes::gb(512))
    };
    (s, bench_machine("laptop-16gb", None, 16, 51.2, 4, disk))
}

#[test]
fn llama_cpp_pr_711_30b_on_a_16_gb_laptop_within_2x() {
    let (s, m) = pr711_case();
    let cat = Catalog::default();
    let r = fit_on(&s, &m, &cat);
    assert_eq!(r.verdict, Verdict::Disk, "{r:#?}");
    // 32.5e9 × 4.5 bits / 8 = 18.3 GB of weights > 14.4 GiB usable RAM: the cyclic scan re-reads
    // all 18.3 GB per token at 1 GB/s ≈ 18 s, plus ≈ 0.65 s from RAM: ≈ 19 s per token.
    let s_per_token = 1.0 / r.decode_tokens_per_s;
    eprintln!(
        "PR 711: {s_per_token:.1} s/token (measured 20 s), notes {:?}",
        r.notes
    );
    assert!(
        (10.0..=40.0).contains(&s_per_token),
        "{s_per_token} s/token vs 20 s measured"
    );
}

/// The Maverick run: the scenario and the machine.
fn maverick_case() -> (Scenario, Machine) {
    // r/LocalLLaMA, u/brown2green, 13 Apr 2025, "You can preview quantizations of Llama 4
    // Maverick 17Bx128E at acceptable speeds even without the necessary memory": IQ2_M GGUF of
    // 143.06 GiB, 64 GB DDR4, RTX 3090 with -ngl 3, NVMe reading 5–6 GiB/s; llama-bench tg128
    // 3.45 t/s, pp512 16.43 t/s.
    // Shape: meta-llama/Llama-4-Maverick-17B-128E config.json (text_config): 48 layers, hidden
    // 5120, 40 heads, 8 KV heads, head_dim 128, dense FFN 16384 (intermediate_size_mlp), 128
    // routed experts of FFN 8192 + 1 shared, top-1, MoE every 2nd layer, vocab 202048.
    let spec = ModelSpec {
        name: "Llama 4 Maverick".into(),
        layers: 48,
        hidden: 5120,
        heads: 40,
        kv_heads: 8,
        head_dim: 128,
        intermediate: 16384,
        vocab: 202_048,
        moe: Some(MoeSpec {
            experts: 128,
            active_experts: 1,
            expert_ffn: 8192,
            shared_experts: 1,
            sparse_step: 2,
            ..MoeSpec::default()
        }),
        max_context: 1_048_576,
        ..ModelSpec::default()
    };
    let p = spec.param_count().total as f64;
    assert!((p / 1e9 - 400.0).abs() < 10.0, "{p}");
    // IQ2_M: 143.06 GiB for ≈ 400e9 weights = 3.07 bits/weight on average; modelled as Q2_K
    // scaled to the file size through the file-weights figures.
    let file = (143.06 * GIB) as u64;
    let outer = (202_048.0 * 5120.0 * 2.0 * 5.0 / 8.0) as u64; // embedding + output at ~5 bits
    let spec = ModelSpec {
        file_weights: Some(headroom::core::model::FileWeights {
            path: "Llama-4-Maverick-17B-128E-Instruct-IQ2_M.gguf".into(),
            total_bytes: file,
            params: p as u64,
            layer_bytes: file - outer,
            runtime_extra_bytes: 0,
            format: "GGUF IQ2_M".into(),
            ..Default::default()
        }),
        ..spec
    };
    let s = Scenario {
        model: spec,
        weights: WeightPrecision::Q2K,
        runtime: Runtime::LlamaCpp,
        context: 4096,
        prompt_tokens: 512,
        ubatch: 512,
        ..Scenario::default()
    };
    let disk = Storage {
        read_gbs: Some(5.5 * GIB / 1e9),
        ..Storage::new(StorageKind::NvmeGen4, Bytes::gb(2000))
    };
    (
        s,
        bench_machine("ddr4-3090", Some("rtx-3090"), 64, 51.2, 8, disk),
    )
}

#[test]
fn llama_4_maverick_iq2_m_from_nvme_within_2x() {
    let (s, m) = maverick_case();
    let cat = builtin();
    // -ngl 3 in the measurement; the fit puts as many layers on the 3090 as hold — compare the
    // prediction at the fit's own split.
    let r = fit_on(&s, &m, cat);
    assert_eq!(r.verdict, Verdict::Disk, "{r:#?}");
    eprintln!(
        "Maverick: k={} disk={:.1} GiB tg={:.2} (3.45) pp={:.2} (16.43) notes {:?}",
        r.gpu_layers,
        r.disk_bytes.0 as f64 / GIB,
        r.decode_tokens_per_s,
        r.prefill_tokens_per_s,
        r.notes
    );
    let ratio = r.decode_tokens_per_s / 3.45;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "tg {} vs 3.45",
        r.decode_tokens_per_s
    );
    let ratio = r.prefill_tokens_per_s / 16.43;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "pp {} vs 16.43",
        r.prefill_tokens_per_s
    );
}

#[test]
fn defaults_per_kind_are_sourced() {
    for k in MachineKind::ALL {
        let d = default_storage(k, false);
        assert!(d.capacity.0 > 0);
        assert!(d.read().0 > 0.0 && !d.kind.source().is_empty());
    }
    assert_eq!(
        default_storage(MachineKind::Cloud, false).kind,
        StorageKind::NetworkBlock
    );
    assert_eq!(
        default_storage(MachineKind::Laptop, true).kind,
        StorageKind::AppleInternal
    );
}

#[test]
fn the_teaching_curve_shows_the_vram_ram_disk_cliff() {
    use headroom::core::teach::teach_curves;
    let cat = builtin();
    let m = laptop();
    let acc = cat.accelerator(m.gpu.as_deref().unwrap());
    let t = teach_curves(&l70_q4km(), &FitSettings::default(), &m, acc, &[]);
    let [vram, ram, ssd] = t.tier_rates;
    // The three bandwidths, each far below the one above: VRAM (RTX 4060 Laptop, 256 GB/s peak)
    // > RAM (dual-channel DDR5-5600, 89.6 GB/s peak) > the default laptop NVMe (7.0 GB/s).
    assert!(vram > ram && ram > ssd, "{:?}", t.tier_rates);
    assert!((ssd - 7.0).abs() < 1e-9);
    // The edges: usable VRAM (8 GiB), then + usable RAM (28.8 GiB).
    assert!((t.tier_edges[0] - 8.0).abs() < 0.01, "{:?}", t.tier_edges);
    assert!((t.tier_edges[1] - 36.8).abs() < 0.01, "{:?}", t.tier_edges);
    for w in t.tiers_mmap.windows(2) {
        assert!(w[1][1] <= w[0][1] + 1e-12);
    }
    // Just past RAM, mmap re-reads the whole host part from disk (1 + RAM rate ÷ disk rate times
    // slower) while reading only the overflow costs almost nothing yet.
    let (mm, over) = t
        .tiers_mmap
        .iter()
        .zip(&t.tiers_overflow)
        .find(|(a, _)| a[0] > t.tier_edges[1])
        .unwrap();
    assert!(mm[1] < over[1] / 3.0, "{mm:?} vs {over:?}");
}

#[test]
fn launch_settings_for_the_disk_tier() {
    use headroom::io::export::launch;
    // llama.cpp: -ngl 15 and the mmap note (no --no-mmap / --mlock).
    let s = l70_q4km();
    let r = fit_on(&s, &laptop(), builtin());
    let l = launch::llama_cpp(&s, &r);
    assert!(l.text.contains("-ngl 15"), "{}", l.text);
    assert!(!l.text.contains("--no-mmap") && !l.text.contains("--mlock"));
    assert!(
        l.note.contains("page cache") && l.note.contains("--no-mmap"),
        "{}",
        l.note
    );
    // accelerate: device_map="auto", max_memory and offload_folder, with the disk share said.
    let st = Scenario {
        runtime: Runtime::Transformers,
        ..s
    };
    let ra = fit_on(&st, &laptop(), builtin());
    let a = launch::accelerate(&st, &ra);
    assert!(a.text.contains("device_map=\"auto\"") && a.text.contains("max_memory="));
    assert!(a.text.contains("offload_folder="));
    assert!(a.note.contains("every forward pass"), "{}", a.note);
    // DeepSpeed ZeRO-Infinity: offload_optimizer / offload_param on NVMe with nvme_path.
    use headroom::core::scenario::{Checkpointing, Framework, Mode, Offload};
    let t = Scenario {
        model: ModelSpec::generic(7_000_000_000),
        weights: WeightPrecision::Bf16,
        mode: Mode::Full,
        zero: 3,
        offload: Offload::OptimizerParams,
        framework: Framework::DeepSpeed,
        checkpointing: Checkpointing::Full,
        context: 1024,
        ..Scenario::default()
    };
    let mut m = builtin().machine("desktop-rtx4090-64gb").unwrap().clone();
    m.ram = Bytes::gib(32);
    let rt = fit_on(&t, &m, builtin());
    assert_eq!(rt.verdict, Verdict::Disk);
    let d = launch::deepspeed(&t, &rt);
    let v: serde_json::Value = serde_json::from_str(&d.text).unwrap();
    let z = &v["zero_optimization"];
    assert_eq!(z["offload_optimizer"]["device"], "nvme");
    assert_eq!(z["offload_param"]["device"], "nvme");
    assert!(z["offload_param"]["nvme_path"].is_string());
}

/// A Mac's internal SSD by chip tier: a base M-series chip's Mac reads at the M1 MacBook Air's
/// measured 2.675 GB/s (MacRumors 2020-11-16, Blackmagic Disk Speed Test), a Pro or Max at
/// Apple's "up to 7.4 GB/s"; a model streamed from the disk runs at that rate.
#[test]
fn a_base_chip_mac_reads_its_ssd_slower_than_a_max() {
    let cat = builtin();
    let m = |id: &str| cat.machines.iter().find(|m| &*m.id == id).unwrap();
    let acc = |m: &Machine| m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    let air = m("macbook-air-m1-8gb");
    let disk = headroom::core::catalog::storage_of(air, acc(air));
    assert_eq!(disk.kind, StorageKind::AppleInternal);
    assert!((disk.read().0 - 2.675).abs() < 1e-9, "{disk:?}");
    let max = cat
        .machines
        .iter()
        .find(|m| m.storage.is_none() && m.gpu.as_deref() == Some("apple-m1-max"))
        .unwrap();
    assert!((headroom::core::catalog::storage_of(max, acc(max)).read().0 - 7.4).abs() < 1e-9);
    // gpt-oss-120b does not fit an 8 GB M1 Air: it streams from the disk at the Air's rate.
    let s = Scenario {
        model: preset("gpt-oss-120b"),
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    };
    let r = fit_on(&s, air, cat);
    assert_eq!(r.verdict, Verdict::Disk, "{r:?}");
    assert!(
        r.notes.iter().any(|n| matches!(
            n,
            headroom::core::placement::note::Note::OnDisk { disk: StorageKind::AppleInternal, read, .. }
                if (read.0 - 2.675).abs() < 1e-9
        )),
        "{:?}",
        r.notes
    );
}

// ---------------------------------------------------------------------------------------------
// Published runs of llama.cpp streaming a model larger than RAM from the SSD, decode tok/s.

/// One published SSD-streaming run: the scenario, the machine built from the source, and the
/// decode rate it measured.
struct Streamed {
    source: &'static str,
    scenario: Scenario,
    machine: Machine,
    catalog: Catalog,
    decode: f64,
}

/// GLM-5.1 (zai-org, `GlmMoeDsaForCausalLM`, config as published for the GLM-5 family: 78
/// layers, hidden 6144, 64 heads, MLA with q_lora_rank 2048 / kv_lora_rank 512, qk_nope 192,
/// qk_rope 64, v_head_dim 256, dense FFN 12288 in the first 3 layers, 256 routed experts of FFN
/// 2048 + 1 shared, top-8, vocab 154880). Its DSA indexer (a few tensors per layer) is left out;
/// the file size below carries the bytes. Read as the DeepSeek-V3 layout it shares.
const GLM_5_1: &str = r#"{
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "hidden_size": 6144, "intermediate_size": 12288, "moe_intermediate_size": 2048,
  "num_hidden_layers": 78, "num_attention_heads": 64, "num_key_value_heads": 64,
  "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
  "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 2048,
  "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
  "vocab_size": 154880, "max_position_embeddings": 202752, "tie_word_embeddings": false
}"#;

/// `spec` with its GGUF file's measured size: the layers carry the file less the embedding and
/// output head (`outer_bits` per weight), as the Maverick row does.
fn with_file(spec: ModelSpec, path: &str, file: u64, outer_bits: f64, format: &str) -> ModelSpec {
    let p = spec.param_count().total;
    let outer = (spec.vocab as f64 * spec.hidden as f64 * 2.0 * outer_bits / 8.0) as u64;
    ModelSpec {
        file_weights: Some(headroom::core::model::FileWeights {
            path: path.into(),
            total_bytes: file,
            params: p,
            layer_bytes: file - outer,
            runtime_extra_bytes: 0,
            format: format.into(),
            ..Default::default()
        }),
        ..spec
    }
}

fn streamed_runs() -> Vec<Streamed> {
    let (s711, m711) = pr711_case();
    let (smav, mmav) = maverick_case();
    // discuss.huggingface.co/t/i-ran-glm-5-1-754b-176gb-gguf-on-a-16gb-ram-apu-machine-heres-
    // what-happened/176096 (2026-05-19): GLM-5.1-IQ1_M, 176 GB of GGUF, llama.cpp (AVX2, mmap)
    // on a Ryzen 5 5600G (6 cores) with 16 GB DDR4 of which 4 GB go to the iGPU (12 GB for the
    // system), the file on a PCIe 3.0 NVMe behind NTFS/FUSE whose sequential read the author
    // measured at ~650 MB/s: "0.05 t/s (22.69 seconds per token)". The DDR4 speed is not given:
    // the 5600G's rated dual-channel DDR4-3200 (51.2 GB/s, AMD product page).
    let glm = with_file(
        headroom::core::hf_config::parse_hf_config(GLM_5_1).unwrap(),
        "GLM-5.1-UD-IQ1_M.gguf",
        176_000_000_000,
        6.0,
        "GGUF IQ1_M",
    );
    let sglm = Scenario {
        model: glm,
        weights: WeightPrecision::Q2K,
        runtime: Runtime::LlamaCpp,
        context: 4096,
        prompt_tokens: 64,
        gpus: 0,
        ..Scenario::default()
    };
    let disk = Storage {
        read_gbs: Some(0.65),
        ..Storage::new(StorageKind::NvmeGen3, Bytes::gb(512))
    };
    let mglm = bench_machine("apu-12gb", None, 12, 51.2, 6, disk);
    vec![
        Streamed {
            source: "llama.cpp PR 711 (patrakov): LLaMA-30B Q4_0, 16 GB laptop, 1 GB/s NVMe",
            scenario: s711,
            machine: m711,
            catalog: Catalog::default(),
            decode: 1.0 / 20.0,
        },
        Streamed {
            source: "r/LocalLLaMA (brown2green): Llama 4 Maverick IQ2_M, 64 GB DDR4 + RTX 3090, NVMe",
            scenario: smav,
            machine: mmav,
            catalog: builtin().clone(),
            decode: 3.45,
        },
        Streamed {
            source: "HF forum 176096: GLM-5.1 IQ1_M 176 GB, Ryzen 5 5600G 12 GB, NVMe via FUSE 0.65 GB/s",
            scenario: sglm,
            machine: mglm,
            catalog: Catalog::default(),
            decode: 1.0 / 22.69,
        },
    ]
}

/// Speed II target for SSD streaming: within ±50 % on at least 60 % of the published runs.
#[test]
fn published_ssd_streaming_decode_within_50_percent() {
    let mut table = Vec::new();
    let mut within = 0;
    let runs = streamed_runs();
    for x in &runs {
        let r = fit_on(&x.scenario, &x.machine, &x.catalog);
        assert_eq!(r.verdict, Verdict::Disk, "{}: {r:#?}", x.source);
        let err = r.decode_tokens_per_s / x.decode - 1.0;
        if err.abs() <= 0.5 {
            within += 1;
        }
        table.push(format!(
            "{}: measured {:.3}, predicted {:.3} tok/s ({:+.0} %)",
            x.source,
            x.decode,
            r.decode_tokens_per_s,
            err * 100.0
        ));
    }
    println!("{}", table.join("\n"));
    assert!(within * 10 >= runs.len() * 6, "{}", table.join("\n"));
}
