//! The desktop app, driven through its accessibility tree with egui_kittest: every input is found
//! by its accessible name, and the numbers shown are checked against the core's arithmetic.
//! Image snapshots (tests/snapshots/*.png) use a fake detector so no machine-dependent text
//! appears; create or refresh them with `UPDATE_SNAPSHOTS=1 cargo test --test gui`.

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable as _;
use egui_kittest::{Harness, SnapshotOptions};
use headroom::core::catalog::Catalog;
use headroom::core::estimate::ComponentKind;
use headroom::core::fit::Verdict;
use headroom::core::model::ModelSpec;
use headroom::core::precision::WeightPrecision;
use headroom::core::scenario::{Mode, Scenario};
use headroom::core::units::Bytes;
use headroom::gui::{Command, FileAction, HeadroomApp, SortColumn, State, Tab};
use headroom::io::detect::FakeDetector;
use std::sync::Arc;
use std::time::Duration;

fn catalog() -> Catalog {
    headroom::io::catalog::builtin().clone()
}

/// The small fixed catalog of the image snapshots (tests/fixtures/gui/catalog.ron), so edits to
/// the built-in catalog do not change the pictures.
const SNAPSHOT_CATALOG: &str = include_str!("fixtures/gui/catalog.ron");

fn snapshot_catalog() -> Catalog {
    ron::from_str(SNAPSHOT_CATALOG).expect("the snapshot catalog parses")
}

fn snapshot_harness(state: State) -> Harness<'static, HeadroomApp> {
    snapshot_harness_sized(state, (1280.0, 800.0))
}

fn snapshot_harness_sized(state: State, size: (f32, f32)) -> Harness<'static, HeadroomApp> {
    let mut h = Harness::builder()
        .with_max_steps(12)
        .with_size(egui::vec2(size.0, size.1))
        .build_eframe(move |_cc| {
            HeadroomApp::new_with(Arc::new(fake_4090()), snapshot_catalog(), state)
        });
    h.state_mut().wait_for_jobs(Duration::from_secs(10));
    h.run();
    h
}

/// A desktop with an RTX 4090 (24 GiB, 23 GiB free) and 64 GiB RAM.
fn fake_4090() -> FakeDetector {
    FakeDetector::with_gpu("NVIDIA GeForce RTX 4090", Bytes::gib(24), Bytes::gib(23))
}

/// Llama-2-7B's shape with a long trained context: 32 layers, MHA (32 KV heads of 128).
fn mha_7b() -> ModelSpec {
    ModelSpec {
        name: "MHA 7B test model".into(),
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 32,
        head_dim: 128,
        intermediate: 11008,
        vocab: 32000,
        max_context: 131_072,
        ..ModelSpec::default()
    }
}

fn harness_with(
    detector: FakeDetector,
    state: State,
    size: (f32, f32),
) -> Harness<'static, HeadroomApp> {
    let mut h = Harness::builder()
        .with_max_steps(12)
        .with_size(egui::vec2(size.0, size.1))
        .build_eframe(move |_cc| HeadroomApp::new_with(Arc::new(detector), catalog(), state));
    h.state_mut().wait_for_jobs(Duration::from_secs(10));
    h.run();
    h
}

fn harness(state: State) -> Harness<'static, HeadroomApp> {
    harness_with(fake_4090(), state, (1280.0, 800.0))
}

fn mha_state() -> State {
    State {
        scenario: Scenario {
            model: mha_7b(),
            model_id: None,
            weights: WeightPrecision::Fp16,
            ..Scenario::default()
        },
        ..State::default()
    }
}

#[test]
fn context_slider_sets_the_kv_cache() {
    let mut h = harness(mha_state());
    // 8192 tokens: 2 × 32 layers × 32 heads × 128 × 2 B × 8192 = 4 GiB.
    h.get_by_label("KV cache: 4.00 GiB");
    h.get_by_role_and_label(Role::Slider, "Context")
        .set_value_accesskit(32768.0);
    h.run();
    assert_eq!(h.state().state.scenario.context, 32768);
    h.get_by_label("KV cache: 16.0 GiB");
    assert_eq!(
        h.get_by_role_and_label(Role::SpinButton, "Context")
            .value()
            .as_deref(),
        Some("32768")
    );
}

#[test]
fn batch_slider_multiplies_the_kv_cache() {
    let mut h = harness(mha_state());
    h.get_by_role_and_label(Role::Slider, "Context")
        .set_value_accesskit(32768.0);
    h.run();
    h.get_by_role_and_label(Role::Slider, "Batch")
        .set_value_accesskit(4.0);
    h.run();
    assert_eq!(h.state().state.scenario.batch, 4);
    h.get_by_label("KV cache: 64.0 GiB");
}

#[test]
fn a_context_beyond_the_model_is_kept_with_a_warning() {
    // Llama 3 8B was trained for 8,192 tokens; a saved scenario asking for 32K keeps 32K (the
    // command line does the same) and says what that means.
    let s = State {
        scenario: Scenario {
            context: 32768,
            ..Scenario::default()
        },
        ..State::default()
    };
    let h = harness(s);
    assert_eq!(h.state().state.scenario.context, 32768);
    assert!(
        h.query_by_label_contains(
            "Context 32,768 is beyond the 8,192 tokens this model was trained for"
        )
        .is_some()
    );
}

#[test]
fn parameters_slider_switches_to_an_estimated_shape() {
    let mut h = harness(State::default());
    h.get_by_role_and_label(Role::Slider, "Parameters")
        .set_value_accesskit(70.0);
    h.run();
    let s = &h.state().state.scenario;
    assert!(s.model.is_estimated());
    assert_eq!(s.model_id, None);
    assert_eq!(s.model.param_count().total, 70_000_000_000);
    assert!(
        h.query_by_label_contains("Shape estimated from the parameter count")
            .is_some()
    );
    assert!(
        h.query_by_label_contains("70.00B params (estimated shape)")
            .is_some()
    );
}

#[test]
fn weights_picker_changes_the_weights() {
    let mut h = harness(State::default());
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    // The picker names the bits per weight the estimate really uses on this model (the K-quant
    // mix keeps some tensors at Q6_K), not the 4.5 bits of a Q4_K block.
    let bits = headroom::core::teach::effective_bits(
        &h.state().state.scenario.model,
        WeightPrecision::Q4KM,
    );
    assert!(bits > 4.6, "{bits}");
    h.get_by_label_contains(&format!("GGUF Q4_K_M ({bits:.2} bits avg.) · "))
        .click();
    h.run();
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Q4KM);
    let w = h.state_mut().fit_of("local").expect("local fit");
    assert_eq!(w.verdict, Verdict::Gpu);
    // Llama 3 8B at Q4_K_M is about 4.6 GiB (llama.cpp's README: 4.58 GiB).
    let e = headroom::core::estimate(&h.state().state.scenario);
    let gib = e.kind_total(ComponentKind::Weights).as_gib();
    assert!((4.4..4.8).contains(&gib), "{gib}");
    h.get_by_label(&format!(
        "Weights: {}",
        e.kind_total(ComponentKind::Weights)
    ));
}

#[test]
fn kv_pickers_set_k_and_v_separately() {
    let mut h = harness(mha_state());
    h.get_by_role_and_label(Role::ComboBox, "K cache").click();
    h.run();
    h.get_by_label("Q8_0 (8.5 bits)").click();
    h.run();
    let kv = h.state().state.scenario.kv;
    assert_eq!((kv.k.cli_name(), kv.v.cli_name()), ("q8_0", "fp16"));
    // K at 8.5 bits + V at 16 bits over 8192 tokens: (34/32 + 2) / 4 × 4 GiB = 3.06 GiB.
    h.get_by_label("KV cache: 3.06 GiB");
}

#[test]
fn mode_picker_shows_training_inputs_and_states() {
    let mut h = harness(State::default());
    assert!(
        h.query_by_role_and_label(Role::Label, "Gradients")
            .is_none()
    );
    h.get_by_role_and_label(Role::ComboBox, "Mode").click();
    h.run();
    h.get_by_label("LoRA").click();
    h.run();
    assert_eq!(h.state().state.scenario.mode, Mode::Lora);
    // Training inputs appear, inference-only ones go.
    h.get_by_role_and_label(Role::Slider, "LoRA rank")
        .set_value_accesskit(64.0);
    h.run();
    assert_eq!(h.state().state.scenario.lora_rank, 64);
    assert!(h.query_by_role_and_label(Role::Slider, "Ubatch").is_none());
    h.get_by_role_and_label(Role::ComboBox, "ZeRO stage");
    h.get_by_role_and_label(Role::ComboBox, "Optimizer");
    // The component table lists the training states.
    assert!(
        h.query_all_by_role_and_label(Role::Label, "Gradients")
            .count()
            >= 1
    );
    h.get_by_role_and_label(Role::Label, "LoRA adapters");
}

#[test]
fn gpus_slider_splits_the_weights() {
    let mut h = harness(State::default());
    h.get_by_role_and_label(Role::Slider, "GPUs")
        .set_value_accesskit(2.0);
    h.run();
    assert_eq!(h.state().state.scenario.gpus, 2);
    assert!(h.query_by_label_contains("Per GPU (of 2)").is_some());
    h.get_by_role_and_label(Role::Slider, "GPUs")
        .set_value_accesskit(0.0);
    h.run();
    assert!(h.query_by_label_contains("RAM needed:").is_some());
}

#[test]
fn this_machine_is_pinned_first_with_the_right_verdict() {
    let s = State {
        tab: Tab::Machines,
        ..State::default()
    };
    let mut h = harness(s);
    let rows = h.state_mut().machine_rows();
    assert_eq!(rows.first().map(String::as_str), Some("local"));
    assert!(
        rows.len() > 100,
        "the whole catalog is listed: {}",
        rows.len()
    );
    // Llama 3 8B BF16 at 8K: ~15 GiB of weights + 1 GiB KV + overhead fit 23 GiB free.
    let f = h.state_mut().fit_of("local").unwrap();
    assert_eq!(f.verdict, Verdict::Gpu);
    assert!(f.headroom_bytes > 0);
    h.get_by_label(&f.name);
    // Still first when sorted by speed, whatever the direction.
    h.state_mut().state.filter.sort = SortColumn::Speed;
    h.state_mut().state.filter.descending = true;
    assert_eq!(h.state_mut().machine_rows()[0], "local");
    h.state_mut().state.filter.descending = false;
    assert_eq!(h.state_mut().machine_rows()[0], "local");
    // A 70B model at Q4_K_M (~40 GiB) does not fit 23 GiB: llama.cpp-style offload of whole
    // layers, the rest in the 48 GiB of available RAM.
    h.state_mut().state.scenario.weights = WeightPrecision::Q4KM;
    h.get_by_role_and_label(Role::Slider, "Parameters")
        .set_value_accesskit(70.0);
    h.run();
    let f = h.state_mut().fit_of("local").unwrap();
    assert_eq!(f.verdict, Verdict::Offload, "{f:?}");
    assert!(f.gpu_layers > 0 && f.gpu_layers < f.total_layers);
    assert!(
        !h.get_all_by_label(&format!("offload {}/{}", f.gpu_layers, f.total_layers))
            .collect::<Vec<_>>()
            .is_empty()
    );
}

#[test]
fn filters_and_compare_checkboxes() {
    let s = State {
        tab: Tab::Machines,
        ..State::default()
    };
    let mut h = harness(s);
    let all = h.state_mut().machine_rows().len();
    h.get_by_role_and_label(Role::Button, "Cloud").click();
    h.run();
    let cloud = h.state_mut().machine_rows();
    assert!(cloud.len() < all && cloud.len() > 1);
    let cat = catalog();
    assert!(cloud[1..].iter().all(|id| {
        cat.machine(id)
            .is_some_and(|m| m.kind == headroom::core::catalog::MachineKind::Cloud)
    }));
    // Tick the first cloud machine for the Breakdown bars.
    let name = cat.machine(&cloud[1]).unwrap().name.clone();
    h.get_by_label(&format!("Compare {name}")).click();
    h.run();
    assert!(h.state().state.is_selected(&cloud[1]));
    // "Fits only" with a workload nothing fits leaves only the pinned row and an empty state.
    h.state_mut().state.scenario.model = ModelSpec::generic(2_000_000_000_000);
    h.state_mut().state.scenario.weights = WeightPrecision::Fp32;
    h.run();
    h.get_by_label("Fits only").click();
    h.run();
    assert!(h.state().state.filter.fits_only);
    assert_eq!(h.state_mut().machine_rows(), vec!["local".to_string()]);
    h.get_by_label("No machines to show");
}

#[test]
fn tabs_switch_and_draw() {
    let mut h = harness(State::default());
    for (label, tab) in [
        ("Machines", Tab::Machines),
        ("Serving", Tab::Serving),
        ("CPU vs GPU", Tab::CpuVsGpu),
        ("Report", Tab::Report),
        ("Breakdown", Tab::Breakdown),
    ] {
        h.get_by_role_and_label(Role::Button, label).click();
        h.run();
        assert_eq!(h.state().state.tab, tab);
    }
    h.get_by_role_and_label(Role::Button, "Report").click();
    h.run();
    // The preview is the export module's Markdown, with launch settings for this machine.
    assert!(h.query_by_label_contains("# ").is_some());
    h.get_by_role_and_label(Role::Button, "Copy llama.cpp");
}

/// Queues a command, draws one frame (the command starts its job), waits for the job, settles.
fn run_command(h: &mut Harness<'static, HeadroomApp>, c: Command) {
    h.state_mut().push_command(c);
    h.step();
    h.state_mut().wait_for_jobs(Duration::from_secs(10));
    h.run();
}

