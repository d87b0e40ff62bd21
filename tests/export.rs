//! Export: sizing reports (Markdown, HTML, JSON), launch settings, RON scenarios, atomic writes.
//!
//! Snapshots (tests/snapshots/export__*.snap) pin the Markdown and JSON reports of fixed
//! scenarios on a small catalog built here, so catalog edits elsewhere do not churn them.
//! Update them with `INSTA_UPDATE=always cargo test --test export` after checking the diff.

use headroom::core::catalog::{
    Accelerator, Catalog, Machine, MachineKind, MemoryKind, PcieLink, Price, Segment, Vendor,
};
use headroom::core::estimate::estimate;
use headroom::core::fit::{FitResult, FitSettings, Verdict, fit_all};
use headroom::core::model::{FileWeights, ModelSpec};
use headroom::core::precision::{KvPrecision, KvTypes, WeightPrecision};
use headroom::core::scenario::{Checkpointing, KvAllocation, Mode, Offload, Runtime, Scenario};
use headroom::core::units::{Bytes, GbPerSec};
use headroom::io::export::launch::{self, LaunchSetting, Launcher};
use headroom::io::export::{
    ExportError, ReportFormat, ReportInput, launch_settings, load_scenario, render, save_scenario,
    write_atomic,
};
use std::fs;
use std::path::Path;

const VERSION: &str = "1.2.3";
const DATE: &str = "2025-06-01 12:00";

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn acc(
    id: &str,
    name: &str,
    vendor: Vendor,
    kind: MemoryKind,
    gib: u64,
    bw: f64,
    tf: f64,
    pcie: Option<(u8, u8)>,
) -> Accelerator {
    Accelerator {
        id: id.into(),
        name: name.into(),
        vendor,
        segment: Segment::Consumer,
        memory_kind: kind,
        memory: Bytes::gib(gib),
        bandwidth: GbPerSec(bw),
        fp16_tflops: tf,
        fp16_acc16_tflops: None,
        vector_tflops: None,
        compute_units: None,
        l2_cache_mib: None,
        int8_tops: None,
        mamf_tflops: None,
        fp4_tflops: None,
        tdp_w: Some(350.0),
        pcie: pcie.map(|(generation, lanes)| PcieLink { generation, lanes }),
        gpu_link: None,
        gpu_link_gbs: None,
        aliases: vec![],
        source: "test fixture".into(),
        notes: None,
    }
}

#[allow(clippy::too_many_arguments)]
fn machine(
    id: &str,
    name: &str,
    kind: MachineKind,
    gpu: Option<&str>,
    count: u32,
    ram_gib: u64,
    price: Option<Price>,
) -> Machine {
    Machine {
        id: id.into(),
        name: name.into(),
        kind,
        gpu: gpu.map(Into::into),
        gpu_count: count,
        ram: Bytes::gib(ram_gib),
        ram_bandwidth: GbPerSec(89.6),
        cpu: "Test CPU".into(),
        cpu_cores: 16,
        vcpus: None,
        gpu_memory_limit: None,
        price,
        power_w: Some(500.0),
        storage: None,
        fabric: None,
        network: None,
        source: "test fixture".into(),
        notes: None,
    }
}

/// A catalog shaped like the built-in one: a laptop, a desktop, a Mac, a CPU box, cloud GPUs.
fn catalog() -> Catalog {
    let hourly = |usd: f64| Price::Hourly {
        usd,
        region: "us-east-1".into(),
        price_date: "2025-05".into(),
        source: "test".into(),
    };
    let buy = |usd: f64| Price::Purchase {
        usd,
        region: "US".into(),
        price_date: "2025-05".into(),
        source: "test".into(),
    };
    Catalog {
        benchmarks: Vec::new(),
        accelerator_index: Default::default(),
        accelerators: vec![
            acc(
                "rtx-4090",
                "GeForce RTX 4090",
                Vendor::Nvidia,
                MemoryKind::Discrete,
                24,
                1008.0,
                165.2,
                Some((4, 16)),
            ),
            acc(
                "rtx-4060-laptop",
                "GeForce RTX 4060 Laptop",
                Vendor::Nvidia,
                MemoryKind::Discrete,
                8,
                256.0,
                30.0,
                Some((4, 8)),
            ),
            acc(
                "h100-sxm",
                "H100 SXM 80GB",
                Vendor::Nvidia,
                MemoryKind::Discrete,
                80,
                3350.0,
                989.0,
                Some((5, 16)),
            ),
            acc(
                "m2-max",
                "Apple M2 Max",
                Vendor::Apple,
                MemoryKind::Unified,
                0,
                400.0,
                27.0,
                None,
            ),
            acc(
                "rtx-3060",
                "GeForce RTX 3060 12GB",
                Vendor::Nvidia,
                MemoryKind::Discrete,
                12,
                360.0,
                51.0,
                Some((4, 16)),
            ),
        ],
        machines: vec![
            machine(
                "laptop-4060",
                "Gaming laptop (RTX 4060)",
                MachineKind::Laptop,
                Some("rtx-4060-laptop"),
                1,
                32,
                Some(buy(1400.0)),
            ),
            machine(
                "desktop-4090",
                "Desktop RTX 4090",
                MachineKind::Desktop,
                Some("rtx-4090"),
                1,
                64,
                Some(buy(3200.0)),
            ),
            machine(
                "mac-studio-m2-max-64",
                "Mac Studio M2 Max 64GB",
                MachineKind::Apple,
                Some("m2-max"),
                1,
                64,
                Some(buy(2600.0)),
            ),
            machine(
                "cpu-box",
                "CPU server (no GPU)",
                MachineKind::Workstation,
                None,
                1,
                128,
                None,
            ),
            machine(
                "cloud-8xh100",
                "Cloud 8× H100 SXM",
                MachineKind::Cloud,
                Some("h100-sxm"),
                8,
                2048,
                Some(hourly(98.32)),
            ),
            machine(
                "cloud-2x4090",
                "Cloud 2× RTX 4090",
                MachineKind::Cloud,
                Some("rtx-4090"),
                2,
                128,
                Some(hourly(0.69)),
            ),
        ],
        models: vec![],
    }
}

