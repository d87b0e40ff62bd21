//! The user's own llama.cpp split (`--gpu-layers N` = `-ngl N`, `--n-cpu-moe N`): the fit answers
//! for that placement — memory per device and speed — instead of searching, and says by how
//! much it misses when it does not fit.

use headroom::core::WeightPrecision;
use headroom::core::fit::{FitResult, FitSettings, Verdict, fit_all};
use headroom::core::placement::capacity::{offload_host_bytes, per_layer_bytes};
use headroom::core::scenario::{LaunchInputs, Scenario};
use headroom::io::catalog::builtin;
use std::process::Command;

fn scenario(model: &str, launch: LaunchInputs) -> Scenario {
    let p = builtin().model(model).expect("preset");
    Scenario {
        model: p.spec.clone(),
        model_id: Some(p.id.clone()),
        weights: WeightPrecision::Q4KM,
        launch,
        ..Scenario::default()
    }
}

fn fit(s: &Scenario, machine: &str) -> FitResult {
    let cat = builtin();
    let m = cat.machine(machine).expect("machine");
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

fn ngl(n: u64) -> LaunchInputs {
    LaunchInputs {
        gpu_layers: Some(n),
        ..LaunchInputs::default()
    }
}

/// Llama 3 70B Q4_K_M at 8K on a 24 GB RTX 4090 with 64 GB of RAM: the search puts 45 of 80
/// layers on the GPU. Asked for 30, the fit keeps 30 (slower: more layers run at RAM bandwidth)
/// and the other 50 layers' weights and KV go to RAM: 50 × per-layer bytes + the weights outside
/// the layers. Asked for 60, one GPU would hold its fixed costs + 60 layers, more than 24 GB: no,
/// with the split's needs in the note.
#[test]
fn a_70b_on_a_4090_at_the_asked_gpu_layers() {
    let searched = fit(
        &scenario("llama-3-70b", LaunchInputs::default()),
        "desktop-rtx4090-64gb",
    );
    assert_eq!(
        (searched.verdict, searched.gpu_layers),
        (Verdict::Offload, 45)
    );

    let s30 = scenario("llama-3-70b", ngl(30));
    let f30 = fit(&s30, "desktop-rtx4090-64gb");
    assert_eq!((f30.verdict, f30.gpu_layers), (Verdict::Offload, 30));
    assert!(f30.decode_tokens_per_s < searched.decode_tokens_per_s);
    assert!(f30.decode_tokens_per_s > 0.5, "{}", f30.decode_tokens_per_s);
    let e1 = headroom::core::estimate::estimate(&Scenario {
        gpus: 1,
        ..s30.clone()
    });
    assert_eq!(f30.ram_required, offload_host_bytes(&e1, 30));
    assert!(
        f30.notes
            .iter()
            .any(|n| n.to_string() == "as asked: -ngl 30 (30 of 80 layers on the GPU)")
    );

    let f60 = fit(&scenario("llama-3-70b", ngl(60)), "desktop-rtx4090-64gb");
    assert_eq!(f60.verdict, Verdict::None);
    assert!(f60.headroom_bytes < 0);
    let need = e1.workload.fixed_per_device.as_f64() + 60.0 * per_layer_bytes(&e1).as_f64();
    let short = f60
        .notes
        .iter()
        .map(ToString::to_string)
        .find(|n| n.starts_with("does not fit: the asked split needs"))
        .expect("the split's needs");
    let gib = format!("{:.1} GiB per GPU", need / (1u64 << 30) as f64);
    assert!(short.contains(&gib), "{short} (expected {gib})");
}

/// `-ngl 0` is the CPU; `-ngl 99` on a GPU that holds the model is the whole model on it, as the
/// search finds; the asked split is ignored for vLLM, which does not split layers this way.
#[test]
fn zero_all_and_other_runtimes() {
    let cpu = fit(&scenario("llama-3-8b", ngl(0)), "desktop-rtx4090-64gb");
    assert_eq!((cpu.verdict, cpu.gpu_layers), (Verdict::Cpu, 0));
    let all = fit(&scenario("llama-3-8b", ngl(99)), "desktop-rtx4090-64gb");
    let searched = fit(
        &scenario("llama-3-8b", LaunchInputs::default()),
        "desktop-rtx4090-64gb",
    );
    assert_eq!(all.verdict, Verdict::Gpu);
    assert_eq!(all.decode_tokens_per_s, searched.decode_tokens_per_s);
    let mut v = scenario("llama-3-8b", ngl(0));
    v.set_runtime(headroom::core::scenario::Runtime::Vllm, false);
    assert_eq!(fit(&v, "desktop-rtx4090-64gb").verdict, Verdict::Gpu);
}

/// Qwen3 30B-A3B Q4_K_M on an 8 GB laptop GPU with 16 GB of RAM: the search keeps the routed
/// experts of the first 32 of 48 layers in RAM. Asked for 40, more experts run on the CPU:
/// slower, more RAM; asked for all 48, RAM (14 GiB usable) cannot hold them: no.
#[test]
fn a_moe_at_the_asked_n_cpu_moe() {
    let moe = |n| LaunchInputs {
        n_cpu_moe: Some(n),
        ..LaunchInputs::default()
    };
    let searched = fit(
        &scenario("qwen3-30b-a3b", LaunchInputs::default()),
        "laptop-rtx4060-16gb",
    );
    let f40 = fit(&scenario("qwen3-30b-a3b", moe(40)), "laptop-rtx4060-16gb");
    assert_eq!(f40.verdict, Verdict::Offload);
    assert_eq!(f40.expert_split.as_ref().unwrap().cpu_moe_layers, 40);
    assert!(f40.decode_tokens_per_s < searched.decode_tokens_per_s);
    assert!(f40.ram_required > searched.ram_required);
    let f48 = fit(&scenario("qwen3-30b-a3b", moe(48)), "laptop-rtx4060-16gb");
    assert_eq!(f48.verdict, Verdict::None);
    assert!(
        f48.notes
            .iter()
            .any(|n| n.to_string().contains("asked split needs"))
    );
}

/// The flags on the command line: one line naming the flag for a bad value or both at once, and
/// the split reaches the fit and the scenario file.
#[test]
fn the_flags_on_the_command_line() {
    let bin = env!("CARGO_BIN_EXE_headroom");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .env(
                "HEADROOM_CONFIG_DIR",
                std::env::temp_dir().join("headroom-asked-test"),
            )
            .output()
            .unwrap()
    };
    let bad = run(&["fit", "--gpu-layers", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--gpu-layers") && err.lines().count() == 1,
        "{err}"
    );
    let both = run(&["fit", "--gpu-layers", "5", "--n-cpu-moe", "3"]);
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
    let ok = run(&[
        "fit",
        "--model",
        "llama-3-70b",
        "--weights",
        "q4_k_m",
        "--machine",
        "desktop-rtx4090-64gb",
        "--gpu-layers",
        "30",
        "--json",
    ]);
    assert!(ok.status.success());
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v[0]["gpu_layers"], 30);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.ron");
    let saved = run(&[
        "estimate",
        "--model",
        "llama-3-70b",
        "--gpu-layers",
        "30",
        "--save-scenario",
        file.to_str().unwrap(),
    ]);
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("gpu_layers: Some(30)"), "{text}");
}