#[test]
fn export_and_scenario_files_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(State::default());
    let report = dir.path().join("sizing.md");
    run_command(
        &mut h,
        Command::AtPath(FileAction::ExportReport, report.clone()),
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("Llama 3 8B"), "{text}");
    assert!(
        h.state()
            .status_text()
            .unwrap()
            .starts_with("Report saved to")
    );
    // The format follows the file name.
    let html = dir.path().join("sizing.html");
    run_command(
        &mut h,
        Command::AtPath(FileAction::ExportReport, html.clone()),
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));

    // Save, change, open: the scenario comes back.
    let file = dir.path().join("s.ron");
    h.state_mut().state.scenario.context = 4096;
    run_command(
        &mut h,
        Command::AtPath(FileAction::SaveScenario, file.clone()),
    );
    h.state_mut().state.scenario.context = 2048;
    run_command(&mut h, Command::AtPath(FileAction::OpenScenario, file));
    assert_eq!(h.state().state.scenario.context, 4096);

    // Importing a config.json replaces the model with its exact shape.
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/configs/meta-llama_Llama-2-7b-hf.json");
    run_command(&mut h, Command::AtPath(FileAction::ImportModel, cfg));
    let m = &h.state().state.scenario.model;
    assert_eq!(
        (m.layers, m.kv_heads, m.head_dim),
        (32, 32, 128),
        "{:?}",
        h.state().status_text()
    );
    assert!(!m.is_estimated());
    assert_eq!(h.state().state.scenario.model_id, None);
    assert!(h.state().status_text().unwrap().starts_with("Imported"));
    // Llama 2 was trained for 4,096 tokens: the context follows.
    assert_eq!(h.state().state.scenario.context, 4096);
    h.state_mut().state.scenario.model = ModelSpec::default();
    h.run();

    // A missing model file: one clear line in the status bar, nothing changes.
    run_command(
        &mut h,
        Command::AtPath(FileAction::ImportModel, dir.path().join("nope.gguf")),
    );
    let status = h.state().status_text().unwrap().to_string();
    assert!(status.starts_with("Import failed"), "{status}");
    assert!(h.query_by_label_contains("Import failed").is_some());
    assert_eq!(h.state().state.scenario.model.name, "Llama 3 8B");
}

#[test]
fn idle_window_does_not_recompute_or_repaint() {
    let mut h = harness(State::default());
    let before = h.state().recomputes;
    // `run` stops as soon as no repaint is requested: a busy loop would exceed max_steps.
    let steps = h.run();
    assert!(steps <= 2, "{steps}");
    for _ in 0..5 {
        h.step();
    }
    assert_eq!(h.state().recomputes, before);
    h.get_by_role_and_label(Role::Slider, "Batch")
        .set_value_accesskit(8.0);
    h.run();
    assert_eq!(h.state().recomputes, before + 1);
}

/// Opens the picker named `picker` (scrolled into view first, as a person would) and chooses
/// `option`.
fn pick(h: &mut Harness<'static, HeadroomApp>, picker: &str, option: &str) {
    h.get_by_role_and_label(Role::ComboBox, picker)
        .scroll_to_me();
    h.run();
    h.get_by_role_and_label(Role::ComboBox, picker).click();
    h.run();
    h.get_by_label(option).click();
    h.run();
}

/// Sets the slider named `name` (through accesskit, as a screen reader would).
fn slide(h: &mut Harness<'static, HeadroomApp>, name: &str, value: f64) {
    h.get_by_role_and_label(Role::Slider, name)
        .set_value_accesskit(value);
    h.run();
}

#[test]
fn every_input_is_reachable_by_its_name() {
    use headroom::core::precision::KvPrecision;
    use headroom::core::scenario::SplitStyle;
    use headroom::core::scenario::{
        Checkpointing, KvAllocation, LoraTargets, Offload, Optimizer, Runtime,
    };
    // On the Machines tab no component table or legend repeats the option names.
    let mut h = harness(State {
        tab: Tab::Machines,
        ..State::default()
    });

    // The model picker searches.
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Search models").type_text("3.1 8b");
    h.run();
    h.get_by_label("Llama 3.1 8B").click();
    h.run();
    assert_eq!(
        h.state().state.scenario.model_id.as_deref(),
        Some("llama-3.1-8b")
    );

    // Inference inputs.
    slide(&mut h, "Ubatch", 1024.0);
    slide(&mut h, "Prompt tokens", 2048.0);
    slide(&mut h, "Electricity", 0.3);
    pick(&mut h, "V cache", "Q4_0 (4.5 bits)");
    pick(&mut h, "KV allocation", "PagedAttention");
    pick(&mut h, "Offload style", "Stream over PCIe");
    pick(&mut h, "Runtime", "vLLM");
    slide(&mut h, "GPU memory use", 0.8);
    h.get_by_label("FlashAttention").click();
    h.run();
    h.get_by_label("Set runtime overhead").click();
    h.run();
    slide(&mut h, "Overhead", 2.0);
    {
        let st = &h.state().state;
        let s = &st.scenario;
        assert_eq!((s.ubatch, s.prompt_tokens), (1024, 2048));
        assert_eq!(st.electricity_usd_per_kwh, 0.3);
        assert_eq!(s.kv.v, KvPrecision::Q4_0);
        assert_eq!(s.kv_allocation, KvAllocation::Paged);
        assert_eq!(st.split_style, SplitStyle::Streaming);
        assert_eq!(s.runtime, Runtime::Vllm);
        assert_eq!(s.gpu_memory_utilization, 0.8);
        assert!(!s.flash_attention);
        assert_eq!(s.overhead_override, Some(Bytes::gib(2)));
    }

    // Training inputs.
    pick(&mut h, "Mode", "Full fine-tune");
    slide(&mut h, "Micro-batch", 2.0);
    slide(&mut h, "Training tokens", 1000.0);
    pick(&mut h, "Checkpointing", "Full");
    pick(&mut h, "Optimizer", "AdamW 8-bit");
    pick(&mut h, "ZeRO stage", "2 (+ gradients)");
    pick(&mut h, "CPU offload", "Optimizer states");
    h.get_by_label("Pure BF16").click();
    h.run();
    {
        let s = &h.state().state.scenario;
        assert_eq!(
            (s.mode, s.batch, s.train_tokens),
            (Mode::Full, 2, 1_000_000_000)
        );
        assert_eq!(s.checkpointing, Checkpointing::Full);
        assert_eq!(s.optimizer, Optimizer::AdamW8bit);
        assert_eq!((s.zero, s.offload), (2, Offload::Optimizer));
        assert!(s.pure_bf16);
    }
    pick(&mut h, "Mode", "QLoRA");
    pick(&mut h, "LoRA targets", "q, v");
    assert_eq!(h.state().state.scenario.lora_targets, LoraTargets::QV);
}

#[test]
fn keyboard_moves_a_focused_slider() {
    let mut h = harness(State::default());
    let before = h.state().state.scenario.batch;
    h.get_by_role_and_label(Role::Slider, "Batch").focus();
    h.run();
    h.key_press(egui::Key::ArrowRight);
    h.run();
    assert!(h.state().state.scenario.batch > before);
}

#[test]
fn main_window_snapshot() {
    let mut h = snapshot_harness(State {
        selected: vec!["cloud-l40s".into(), "laptop-4060".into()],
        ..State::default()
    });
    h.snapshot_options(
        "main_window",
        &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
    );
}

#[test]
fn fits_nowhere_snapshot() {
    let s = State {
        scenario: Scenario {
            model: ModelSpec::generic(2_000_000_000_000),
            model_id: None,
            context: 131_072,
            ..Scenario::default()
        },
        tab: Tab::Machines,
        filter: headroom::gui::MachineFilter {
            fits_only: true,
            ..Default::default()
        },
        ..State::default()
    };
    let mut h = snapshot_harness(s);
    h.get_by_label("No machines to show");
    h.snapshot_options(
        "fits_nowhere",
        &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
    );
}

#[test]
fn machines_tab_snapshot() {
    let s = State {
        tab: Tab::Machines,
        selected: vec![],
        ..State::default()
    };
    let mut h = snapshot_harness(s);
    h.snapshot_options(
        "machines_tab",
        &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
    );
}