/// "This machine", as detection would describe it: not in the report's catalog, so the report
/// describes it from the fit numbers.
fn this_machine() -> Machine {
    machine(
        "this-machine",
        "This machine",
        MachineKind::Desktop,
        Some("rtx-3060"),
        1,
        32,
        None,
    )
}

/// Fit on "This machine" first, then the given catalog machines.
fn fits(s: &Scenario, ids: &[&str]) -> Vec<FitResult> {
    let cat = catalog();
    let mut fit_cat = cat.clone();
    let me = this_machine();
    fit_cat.machines.push(me.clone());
    let mut ms = vec![me];
    ms.extend(
        ids.iter()
            .map(|id| cat.machine(id).expect("fixture machine").clone()),
    );
    fit_all(s, &ms, &fit_cat, &FitSettings::default())
}

/// Llama 3 8B, Q4_K_M, q8_0 KV, 32K context, 2 sequences, llama.cpp.
fn inference_scenario() -> Scenario {
    Scenario {
        weights: WeightPrecision::Q4KM,
        kv: KvTypes::same(KvPrecision::Q8_0),
        context: 32768,
        batch: 2,
        runtime: Runtime::LlamaCpp,
        ..Scenario::default()
    }
}

/// Full fine-tune of Llama 3 8B with ZeRO-3, optimizer and parameter offload, 8 GPUs.
fn training_scenario() -> Scenario {
    Scenario {
        mode: Mode::Full,
        weights: WeightPrecision::Bf16,
        context: 4096,
        batch: 4,
        gpus: 8,
        zero: 3,
        offload: Offload::OptimizerParams,
        checkpointing: Checkpointing::Full,
        runtime: Runtime::Transformers,
        train_tokens: 1_000_000_000,
        ..Scenario::default()
    }
}

/// vLLM on two GPUs, with a hostile model name and file path (as if read from a file).
fn hostile_scenario() -> Scenario {
    let model = ModelSpec {
        name: "<script>alert('x')</script> | *evil* [model](http://example.com)".into(),
        file_weights: Some(FileWeights {
            path: "/models/it's $(rm -rf ~) `x`/model".into(),
            total_bytes: 16_060_522_496,
            params: 8_030_261_248,
            layer_bytes: 13_958_643_712,
            runtime_extra_bytes: 0,
            format: "safetensors BF16 <b>bold</b>".into(),
            expert_bytes_by_layer: Vec::new(),
        }),
        ..ModelSpec::default()
    };
    Scenario {
        model,
        model_id: None,
        weights: WeightPrecision::Bf16,
        kv: KvTypes::same(KvPrecision::Fp8),
        context: 16384,
        batch: 8,
        gpus: 2,
        runtime: Runtime::Vllm,
        kv_allocation: KvAllocation::Paged,
        ..Scenario::default()
    }
}

struct Owned {
    scenario: Scenario,
    fits: Vec<FitResult>,
    catalog: Catalog,
    settings: FitSettings,
}

impl Owned {
    fn new(scenario: Scenario, ids: &[&str]) -> Self {
        let fits = fits(&scenario, ids);
        Owned {
            scenario,
            fits,
            catalog: catalog(),
            settings: FitSettings::default(),
        }
    }
    fn render(&self, format: ReportFormat) -> String {
        let e = estimate(&self.scenario);
        let input = ReportInput {
            scenario: &self.scenario,
            estimate: &e,
            fits: &self.fits,
            catalog: &self.catalog,
            settings: &self.settings,
            generated: DATE.into(),
            version: VERSION,
        };
        render(&input, format)
    }
}

fn inference() -> Owned {
    Owned::new(
        inference_scenario(),
        &[
            "laptop-4060",
            "desktop-4090",
            "mac-studio-m2-max-64",
            "cpu-box",
            "cloud-2x4090",
        ],
    )
}
fn training() -> Owned {
    Owned::new(training_scenario(), &["cloud-8xh100", "desktop-4090"])
}
fn hostile() -> Owned {
    Owned::new(hostile_scenario(), &["cloud-2x4090", "laptop-4060"])
}

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

#[test]
fn snapshot_inference_markdown() {
    insta::assert_snapshot!(
        "inference_markdown",
        inference().render(ReportFormat::Markdown)
    );
}

#[test]
fn snapshot_inference_json() {
    insta::assert_snapshot!("inference_json", inference().render(ReportFormat::Json));
}

#[test]
fn snapshot_training_markdown() {
    insta::assert_snapshot!(
        "training_zero3_markdown",
        training().render(ReportFormat::Markdown)
    );
}

#[test]
fn snapshot_training_json() {
    insta::assert_snapshot!("training_zero3_json", training().render(ReportFormat::Json));
}

#[test]
fn snapshot_hostile_markdown() {
    insta::assert_snapshot!(
        "hostile_vllm_markdown",
        hostile().render(ReportFormat::Markdown)
    );
}

// ---------------------------------------------------------------------------------------------
// Report content
// ---------------------------------------------------------------------------------------------

#[test]
fn fixtures_cover_every_verdict() {
    let inf = inference();
    let verdicts: Vec<Verdict> = inf.fits.iter().map(|f| f.verdict).collect();
    for v in [
        Verdict::Gpu,
        Verdict::Offload,
        Verdict::Unified,
        Verdict::Cpu,
    ] {
        assert!(verdicts.contains(&v), "{v:?} missing from {verdicts:?}");
    }
    assert_eq!(&*inf.fits[0].name, "This machine");
    let tr = training();
    assert!(tr.fits[0].training.is_none() || tr.fits[0].verdict != Verdict::None);
    assert!(
        tr.fits.iter().any(|f| f.training.is_some()),
        "some machine trains"
    );
}