/// `--command`: a llama-server line read into the scenario (the tiny GGUF fixture, 2 layers):
/// `-ngl 1` places one layer on the GPU, `-c 512` the context; an unknown flag is one line
/// naming it, exit 2.
#[test]
fn a_llama_server_command_line() {
    let bin = env!("CARGO_BIN_EXE_headroom");
    let gguf = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/import/tiny.gguf"
    );
    let run = |line: String| {
        Command::new(bin)
            .args([
                "fit",
                "--machine",
                "desktop-rtx4090-64gb",
                "--json",
                "--command",
                &line,
            ])
            .output()
            .unwrap()
    };
    let ok = run(format!("llama-server -m {gguf} -ngl 1 -c 512 --port 8080"));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(
        (v[0]["gpu_layers"].as_u64(), v[0]["total_layers"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(v[0]["verdict"], "offload");
    let bad = run(format!("llama-server -m {gguf} --frobnicate 3"));
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(
        err.trim(),
        "headroom: --command: --frobnicate: not a llama.cpp flag headroom reads"
    );
}

/// `--tensor-split 3,1` (llama.cpp `-ts 3,1`) on two 24 GB RTX 3090s, Llama 3 70B Q4_K_M at 8K:
/// llama.cpp's cumulative split [0.75, 1.0] over 81 slots (80 layers + output) puts slots 0–60
/// (j ÷ 81 < 0.75 ⇔ j ≤ 60) on GPU 0: 61 layers there, 19 and the output layer on GPU 1. GPU 0
/// then needs its fixed costs + 61 layers, more than 24 GB: no, where the even split (41 + 39
/// and the output) fits. Each GPU's need is in the note, from the one-GPU estimate.
#[test]
fn a_tensor_split_moves_the_layers_between_gpus() {
    use headroom::core::placement::tensor_split::{device_bytes, shares};
    let even = fit(
        &scenario("llama-3-70b", LaunchInputs::default()),
        "desktop-2x-rtx3090-128gb",
    );
    assert_eq!(even.verdict, Verdict::Gpu);
    let split = |ts: &[f32]| LaunchInputs {
        tensor_split: ts.to_vec(),
        ..LaunchInputs::default()
    };
    let s = scenario("llama-3-70b", split(&[3.0, 1.0]));
    let f = fit(&s, "desktop-2x-rtx3090-128gb");
    assert_eq!(f.verdict, Verdict::None);
    let sh = shares(&[3.0, 1.0], 2, 80, 80);
    assert_eq!((sh[0].layers, sh[1].layers, sh[1].output), (61, 19, true));
    let e1 = headroom::core::estimate::estimate(&Scenario {
        gpus: 1,
        ..s.clone()
    });
    let need = device_bytes(&e1, &sh);
    // GPU 0: fixed costs + 61 × per-layer bytes; GPU 1: fixed + 19 layers + outer weights.
    let per = per_layer_bytes(&e1).0;
    assert_eq!(need[0].0, e1.workload.fixed_per_device.0 + 61 * per);
    assert_eq!(
        need[1].0,
        e1.workload.fixed_per_device.0 + 19 * per + e1.workload.outer_weights.0
    );
    let note = f
        .notes
        .iter()
        .map(ToString::to_string)
        .find(|n| n.starts_with("as asked: --tensor-split"))
        .expect("the split's note");
    assert!(note.contains("GPU 0 61 layers"), "{note}");
    assert!(note.contains("GPU 1 19 layers + output"), "{note}");
    // 1,1 is the even split: it fits, with GPU 0's 41 layers the fuller one, at the searched
    // placement's decode speed (layer split: the GPUs run one after another).
    let f11 = fit(
        &scenario("llama-3-70b", split(&[1.0, 1.0])),
        "desktop-2x-rtx3090-128gb",
    );
    assert_eq!((f11.verdict, f11.gpu_layers), (Verdict::Gpu, 80));
    let rel = f11.decode_tokens_per_s / even.decode_tokens_per_s;
    assert!((rel - 1.0).abs() < 1e-9, "{rel}");
    // With --gpu-layers 60 and 1,1: 30 layers per GPU, 20 and the output layer in RAM.
    let f60 = fit(
        &scenario(
            "llama-3-70b",
            LaunchInputs {
                gpu_layers: Some(60),
                tensor_split: vec![1.0, 1.0],
                ..LaunchInputs::default()
            },
        ),
        "desktop-2x-rtx3090-128gb",
    );
    assert_eq!((f60.verdict, f60.gpu_layers), (Verdict::Offload, 60));
    assert_eq!(f60.ram_required, offload_host_bytes(&e1, 60));
}

/// `--threads N` caps the CPU's share: CPU-only Llama 3 8B Q4_K_M decode runs on N cores, each
/// drawing at most what one core keeps in flight (`SpeedConstants::cpu_core_bandwidth_gbs`). As
/// in llama.cpp's tools/llama-bench/README.md ("Different numbers of threads", llama 7B Q4_0 on
/// a 16-thread CPU: tg16 4.05 t/s at 1 thread, 12.22 at 4, 15.32 at 16), one thread is far below
/// all of them, 4 of 16 threads already reach most of the bandwidth (0.80× there), and threads
/// past the cores change nothing.
#[test]
fn threads_cap_the_cpu_share() {
    let t = |n: Option<u32>| {
        let s = scenario(
            "llama-3-8b",
            LaunchInputs {
                gpu_layers: Some(0),
                threads: n,
                ..LaunchInputs::default()
            },
        );
        fit(&s, "desktop-2x-rtx3090-128gb").decode_tokens_per_s
    };
    let all = t(None);
    let one = t(Some(1));
    let four = t(Some(4));
    let r1 = one / all;
    let r4 = four / all;
    assert!(r1 > 0.15 && r1 < 0.4, "{one} / {all} = {r1}");
    assert!(r4 > 0.6 && r4 < 0.95, "{four} / {all} = {r4}");
    assert!((t(Some(16)) / all - 1.0).abs() < 1e-9);
    assert!((t(Some(64)) / all - 1.0).abs() < 1e-9);
}

/// `--tensor-split` and `--threads` on the command line: bad values are one line naming the
/// flag (exit 2); a good split reaches the fit's notes and the scenario file.
#[test]
fn tensor_split_and_threads_flags() {
    let bin = env!("CARGO_BIN_EXE_headroom");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .env(
                "HEADROOM_CONFIG_DIR",
                std::env::temp_dir().join("headroom-asked-test"),
            )
            .output()
            .unwrap()
    };
    for (flag, v) in [
        ("--tensor-split", "3,-1"),
        ("--tensor-split", "a,b"),
        ("--tensor-split", ""),
        ("--threads", "0"),
        ("--threads", "many"),
    ] {
        let bad = run(&["fit", flag, v]);
        assert_eq!(bad.status.code(), Some(2), "{flag} {v}");
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.contains(flag) && err.lines().count() == 1, "{err}");
    }
    let both = run(&["fit", "--tensor-split", "1,1", "--n-cpu-moe", "3"]);
    assert_eq!(both.status.code(), Some(2));
    let ok = run(&[
        "fit",
        "--model",
        "llama-3-70b",
        "--weights",
        "q4_k_m",
        "--machine",
        "desktop-2x-rtx3090-128gb",
        "--tensor-split",
        "3/1",
        "--threads",
        "8",
        "--json",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v[0]["verdict"], "none");
    let notes = v[0]["notes"].to_string();
    assert!(notes.contains("GPU 0 61 layers"), "{notes}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.ron");
    let saved = run(&[
        "estimate",
        "--tensor-split",
        "3,1",
        "--threads",
        "8",
        "--save-scenario",
        file.to_str().unwrap(),
    ]);
    assert!(saved.status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    let back = headroom::io::export::load_scenario("s.ron", &text).unwrap();
    assert_eq!(back.launch.tensor_split, [3.0, 1.0]);
    assert_eq!(back.launch.threads, Some(8));
}