/// Frame time on the Machines tab with the full catalog at 1280x800: `cargo test --release --test
/// gui frame_time -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: run it with --release -- --ignored --nocapture"]
fn frame_time() {
    let s = State {
        tab: Tab::Machines,
        ..State::default()
    };
    let mut h = harness(s);
    let n = 200;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        // Move the pointer so every frame does real work (hover, layout), as a user would.
        h.hover_at(egui::pos2(700.0, 200.0 + (i % 40) as f32 * 12.0));
        let t = std::time::Instant::now();
        h.step();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let mean = times.iter().sum::<f64>() / n as f64;
    let max = times.iter().cloned().fold(0.0, f64::max);
    println!(
        "Machines tab, {} rows, 1280x800, idle inputs: mean {mean:.2} ms, max {max:.2} ms per frame",
        h.state_mut().machine_rows().len()
    );
    // Dragging an input: every frame changes the scenario, so the estimate, the fits on every
    // machine and the solver answers for the machine in focus are recomputed.
    times.clear();
    for i in 0..n {
        h.state_mut().state.scenario.batch = 1 + (i as u64 % 64);
        let t = std::time::Instant::now();
        h.step();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let mean = times.iter().sum::<f64>() / n as f64;
    let max = times.iter().cloned().fold(0.0, f64::max);
    println!(
        "Machines tab while an input changes every frame: mean {mean:.2} ms, max {max:.2} ms per frame"
    );
}

/// Renders every tab to `target/gui-review/` for a person to look at (not compared):
/// `cargo test --test gui review_tabs -- --ignored`.
#[test]
#[ignore = "renders every tab for a person to look at; nothing is compared"]
fn review_tabs() {
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/gui-review");
    let opts = SnapshotOptions::new().output_path(&out);
    let s = State {
        selected: vec!["aws-g6e-xlarge".into(), "mac-studio-m2-ultra-192gb".into()],
        ..State::default()
    };
    let mut h = harness(s);
    for (label, name) in [
        ("Breakdown", "breakdown"),
        ("Machines", "machines"),
        ("Serving", "serving"),
        ("CPU vs GPU", "cpu_vs_gpu"),
        ("Report", "report"),
    ] {
        h.get_by_role_and_label(Role::Button, label).click();
        h.run();
        let _ = h.try_snapshot_options(name, &opts);
    }
    // A 70B model at Q4_K_M: offload on this machine.
    h.state_mut().state.scenario.weights = WeightPrecision::Q4KM;
    h.get_by_role_and_label(Role::Slider, "Parameters")
        .set_value_accesskit(70.0);
    h.run();
    for (label, name) in [
        ("Breakdown", "breakdown_70b"),
        ("CPU vs GPU", "cpu_vs_gpu_70b"),
    ] {
        h.get_by_role_and_label(Role::Button, label).click();
        h.run();
        let _ = h.try_snapshot_options(name, &opts);
    }
    // Serving: an asked load, the RAG mix, and the cheapest cloud machines when none is ticked.
    h.get_by_role_and_label(Role::Button, "Serving").click();
    h.run();
    h.state_mut().state.scenario.serving.load = Some(headroom::core::serving::Load::Users(500));
    h.run();
    let _ = h.try_snapshot_options("serving_500_users", &opts);
    pick(&mut h, "Mix", "RAG");
    let _ = h.try_snapshot_options("serving_rag", &opts);
    let s = State {
        tab: Tab::Serving,
        selected: vec![],
        ..State::default()
    };
    let mut tall = harness_with(fake_4090(), s, (1280.0, 1300.0));
    let _ = tall.try_snapshot_options("serving_cloud_tall", &opts);
    h.get_by_role_and_label(Role::Button, "Breakdown").click();
    h.state_mut().state.scenario = Scenario::default();
    h.run();
    // The whole CPU vs GPU tab, in a tall window.
    let s = State {
        tab: Tab::CpuVsGpu,
        ..State::default()
    };
    let mut tall = harness_with(fake_4090(), s, (1280.0, 1500.0));
    let _ = tall.try_snapshot_options("cpu_vs_gpu_tall", &opts);
    // Training.
    h.state_mut().state.scenario = Scenario {
        mode: Mode::Full,
        gpus: 8,
        zero: 3,
        ..Scenario::default()
    };
    h.run();
    for (label, name) in [
        ("Breakdown", "breakdown_train"),
        ("Machines", "machines_train"),
    ] {
        h.get_by_role_and_label(Role::Button, label).click();
        h.run();
        let _ = h.try_snapshot_options(name, &opts);
    }
}

// ---- The window tells one story ----

/// A size as the Breakdown rows write it (the one formatter of every surface).
fn gib2(b: Bytes) -> String {
    headroom::core::format::bytes(b)
}

/// QLoRA on a 70B model, ZeRO-3 over 8 GPUs: each compared machine is drawn and described as IT
/// runs the job (its own GPU count), with the verdict of its row; the summary never adds the
/// replicas up as "Weights".
#[test]
fn chart_and_rows_agree_for_a_multi_gpu_scenario() {
    let s = State {
        scenario: Scenario {
            model: ModelSpec::generic(70_000_000_000),
            model_id: None,
            mode: Mode::Qlora,
            zero: 3,
            gpus: 8,
            ..Scenario::default()
        },
        selected: vec![
            "desktop-4090".into(),
            "cloud-8xh100".into(),
            "macbook-m2-max-64".into(),
            "cpu-box".into(),
        ],
        ..State::default()
    };
    let mut h = snapshot_harness(s);
    let loads = h.state_mut().compared_loads();
    assert_eq!(loads.len(), 5, "this machine and the four ticked");
    for l in &loads {
        let f = h.state_mut().fit_of(&l.machine).unwrap();
        assert_eq!(l.verdict, f.verdict, "{}", l.name);
        assert_eq!(l.gpu_capacity, f.gpu_capacity);
        if matches!(f.verdict, Verdict::Gpu | Verdict::Unified | Verdict::None) && f.gpus > 0 {
            // The bar is what one of the machine's own GPUs holds: the verdict's number.
            assert_eq!(l.gpu_total(), f.gpu_required, "{}", l.name);
            // Unified memory is one pool: the GPU's part is a share of it, not VRAM.
            h.get_by_label_contains(&if l.unified {
                format!(
                    "GPU part: {} of the {} it may use",
                    gib2(l.gpu_total()),
                    gib2(l.gpu_capacity)
                )
            } else {
                format!("VRAM: {} of {}", gib2(l.gpu_total()), gib2(l.gpu_capacity))
            });
        }
        // Every row says why, in words.
        assert!(!l.reason.is_empty());
        assert!(
            h.query_by_label_contains(&l.reason).is_some(),
            "{}",
            l.reason
        );
    }
    let by_id = |id: &str| loads.iter().find(|l| l.machine == id).unwrap();
    assert_eq!(by_id("desktop-4090").gpus, 1);
    assert_eq!(by_id("cloud-8xh100").gpus, 8);
    // A one-GPU desktop needs far more per GPU than the 8-GPU setting in the inputs suggests.
    assert!(by_id("desktop-4090").gpu_total() > by_id("cloud-8xh100").gpu_total());
    // A CPU box cannot train: "no", with the reason, however much RAM it has.
    assert_eq!(by_id("cpu-box").verdict, Verdict::None);
    assert!(by_id("cpu-box").reason.contains("training needs a GPU"));
    // Totals are per GPU, never a sum over the 8 replicas labelled "Weights".
    assert!(h.query_by_label_contains("Weights per GPU:").is_some());
    assert!(h.query_by_label_contains("Weights:").is_none());
}

#[test]
fn machines_table_has_memory_columns_and_full_names() {
    let h = snapshot_harness(State {
        tab: Tab::Machines,
        ..State::default()
    });
    h.get_by_label("GPU memory");
    h.get_by_role_and_label(Role::Label, "RAM");
    // Two 24 GiB cards and 128 GiB of RAM, in their own columns.
    h.get_by_label("2x 24.0 GiB");
    h.get_by_label("128 GiB");
    // The whole name is the button's name even when the column cuts it.
    assert!(
        h.query_by_role_and_label(Role::Button, "Desktop, 2x RTX 4090, 128 GB")
            .is_some()
            || h.query_all_by_label("Desktop, 2x RTX 4090, 128 GB").count() >= 2
    );
    h.get_by_label("Why");
}

#[test]
fn empty_state_names_the_search_that_hides_fitting_machines() {
    // 70B at BF16 (~130 GiB): the 8x H100, the 256 GB CPU server and the 2x 4090 box (with
    // offload) hold it; neither laptop does.
    let s = State {
        scenario: Scenario {
            model: ModelSpec::generic(70_000_000_000),
            model_id: None,
            ..Scenario::default()
        },
        tab: Tab::Machines,
        filter: headroom::gui::MachineFilter {
            fits_only: true,
            search: "laptop".into(),
            ..Default::default()
        },
        ..State::default()
    };
    let h = snapshot_harness(s);
    h.get_by_label("No machines to show");
    assert!(
        h.query_by_label_contains(
            "fit this workload, but none of them matches the search \"laptop\""
        )
        .is_some()
    );
    assert!(
        h.query_by_label_contains("Nothing in the catalog fits")
            .is_none()
    );
}

#[test]
fn a_no_with_room_to_spare_sorts_last_and_says_why() {
    let s = State {
        scenario: Scenario {
            mode: Mode::Qlora,
            ..Scenario::default()
        },
        tab: Tab::Machines,
        filter: headroom::gui::MachineFilter {
            sort: SortColumn::Headroom,
            descending: true,
            ..Default::default()
        },
        ..State::default()
    };
    let mut h = snapshot_harness(s);
    let rows = h.state_mut().machine_rows();
    // The CPU server (no GPU, the most RAM to spare) says "no" and sorts after every other row:
    // its spare RAM is no headroom for a job that needs a GPU.
    assert!(!h.state_mut().fit_of("cpu-box").unwrap().fits());
    assert_eq!(rows.last().map(String::as_str), Some("cpu-box"), "{rows:?}");
    for r in &rows[1..rows.len() - 1] {
        let f = h.state_mut().fit_of(r).unwrap();
        assert!(f.fits() || f.headroom_bytes < 0, "{r}");
    }
    assert!(
        h.query_all_by_label_contains("training needs a GPU; this machine has none")
            .count()
            >= 1
    );
}

/// Clicks the typed field of input `name`, types `text`, optionally presses Enter.
fn type_into(h: &mut Harness<'static, HeadroomApp>, name: &str, text: &str, enter: bool) {
    h.get_by_role_and_label(Role::SpinButton, name).click();
    h.run();
    h.event(egui::Event::Key {
        key: egui::Key::A,
        physical_key: None,
        pressed: true,
        repeat: false,
        modifiers: egui::Modifiers::COMMAND,
    });
    h.event(egui::Event::Text(text.into()));
    h.run();
    if enter {
        h.key_press(egui::Key::Enter);
        h.run();
    }
}

#[test]
fn typing_applies_on_enter_and_changes_no_other_input() {
    let mut h = harness(mha_state());
    let before = h.state().state.scenario.clone();
    // While typing, nothing applies: "3" is not a context of 3 tokens, the prompt stays.
    type_into(&mut h, "Context", "3", false);
    assert_eq!(h.state().state.scenario.context, before.context);
    assert_eq!(h.state().state.scenario.prompt_tokens, before.prompt_tokens);
    // Typing on (the field's text is selected and replaced), then Enter.
    type_into(&mut h, "Context", "32768", true);
    let s = &h.state().state.scenario;
    assert_eq!(s.context, 32768);
    assert_eq!(s.prompt_tokens, before.prompt_tokens);
    // Above the model's trained length: kept as asked (as on the command line), with a warning.
    type_into(&mut h, "Context", "200000", true);
    assert_eq!(h.state().state.scenario.context, 200_000);
    assert!(
        h.query_by_label_contains(
            "Context 200,000 is beyond the 131,072 tokens this model was trained for"
        )
        .is_some()
    );
    // Above what the input takes: lowered, and the window says so.
    type_into(&mut h, "Context", "5000000", true);
    assert_eq!(h.state().state.scenario.context, 1 << 20);
    assert!(
        h.query_by_label_contains("Context lowered from 5,000,000 to 1,048,576 tokens")
            .is_some()
    );
    // A batch above the slider's range: clamped with a note.
    type_into(&mut h, "Batch", "9999", true);
    assert_eq!(h.state().state.scenario.batch, 512);
    assert!(
        h.query_by_label_contains("Batch: 9,999 is above the largest value")
            .is_some()
    );
}

#[test]
fn arrow_keys_double_and_halve_the_context() {
    let mut h = harness(mha_state());
    h.get_by_role_and_label(Role::Slider, "Context").focus();
    h.run();
    h.key_press(egui::Key::ArrowRight);
    h.run();
    assert_eq!(h.state().state.scenario.context, 16384);
    h.key_press(egui::Key::ArrowLeft);
    h.run();
    h.key_press(egui::Key::ArrowLeft);
    h.run();
    assert_eq!(h.state().state.scenario.context, 4096);
}

#[test]
fn small_parameter_counts_read_by_magnitude() {
    let mut h = harness(State {
        scenario: Scenario {
            model: ModelSpec::generic(4_000_000),
            model_id: None,
            ..Scenario::default()
        },
        ..State::default()
    });
    let v = h
        .get_by_role_and_label(Role::SpinButton, "Parameters")
        .value()
        .unwrap_or_default();
    assert_eq!(v, headroom::core::format::params(4_000_000));
    assert!(!v.contains("0.10"), "{v}");
    h.run();
}

#[test]
fn model_search_starts_empty_each_time() {
    let mut h = harness(State::default());
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Search models").type_text("zzzz");
    h.run();
    h.get_by_label("No model matches");
    h.key_press(egui::Key::Escape);
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    assert_eq!(
        h.get_by_label("Search models").value().unwrap_or_default(),
        ""
    );
    assert!(h.query_by_label("No model matches").is_none());
}

#[test]
fn report_names_the_machine_its_launch_settings_are_for() {
    let s = State {
        tab: Tab::Report,
        scenario: Scenario {
            model: ModelSpec::generic(70_000_000_000),
            model_id: None,
            ..Scenario::default()
        },
        selected: vec!["laptop-4060".into(), "cloud-8xh100".into()],
        ..State::default()
    };
    let h = snapshot_harness(s);
    // This machine (a 4090) and the laptop cannot hold 70B BF16; the 8x H100 can.
    assert!(
        h.query_all_by_label_contains("Launch settings for Cloud, 8x H100 SXM, 2 TB")
            .count()
            >= 1
    );
    assert!(h.query_by_label_contains("for the first").is_none());
}

#[test]
fn detection_notes_are_reachable_from_the_status_bar() {
    let mut h = harness_with(
        FakeDetector::cpu_only(Bytes::gib(32), Bytes::gib(24)),
        State::default(),
        (1280.0, 800.0),
    );
    assert!(
        h.state()
            .status_text()
            .unwrap()
            .starts_with("Detected no usable GPU")
    );
    h.get_by_label_contains("Detection notes (1)").click();
    h.run();
    h.get_by_label_contains("NVML: not detected");
}

#[test]
fn tabs_stay_put_when_a_note_appears() {
    let mut h = harness(State::default());
    let y = h
        .get_by_role_and_label(Role::Button, "Machines")
        .rect()
        .top();
    // A 2T-parameter model brings estimate notes above the tabs' content.
    h.state_mut().state.scenario.model = ModelSpec::generic(2_000_000_000_000);
    h.state_mut().state.scenario.context = 131_072;
    h.run();
    let y2 = h
        .get_by_role_and_label(Role::Button, "Machines")
        .rect()
        .top();
    assert_eq!(y, y2);
}

#[test]
fn plain_explanations_and_the_lora_on_gguf_warning() {
    let mut h = harness(State::default());
    h.get_by_label_contains("Ubatch: prompt tokens handled in one go");
    h.get_by_label_contains("KV allocation: memory for every sequence");
    h.get_by_label_contains("Offload style: layers that do not fit on the GPU stay in RAM");
    assert!(h.query_by_label_contains("dequantise GGUF").is_none());
    h.state_mut().state.scenario.mode = Mode::Lora;
    h.state_mut().state.scenario.weights = WeightPrecision::Q4KM;
    h.run();
    h.get_by_label_contains("dequantise GGUF");
}

/// Breakdown, Machines, Serving, Cluster and CPU vs GPU at three window sizes, on the fixture
/// catalog.
#[test]
fn tabs_at_three_sizes_snapshot() {
    let mut errors = Vec::new();
    for (w, hgt) in [(1024.0, 640.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        for (tab, name) in [
            (Tab::Breakdown, "breakdown"),
            (Tab::Machines, "machines"),
            (Tab::Serving, "serving"),
            (Tab::Cluster, "cluster"),
            (Tab::CpuVsGpu, "cpu_vs_gpu"),
        ] {
            let s = State {
                tab,
                selected: vec![
                    "laptop-4060".into(),
                    "desktop-2x4090".into(),
                    "macbook-m2-max-64".into(),
                ],
                scenario: Scenario {
                    weights: WeightPrecision::Q4KM,
                    model: ModelSpec::generic(70_000_000_000),
                    model_id: None,
                    ..Scenario::default()
                },
                ..State::default()
            };
            let mut h = snapshot_harness_sized(s, (w, hgt));
            if let Err(e) = h.try_snapshot_options(
                format!("{name}_{w}x{hgt}"),
                &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
            ) {
                errors.push(e.to_string());
            }
        }
    }
    assert!(errors.is_empty(), "{errors:#?}");
}
/// The answer first: a card per kind above the tabs. Clicking one ticks that machine onto the
/// Breakdown chart (the compared machines), puts it in focus and opens it in the Machines table.
#[test]
fn clicking_a_recommendation_card_ticks_the_machine() {
    use egui_kittest::kittest::NodeT as _;
    let s = State {
        selected: vec![],
        ..State::default()
    };
    let mut h = harness(s);
    let recs = h.state_mut().recommendations().clone();
    // Llama 3 8B BF16 at 8K on the built-in catalog: every kind has a pick.
    assert_eq!(recs.groups.len(), 4, "{recs:#?}");
    let cloud = recs
        .groups
        .iter()
        .find(|g| g.group == headroom::core::recommend::Group::Cloud)
        .unwrap();
    let p = cloud.best().unwrap().clone();
    assert!(!h.state().state.is_selected(&p.machine));
    h.get_by_label(&format!("{}: {}", cloud.group.label(), p.name))
        .click();
    h.run();
    let st = &h.state().state;
    assert!(st.is_selected(&p.machine), "{:?}", st.selected);
    assert_eq!(st.tab, Tab::Machines);
    assert_eq!(st.focus.as_deref(), Some(p.machine.as_str()));
    // Its row is in view in the Machines table, its Compare box ticked.
    let compare = format!("Compare {}", p.name);
    let row = h.get_by_label(&compare);
    assert_eq!(
        row.accesskit_node().toggled(),
        Some(egui::accesskit::Toggled::True)
    );
    // This machine's card: its verdict (Llama 3 8B BF16 fits the 23 GiB free of the 4090).
    assert!(recs.this_machine.as_ref().unwrap().upgrades.is_empty());
    assert!(h.query_by_label_contains("This machine: ").is_some());
}

/// The Parameters slider spans 0.1 B to 2 T on a log scale across the panel's width: a 25 px
/// drag moves it by a small factor, not from 8 B to hundreds of billions.
#[test]
fn a_short_drag_on_the_parameters_slider_is_a_small_step() {
    let mut h = harness(State::default());
    let r = h.get_by_role_and_label(Role::Slider, "Parameters").rect();
    assert!(r.width() > 200.0, "{r:?}");
    let start = egui::pos2(r.left() + r.width() * 0.45, r.center().y);
    h.drag_at(start);
    h.run();
    let before = h.state().state.scenario.model.param_count().total as f64;
    h.hover_at(start + egui::vec2(25.0, 0.0));
    h.run();
    h.drop_at(start + egui::vec2(25.0, 0.0));
    h.run();
    let after = h.state().state.scenario.model.param_count().total as f64;
    let ratio = after / before;
    assert!(ratio > 1.0 && ratio < 3.0, "{before} -> {after}");
}

#[test]
fn framework_picker_shows_in_training_and_changes_the_estimate() {
    use headroom::core::estimate::estimate;
    use headroom::core::scenario::Framework;
    let mut h = harness(mha_state());
    // Inference has no framework picker.
    assert!(
        h.query_by_role_and_label(Role::ComboBox, "Framework")
            .is_none()
    );
    pick(&mut h, "Mode", "QLoRA");
    let before = h.state().state.scenario.clone();
    assert_eq!(before.framework, Framework::Transformers);
    pick(&mut h, "Framework", "Unsloth");
    let after = h.state().state.scenario.clone();
    assert_eq!(after.framework, Framework::Unsloth);
    // The pick reaches the estimate (Unsloth's QLoRA path differs from transformers').
    assert_ne!(estimate(&before).total(), estimate(&after).total());
}

#[test]
fn machine_tooltip_shows_the_published_measurement() {
    let cat = catalog();
    let preset = cat.model("llama-2-7b").expect("llama-2-7b preset").clone();
    let s = State {
        scenario: Scenario {
            model: preset.spec.clone(),
            model_id: Some("llama-2-7b".into()),
            weights: WeightPrecision::Q4_0,
            ..Scenario::default()
        },
        tab: Tab::Machines,
        filter: headroom::gui::MachineFilter {
            search: "MacBook Air M1".into(),
            ..Default::default()
        },
        ..State::default()
    };
    let mut h = harness(s);
    // The fit carries the llama-bench row of catalogs/benchmarks.ron (discussion 4167: 14.15 tok/s).
    let f = h.state_mut().fit_of("macbook-air-m1-16gb").expect("fit");
    let m = f.measured.clone().expect("a measured reference point");
    assert!((m.decode_tokens_per_s - 14.15).abs() < 1e-9);
    h.get_by_label(&f.name).hover();
    for _ in 0..20 {
        h.step();
        std::thread::sleep(Duration::from_millis(50));
    }
    h.run();
    assert!(
        h.query_by_label_contains("measured 14 tok/s decode")
            .is_some(),
        "the row tooltip names the measurement"
    );
}

#[test]
fn a_budget_below_every_machine_empties_the_strip_and_says_why() {
    let s = State {
        selected: vec![],
        ..State::default()
    };
    let mut h = harness(s);
    let cloud = headroom::core::recommend::Group::Cloud;
    let group = |h: &mut Harness<'static, HeadroomApp>, g| {
        h.state_mut()
            .recommendations()
            .groups
            .iter()
            .find(|x| x.group == g)
            .cloned()
            .unwrap()
    };
    assert!(group(&mut h, cloud).best().is_some());
    // One cent per hour rents nothing in the catalog.
    type_into(&mut h, "Max $/hour", "0.01", true);
    assert_eq!(h.state().state.constraints.max_usd_per_hour, Some(0.01));
    let g = group(&mut h, cloud);
    assert!(g.best().is_none(), "{g:#?}");
    let unmet: Vec<String> = g.unmet.iter().map(ToString::to_string).collect();
    assert!(!unmet.is_empty());
    assert!(
        h.query_by_label_contains(&unmet[0]).is_some(),
        "the card says what would have to give: {unmet:?}"
    );
    assert!(
        unmet
            .iter()
            .any(|u| u.starts_with("nothing fits under $0.0100/h")),
        "{unmet:?}"
    );
    // Clearing it (0 = no limit) brings the pick back.
    type_into(&mut h, "Max $/hour", "0", true);
    assert_eq!(h.state().state.constraints.max_usd_per_hour, None);
    assert!(group(&mut h, cloud).best().is_some());
}

/// Llama-2-7B Q4_0 on llama.cpp: the workload of the llama-bench fixture below.
fn llama2_q4_state() -> State {
    let c = catalog();
    State {
        scenario: Scenario {
            model: c.model("llama-2-7b").unwrap().spec.clone(),
            model_id: Some("llama-2-7b".into()),
            weights: WeightPrecision::Q4_0,
            runtime: headroom::core::scenario::Runtime::LlamaCpp,
            context: 4096,
            prompt_tokens: 64,
            ..Scenario::default()
        },
        ..State::default()
    }
}

#[test]
fn calibrate_action_marks_this_machines_speeds_calibrated() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(llama2_q4_state());
    h.state_mut().config_dir = Some(dir.path().to_path_buf());
    let before = h.state_mut().fit_of("local").expect("local fit");
    assert!(before.decode_tokens_per_s > 0.0);
    assert!(
        !before
            .notes
            .iter()
            .any(|n| n.to_string().contains("calibrated from"))
    );
    run_command(
        &mut h,
        Command::AtPath(
            FileAction::Calibrate,
            "tests/fixtures/llama-bench/rtx4090-llama2-7b-q4_0.json".into(),
        ),
    );
    let status = h.state().status_text().unwrap_or_default().to_string();
    assert!(
        status.contains("calibrated from your run of 2025-08-06"),
        "{status}"
    );
    // Stored where `headroom calibrate` stores it, and used by the next fit.
    let stored = headroom::io::calibration::load(dir.path()).unwrap();
    assert_eq!(stored.map(|c| c.machine), Some("local".to_string()));
    let after = h.state_mut().fit_of("local").expect("local fit");
    assert!(
        after.notes.iter().any(|n| n
            .to_string()
            .contains("calibrated from your run of 2025-08-06")),
        "{:?}",
        after.notes
    );
    // The run is slower than the uncalibrated prediction (as in tests/calibrate.rs).
    assert!(
        after.decode_tokens_per_s < 0.95 * before.decode_tokens_per_s,
        "{} vs {}",
        after.decode_tokens_per_s,
        before.decode_tokens_per_s
    );
    h.run();
}