#[test]
fn markdown_has_every_input_component_and_fit() {
    let o = inference();
    let md = o.render(ReportFormat::Markdown);
    let e = estimate(&o.scenario);
    for c in &e.components {
        assert!(
            md.contains(&headroom::core::format::group_digits(c.bytes.0)),
            "bytes of {}",
            c.name
        );
        assert!(md.contains(&c.name), "{}", c.name);
    }
    for needle in [
        "Llama 3 8B",
        "exact (from the model",
        "GGUF Q4_K_M",
        "q8_0 (8.5 bits)",
        "32,768 tokens per sequence",
        "2 concurrent sequences",
        "Inference",
        "llama.cpp",
        "FlashAttention",
        "KV-cache quantisation",
        "Speed model constants",
        // The speed formula with its constants.
        "llama.cpp CUDA",
        "bytes ÷ min(0.92 × bandwidth, compute units × 14 GB/s)",
        "Launch settings for This machine",
        "llama-server -m",
        DATE,
        VERSION,
    ] {
        assert!(md.contains(needle), "missing {needle:?}");
    }
    let off = o
        .fits
        .iter()
        .find(|f| f.verdict == Verdict::Offload)
        .expect("an offload fit");
    assert!(md.contains(&format!("offload {}/{}", off.gpu_layers, off.total_layers)));
    for f in &o.fits {
        assert!(md.contains(&*f.name), "{}", f.name);
    }
}

#[test]
fn training_report_shows_step_time_cost_and_zero() {
    let o = training();
    let md = o.render(ReportFormat::Markdown);
    for needle in [
        "Step time",
        "Run cost",
        "DeepSpeed ZeRO stage | 3",
        "ZeRO-Offload (optimizer and parameters)",
        "gradient checkpointing",
        "ds_config.json",
        "\"stage\": 3",
        "accelerate launch --use_deepspeed",
    ] {
        assert!(md.contains(needle), "missing {needle:?}");
    }
    assert!(
        !md.contains("Decode tok/s"),
        "inference columns in a training report"
    );
}

#[test]
fn json_report_reuses_the_cli_contract() {
    let o = training();
    let text = o.render(ReportFormat::Json);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let e = estimate(&o.scenario);
    // The `estimate --json` shape.
    assert_eq!(v["params"], e.params.total);
    assert_eq!(v["memory"]["total"], e.total().0);
    assert_eq!(v["per_gpu"]["total"], e.per_gpu_total().0);
    assert_eq!(
        v["components"].as_array().unwrap().len(),
        e.components.len()
    );
    // `fit --json` per machine.
    let fits = v["fits"].as_array().unwrap();
    assert_eq!(fits.len(), o.fits.len());
    assert_eq!(fits[0], headroom::io::json::fit_json(&o.fits[0]));
    assert!(
        fits.iter()
            .any(|f| f["training"]["step_seconds"].as_f64().unwrap_or(0.0) > 0.0)
    );
    // The rest.
    assert_eq!(v["scenario"]["zero"], 3);
    // Choices under their CLI names (what `--mode`, `--weights`, … take), never Rust's.
    assert_eq!(v["scenario"]["mode"], "full");
    assert_eq!(v["scenario"]["weights"], o.scenario.weights.cli_name());
    assert_eq!(v["scenario"]["kv"], o.scenario.kv.cli_name());
    assert_eq!(v["scenario"]["offload"], o.scenario.offload.cli_name());
    assert_eq!(v["scenario"]["context"], o.scenario.context);
    assert_eq!(v["generated"], DATE);
    assert_eq!(v["version"], VERSION);
    assert_eq!(v["settings"]["speed"]["training_mfu"], 0.35);
    // "This machine" cannot train this: the settings are for the first machine that can.
    assert_eq!(v["launch"]["machine"], "cloud-8xh100");
    assert_eq!(v["launch"]["settings"][0]["runtime"], "deepspeed");
}

#[test]
fn suggested_file_names_are_safe() {
    let o = hostile();
    let e = estimate(&o.scenario);
    let input = ReportInput {
        scenario: &o.scenario,
        estimate: &e,
        fits: &o.fits,
        catalog: &o.catalog,
        settings: &o.settings,
        generated: DATE.into(),
        version: VERSION,
    };
    for f in ReportFormat::ALL {
        let name = input.suggested_file_name(f);
        assert!(
            name.starts_with("headroom-") && name.ends_with(f.extension()),
            "{name}"
        );
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{name}"
        );
        assert_eq!(ReportFormat::from_path(Path::new(&name)).unwrap(), f);
    }
}

#[test]
fn formats_follow_the_extension() {
    let ok = [
        ("r.md", ReportFormat::Markdown),
        ("r.markdown", ReportFormat::Markdown),
        ("R.HTML", ReportFormat::Html),
        ("x/r.htm", ReportFormat::Html),
        ("r.json", ReportFormat::Json),
    ];
    for (p, f) in ok {
        assert_eq!(ReportFormat::from_path(Path::new(p)).unwrap(), f, "{p}");
    }
    for p in ["report.txt", "report", "report.md.bak"] {
        let e = ReportFormat::from_path(Path::new(p)).unwrap_err();
        assert!(matches!(e, ExportError::UnknownFormat { .. }));
        let msg = e.to_string();
        assert!(
            msg.contains(p) && msg.contains(".md, .html or .json"),
            "{msg}"
        );
    }
    assert_eq!(
        ReportFormat::from_name("MD").unwrap(),
        ReportFormat::Markdown
    );
    assert!(
        ReportFormat::from_name("pdf")
            .unwrap_err()
            .to_string()
            .contains("pdf")
    );
}

// ---------------------------------------------------------------------------------------------
// HTML
// ---------------------------------------------------------------------------------------------

/// Elements without a closing tag.
const VOID: [&str; 6] = ["meta", "br", "hr", "img", "input", "link"];

/// Checks that tags are balanced and properly nested (a well-formedness check good enough for
/// generated markup: comments, doctype, void and self-closing elements are handled).
fn check_balanced(doc: &str) -> Result<usize, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut count = 0;
    let mut rest = doc;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix("!--") {
            let end = r.find("-->").ok_or("unclosed comment")?;
            rest = &r[end + 3..];
            continue;
        }
        let end = rest.find('>').ok_or("unclosed tag")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim().to_ascii_lowercase();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            return Err(format!("bad tag <{tag}>"));
        }
        count += 1;
        if tag.ends_with('/') || VOID.contains(&name.as_str()) {
            continue;
        }
        // Raw-text elements: skip to their end tag.
        if name == "style" || name == "script" {
            let close = format!("</{name}>");
            let j = rest.find(&close).ok_or("unclosed raw-text element")?;
            rest = &rest[j + close.len()..];
            continue;
        }
        stack.push(name);
    }
    if stack.is_empty() {
        Ok(count)
    } else {
        Err(format!("unclosed: {stack:?}"))
    }
}