#[test]
fn calibrate_action_with_a_bad_file_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[{\"model_type\": \"llama 7B Q4_0\"").unwrap();
    let mut h = harness(llama2_q4_state());
    h.state_mut().config_dir = Some(dir.path().join("config"));
    let before = h.state_mut().fit_of("local").unwrap().decode_tokens_per_s;
    run_command(&mut h, Command::AtPath(FileAction::Calibrate, bad));
    let status = h.state().status_text().unwrap_or_default().to_string();
    assert!(
        status.starts_with("Calibration failed") && status.contains("bad.json"),
        "{status}"
    );
    assert!(!status.contains('\n'), "{status}");
    assert!(!dir.path().join("config").join("calibration.json").exists());
    let after = h.state_mut().fit_of("local").unwrap().decode_tokens_per_s;
    assert_eq!(before, after);
}

#[test]
fn probe_action_shows_a_bandwidth_in_the_status() {
    let mut h = harness(State::default());
    // Through the status bar's menu, as a user does (never at start-up).
    assert!(
        h.state()
            .status_text()
            .is_some_and(|s| !s.contains("GB/s read"))
    );
    h.get_by_label_contains("Detection notes").click();
    h.run();
    h.get_by_label("Measure memory bandwidth").click();
    h.step();
    h.state_mut().wait_for_jobs(Duration::from_secs(10));
    h.run();
    let status = h.state().status_text().unwrap_or_default().to_string();
    assert!(
        status.starts_with("Measured memory bandwidth: "),
        "{status}"
    );
    // "<whole number> GB/s read": the probe is real, so only its form and sign are known.
    let figure = status
        .trim_start_matches("Measured memory bandwidth: ")
        .split(" GB/s")
        .next()
        .unwrap();
    let gbs: f64 = figure.parse().unwrap_or_else(|_| panic!("{status}"));
    assert!(gbs > 0.0 && status.contains(" GB/s read"), "{status}");
}

// ---- Serving many users ----

/// The Serving tab's sentence for `id`, as the window shows it (the label must be on screen).
fn serving_sentence(h: &mut Harness<'static, HeadroomApp>, id: &str) -> String {
    let text = h.state_mut().serving_sentence(id).expect("a plan");
    h.get_by_label(&text);
    text
}

#[test]
fn serving_tab_follows_the_users_and_the_mix() {
    use headroom::core::serving::{Load, Mix};
    let mut h = harness(State {
        tab: Tab::Serving,
        selected: vec!["desktop-rtx4090-64gb".into(), "laptop-rtx4060-16gb".into()],
        ..State::default()
    });
    // The most users at the target: the sentence is the core's plan, written out.
    let plan = h.state_mut().serving_plan("desktop-rtx4090-64gb").unwrap();
    let users = plan
        .machine_users()
        .expect("an RTX 4090 serves Llama 3 8B BF16");
    let first = serving_sentence(&mut h, "desktop-rtx4090-64gb");
    assert!(
        first.starts_with(&format!(
            "holds {} users with 1,024-token prompts: TTFT p95 ",
            headroom::core::format::group_digits(users)
        )),
        "{first}"
    );
    assert!(first.ends_with("per 1M output tokens."), "{first}");
    // An 8 GB laptop GPU cannot hold 16 GB of weights: it says why.
    let laptop = serving_sentence(&mut h, "laptop-rtx4060-16gb");
    assert_eq!(
        laptop,
        "cannot serve it: the model does not fit in GPU memory here."
    );
    // The table has the same figure.
    h.get_by_label(&headroom::core::format::group_digits(users));

    // An asked load, typed into the users field: the replicas it takes.
    pick(&mut h, "Load", "Users in flight");
    type_into(&mut h, "Users in flight", "500", true);
    assert_eq!(
        h.state().state.scenario.serving.load,
        Some(Load::Users(500))
    );
    h.get_by_label("For 500 users");
    let plan = h.state_mut().serving_plan("desktop-rtx4090-64gb").unwrap();
    let asked = plan.asked.expect("an asked load");
    assert_eq!(asked.replicas, 500_u64.div_ceil(users));
    let with_load = serving_sentence(&mut h, "desktop-rtx4090-64gb");
    assert!(
        with_load.contains(&format!(
            "500 users take {} replicas on {} machines",
            asked.replicas, asked.machines
        )),
        "{with_load}"
    );

    // The RAG mix: 5,000-token prompts and 500-token answers, fewer users per machine.
    pick(&mut h, "Mix", "RAG");
    let s = &h.state().state.scenario;
    assert_eq!(s.serving.mix, Some(Mix::Rag));
    assert_eq!((s.prompt_tokens, s.serving.output_tokens), (5000, 500));
    let rag = serving_sentence(&mut h, "desktop-rtx4090-64gb");
    assert!(rag.contains("with 5,000-token prompts"), "{rag}");
    assert_ne!(rag, with_load);
    let rag_users = h
        .state_mut()
        .serving_plan("desktop-rtx4090-64gb")
        .unwrap()
        .machine_users()
        .unwrap_or(0);
    assert!(rag_users < users, "{rag_users} vs {users}");

    // Typing a length makes the mix custom.
    type_into(&mut h, "Output", "100", true);
    let s = &h.state().state.scenario;
    assert_eq!((s.serving.mix, s.serving.output_tokens), (None, 100));
}

#[test]
fn serving_without_ticked_machines_shows_the_cheapest_cloud_and_files_keep_the_inputs() {
    use headroom::core::serving::{Engine, Mix};
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(State {
        tab: Tab::Serving,
        selected: vec![],
        ..State::default()
    });
    h.get_by_label_contains("No machine is ticked");
    assert!(h.query_all_by_label_contains("holds ").count() >= 2);
    pick(&mut h, "Engine", "SGLang");
    pick(&mut h, "Mix", "Chat");
    // Save and open: the serving inputs come back.
    let file = dir.path().join("serve.ron");
    run_command(
        &mut h,
        Command::AtPath(FileAction::SaveScenario, file.clone()),
    );
    run_command(&mut h, Command::ResetScenario);
    assert_eq!(h.state().state.scenario.serving.engine, Engine::Auto);
    run_command(
        &mut h,
        Command::AtPath(FileAction::OpenScenario, file.clone()),
    );
    let s = &h.state().state.scenario;
    assert_eq!(s.serving.engine, Engine::Sglang);
    assert_eq!((s.serving.mix, s.prompt_tokens), (Some(Mix::Chat), 161));
    // A file written before the serving inputs existed opens with their defaults.
    let old = dir.path().join("old.ron");
    let text = std::fs::read_to_string(&file).unwrap();
    let start = text.find("serving:").expect("serving is saved");
    let depth_end = {
        // The serving block ends at its matching parenthesis.
        let mut depth = 0;
        let mut end = start;
        for (i, c) in text[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        end
    };
    let rest = text[depth_end..].trim_start_matches(',');
    std::fs::write(&old, format!("{}{}", &text[..start], rest)).unwrap();
    run_command(&mut h, Command::AtPath(FileAction::OpenScenario, old));
    let s = &h.state().state.scenario;
    assert_eq!(
        s.serving,
        headroom::core::serving::ServingInputs::default(),
        "{:?}",
        h.state().status_text()
    );
    assert_eq!(s.prompt_tokens, 161);
}

#[test]
fn an_imported_files_bytes_follow_the_weights_picker() {
    // As if a BF16 safetensors of Llama 3 8B had been imported: its exact bytes stand for BF16.
    let mut s = State::default();
    let spec = &mut s.scenario.model;
    spec.file_weights = Some(headroom::core::model::FileWeights {
        path: "model.safetensors".into(),
        total_bytes: 16_060_522_496,
        params: 8_030_261_248,
        layer_bytes: 13_958_643_712,
        format: "safetensors BF16".into(),
        ..Default::default()
    });
    let mut h = harness(s);
    let bits = headroom::core::teach::effective_bits(
        &h.state().state.scenario.model,
        WeightPrecision::Q4KM,
    );
    // The row gives the size Q4_K_M would have, from the architecture.
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    assert!(bits > 15.0, "{bits}");
    assert!(
        h.query_by_label_contains(&format!("GGUF Q4_K_M ({bits:.2} bits avg.)"))
            .is_none()
    );
    h.get_by_label_contains("GGUF Q4_K_M (4.").click();
    h.run();
    // Q4_K_M is sized from the architecture (about 4.6 GiB), not the file's 15 GiB of BF16,
    // as `--weights q4_k_m` does on the command line, and the window says so.
    let s = &h.state().state.scenario;
    assert!(s.model.file_weights.is_none());
    let gib = headroom::core::estimate(s)
        .kind_total(ComponentKind::Weights)
        .as_gib();
    assert!((4.4..4.8).contains(&gib), "{gib}");
    assert!(
        h.query_by_label_contains("not from the file's bytes")
            .is_some()
    );
}

/// The Cluster tab plans a 70B full fine-tune on p5 nodes: the smallest cluster in words, and
/// the node count a user fixes (untick "Fewest nodes that fit", type the count) is planned as
/// set.
#[test]
fn cluster_tab_plans_and_takes_a_node_count() {
    let cat = catalog();
    let p = cat.model("llama-3-70b").unwrap();
    let state = State {
        tab: Tab::Cluster,
        scenario: Scenario {
            model: p.spec.clone(),
            model_id: Some(p.id.clone()),
            mode: Mode::Full,
            framework: headroom::core::scenario::Framework::DeepSpeed,
            checkpointing: headroom::core::scenario::Checkpointing::Full,
            context: 4096,
            ..Scenario::default()
        },
        ..State::default()
    };
    let mut h = harness(state);
    // 16 B of model states per parameter over 16 H100s: TP 4 × PP 4 without sharding just fits.
    assert!(
        h.query_by_label_contains(
            "Smallest: 2 nodes (16 GPUs), TP 4 × PP 4 × DP 1, DDP (no sharding), full recompute"
        )
        .is_some()
    );
    h.get_by_label("Fewest nodes that fit").click();
    h.run();
    assert_eq!(h.state().state.scenario.cluster.nodes, Some(2));
    // One node does not hold the job: the tab says so instead of a plan.
    h.get_by_role_and_label(Role::SpinButton, "Nodes")
        .set_value_accesskit(1.0);
    h.run();
    assert_eq!(h.state().state.scenario.cluster.nodes, Some(1));
    assert!(h.query_by_label_contains("No cluster of").is_some());
}

// ---- Issue 30: what a first-use review found ----

/// The Prompt tokens note, if any.
fn prompt_note(h: &Harness<'static, HeadroomApp>) -> Option<String> {
    use egui_kittest::kittest::NodeT as _;
    h.query_by_label_contains("Prompt tokens lowered")
        .and_then(|n| n.accesskit_node().value())
}

/// A shorter context lowers the prompt; a longer one brings the asked length back, and the note
/// says what was asked and goes when it no longer applies (TTFT follows the prompt used).
#[test]
fn prompt_tokens_come_back_when_the_context_grows() {
    let mut h = harness(mha_state());
    let ttft_1024 = h.state_mut().fit_of("local").expect("local").ttft_s;
    assert_eq!(h.state().state.scenario.prompt_tokens, 1024);
    // Dragging down through 300 to 256: the note names the 1,024 asked, never a value in between.
    slide(&mut h, "Context", 300.0);
    slide(&mut h, "Context", 256.0);
    assert_eq!(h.state().state.scenario.prompt_tokens, 256);
    let note = prompt_note(&h).expect("a note while the prompt is cut");
    assert!(note.contains("from 1,024 to the context (256)"), "{note}");
    assert!(h.state_mut().fit_of("local").unwrap().ttft_s < ttft_1024);
    for ctx in [131_072.0, 8192.0] {
        slide(&mut h, "Context", ctx);
        assert_eq!(
            h.state().state.scenario.prompt_tokens,
            1024,
            "context {ctx}"
        );
        assert_eq!(prompt_note(&h), None, "context {ctx}");
    }
    // 131,072 tokens of MHA KV cache do not fit the 4090; at 8,192 again TTFT is the 1,024's.
    assert_eq!(h.state_mut().fit_of("local").unwrap().ttft_s, ttft_1024);
    // A prompt typed longer than the context is kept too.
    slide(&mut h, "Context", 1024.0);
    type_into(&mut h, "Prompt tokens", "3000", true);
    h.run();
    assert_eq!(h.state().state.scenario.prompt_tokens, 1024);
    let note = prompt_note(&h).expect("typed past the context");
    assert!(note.contains("from 3,000 to the context (1,024)"), "{note}");
    slide(&mut h, "Context", 4096.0);
    assert_eq!(h.state().state.scenario.prompt_tokens, 3000);
    assert_eq!(prompt_note(&h), None);
    // Reset forgets the asked length.
    run_command(&mut h, Command::ResetScenario);
    assert_eq!(h.state().state.scenario.prompt_tokens, 1024);
}

/// QLoRA trains on an NF4 base: the Weights picker, the report's title and the notes say so
/// (the estimate uses NF4 + double quant), and the precision chosen for inference comes back.
#[test]
fn qlora_shows_the_nf4_base_it_computes_with() {
    let mut h = harness(State {
        tab: Tab::Report,
        scenario: Scenario {
            weights: WeightPrecision::Q4KM,
            ..Scenario::default()
        },
        ..State::default()
    });
    pick(&mut h, "Mode", "QLoRA");
    h.run();
    let s = h.state().state.scenario.clone();
    assert_eq!(s.weights, WeightPrecision::Nf4DoubleQuant);
    assert_eq!(s.held_weights(), s.weights);
    assert!(h.query_by_label_contains("GGUF Q4_K_M (").is_none());
    h.get_by_label_contains("Weights set to NF4 + double quant");
    h.get_by_label_contains("QLoRA, NF4 + double quant, 8,192 tokens");
    assert!(h.query_by_label_contains("for a 4-bit base").is_none());
    assert!(h.query_by_label_contains("dequantise GGUF").is_none());
    // Only the precisions QLoRA holds are offered.
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    assert!(h.query_by_label_contains("BF16 (").is_none());
    h.get_by_label_contains("NF4 (");
    h.key_press(egui::Key::Escape);
    h.run();
    pick(&mut h, "Mode", "Inference");
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Q4KM);
    assert!(h.query_by_label_contains("Weights set to").is_none());
}

/// Chooses the model `name` in the model picker (searching for `search`).
fn choose_model(h: &mut Harness<'static, HeadroomApp>, search: &str, name: &str) {
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Search models").type_text(search);
    h.run();
    h.get_by_label(name).click();
    h.run();
}

/// Choosing a model keeps the precision the user chose, and says so where the publisher ships
/// another; a precision left at the previous preset's follows the new preset's, with a note.
#[test]
fn choosing_a_model_keeps_the_chosen_precision_or_says_why_not() {
    let mut h = harness(State {
        tab: Tab::Machines,
        ..State::default()
    });
    // BF16 is Llama 3 8B's own: gpt-oss brings its MXFP4, and the window says so.
    choose_model(&mut h, "gpt-oss 20", "gpt-oss 20B");
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Mxfp4);
    h.get_by_label_contains("Weights set to MXFP4");
    // A precision the user picks is kept across models, with a note where it is not theirs.
    pick_weights(&mut h, WeightPrecision::Q4KM);
    assert!(h.query_by_label_contains("Weights set to").is_none());
    choose_model(&mut h, "3.1 8b", "Llama 3.1 8B");
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Q4KM);
    assert!(h.query_by_label_contains("Weights kept").is_none());
    choose_model(&mut h, "gpt-oss 20", "gpt-oss 20B");
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Q4KM);
    h.get_by_label_contains("Weights kept at GGUF Q4_K_M, your choice; gpt-oss 20B ships in MXFP4");
}

/// Picks precision `p` in the Weights picker.
fn pick_weights(h: &mut Harness<'static, HeadroomApp>, p: WeightPrecision) {
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    h.get_by_label_contains(&format!("{} (", p.label())).click();
    h.run();
    assert_eq!(h.state().state.scenario.weights, p);
}

/// The solver card offers no extra GPUs to a laptop ("32x RTX 4060 Laptop"), but does to a
/// desktop.
#[test]
fn a_laptop_is_not_offered_more_gpus() {
    let s = |focus: &str| State {
        tab: Tab::Machines,
        focus: Some(focus.into()),
        scenario: Scenario {
            model: ModelSpec::generic(70_000_000_000),
            model_id: None,
            ..Scenario::default()
        },
        ..State::default()
    };
    let h = harness(s("laptop-rtx4060-16gb"));
    assert!(h.query_by_label_contains("Fewest GPUs").is_none());
    let h = harness(s("desktop-rtx4090-64gb"));
    h.get_by_label_contains("Fewest GPUs: ");
}

/// The CPU vs GPU tab numbers each chart once (an MoE model shows both "1a" and "1b").
#[test]
fn cpu_vs_gpu_charts_have_distinct_numbers() {
    let mut h = harness(State {
        tab: Tab::CpuVsGpu,
        ..State::default()
    });
    choose_model(&mut h, "gpt-oss 20", "gpt-oss 20B");
    h.get_by_label_contains("1a. Mixture of experts");
    assert_eq!(h.query_all_by_label_contains("1b. ").count(), 1);
}

/// Sort arrows are arrows, counts agree with their nouns, and a CPU-only machine is told the
/// GPU figure is the inputs' hypothetical one.
#[test]
fn wording_sort_arrow_plurals_and_no_gpu() {
    let mut h = harness(State {
        tab: Tab::Machines,
        ..State::default()
    });
    h.get_by_role_and_label(Role::Button, "tok/s").click();
    h.run();
    h.get_by_role_and_label(Role::Button, "tok/s, sorted descending");
    assert!(h.query_by_label("tok/s v").is_none());
    h.get_by_role_and_label(Role::Button, "Breakdown").click();
    h.run();
    assert!(h.query_by_label_contains("1 sequences").is_none());
    h.get_by_label_contains("× 1 sequence = ");
    h.get_by_label("On the 1 GPU set in the inputs");
    assert!(
        h.query_by_label_contains("this machine has no GPU")
            .is_none()
    );
    let cpu = FakeDetector::cpu_only(Bytes::gib(32), Bytes::gib(24));
    let h = harness_with(cpu, State::default(), (1280.0, 800.0));
    assert!(h.query_by_label_contains("One GPU (as set)").is_none());
    assert!(h.query_by_label_contains("GPU needs").is_none());
    h.get_by_label_contains("this machine has no GPU");
}

/// Orange means "look here": the default scenario (batch 1) shows no KV-allocation warning; a
/// batch of contiguous reservations does.
#[test]
fn the_default_scenario_has_no_orange_kv_note() {
    let mut h = harness(State::default());
    assert!(
        h.query_by_label_contains("Contiguous KV reserves")
            .is_none()
    );
    slide(&mut h, "Batch", 8.0);
    h.get_by_label_contains("Contiguous KV reserves");
}

/// Enter in the model search picks the match.
#[test]
fn enter_picks_the_model_search_match() {
    let mut h = harness(State::default());
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Search models").type_text("3.1 8b");
    h.run();
    h.key_press(egui::Key::Enter);
    h.run();
    assert_eq!(
        h.state().state.scenario.model_id.as_deref(),
        Some("llama-3.1-8b")
    );
    assert!(
        h.query_by_label("Search models").is_none(),
        "the list closed"
    );
}

/// The Markdown preview reads `https://`, not the export's GitHub escape `https:\/\/`.
#[test]
fn markdown_preview_shows_plain_urls() {
    let h = harness(State {
        tab: Tab::Report,
        ..State::default()
    });
    h.get_by_label_contains("https://huggingface.co");
    assert!(h.query_by_label_contains(":\\/\\/").is_none());
}