fn svg_of(doc: &str) -> &str {
    let a = doc.find("<svg").expect("an inline svg");
    let b = doc[a..].find("</svg>").expect("svg end") + a + "</svg>".len();
    &doc[a..b]
}

#[test]
fn html_is_self_contained_and_balanced() {
    for o in [inference(), training(), hostile()] {
        let doc = o.render(ReportFormat::Html);
        assert!(doc.starts_with("<!DOCTYPE html>"));
        let lower = doc.to_ascii_lowercase();
        // No external resources and no script.
        for bad in [
            "src=", "href=", "@import", "url(", "<script", "<link", "<iframe", "<img",
        ] {
            assert!(!lower.contains(bad), "found {bad:?}");
        }
        for (i, _) in lower.match_indices("http") {
            // The only URLs are text (escaped) and the SVG namespace, never a resource.
            let before = &lower[i.saturating_sub(7)..i];
            assert!(
                !before.ends_with("src=\"") && !before.ends_with("href=\""),
                "resource URL at {i}"
            );
        }
        assert!(lower.contains("content-security-policy"));
        let n = check_balanced(&doc).unwrap_or_else(|e| panic!("unbalanced HTML: {e}"));
        assert!(n > 50, "{n} tags");
        let svg = svg_of(&doc);
        check_balanced(svg).unwrap_or_else(|e| panic!("unbalanced SVG: {e}"));
        assert!(
            svg.contains("<rect") && svg.contains("stroke-dasharray"),
            "bars and capacity lines"
        );
    }
}