/// The inputs panel keeps its width whatever precision (and hint) is chosen, so the tabs never
/// move under the pointer; at each of the three window sizes.
#[test]
fn the_inputs_panel_keeps_its_width_for_every_precision() {
    for size in [(1024.0, 640.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        let mut h = harness_with(fake_4090(), State::default(), size);
        let x = |h: &Harness<'static, HeadroomApp>| {
            h.get_by_role_and_label(Role::Button, "Machines")
                .rect()
                .left()
        };
        let x0 = x(&h);
        for p in WeightPrecision::ALL {
            h.state_mut().state.scenario.weights = p;
            h.run();
            assert_eq!(x(&h), x0, "{} at {size:?}", p.label());
        }
        // A picker opened and used as a person would.
        pick_weights(&mut h, WeightPrecision::Nf4DoubleQuant);
        assert_eq!(x(&h), x0, "NF4 picked at {size:?}");
        h.state_mut().state.split_style = headroom::core::scenario::SplitStyle::Streaming;
        h.run();
        assert_eq!(x(&h), x0, "streaming at {size:?}");
    }
}

/// Names are cut in the middle, so the chip and memory at their end stay in view: two
/// MacBooks that differ only in memory never read the same (the Breakdown rows, at each of the
/// three sizes). A cut name in the table shows one tooltip and keeps its whole name for screen
/// readers, and the recommendation cards fill a wide window.
#[test]
fn machine_names_keep_their_deciding_end_at_every_size() {
    use egui_kittest::kittest::NodeT as _;
    for size in [(1024.0, 640.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        let s = State {
            selected: vec![
                "macbook-pro-16-m4-max-48gb".into(),
                "macbook-pro-16-m4-max-128gb".into(),
            ],
            ..State::default()
        };
        let mut h = harness_with(fake_4090(), s, size);
        let shown: Vec<String> = h
            .query_all_by_role(Role::Label)
            .filter_map(|n| n.accesskit_node().value())
            .filter(|l| l.starts_with("MacBook Pro"))
            .collect();
        assert_eq!(shown.len(), 2, "{shown:?} at {size:?}");
        assert!(shown[0].ends_with("· 48 GB"), "{shown:?} at {size:?}");
        assert!(shown[1].ends_with("· 128 GB"), "{shown:?} at {size:?}");
        // The Machines table: the whole name for screen readers, one tooltip on hover.
        h.get_by_role_and_label(Role::Button, "Machines").click();
        h.state_mut().state.filter.search = "macbook pro 16 m4 max 128".into();
        h.run();
        let full = "MacBook Pro 16 (2024) · Apple M4 Max 40-core GPU · 128 GB";
        h.get_by_role_and_label(Role::Button, full).hover();
        for _ in 0..24 {
            h.step();
            std::thread::sleep(Duration::from_millis(50));
        }
        h.run();
        assert_eq!(h.query_all_by_label_contains("Source: ").count(), 1);
        // The cards share the window's width instead of leaving a third of it empty.
        let right = h
            .query_all_by_role(Role::Button)
            .filter(|b| {
                b.accesskit_node()
                    .label()
                    .is_some_and(|l| l.starts_with("Cloud instance: "))
            })
            .map(|b| b.rect().right())
            .fold(0.0f32, f32::max);
        if size.0 >= 1920.0 {
            assert!(right > size.0 - 120.0, "last card ends at {right}");
        }
    }
}

/// At 1024x640 the Machines table shows the answer (verdict, tok/s, TTFT, $/1M, Why) beside the
/// Machine column without scrolling sideways, and the card strip says it folds; folding it
/// moves the table up.
#[test]
fn a_small_window_shows_the_answer_columns_and_the_strip_folds() {
    let s = State {
        tab: Tab::Machines,
        ..State::default()
    };
    let mut h = harness_with(fake_4090(), s, (1024.0, 640.0));
    let central_right = 1024.0;
    for title in ["Machine", "Verdict", "tok/s", "TTFT", "$/1M tok"] {
        let r = h.get_by_role_and_label(Role::Button, title).rect();
        assert!(r.right() <= central_right, "{title} ends at {}", r.right());
    }
    let why = h.get_by_label("Why").rect();
    assert!(
        why.left() < central_right - 60.0,
        "Why starts at {}",
        why.left()
    );
    let row_y = |h: &Harness<'static, HeadroomApp>| {
        h.get_by_role_and_label(Role::Button, "Machine")
            .rect()
            .top()
    };
    let y0 = row_y(&h);
    let header = h.get_by_label_contains("click to fold it away");
    header.click();
    h.run();
    assert!(row_y(&h) < y0 - 100.0, "{} -> {}", y0, row_y(&h));
    assert!(h.query_by_label_contains("click to fold it away").is_none());
    // A tall window needs no such hint.
    let h = harness_with(fake_4090(), State::default(), (1920.0, 1080.0));
    assert!(h.query_by_label_contains("click to fold it away").is_none());
}

/// The summary's figures move to the next line whole: "This machine: [offload] 1.62 tok/s"
/// stays on one line, and no label breaks inside, at each of the three sizes.
#[test]
fn the_summary_wraps_whole_figures() {
    for size in [(1024.0, 640.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        let s = State {
            scenario: Scenario {
                weights: WeightPrecision::Q4KM,
                model: ModelSpec::generic(70_000_000_000),
                model_id: None,
                ..Scenario::default()
            },
            ..State::default()
        };
        let h = harness_with(fake_4090(), s, size);
        let this = h.get_by_label("This machine:").rect();
        let beside = h
            .query_all_by_label_contains(" tok/s")
            .map(|n| n.rect())
            .any(|r| (this.center().y - r.center().y).abs() < 4.0 && r.left() > this.right());
        assert!(beside, "the rate sits beside \"This machine:\" at {size:?}");
        let kv = h.get_by_label_contains("KV per token: ").rect();
        assert!(kv.height() < 24.0, "one line: {kv:?} at {size:?}");
    }
}

/// The typed-path fallback suggests a file of the kind each action reads or writes.
#[test]
fn the_typed_path_fallback_suggests_the_right_kind_of_file() {
    let mut h = harness(State::default());
    for (action, end) in [
        (FileAction::SaveScenario, "llama-3-8b-bf16-8k.ron"),
        (FileAction::OpenScenario, ".ron"),
        (FileAction::Calibrate, "llama-bench.json"),
        (FileAction::ExportReport, ".md"),
    ] {
        h.state_mut().no_file_chosen(action);
        h.run();
        let hint = h.state().path_prompt_hint().expect("the bar is shown");
        assert!(hint.ends_with(end), "{action:?}: {hint}");
        assert!(!hint.contains("/home/me/"), "{hint}");
        h.get_by_label_contains("type a path:");
    }
}

/// A long status message is cut before the "Detection notes" button, never under it.
#[test]
fn the_status_message_stops_before_the_notes_button() {
    let mut h = harness_with(fake_4090(), State::default(), (1024.0, 640.0));
    h.state_mut().check_settings_dir(None);
    h.run();
    let msg = h.get_by_label_contains("Settings will not be saved").rect();
    let notes = h
        .get_by_role_and_label(Role::Button, "Detection notes (1)")
        .rect();
    assert!(msg.right() <= notes.left(), "{msg:?} runs under {notes:?}");
}

/// "Open from Hugging Face..." is a modal: centred (not over its button), the window behind
/// does not take clicks, Escape closes it; offline it names the OS's error, not
/// "uncategorized error".
#[test]
fn the_hugging_face_dialog_is_a_modal_that_escape_closes() {
    let mut h = harness(State::default());
    let button = h
        .get_by_role_and_label(Role::Button, "Open from Hugging Face...")
        .rect();
    h.get_by_role_and_label(Role::Button, "Open from Hugging Face...")
        .click();
    h.run();
    assert!(h.state().hub.open);
    let field = h.get_by_label("Repository").rect();
    assert!(!field.intersects(button), "{field:?} covers {button:?}");
    // The tabs behind do not take a click while it is open: a click outside closes it.
    h.get_by_role_and_label(Role::Button, "Machines").click();
    h.run();
    assert_eq!(h.state().state.tab, Tab::Breakdown);
    assert!(!h.state().hub.open);
    h.get_by_role_and_label(Role::Button, "Open from Hugging Face...")
        .click();
    h.run();
    assert!(h.state().hub.open);
    // A refused connection: the OS's words.
    let mut opts = headroom::io::hub::Options::from_env();
    opts.endpoint = "http://127.0.0.1:9".into();
    opts.cache_root = None;
    opts.offline = false;
    h.state_mut().hub.options = Some(opts);
    h.state_mut().hub.repo = "org/name".into();
    h.get_by_role_and_label(Role::Button, "List files").click();
    for _ in 0..40 {
        h.run();
        if !h.state().hub.busy() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    h.run();
    assert!(h.query_by_label_contains("uncategorized").is_none());
    h.get_by_label_contains("cannot");
    h.key_press(egui::Key::Escape);
    h.run();
    assert!(!h.state().hub.open);
}

/// Input-to-frame latency while the Context slider is dragged, at 1920x1080: for each pointer
/// move, the time from handing egui the event to the end of the frame that shows its result
/// (the app's frame, tessellation and a wgpu render, on llvmpipe where there is no GPU). Run
/// in a release build: `cargo test --release --test gui slider_drag_latency -- --ignored
/// --nocapture`. Target: 50 ms at the 95th percentile.
#[test]
#[ignore = "a measurement, not a check: run it with --release -- --ignored --nocapture"]
fn slider_drag_latency() {
    let mut h = harness_with(fake_4090(), State::default(), (1920.0, 1080.0));
    let _ = h.render();
    let r = h.get_by_role_and_label(Role::Slider, "Context").rect();
    let y = r.center().y;
    h.event(egui::Event::PointerMoved(egui::pos2(r.left() + 4.0, y)));
    h.event(egui::Event::PointerButton {
        pos: egui::pos2(r.left() + 4.0, y),
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: egui::Modifiers::NONE,
    });
    h.step();
    let n = 120;
    let mut ms = Vec::with_capacity(n);
    let mut steps = Vec::with_capacity(n);
    let mut contexts = std::collections::BTreeSet::new();
    for i in 0..n {
        let t = (i % 60) as f32 / 59.0;
        let x = r.left() + 4.0 + t * (r.width() - 8.0);
        let t0 = std::time::Instant::now();
        h.event(egui::Event::PointerMoved(egui::pos2(x, y)));
        h.step();
        steps.push(t0.elapsed().as_secs_f64() * 1000.0);
        let _ = h.render().expect("a frame");
        ms.push(t0.elapsed().as_secs_f64() * 1000.0);
        contexts.insert(h.state().state.scenario.context);
    }
    assert!(
        contexts.len() > 10,
        "the drag moved the context: {contexts:?}"
    );
    ms.sort_by(f64::total_cmp);
    steps.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    println!(
        "  of which the app's frame (no rendering): median {:.1} ms",
        steps[steps.len() / 2]
    );
    println!(
        "Context slider drag, 1920x1080, {n} moves: input to rendered frame median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        pct(0.5),
        pct(0.95),
        pct(1.0)
    );
}

/// The Weights picker's rows give each precision's size and quality on the current model:
/// Llama 3 8B at Q4_K_M is 4.58 GiB of weights (llama.cpp's README: 4.58 GiB) and loses a mean
/// KLD of 0.0313 to FP16 (tools/perplexity/README.md, measured on that model). The closed picker
/// keeps the short name.
#[test]
fn the_weights_rows_show_size_and_quality() {
    use egui_kittest::kittest::NodeT as _;
    let mut h = harness(State::default());
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    let bits = headroom::core::teach::effective_bits(
        &h.state().state.scenario.model,
        WeightPrecision::Q4KM,
    );
    let row =
        format!("GGUF Q4_K_M ({bits:.2} bits avg.) · 4.58 GiB · KLD 0.0313 (LLaMA 3 8B, measured)");
    h.get_by_label(&row).click();
    h.run();
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Q4KM);
    // A precision nobody published a figure for says so in its row.
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    let nf4 = h
        .get_by_label_contains(&format!("{} (", WeightPrecision::Nf4.label()))
        .accesskit_node()
        .label()
        .unwrap_or_default();
    assert!(nf4.ends_with(" · quality not measured"), "{nf4}");
    // One published as a perplexity difference says so: AWQ, carried over from Llama 2 7B
    // (AWQ paper, Table 4: 5.60 − 5.47).
    let awq = h
        .get_by_label_contains(&format!("{} (", WeightPrecision::Awq4.label()))
        .accesskit_node()
        .label()
        .unwrap_or_default();
    assert!(
        awq.contains(" · ΔPPL +0.130 vs FP16 on wikitext-2-raw-v1 test, 2,048-token chunks (carried over from Llama 2 7B"),
        "{awq}"
    );
}

/// Picking a precision changes the quality line under the picker; the KV pickers have their own.
#[test]
fn picking_a_precision_changes_the_quality_lines() {
    let mut h = harness(State::default());
    h.get_by_label("Weights quality: reference");
    h.get_by_label("KV cache quality: reference");
    pick_weights(&mut h, WeightPrecision::Q8_0);
    h.get_by_label("Weights quality: KLD 0.00136 (LLaMA 3 8B, measured)");
    pick_weights(&mut h, WeightPrecision::Q6K);
    h.get_by_label("Weights quality: KLD 0.00545 (LLaMA 3 8B, measured)");
    assert!(h.query_by_label_contains("KLD 0.00136").is_none());
    // K at Q8_0, V at FP16: llama.cpp's measured 0.000944 on Llama 3 8B.
    pick(&mut h, "K cache", "Q8_0 (8.5 bits)");
    h.get_by_label("KV cache quality: KLD 0.000944 (LLaMA 3 8B, measured)");
    // A model without a preset: the figure is carried over, and says from where.
    let mut h = harness(mha_state());
    pick_weights(&mut h, WeightPrecision::Q4KM);
    h.get_by_label("Weights quality: KLD 0.0313 (carried over from LLaMA 3 8B)");
}

/// The size-vs-quality chart under the pickers: one point per precision with a figure. On Llama
/// 3 8B llama.cpp measured 15 weight types (Q8_0 … IQ2_XXS), so 15 filled points and no
/// carried-over one; the 16-bit formats are the reference and the rest are named unmeasured.
#[test]
fn the_size_vs_quality_chart_has_a_point_per_figure() {
    use egui_kittest::kittest::NodeT as _;
    let mut h = harness(State::default());
    assert!(h.query_by_label_contains("Size vs quality chart").is_none());
    h.get_by_label("Size vs quality").click();
    h.run();
    h.get_by_label(
        "Size vs quality chart: 15 precisions with a figure: 15 measured on this model, 0 carried over",
    );
    let reference = h
        .get_by_label_contains("Reference (KLD 0): ")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    for p in [WeightPrecision::Bf16, WeightPrecision::Fp16] {
        assert!(reference.contains(p.label()), "{reference}");
    }
    let unmeasured = h
        .get_by_label_contains("Not measured: ")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    assert!(
        unmeasured.contains(WeightPrecision::Nf4.label()),
        "{unmeasured}"
    );
    // AWQ (ΔPPL) and FP8 (accuracy recovery) have figures, but none on the KLD axis.
    let off_axis = h
        .get_by_label_contains("Published as benchmark accuracy or ΔPPL, not KLD")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    for p in [WeightPrecision::Awq4, WeightPrecision::Fp8] {
        assert!(off_axis.contains(p.label()), "{off_axis}");
        assert!(!unmeasured.contains(p.label()), "{unmeasured}");
    }
    assert!(
        !unmeasured.contains(WeightPrecision::Q4KM.label()),
        "{unmeasured}"
    );
    // The chosen precision, in words: BF16 is the reference, off the log axis; Q4_K_M is a point.
    assert!(
        h.query_by_label_contains("· 15.0 GiB · reference, not on the chart")
            .is_some()
    );
    pick_weights(&mut h, WeightPrecision::Q4KM);
    let chosen = h
        .get_by_label_contains("Chosen: ")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    assert!(
        chosen.starts_with("Chosen: GGUF Q4_K_M (")
            && chosen.ends_with(" · 4.58 GiB · KLD 0.0313 (LLaMA 3 8B, measured)"),
        "{chosen}"
    );
    // Another model: every figure is carried over.
    let mut h = harness(mha_state());
    h.get_by_label("Size vs quality").click();
    h.run();
    h.get_by_label(
        "Size vs quality chart: 15 precisions with a figure: 0 measured on this model, 15 carried over",
    );
}

/// The Precision section with Q4_K_M chosen, the size-vs-quality chart open, and the Weights list
/// open over it (its rows: size and KLD beside each precision).
#[test]
fn size_vs_quality_snapshot() {
    let mut h = snapshot_harness(State {
        scenario: Scenario {
            weights: WeightPrecision::Q4KM,
            ..Scenario::default()
        },
        ..State::default()
    });
    h.get_by_label("Size vs quality").click();
    h.run();
    h.snapshot_options(
        "size_vs_quality",
        &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
    );
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    h.snapshot_options(
        "weights_rows",
        &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
    );
}

/// A 405B full fine-tune fits no cloud instance alone: the Cloud card says which cluster does
/// (the same answer as `recommend`'s `cluster`).
#[test]
fn the_cloud_card_names_the_cheapest_cluster_when_no_instance_is_enough() {
    let cat = catalog();
    let p = cat.model("llama-3.1-405b").unwrap();
    let state = State {
        tab: Tab::Machines,
        scenario: Scenario {
            model: p.spec.clone(),
            model_id: Some(p.id.clone()),
            mode: Mode::Full,
            ..Scenario::default()
        },
        ..State::default()
    };
    let h = harness(state);
    assert!(
        h.query_by_label_contains("One instance is not enough; the cheapest cluster:")
            .is_some()
    );
}

#[test]
fn speculative_toggle_adds_a_drafter_and_speeds_decode_up() {
    use headroom::core::speculative::SpecMethod;
    let mut h = harness(State {
        tab: Tab::Machines,
        ..State::default()
    });
    h.state_mut().state.scenario.weights = WeightPrecision::Q4KM;
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Search models").type_text("qwen2.5 32b");
    h.run();
    h.get_by_label("Qwen2.5 32B").click();
    h.run();
    let plain = h.state_mut().fit_of("local").unwrap();
    assert!(plain.speculative.is_none());

    // On: a model without MTP layers gets an EAGLE-3 head, the drafter a person can always add.
    h.get_by_label("Speculative decoding").click();
    h.run();
    let sp = h.state().state.scenario.speculative.clone().unwrap();
    assert_eq!(sp.method, SpecMethod::Eagle3);
    // MTP is not offered for a model without MTP layers.
    h.get_by_role_and_label(Role::ComboBox, "Drafter").click();
    h.run();
    assert!(h.query_by_label("MTP layers").is_none());
    h.get_by_label("Draft model").click();
    h.run();
    // The draft list holds the smaller Qwen2.5 presets only.
    h.get_by_role_and_label(Role::ComboBox, "Draft model")
        .click();
    h.run();
    assert!(h.query_by_label_contains("Qwen2.5 72B").is_none());
    assert!(h.query_by_label_contains("Llama").is_none());
    h.get_by_label_contains("Qwen2.5 0.5B (").click();
    h.run();
    slide(&mut h, "Draft tokens", 4.0);
    slide(&mut h, "Acceptance", 0.8);
    let sp = h.state().state.scenario.speculative.clone().unwrap();
    assert_eq!(sp.method, SpecMethod::DraftModel);
    assert_eq!(sp.draft_id.as_deref(), Some("qwen2.5-0.5b"));
    assert_eq!((sp.tokens, sp.acceptance), (4, Some(0.8)));
    // (1 − 0.8⁵) / 0.2 = 3.3616 tokens per check (Leviathan et al. 2023, eq. 1).
    h.get_by_label_contains("yields 3.36 tokens on average (4 drafted at 0.80 acceptance)");

    // The fit of this machine carries the drafter's memory and the faster decode.
    let f = h.state_mut().fit_of("local").unwrap();
    let s = f
        .speculative
        .as_ref()
        .expect("speculative speed on this machine");
    assert!((s.tokens_per_step - 3.3616).abs() < 1e-3, "{s:?}");
    assert!(
        (s.plain_decode_tokens_per_s - plain.decode_tokens_per_s).abs()
            < 0.05 * plain.decode_tokens_per_s,
        "{s:?} vs {}",
        plain.decode_tokens_per_s
    );
    assert!(
        f.decode_tokens_per_s > 1.5 * plain.decode_tokens_per_s,
        "{s:?}"
    );
    assert!(f.headroom_bytes < plain.headroom_bytes);

    // Off again: the plain fit.
    h.get_by_label("Speculative decoding").click();
    h.run();
    assert!(h.state().state.scenario.speculative.is_none());
    assert!(h.state_mut().fit_of("local").unwrap().speculative.is_none());
}

#[test]
fn embeddings_mode_shows_sequences_per_second() {
    let mut h = harness(State {
        tab: Tab::Machines,
        ..State::default()
    });
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Search models").type_text("bge-m3");
    h.run();
    h.get_by_label("BGE-M3").click();
    h.run();
    pick(&mut h, "Mode", "Embeddings / reranking");
    assert_eq!(h.state().state.scenario.mode, Mode::Embed);
    // The table's speed, latency and cost columns are an embedding model's.
    h.get_by_label_contains("seq/s");
    h.get_by_label_contains("$/1M in");
    h.get_by_label_contains("no KV cache is kept");
    // No speculative decoding row for a pass that generates nothing.
    assert!(h.query_by_label("Speculative decoding").is_none());
    let f = h.state_mut().fit_of("local").unwrap();
    let e = f
        .embedding
        .as_ref()
        .expect("embedding speed on this machine");
    assert!(e.sequences_per_s > 0.0, "{e:?}");
    assert_eq!(
        estimate_kind(&h.state().state.scenario, ComponentKind::KvCache),
        0
    );
}

fn estimate_kind(s: &Scenario, k: ComponentKind) -> u64 {
    headroom::core::estimate::estimate(s)
        .components
        .iter()
        .filter(|c| c.kind == k)
        .map(|c| c.bytes.0)
        .sum()
}

#[test]
fn your_own_gpu_layers_fix_the_split() {
    let mut h = harness(State {
        tab: Tab::Machines,
        ..State::default()
    });
    // Llama 3 8B BF16 fits the 4090 whole; with -ngl 16 half its layers run on the CPU.
    assert_eq!(h.state_mut().fit_of("local").unwrap().verdict, Verdict::Gpu);
    h.get_by_label("Set GPU layers (-ngl)").scroll_to_me();
    h.run();
    h.get_by_label("Set GPU layers (-ngl)").click();
    h.run();
    assert_eq!(h.state().state.scenario.launch.gpu_layers, Some(32));
    slide(&mut h, "GPU layers", 16.0);
    assert_eq!(h.state().state.scenario.launch.gpu_layers, Some(16));
    let f = h.state_mut().fit_of("local").unwrap();
    assert_eq!(
        (f.verdict, f.gpu_layers, f.total_layers),
        (Verdict::Offload, 16, 32),
        "{f:?}"
    );
    h.get_by_label_contains("Your split: every machine runs the layers where you put them");
    // No MoE, no --n-cpu-moe row.
    assert!(
        h.query_by_label("Set experts in RAM (--n-cpu-moe)")
            .is_none()
    );
    // Off again: the fit searches the split itself.
    h.get_by_label("Set GPU layers (-ngl)").click();
    h.run();
    assert_eq!(h.state_mut().fit_of("local").unwrap().verdict, Verdict::Gpu);
}

#[test]
fn importing_an_mmproj_adds_images_beside_the_model() {
    let mut h = harness(State::default());
    let model = h.state().state.scenario.model.clone();
    let mm = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/mmproj_gemma3_tiny.gguf");
    run_command(&mut h, Command::AtPath(FileAction::ImportModel, mm));
    // The model stays; the projector is sized beside it (2,560 B of tensors, 256 tokens an image).
    assert_eq!(h.state().state.scenario.model, model);
    let v = h
        .state()
        .state
        .scenario
        .vision
        .clone()
        .expect("vision inputs");
    assert_eq!((v.encoder.weight_bytes, v.tokens_per_image()), (2_560, 256));
    assert!(
        h.state()
            .status_text()
            .unwrap()
            .contains("256 tokens per image")
    );
    h.get_by_label_contains("Images: 256 tokens each (896² in 14-pixel patches), 256 in all");
    slide(&mut h, "Images", 3.0);
    assert_eq!(h.state().state.scenario.vision.as_ref().unwrap().images, 3);
    h.get_by_label("Vision encoder on the CPU").click();
    h.run();
    assert!(h.state().state.scenario.vision.as_ref().unwrap().on_cpu);
    // The fit's time to first token carries the images.
    let f = h.state_mut().fit_of("local").unwrap();
    assert_eq!(f.vision.as_ref().unwrap().images, 3);
    h.get_by_label("Remove the vision projector").click();
    h.run();
    assert!(h.state().state.scenario.vision.is_none());
}

/// The cards take the floor of `recommend --max-kld` as its named levels. Llama 3 70B in BF16
/// on this machine (a 4090, 23 GiB free) needs a lower precision; with "lossless" (KLD ≤ 0.002)
/// none within it fits (Q8_0 alone is ~70 GiB), so this machine's card says which precision
/// would fit past the floor and its KLD.
#[test]
fn the_quality_floor_on_the_cards_says_what_fitting_would_cost() {
    let cat = catalog();
    let p = cat.model("llama-3-70b").expect("preset");
    let s = State {
        scenario: Scenario {
            model: p.spec.clone(),
            model_id: Some(p.id.clone()),
            weights: WeightPrecision::Bf16,
            context: 8192,
            ..Scenario::default()
        },
        ..State::default()
    };
    let mut h = harness(s);
    let before = h
        .state_mut()
        .recommendations()
        .this_machine
        .clone()
        .unwrap();
    assert!(before.past_floor.is_none(), "{before:?}");
    assert!(h.query_by_label_contains("fits its GPU;").is_none());
    pick(&mut h, "Quality floor", "lossless (KLD ≤ 0.002)");
    assert_eq!(h.state().state.constraints.max_kld, Some(0.002));
    let t = h
        .state_mut()
        .recommendations()
        .this_machine
        .clone()
        .unwrap();
    let pf = t.past_floor.clone().expect("a precision past the floor");
    assert_eq!(pf.max_kld, 0.002);
    assert!(pf.kld.is_some_and(|k| k > 0.002), "{pf:?}");
    assert!(pf.weights.bits_per_weight() < 8.0, "{pf:?}");
    // No precision step within the floor; the card says what fitting would cost.
    assert!(
        t.upgrades
            .iter()
            .all(|u| u.kind() != headroom::core::recommend::ChangeKind::Precision),
        "{:?}",
        t.upgrades
    );
    let line = h
        .query_by_label_contains("fits its GPU;")
        .expect("the card's line");
    let text = {
        use egui_kittest::kittest::NodeT as _;
        let n = line.accesskit_node();
        n.label().or_else(|| n.value()).unwrap_or_default()
    };
    assert!(
        text.starts_with(
            "No precision within the quality floor (lossless (KLD ≤ 0.002)) fits its GPU; "
        ),
        "{text}"
    );
    assert!(text.contains(pf.weights.label()), "{text}");
    assert!(text.contains("past the floor"), "{text}");
    // Back to "any": the note goes.
    pick(&mut h, "Quality floor", "any");
    assert_eq!(h.state().state.constraints.max_kld, None);
    assert!(h.query_by_label_contains("fits its GPU;").is_none());
}

/// "Paste a llama.cpp or vLLM command": a llama-server line applied to the scenario (context,
/// cache types, -ngl, threads, tensor split); a line with a flag headroom does not read says so
/// in one line naming it and leaves the scenario as it was.
#[test]
fn a_pasted_command_sets_the_scenario() {
    const FIELD: &str = "Paste a llama.cpp or vLLM command";
    let paste = |line: &str| {
        let mut h = harness(State::default());
        h.get_by_label(FIELD).scroll_to_me();
        h.run();
        h.get_by_label(FIELD).click();
        h.run();
        h.get_by_label(FIELD).type_text(line);
        h.run();
        h.get_by_label("Apply command").click();
        h.run();
        h
    };
    let h = paste("llama-server -c 4096 -ngl 16 -ctk q8_0 -ctv q8_0 -t 4 -ts 3,1");
    let s = h.state().state.scenario.clone();
    assert_eq!(s.context, 4096);
    assert_eq!(s.launch.gpu_layers, Some(16));
    assert_eq!(
        s.kv,
        headroom::core::precision::KvTypes::same(headroom::core::precision::KvPrecision::Q8_0)
    );
    assert_eq!(s.launch.threads, Some(4));
    assert_eq!(s.launch.tensor_split, vec![3.0, 1.0]);
    // A bad line: one line naming the flag; the scenario stays as it was.
    let before = harness(State::default()).state().state.scenario.clone();
    let bad = paste("llama-server -c 4096 --frobnicate 3");
    bad.get_by_label_contains("Cannot apply the command: --frobnicate: not a llama.cpp flag");
    assert_eq!(bad.state().state.scenario, before);
}

/// Image generation in the window: the Mode picker switches to the pipeline inputs, the
/// Breakdown lists the components with the core's sizes, and the Machines tab and the summary
/// give each machine's verdict and seconds per image as `core::diffusion` computes them.
#[test]
fn image_mode_sizes_the_pipeline_per_component_and_per_machine() {
    use headroom::core::diffusion::{ImageVerdict, PipelineOffload};
    let mut h = harness(State::default());
    pick(&mut h, "Mode", "Image generation");
    assert_eq!(h.state().state.scenario.mode, Mode::Image);
    // SDXL base at 1024², BF16: the UNet is 2,567,463,684 params × 2 B = 5,134,927,368 B
    // = 4.78 GiB (docs/diffusion.md, hand checks).
    h.get_by_label("UNet");
    assert!(h.query_all_by_label("4.78 GiB").count() >= 1);
    pick(&mut h, "Image pipeline", "FLUX.1 [dev]");
    {
        let im = &h.state().state.scenario.image;
        assert_eq!(
            (im.pipeline.as_str(), im.width, im.steps),
            ("flux.1-dev", 1024, 50)
        );
    }
    // The transformer: 11,901,408,320 × 2 B = 23,802,816,640 B = 22.2 GiB; T5-XXL
    // 4,762,310,656 × 2 B = 9,524,621,312 B = 8.87 GiB.
    h.get_by_label("Flux transformer (DiT)");
    assert!(h.query_all_by_label("22.2 GiB").count() >= 1);
    assert!(h.query_all_by_label("8.87 GiB").count() >= 1);
    // 33.9 GiB with everything on the GPU does not fit a 24 GiB RTX 4090: this machine runs it
    // with offload, and the summary says which, as the core's fit does.
    let local = h
        .state_mut()
        .image_fit_of("local")
        .expect("this machine's fit");
    assert!(
        matches!(
            local.verdict,
            ImageVerdict::Gpu(PipelineOffload::Model | PipelineOffload::Sequential)
        ),
        "{:?}",
        local.verdict
    );
    assert!(h.query_all_by_label(local.verdict.label()).count() >= 1);
    // A width off Flux's 16-pixel grid, typed, is brought to the nearest multiple with a note.
    type_into(&mut h, "Width", "1000", true);
    assert_eq!(h.state().state.scenario.image.width, 1008);
    // Four images per call: the denoiser's activations and the fit follow.
    slide(&mut h, "Images per batch", 4.0);
    assert_eq!(h.state().state.scenario.image.images, 4);
    h.get_by_label("4 samples at 1008×1024");
    // The Machines tab: every machine's s/image as the core computes it.
    h.state_mut().state.tab = Tab::Machines;
    h.run();
    let f = h
        .state_mut()
        .image_fit_of("aws-p5-48xlarge")
        .expect("an 8x H100 fit");
    assert!(f.verdict.runs());
    assert_eq!(f.pipelines, 8, "one pipeline per GPU");
    let s = f.speed.expect("a speed");
    assert!(
        h.query_all_by_label(&headroom::core::format::duration(s.seconds_per_image))
            .count()
            >= 1
    );
    // The Report tab and the export write the image report, the scenario file keeps the image
    // inputs.
    h.state_mut().state.tab = Tab::Report;
    h.run();
    assert!(h.query_all_by_label("Copy report").count() == 1);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("flux.json");
    run_command(
        &mut h,
        Command::AtPath(FileAction::ExportReport, report.clone()),
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["image"]["pipeline"], "flux.1-dev");
    assert_eq!(v["image"]["images_per_batch"], 4);
    assert_eq!(v["components"][0]["params"], 11_901_408_320u64);
    let file = dir.path().join("image.ron");
    run_command(
        &mut h,
        Command::AtPath(FileAction::SaveScenario, file.clone()),
    );
    h.state_mut().state.scenario.image.steps = 7;
    run_command(&mut h, Command::AtPath(FileAction::OpenScenario, file));
    assert_eq!(h.state().state.scenario.image.steps, 50);
    assert_eq!(h.state().state.scenario.mode, Mode::Image);
    // Back to text: the text inputs return.
    pick(&mut h, "Mode", "Inference");
    h.get_by_role_and_label(Role::Slider, "Context");
}

/// The window in image mode at 1280×800: SDXL on the fixture catalog, the Breakdown tab with
/// three machines compared.
#[test]
fn image_mode_snapshot() {
    let s = State {
        scenario: Scenario {
            mode: Mode::Image,
            ..Scenario::default()
        },
        selected: vec![
            "laptop-4060".into(),
            "desktop-2x4090".into(),
            "macbook-m2-max-64".into(),
        ],
        ..State::default()
    };
    let mut h = snapshot_harness(s);
    h.get_by_label("UNet");
    h.snapshot_options(
        "image_mode",
        &SnapshotOptions::new().threshold(2.0).max_failed_pixels(20),
    );
}

/// A text-only precision (GPTQ) has no image runtime: image mode holds BF16 and says so, and
/// the user's GPTQ comes back with Inference.
#[test]
fn image_mode_holds_an_image_precision_and_gives_the_text_one_back() {
    let mut h = harness(State {
        scenario: Scenario {
            weights: WeightPrecision::Gptq4,
            ..Scenario::default()
        },
        ..State::default()
    });
    pick(&mut h, "Mode", "Image generation");
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Bf16);
    assert!(
        h.query_all_by_label_contains("No image runtime loads GPTQ")
            .count()
            >= 1
    );
    pick(&mut h, "Mode", "Inference");
    assert_eq!(h.state().state.scenario.weights, WeightPrecision::Gptq4);
}