#[test]
fn html_escapes_untrusted_text() {
    let doc = hostile().render(ReportFormat::Html);
    assert!(!doc.contains("<script>"), "raw script tag");
    assert!(
        !doc.contains("<b>bold</b>"),
        "raw markup from the file format"
    );
    assert!(doc.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(doc.contains("&lt;b&gt;bold&lt;/b&gt;"));
    let md = hostile().render(ReportFormat::Markdown);
    assert!(
        !md.contains("<script>") && !md.replace("\\]", "").contains("](http"),
        "markdown injection"
    );
    assert!(md.contains(r"\<script\>"));
}

#[test]
fn html_chart_has_a_bar_per_memory_and_a_line_per_machine() {
    let o = training();
    let doc = o.render(ReportFormat::Html);
    let svg = svg_of(&doc);
    // ZeRO-3 with offload: a GPU bar and a host bar.
    assert!(svg.contains("Each GPU (× 8)") && svg.contains("Host RAM"));
    for f in &o.fits {
        assert!(
            svg.contains(&format!(
                "{}: {} usable",
                f.name,
                f.ram_capacity.display_gib()
            )),
            "{}",
            f.name
        );
    }
    for label in [
        "Weights",
        "Gradients",
        "Optimizer states",
        "Master weights",
        "Activations",
        "Overhead",
    ] {
        assert!(svg.contains(label), "legend {label}");
    }
}

/// Renders `html` with headless Chromium into `png`.
fn chromium_screenshot(chromium: &Path, html: &Path, png: &Path, profile: &Path) {
    let mut cmd = if Path::new("/usr/bin/timeout").exists() {
        let mut c = std::process::Command::new("/usr/bin/timeout");
        c.arg("120").arg(chromium);
        c
    } else {
        std::process::Command::new(chromium)
    };
    let out = cmd
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1280,2000")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = fs::read(png).expect("screenshot written");
    assert!(bytes.len() > 10_000, "PNG is {} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}

/// Renders the HTML reports in headless Chromium (Debian package `chromium`) and checks that it
/// exits cleanly and writes a non-empty PNG. It needs Chromium, so it is ignored in a plain
/// `cargo test` (reported as ignored, never as a pass) and `.ci/run` installs Chromium and runs it
/// with `--ignored`; without Chromium it fails. With `HEADROOM_EXPORT_SHOTS=DIR` the HTML files
/// and screenshots are kept in DIR to look at.
#[test]
#[ignore = "needs /usr/bin/chromium: .ci/run installs it and runs this with --ignored"]
fn html_renders_in_headless_chromium() {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        chromium.exists(),
        "/usr/bin/chromium is not installed (apt-get install chromium)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("HEADROOM_EXPORT_SHOTS").map(std::path::PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    fs::create_dir_all(&dir).unwrap();
    for (name, o) in [
        ("inference", inference()),
        ("training", training()),
        ("hostile", hostile()),
    ] {
        let html = dir.join(format!("report-{name}.html"));
        let png = dir.join(format!("report-{name}.png"));
        fs::write(&html, o.render(ReportFormat::Html)).unwrap();
        chromium_screenshot(
            chromium,
            &html,
            &png,
            &tmp.path().join(format!("profile-{name}")),
        );
        if keep.is_none() {
            break; // One render is enough for the check; all three when asked to keep them.
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Launch settings
// ---------------------------------------------------------------------------------------------

/// llama-server flags used by headroom, from llama.cpp tools/server/README.md ("Common params":
/// `-m, --model FNAME`; `-c, --ctx-size N`; `-ngl, --gpu-layers, --n-gpu-layers N` ("an exact
/// number, 'auto', or 'all'"); `-fa, --flash-attn [on|off|auto]`; `-ctk, --cache-type-k TYPE`;
/// `-ctv, --cache-type-v TYPE`; `-b, --batch-size N`; `-ub, --ubatch-size N`; "Server-specific
/// params": `-np, --parallel N`).
/// <https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md>
const LLAMA_FLAGS: [&str; 9] = [
    "-m", "-c", "-ngl", "-fa", "-ctk", "-ctv", "-b", "-ub", "-np",
];
/// `-ctk`/`-ctv` "allowed values: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1" (same README).
const LLAMA_CACHE_TYPES: [&str; 9] = [
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1",
];

/// vLLM engine arguments, <https://docs.vllm.ai/en/latest/configuration/engine_args.html>
/// (vllm/engine/arg_utils.py; vllm/config/cache.py, offload.py, model.py, scheduler.py).
const VLLM_FLAGS: [&str; 9] = [
    "--tensor-parallel-size",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    "--cpu-offload-gb",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--dtype",
    "--quantization",
];
/// `CacheDType` in vllm/config/cache.py (the values headroom may emit).
const VLLM_KV_DTYPES: [&str; 4] = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"];

/// `accelerate launch` arguments, <https://huggingface.co/docs/accelerate/package_reference/cli>
/// (huggingface/accelerate docs/source/package_reference/cli.md: `--use_deepspeed`,
/// `--deepspeed_config_file`, `--num_processes`).
const ACCELERATE_LAUNCH_FLAGS: [&str; 3] = [
    "--use_deepspeed",
    "--deepspeed_config_file",
    "--num_processes",
];

/// DeepSpeed configuration keys, <https://www.deepspeed.ai/docs/config-json/>
/// (deepspeedai/DeepSpeed docs/_pages/config-json.md: batch size, FP16/BF16, ZeRO sections).
const DEEPSPEED_KEYS: [&str; 13] = [
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "bf16",
    "fp16",
    "enabled",
    "zero_optimization",
    "stage",
    "offload_optimizer",
    "offload_param",
    "device",
    "pin_memory",
];
const DEEPSPEED_ZERO_EXTRA: [&str; 2] = ["overlap_comm", "contiguous_gradients"];

/// Shell words of one line: whitespace-separated, with single-quoted spans kept whole (the way
/// the launch settings quote untrusted paths). A quoted word is never a flag.
fn shell_words(line: &str) -> Vec<(bool, String)> {
    let mut words = Vec::new();
    let (mut cur, mut quoted, mut in_q, mut escaped) = (String::new(), false, false, false);
    for c in line.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' if !in_q => {
                escaped = true;
                quoted = true;
            }
            '\'' => {
                in_q = !in_q;
                quoted = true;
            }
            c if c.is_whitespace() && !in_q => {
                if !cur.is_empty() || quoted {
                    words.push((quoted, std::mem::take(&mut cur)));
                }
                quoted = false;
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() || quoted {
        words.push((quoted, cur));
    }
    words
}

/// The flags of a command (every unquoted word that starts with '-' and is not a number), per line.
fn flags(text: &str) -> Vec<(usize, String)> {
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (quoted, tok) in shell_words(line) {
            if !quoted
                && tok.starts_with('-')
                && tok.len() > 1
                && !tok[1..].starts_with(|c: char| c.is_ascii_digit())
            {
                v.push((i, tok));
            }
        }
    }
    v
}

/// The value after `flag` in a command.
fn value_of(text: &str, flag: &str) -> Option<String> {
    let toks: Vec<&str> = text.split_whitespace().collect();
    toks.iter()
        .position(|t| *t == flag)
        .and_then(|i| toks.get(i + 1))
        .map(|s| s.to_string())
}

fn setting(v: &[LaunchSetting], l: Launcher) -> &LaunchSetting {
    v.iter()
        .find(|s| s.runtime == l)
        .unwrap_or_else(|| panic!("no {l:?} setting"))
}

/// Every inference scenario of the tests on every machine, with its settings.
fn inference_cases() -> Vec<(Scenario, FitResult, Vec<LaunchSetting>)> {
    let mut out = Vec::new();
    let all = [
        "laptop-4060",
        "desktop-4090",
        "mac-studio-m2-max-64",
        "cpu-box",
        "cloud-2x4090",
        "cloud-8xh100",
    ];
    let mut scenarios = vec![
        inference_scenario(),
        hostile_scenario(),
        Scenario::default(),
    ];
    scenarios.push(Scenario {
        kv: KvTypes {
            k: KvPrecision::Fp16,
            v: KvPrecision::Q4_0,
        },
        flash_attention: false,
        ..Scenario::default()
    });
    scenarios.push(Scenario {
        weights: WeightPrecision::Nf4DoubleQuant,
        kv: KvTypes::same(KvPrecision::Fp32),
        runtime: Runtime::Transformers,
        ..Scenario::default()
    });
    scenarios.push(Scenario {
        model: ModelSpec::generic(70_000_000_000),
        weights: WeightPrecision::Awq4,
        runtime: Runtime::Vllm,
        ..Scenario::default()
    });
    for s in scenarios {
        for f in fits(&s, &all) {
            let l = launch_settings(&s, &f);
            out.push((s.clone(), f, l));
        }
    }
    out
}

#[test]
fn inference_gets_llama_cpp_vllm_and_accelerate() {
    for (s, f, l) in inference_cases() {
        let kinds: Vec<Launcher> = l.iter().map(|x| x.runtime).collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        for k in [Launcher::LlamaCpp, Launcher::Vllm, Launcher::Accelerate] {
            assert!(kinds.contains(&k));
        }
        let first = match s.runtime {
            Runtime::Vllm => Launcher::Vllm,
            Runtime::Transformers => Launcher::Accelerate,
            _ => Launcher::LlamaCpp,
        };
        assert_eq!(
            kinds[0], first,
            "the scenario's runtime comes first on {}",
            f.name
        );
        for x in &l {
            assert!(!x.title.is_empty() && !x.text.is_empty() && !x.note.is_empty());
        }
    }
}

#[test]
fn llama_cpp_lines_use_only_documented_flags() {
    for (s, f, l) in inference_cases() {
        let ls = setting(&l, Launcher::LlamaCpp);
        assert!(ls.text.starts_with("llama-server "), "{}", ls.text);
        for (line, flag) in flags(&ls.text) {
            assert!(
                LLAMA_FLAGS.contains(&flag.as_str()),
                "line {line}: {flag} not in the llama-server README ({})",
                ls.text
            );
        }
        for t in [value_of(&ls.text, "-ctk"), value_of(&ls.text, "-ctv")] {
            let t = t.expect("cache types always given");
            assert!(LLAMA_CACHE_TYPES.contains(&t.as_str()), "cache type {t}");
        }
        let fa = value_of(&ls.text, "-fa").unwrap();
        assert!(fa == "on" || fa == "off");
        if s.kv.v == KvPrecision::Q4_0 {
            assert_eq!(fa, "on", "a quantised V cache needs FlashAttention");
        }
        // -ngl follows the fit.
        let ngl = value_of(&ls.text, "-ngl").unwrap();
        match f.verdict {
            Verdict::Gpu | Verdict::Unified | Verdict::None => assert_eq!(ngl, "999"),
            Verdict::Offload | Verdict::Disk => assert_eq!(ngl, f.gpu_layers.to_string()),
            Verdict::Cpu => assert_eq!(ngl, "0"),
        }
        // -c holds every slot's context.
        let sc = s.clamped();
        assert_eq!(
            value_of(&ls.text, "-c").unwrap(),
            (sc.context * sc.batch).to_string()
        );
        if sc.batch > 1 {
            assert_eq!(value_of(&ls.text, "-np").unwrap(), sc.batch.to_string());
        }
        let ub: u64 = value_of(&ls.text, "-ub").unwrap().parse().unwrap();
        let b: u64 = value_of(&ls.text, "-b").unwrap().parse().unwrap();
        assert!(b >= ub && ub == sc.ubatch);
    }
}

#[test]
fn vllm_lines_use_only_documented_flags() {
    for (s, f, l) in inference_cases() {
        let v = setting(&l, Launcher::Vllm);
        assert!(v.text.starts_with("vllm serve "), "{}", v.text);
        for (line, flag) in flags(&v.text) {
            assert!(
                VLLM_FLAGS.contains(&flag.as_str()),
                "line {line}: {flag} not a vLLM engine arg ({})",
                v.text
            );
        }
        if let Some(kv) = value_of(&v.text, "--kv-cache-dtype") {
            assert!(VLLM_KV_DTYPES.contains(&kv.as_str()), "{kv}");
        }
        if f.gpus > 0 && f.verdict != Verdict::Cpu {
            assert_eq!(
                value_of(&v.text, "--tensor-parallel-size").unwrap(),
                f.gpus.to_string()
            );
            assert_eq!(
                value_of(&v.text, "--max-model-len").unwrap(),
                s.context.to_string()
            );
            let util: f64 = value_of(&v.text, "--gpu-memory-utilization")
                .unwrap()
                .parse()
                .unwrap();
            assert!((util - s.gpu_memory_utilization).abs() < 0.006);
        }
        if f.verdict == Verdict::Offload {
            let gb: u64 = value_of(&v.text, "--cpu-offload-gb")
                .expect("offload when layers spill")
                .parse()
                .unwrap();
            assert!(gb >= 1);
        }
        if f.verdict == Verdict::Gpu && s.runtime == Runtime::Vllm {
            assert!(
                value_of(&v.text, "--cpu-offload-gb").is_none(),
                "no offload when it fits: {}",
                v.text
            );
        }
    }
}

#[test]
fn accelerate_snippet_caps_memory_per_device() {
    for (_s, f, l) in inference_cases() {
        let a = setting(&l, Launcher::Accelerate);
        for needle in [
            "from_pretrained(",
            "device_map=\"auto\"",
            "max_memory={",
            "\"cpu\": \"",
            "offload_folder=\"offload\"",
        ] {
            assert!(a.text.contains(needle), "{needle} in {}", a.text);
        }
        if f.gpus > 0 && f.verdict != Verdict::Cpu {
            assert!(a.text.contains("0: \""), "GPU 0 gets a cap: {}", a.text);
        }
    }
    let tr = Scenario {
        weights: WeightPrecision::Nf4DoubleQuant,
        ..Scenario::default()
    };
    let f = &fits(&tr, &[])[0];
    let a = launch::accelerate(&tr, f);
    assert!(
        a.text.contains("BitsAndBytesConfig(load_in_4bit=True")
            && a.text.contains("bnb_4bit_use_double_quant=True")
    );
}

#[test]
fn untrusted_paths_are_quoted() {
    let s = hostile_scenario();
    let f = &fits(&s, &[])[0];
    let v = launch::vllm(&s, f);
    assert!(
        v.text
            .starts_with(r"vllm serve '/models/it'\''s $(rm -rf ~) `x`/model'"),
        "{}",
        v.text
    );
    let a = launch::accelerate(&s, f);
    assert!(
        a.text.contains(r#""/models/it's $(rm -rf ~) `x`/model""#),
        "{}",
        a.text
    );
}

fn json_keys(v: &serde_json::Value, out: &mut Vec<String>) {
    if let Some(m) = v.as_object() {
        for (k, x) in m {
            out.push(k.clone());
            json_keys(x, out);
        }
    }
}

#[test]
fn training_gets_a_deepspeed_config_and_accelerate_launch() {
    let scenarios = [
        training_scenario(),
        Scenario {
            mode: Mode::Lora,
            zero: 2,
            offload: Offload::Optimizer,
            gpus: 2,
            ..Scenario::default()
        },
        Scenario {
            mode: Mode::Qlora,
            weights: WeightPrecision::Nf4,
            ..Scenario::default()
        },
        Scenario {
            mode: Mode::Full,
            weights: WeightPrecision::Fp16,
            zero: 0,
            offload: Offload::Optimizer,
            ..Scenario::default()
        },
        Scenario {
            mode: Mode::Full,
            zero: 1,
            offload: Offload::OptimizerParams,
            ..Scenario::default()
        },
    ];
    for s in scenarios {
        for f in fits(&s, &["cloud-8xh100", "desktop-4090", "cpu-box"]) {
            let l = launch_settings(&s, &f);
            let kinds: Vec<Launcher> = l.iter().map(|x| x.runtime).collect();
            assert_eq!(kinds, vec![Launcher::DeepSpeed, Launcher::AccelerateLaunch]);
            let ds = setting(&l, Launcher::DeepSpeed);
            let v: serde_json::Value =
                serde_json::from_str(&ds.text).expect("DeepSpeed config is JSON");
            let mut keys = Vec::new();
            json_keys(&v, &mut keys);
            for k in keys {
                assert!(
                    DEEPSPEED_KEYS.contains(&k.as_str())
                        || DEEPSPEED_ZERO_EXTRA.contains(&k.as_str()),
                    "{k} is not a documented DeepSpeed key"
                );
            }
            let stage = v["zero_optimization"]["stage"].as_u64().unwrap();
            assert!(stage <= 3);
            assert!(stage >= u64::from(s.zero.min(3)));
            if s.offload != Offload::None {
                assert_eq!(
                    v["zero_optimization"]["offload_optimizer"],
                    serde_json::json!({"device": "cpu", "pin_memory": true})
                );
                assert!(stage >= 1, "ZeRO-Offload needs stage ≥ 1");
            }
            let has_param = !v["zero_optimization"]["offload_param"].is_null();
            assert_eq!(
                has_param,
                s.offload == Offload::OptimizerParams && stage == 3
            );
            assert_eq!(v["train_micro_batch_size_per_gpu"], s.batch);
            assert_eq!(v["train_batch_size"], s.batch * f.gpus.max(1));
            let bf16 = v["bf16"]["enabled"] == true;
            let fp16 = v["fp16"]["enabled"] == true;
            assert!(!(bf16 && fp16));
            assert_eq!(
                fp16,
                s.weights == WeightPrecision::Fp16 && s.mode != Mode::Qlora
            );
            let al = setting(&l, Launcher::AccelerateLaunch);
            assert!(al.text.starts_with("accelerate launch "));
            for (line, flag) in flags(&al.text) {
                assert!(
                    ACCELERATE_LAUNCH_FLAGS.contains(&flag.as_str()),
                    "line {line}: {flag}"
                );
            }
            assert_eq!(
                value_of(&al.text, "--num_processes").unwrap(),
                f.gpus.max(1).to_string()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario files (RON)
// ---------------------------------------------------------------------------------------------

#[test]
fn scenarios_round_trip_through_ron() {
    let mut moe = ModelSpec::generic(30_000_000_000);
    moe.moe = Some(headroom::core::model::MoeSpec {
        experts: 64,
        active_experts: 8,
        expert_ffn: 768,
        shared_experts: 1,
        ..Default::default()
    });
    moe.mla = Some(headroom::core::model::MlaSpec {
        kv_lora_rank: 512,
        qk_rope_head_dim: 64,
        qk_nope_head_dim: 128,
        v_head_dim: 128,
        q_lora_rank: 1536,
        indexer: None,
    });
    moe.sliding = Some(headroom::core::model::SlidingWindow {
        window: 4096,
        local_layers: 10,
        ..Default::default()
    });
    let cases = [
        Scenario::default(),
        inference_scenario(),
        training_scenario(),
        hostile_scenario(),
        Scenario {
            model: moe,
            model_id: None,
            overhead_override: Some(Bytes::mib(700)),
            gpu_memory_utilization: 0.85,
            gpus: 0,
            ..Scenario::default()
        },
        Scenario {
            mode: Mode::Qlora,
            lora_rank: 64,
            pure_bf16: true,
            optimizer: headroom::core::scenario::Optimizer::AdamW8bit,
            ..Scenario::default()
        },
    ];
    for s in cases {
        let text = save_scenario(&s);
        let back = load_scenario("s.ron", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, s, "{text}");
        // Saving again gives the same text.
        assert_eq!(save_scenario(&back), text);
    }
}

#[test]
fn partial_scenario_files_take_defaults() {
    let s = load_scenario(
        "short.ron",
        "// mine\n(context: 32768, mode: Lora, weights: Q4KM)",
    )
    .unwrap();
    assert_eq!(s.context, 32768);
    assert_eq!(s.mode, Mode::Lora);
    assert_eq!(s.weights, WeightPrecision::Q4KM);
    assert_eq!(s.batch, Scenario::default().batch);
    assert_eq!(s.model, Scenario::default().model);
}

#[test]
fn a_hand_written_scenario_file_loads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/export/zero3-offload.ron"
    );
    let text = fs::read_to_string(path).unwrap();
    let s = load_scenario("zero3-offload.ron", &text).unwrap();
    // The file spells out the training fixture; what it leaves out are defaults.
    assert_eq!(s.mode, Mode::Full);
    assert_eq!(
        (s.gpus, s.zero, s.offload, s.batch),
        (8, 3, Offload::OptimizerParams, 4)
    );
    assert_eq!(s.model.param_count().total, 8_030_261_248);
    assert_eq!(estimate(&s), estimate(&training_scenario()));
}

#[test]
fn scenarios_write_and_read_as_files() {
    use headroom::io::export::{read_scenario, write_scenario};
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("mine.ron");
    write_scenario(&p, &training_scenario()).unwrap();
    assert_eq!(read_scenario(&p).unwrap(), training_scenario());
    let missing = d.path().join("nope.ron");
    let e = read_scenario(&missing).unwrap_err().to_string();
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("no such file"),
        "{e}"
    );
    fs::write(&p, "(batch: \"x\")").unwrap();
    let e = read_scenario(&p).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:1:", p.display())), "{e}");
}

#[test]
fn scenario_errors_say_file_line_and_column() {
    let cases = [
        (
            "(\n    context: 8192,\n    mode: Sideways,\n)",
            "bad.ron:3:",
        ),
        ("(\n  batch: -4,\n)", "bad.ron:2:"),
        (
            "(\n    context: 8192,\n    contxt: 32768,\n)",
            "bad.ron:3:5:",
        ),
        ("(context: 8192", "bad.ron:1:"),
        ("", "bad.ron:1:"),
    ];
    for (text, prefix) in cases {
        let e = load_scenario("bad.ron", text).unwrap_err();
        assert!(matches!(e, ExportError::Scenario { .. }));
        let msg = e.to_string();
        assert!(msg.starts_with(prefix), "{msg:?} for {text:?}");
        let parts: Vec<&str> = msg.splitn(4, ':').collect();
        assert!(
            parts[1].parse::<usize>().is_ok() && parts[2].parse::<usize>().is_ok(),
            "{msg}"
        );
        assert!(parts[3].trim().len() > 3, "a message: {msg}");
    }
}

// ---------------------------------------------------------------------------------------------
// Atomic writes and the CLI helper
// ---------------------------------------------------------------------------------------------

fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn write_atomic_writes_and_replaces() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("report.html");
    write_atomic(&p, b"one").unwrap();
    write_atomic(&p, b"two").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"two");
    assert!(temp_files(d.path()).is_empty());
}

#[test]
fn write_atomic_into_a_missing_folder_names_the_path() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("no-such-dir").join("report.md");
    let e = write_atomic(&p, b"x").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&p.display().to_string()) && msg.contains("does not exist"),
        "{msg}"
    );
    assert!(!p.exists());
}

#[test]
fn write_atomic_refuses_folders_and_files_as_folders() {
    let d = tempfile::tempdir().unwrap();
    let e = write_atomic(d.path(), b"x").unwrap_err().to_string();
    assert!(e.contains("it is a folder"), "{e}");
    let file = d.path().join("plain");
    fs::write(&file, b"keep").unwrap();
    let e = write_atomic(&file.join("report.md"), b"x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a folder"), "{e}");
    assert_eq!(fs::read(&file).unwrap(), b"keep");
}

#[cfg(unix)]
#[test]
fn write_atomic_into_a_read_only_folder_keeps_the_old_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = tempfile::tempdir().unwrap();
    let ro = d.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let p = ro.join("report.md");
    fs::write(&p, b"old report").unwrap();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores folder permissions: then the write succeeds, which is right for root.
    let probe = ro.join(".probe");
    let root = fs::write(&probe, b"").is_ok();
    let _ = fs::remove_file(&probe);
    let r = write_atomic(&p, b"new report");
    if root {
        eprintln!("running as root: folder permissions do not apply, checking the write instead");
        r.unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new report");
    } else {
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains(&p.display().to_string()) && msg.contains("permission denied"),
            "{msg}"
        );
        assert_eq!(
            fs::read(&p).unwrap(),
            b"old report",
            "the old file is untouched"
        );
    }
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(temp_files(&ro).is_empty(), "{:?}", temp_files(&ro));
}

#[test]
fn cli_report_prints_or_writes() {
    use headroom::cli::report::{format_for, run};
    let o = inference();
    let e = estimate(&o.scenario);
    let input = ReportInput {
        scenario: &o.scenario,
        estimate: &e,
        fits: &o.fits,
        catalog: &o.catalog,
        settings: &o.settings,
        generated: DATE.into(),
        version: VERSION,
    };
    let text = run(&input, ReportFormat::Markdown, "-").unwrap();
    assert!(text.starts_with("# Sizing report"));
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("r.json");
    let out = p.display().to_string();
    let msg = run(&input, format_for(None, &out).unwrap(), &out).unwrap();
    assert!(
        msg.contains("JSON") && msg.contains(&out) && !msg.contains('\n'),
        "{msg}"
    );
    let v: serde_json::Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
    assert_eq!(v["version"], VERSION);
    let bad = d.path().join("missing").join("r.md").display().to_string();
    let err = run(&input, ReportFormat::Markdown, &bad).unwrap_err();
    assert!(err.contains(&bad), "{err}");
    // A --format that contradicts the extension is refused; a name without one takes any.
    let clash = format_for(Some("html"), "x.md").unwrap_err();
    assert!(
        clash.contains("x.md") && clash.contains("--format html"),
        "{clash}"
    );
    assert_eq!(
        format_for(Some("html"), "report.txt").unwrap(),
        ReportFormat::Html
    );
    assert_eq!(
        format_for(Some("json"), "/dev/stdout").unwrap(),
        ReportFormat::Json
    );
    assert_eq!(format_for(None, "-").unwrap(), ReportFormat::Markdown);
    assert!(format_for(None, "x.pdf").unwrap_err().contains("x.pdf"));
}