// ---- Verify with llama-bench ----

/// tests/fixtures/verify (a recorded llama-bench run, played by `fake-llama-bench`).
#[cfg(unix)]
fn verify_fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/verify")
        .join(name)
}

/// Qwen2.5-7B Q4_K_M on llama.cpp at a 512-token prompt: the recorded run's workload.
#[cfg(unix)]
fn qwen_q4_state() -> State {
    let c = catalog();
    State {
        scenario: Scenario {
            model: c.model("qwen2.5-7b").unwrap().spec.clone(),
            model_id: Some("qwen2.5-7b".into()),
            weights: WeightPrecision::Q4KM,
            runtime: headroom::core::scenario::Runtime::LlamaCpp,
            context: 4096,
            prompt_tokens: 512,
            ..Scenario::default()
        },
        ..State::default()
    }
}

/// Steps the window until the Verify run (or the storing) has reported, at most 20 s.
#[cfg(unix)]
fn settle_verify(h: &mut Harness<'static, HeadroomApp>) {
    // While it runs the window keeps repainting (a spinner, the elapsed time): step, not run.
    for _ in 0..400 {
        h.step();
        if !h.state().verify.busy() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    h.run();
}

/// "Verify with llama-bench..." beside Calibrate: with no llama-bench the Run button is disabled
/// and the window says why; with the recorded run as llama-bench it runs on a worker thread,
/// shows the rows (the recorded pp512 7,100 and tg128 119 tok/s, the logged 28.0 MiB KV cache
/// beside the predicted 28.0 MiB), and stores the run as this machine's calibration.
#[cfg(unix)]
#[test]
fn verify_action_runs_llama_bench_and_offers_the_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("Qwen2.5-7B-Instruct-Q4_K_M.gguf");
    std::fs::write(&gguf, b"GGUF").unwrap();
    let mut h = harness(qwen_q4_state());
    h.state_mut().config_dir = Some(dir.path().join("config"));
    // Through the status bar's menu, next to "Calibrate from llama-bench output...".
    h.get_by_label_contains("Detection notes").click();
    h.run();
    h.get_by_label("Calibrate from llama-bench output...");
    h.get_by_label("Verify with llama-bench...").click();
    h.run();
    assert!(h.state().verify.open);
    // Nothing to run yet: the disabled reason is on screen.
    h.state_mut().verify.llama_bench = dir.path().join("nope").display().to_string();
    h.run();
    h.get_by_label_contains("no such file");
    assert!(h.query_by_label_contains("Predicted").is_none());
    // No GGUF: the imported model was a preset.
    h.state_mut().verify.llama_bench = verify_fixture("fake-llama-bench").display().to_string();
    h.run();
    h.get_by_label_contains("llama-bench runs a GGUF file");
    h.state_mut().verify.model = gguf.display().to_string();
    h.run();
    h.get_by_label_contains("Will run");
    h.get_by_role_and_label(Role::Button, "Run llama-bench")
        .click();
    h.step();
    settle_verify(&mut h);
    // The command line shows the recommended flags, the rows the run beside the prediction.
    h.get_by_label_contains("-ngl 999");
    h.get_by_label("Prompt processing (pp512)");
    h.get_by_label("Generation (tg128)");
    h.get_by_label("7,100 tok/s");
    h.get_by_label("119 tok/s");
    assert!(
        h.query_all_by_label("28.0 MiB").count() >= 2,
        "the KV cache predicted and measured"
    );
    h.get_by_label("Store as this machine's calibration")
        .click();
    h.step();
    settle_verify(&mut h);
    let status = h.state().status_text().unwrap_or_default().to_string();
    assert!(status.contains("calibrated from"), "{status}");
    let stored = headroom::io::calibration::load(&dir.path().join("config")).unwrap();
    assert_eq!(stored.map(|c| c.machine), Some("local".to_string()));
    assert!(h.state().state.calibration.is_some());
    h.key_press(egui::Key::Escape);
    h.run();
    assert!(!h.state().verify.open);
}

/// A llama-bench that hangs is cancelled from the window: the run stops within a second and says
/// so; nothing is stored.
#[cfg(unix)]
#[test]
fn verify_action_cancels_a_hanging_run() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("m.gguf");
    std::fs::write(&gguf, b"GGUF").unwrap();
    // The fixture's "slow" mode sleeps 30 s; the mode reaches it through a wrapper script.
    let wrapper = dir.path().join("slow-llama-bench");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nFAKE_LLAMA_BENCH_MODE=slow exec {} \"$@\"\n",
            verify_fixture("fake-llama-bench").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut h = harness(qwen_q4_state());
    h.state_mut().push_command(Command::OpenVerify);
    h.run();
    h.state_mut().verify.llama_bench = wrapper.display().to_string();
    h.state_mut().verify.model = gguf.display().to_string();
    h.run();
    h.get_by_role_and_label(Role::Button, "Run llama-bench")
        .click();
    h.step();
    std::thread::sleep(Duration::from_millis(300));
    h.step();
    h.step();
    assert!(h.state().verify.busy());
    h.get_by_label_contains("running for");
    let t0 = std::time::Instant::now();
    h.get_by_role_and_label(Role::Button, "Cancel").click();
    h.step();
    settle_verify(&mut h);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    h.get_by_label_contains("cancelled");
    assert!(
        h.query_by_label("Store as this machine's calibration")
            .is_none()
    );
}

/// The Runtime picker offers MLX (mlx-lm); choosing it makes the scenario's runtime MLX, and the
/// KV cache keeps its contiguous allocation.
#[test]
fn the_runtime_picker_offers_mlx() {
    let mut h = harness(State::default());
    pick(&mut h, "Runtime", "MLX (mlx-lm)");
    let s = &h.state().state.scenario;
    assert_eq!(s.runtime, headroom::core::scenario::Runtime::Mlx);
    assert_eq!(
        s.kv_allocation,
        headroom::core::scenario::KvAllocation::Contiguous
    );
    // Its prompt chunk is mlx-lm's --prefill-step-size, in place of llama.cpp's ubatch.
    assert!(h.query_by_label("Ubatch").is_none());
    slide(&mut h, "Prefill step", 1024.0);
    assert_eq!(h.state().state.scenario.launch.prefill_step, Some(1024));
}