#[test]
fn builtin_catalog_reports_render() {
    let cat = headroom::io::catalog::builtin();
    let s = Scenario::default();
    let machines: Vec<&Machine> = cat.machines.iter().take(6).collect();
    let fits = fit_all(&s, machines, cat, &FitSettings::default());
    let e = estimate(&s);
    let st = FitSettings::default();
    let input = ReportInput {
        scenario: &s,
        estimate: &e,
        fits: &fits,
        catalog: cat,
        settings: &st,
        generated: DATE.into(),
        version: VERSION,
    };
    for f in ReportFormat::ALL {
        let text = render(&input, f);
        assert!(text.len() > 2000, "{f:?}");
    }
    check_balanced(&render(&input, ReportFormat::Html)).unwrap();
}

/// The report opens with what to buy or rent: the picks per kind over the report's catalog,
/// then this machine (the catalog's `local` entry) with its upgrade path, before the scenario.
#[test]
fn snapshot_recommendations_come_first() {
    let mut o = inference();
    let mut me = this_machine();
    me.id = "local".into();
    o.catalog.machines.push(me);
    let md = o.render(ReportFormat::Markdown);
    let rec = md
        .find("## Recommendations")
        .expect("a recommendations section");
    let scen = md.find("## Scenario").unwrap();
    assert!(rec < scen && md[..rec].matches("## ").count() == 0, "first");
    assert!(md[rec..scen].contains("**This machine**: runs it"), "{md}");
    insta::assert_snapshot!("recommendations_markdown", &md[..scen]);
    let html = o.render(ReportFormat::Html);
    let (h_rec, h_mem) = (
        html.find("<h2>Recommendations</h2>").unwrap(),
        html.find("<h2>Memory</h2>").unwrap(),
    );
    assert!(h_rec < h_mem && html[..h_rec].matches("<h2>").count() == 0);
    let v: serde_json::Value = serde_json::from_str(&o.render(ReportFormat::Json)).unwrap();
    assert!(v["recommendations"]["kinds"].as_array().unwrap().len() >= 3);
    assert_eq!(v["recommendations"]["this_machine"]["machine"], "local");
}
