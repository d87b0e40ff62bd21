//! Image generation (`--mode image`, `core::diffusion`) against published measurements: the rows
//! of docs/measurements/image_generation_speed.md that state their pipeline, hardware, precision,
//! resolution and steps (or a per-step rate), each predicted on its accelerator at the placement
//! the source ran. The table is printed (`cargo test --test diffusion -- --nocapture`) and
//! copied into docs/diffusion.md.

use headroom::core::catalog::{Machine, MachineKind};
use headroom::core::diffusion::presets::find;
use headroom::core::diffusion::{
    ImageInputs, ImageRuntime, ImageVerdict, PipelineOffload, estimate, fit_machine,
    seconds_per_image,
};
use headroom::core::fit::FitSettings;
use headroom::core::precision::WeightPrecision as W;
use headroom::io::catalog::builtin;

/// One published row: what ran, and the published seconds (per call, or per step).
struct Row {
    n: u32,
    pipe: &'static str,
    weights: W,
    /// Accelerator id, or "" for the CPU of `machine`.
    acc: &'static str,
    machine: &'static str,
    size: (u32, u32),
    steps: u32,
    images: u32,
    place: PipelineOffload,
    sdpa: bool,
    published_s: f64,
    per_step: bool,
    how: &'static str,
    /// `--image-runtime` (`None`: from the weights), TF32 matmuls, FP8 matmuls.
    runtime: Option<ImageRuntime>,
    tf32: bool,
    fp8_matmul: bool,
}

/// A row at batch 1, on the GPU, with SDPA (the common case; the others override fields).
#[allow(clippy::too_many_arguments)]
const fn row(
    n: u32,
    pipe: &'static str,
    weights: W,
    acc: &'static str,
    size: u32,
    steps: u32,
    published_s: f64,
    how: &'static str,
) -> Row {
    Row {
        n,
        pipe,
        weights,
        acc,
        machine: "",
        size: (size, size),
        steps,
        images: 1,
        place: PipelineOffload::None,
        sdpa: true,
        published_s,
        per_step: false,
        how,
        runtime: None,
        tf32: false,
        fp8_matmul: false,
    }
}

/// The rows with a complete setup. Left out: 17 (only T5 in 8-bit: one precision here covers
/// the denoiser too), 26–27 (NVIDIA L20, not in the catalog), 34–38 (times include loading the
/// model), 39 (a 16 GB Mac swapping), 45 (CPU not stated), 47 (a lower bound, "> 400 s"), 46
/// and 48 (RTX 2060 Super and GTX 1070: not in the catalog). Where the source says "pipeline
/// default", the pipeline's own defaults are used (SDXL 50 steps at 1024², SD3 28 at 1024²).
fn rows() -> Vec<Row> {
    use ImageRuntime as R;
    let a100 = "a100-80gb-sxm";
    let a40 = "a100-40gb-sxm";
    let h100 = "h100-sxm";
    let rt = |r: Row, x: R| Row {
        runtime: Some(x),
        ..r
    };
    let step = |r: Row| Row {
        per_step: true,
        ..r
    };
    let no_sdpa = |r: Row| Row { sdpa: false, ..r };
    let images = |r: Row, n: u32| Row { images: n, ..r };
    let fp8mm = |r: Row| Row {
        fp8_matmul: true,
        ..r
    };
    let mut v = vec![
        row(1, "sd-1.5", W::Fp16, a100, 512, 50, 1.591, "Diffusers SDPA"),
        rt(
            row(2, "sd-1.5", W::Fp16, a100, 512, 50, 1.066, "torch.compile"),
            R::Compiled,
        ),
        rt(
            row(3, "sd-1.5", W::Fp16, a100, 512, 50, 0.819, "TensorRT"),
            R::TensorRt,
        ),
        row(4, "sdxl", W::Fp16, a100, 1024, 50, 5.933, "Diffusers SDPA"),
        rt(
            row(
                5,
                "sdxl",
                W::Fp16,
                a100,
                1024,
                50,
                4.605,
                "OneFlow (compiled)",
            ),
            R::Compiled,
        ),
        rt(
            row(6, "sdxl", W::Fp16, a100, 1024, 50, 4.102, "TensorRT"),
            R::TensorRt,
        ),
        Row {
            tf32: true,
            ..no_sdpa(row(
                7,
                "sdxl",
                W::Fp32,
                a100,
                1024,
                30,
                7.36,
                "FP32 (TF32), no SDPA",
            ))
        },
        no_sdpa(row(8, "sdxl", W::Bf16, a100, 1024, 30, 4.63, "no SDPA")),
        row(9, "sdxl", W::Bf16, a100, 1024, 30, 3.31, "SDPA"),
        rt(
            row(
                10,
                "sdxl",
                W::Bf16,
                a100,
                1024,
                30,
                2.54,
                "compile max-autotune",
            ),
            R::Compiled,
        ),
        rt(
            row(
                11,
                "sdxl",
                W::Int8,
                a100,
                1024,
                30,
                2.43,
                "compile + torchao INT8",
            ),
            R::Compiled,
        ),
        images(
            no_sdpa(row(
                12,
                "sdxl",
                W::Fp32,
                a40,
                1024,
                50,
                72.2,
                "FP32, no SDPA, 4 images",
            )),
            4,
        ),
        images(
            row(13, "sdxl", W::Fp16, a40, 1024, 50, 11.4, "SDPA, 4 images"),
            4,
        ),
        images(
            rt(
                row(
                    14,
                    "sdxl",
                    W::Fp16,
                    a40,
                    1024,
                    50,
                    10.3,
                    "compile, 4 images",
                ),
                R::Compiled,
            ),
            4,
        ),
        Row {
            place: PipelineOffload::Sequential,
            ..images(
                row(
                    15,
                    "sdxl",
                    W::Fp16,
                    a40,
                    1024,
                    50,
                    67.0,
                    "sequential offload, 4 images",
                ),
                4,
            )
        },
        row(
            16,
            "sd3-medium",
            W::Fp16,
            a100,
            1024,
            28,
            4.762,
            "Diffusers",
        ),
        rt(
            row(
                18,
                "sd3-medium",
                W::Fp16,
                a100,
                1024,
                20,
                0.585,
                "compile max-autotune",
            ),
            R::Compiled,
        ),
        row(
            19,
            "flux.1-dev",
            W::Bf16,
            h100,
            1024,
            50,
            12.0,
            "Diffusers BF16",
        ),
        row(
            20,
            "flux.1-dev",
            W::Nf4,
            h100,
            1024,
            50,
            12.0,
            "bitsandbytes NF4",
        ),
        row(
            21,
            "flux.1-dev",
            W::Int8,
            h100,
            1024,
            50,
            27.0,
            "bitsandbytes 8-bit",
        ),
        rt(
            row(
                22,
                "flux.1-dev",
                W::Q8_0,
                h100,
                1024,
                50,
                15.0,
                "GGUF Q8_0 (Diffusers)",
            ),
            R::Diffusers,
        ),
        rt(
            row(
                23,
                "flux.1-dev",
                W::Q4_0,
                h100,
                1024,
                50,
                23.0,
                "GGUF Q4_1 (Diffusers; Q4_0 here)",
            ),
            R::Diffusers,
        ),
        row(
            24,
            "flux.1-dev",
            W::Fp8,
            h100,
            1024,
            50,
            13.0,
            "FP8 storage",
        ),
        Row {
            place: PipelineOffload::Model,
            ..row(
                25,
                "flux.1-dev",
                W::Bf16,
                h100,
                1024,
                50,
                20.0,
                "model CPU offload",
            )
        },
        row(
            28,
            "flux.1-schnell",
            W::Fp32,
            h100,
            1024,
            4,
            7.5,
            "FP32 (H100 96GB; SXM here)",
        ),
        step(row(
            29,
            "flux.1-dev",
            W::Fp8,
            "rtx-4090",
            1024,
            1,
            1.0 / 1.7,
            "BFL code, FP8 weight-only",
        )),
        step(fp8mm(row(
            30,
            "flux.1-dev",
            W::Fp8,
            "rtx-4090",
            1024,
            1,
            1.0 / 2.55,
            "FP8 matmul",
        ))),
        rt(
            step(fp8mm(row(
                31,
                "flux.1-dev",
                W::Fp8,
                "rtx-4090",
                1024,
                1,
                1.0 / 3.51,
                "FP8 matmul + compile",
            ))),
            R::Compiled,
        ),
        step(row(
            32,
            "flux.1-dev",
            W::Bf16,
            "rtx-6000-ada",
            1024,
            1,
            1.0 / 1.74,
            "BFL code",
        )),
        step(fp8mm(row(
            33,
            "flux.1-dev",
            W::Fp8,
            h100,
            1024,
            1,
            1.0 / 6.1,
            "FP8 matmul, uncompiled",
        ))),
        rt(
            row(
                40,
                "sd-1.5",
                W::Fp16,
                "apple-m2",
                512,
                50,
                23.0,
                "Core ML (ANE)",
            ),
            R::CoreMl,
        ),
        rt(
            row(
                41,
                "sd-1.5",
                W::Fp16,
                "apple-m1",
                512,
                50,
                35.0,
                "Core ML (ANE)",
            ),
            R::CoreMl,
        ),
        rt(
            row(
                42,
                "sd-1.5",
                W::Fp16,
                "apple-m1-ultra",
                512,
                50,
                9.0,
                "Core ML GPU",
            ),
            R::CoreMl,
        ),
        rt(
            row(
                43,
                "sd-1.5",
                W::Fp16,
                "apple-m1-max",
                512,
                50,
                18.0,
                "Core ML GPU",
            ),
            R::CoreMl,
        ),
    ];
    v.push(Row {
        machine: "macbook-air-m1-16gb",
        size: (512, 768),
        ..rt(
            step(row(
                44,
                "sd-1.5",
                W::Fp16,
                "",
                512,
                1,
                23.0,
                "stable-diffusion.cpp CPU",
            )),
            R::StableDiffusionCpp,
        )
    });
    // Diffusers' PyTorch 2.0 benchmark (docs/source/ko/optimization/torch2.0.md): SD 1.5
    // txt2img at 512², FP16, SDPA, channels-last UNet, denoising it/s at batch 1, 4 and 16
    // images, eager and `torch.compile(mode="reduce-overhead")` (the "torch 2.0" columns).
    let table: [(u32, &str, u32, f64, f64); 15] = [
        (49, a40, 1, 21.66, 44.03),
        (51, a40, 4, 11.6, 14.62),
        (53, a40, 16, 3.04, 3.83),
        (55, "v100-sxm2-16gb", 1, 18.99, 20.95),
        (57, "v100-sxm2-16gb", 4, 5.96, 6.83),
        (59, "v100-sxm2-16gb", 16, 1.66, 1.92),
        (61, "t4", 1, 6.9, 7.3),
        (63, "t4", 4, 1.79, 2.03),
        (65, "rtx-3090", 1, 22.56, 23.84),
        (67, "rtx-3090", 4, 6.46, 7.29),
        (69, "rtx-3090", 16, 1.7, 1.93),
        (71, "rtx-4090", 1, 40.5, 44.65),
        (73, "rtx-4090", 4, 12.62, 15.32),
        (75, "rtx-4090", 16, 3.17, 3.84),
        (77, "t4", 16, 1.0 / 2.34, 0.0),
    ];
    // Diffusers' "Compile and offloading quantized models" guide: FLUX.1-dev with the
    // transformer and T5 in bitsandbytes NF4 on an RTX 4090, at the pipeline's defaults (28
    // steps, 1024²), eager, compiled (max-autotune), compiled with model offload.
    let nf4 = |n, s, how| row(n, "flux.1-dev", W::Nf4, "rtx-4090", 1024, 28, s, how);
    v.push(nf4(78, 32.602, "bitsandbytes NF4"));
    v.push(rt(nf4(79, 25.847, "NF4 + torch.compile"), R::Compiled));
    v.push(Row {
        place: PipelineOffload::Model,
        ..rt(
            nf4(80, 32.312, "NF4 + compile + model offload"),
            R::Compiled,
        )
    });
    for (n, acc, b, eager, compiled) in table {
        v.push(images(
            step(row(
                n,
                "sd-1.5",
                W::Fp16,
                acc,
                512,
                1,
                1.0 / eager,
                "Diffusers eager",
            )),
            b,
        ));
        if compiled > 0.0 {
            v.push(images(
                rt(
                    step(row(
                        n + 1,
                        "sd-1.5",
                        W::Fp16,
                        acc,
                        512,
                        1,
                        1.0 / compiled,
                        "torch.compile",
                    )),
                    R::Compiled,
                ),
                b,
            ));
        }
    }
    v
}

/// Predicted seconds (per call, or per step) for a row.
fn predict(r: &Row) -> f64 {
    let cat = builtin();
    let st = FitSettings::default();
    let mut i = ImageInputs::new(find(r.pipe).unwrap());
    (i.width, i.height) = r.size;
    i.steps = r.steps;
    i.images = r.images;
    i.weights = r.weights;
    i.memory_efficient_attention = r.sdpa;
    i.runtime_choice = r.runtime;
    i.tf32 = r.tf32;
    i.fp8_matmul = r.fp8_matmul;
    assert!(i.problem().is_none(), "row {}: {:?}", r.n, i.problem());
    let e = estimate(&i, r.place);
    let (m, acc) = if r.acc.is_empty() {
        (cat.machine(r.machine).unwrap().clone(), None)
    } else {
        let a = cat
            .accelerator(r.acc)
            .unwrap_or_else(|| panic!("{}", r.acc));
        let m = Machine {
            gpu: Some(r.acc.into()),
            ..Machine::bare("row", "row", MachineKind::Desktop)
        };
        (m, Some(a))
    };
    let s = seconds_per_image(&i, &e, &m, acc, &st);
    if r.per_step { s.step_s } else { s.call_s }
}

/// Rows printed but left out of the count, each because its published setup cannot have run as
/// stated: the SDXL blog's four-image rows (12–15) do not state their steps, and at the
/// pipeline's default 50 the FP16 row would need 76 % of the A100's FP16 peak in eager mode and
/// the FP32 row more than its FP32 peak; row 18 (SD3 Medium compiled, 20 steps in 0.585 s with
/// guidance at 1024²) would need 610 TFLOP/s of an A100's 312.
const NOT_COUNTED: [u32; 5] = [12, 13, 14, 15, 18];

#[test]
fn published_image_generation_speeds() {
    let rows = rows();
    assert!(rows.len() >= 35);
    let mut hits = 0;
    let mut counted = 0;
    println!(
        "| # | pipeline | precision | hardware | size | steps | images | setup | published s | predicted s | error |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let p = predict(r);
        let err = p / r.published_s - 1.0;
        let ok = err.abs() <= 0.35;
        let count = !NOT_COUNTED.contains(&r.n);
        hits += (ok && count) as usize;
        counted += count as usize;
        println!(
            "| {} | {} | {} | {} | {}×{} | {} | {} | {} | {:.3} | {:.3} | {:+.0} %{} |",
            r.n,
            r.pipe,
            r.weights.cli_name(),
            if r.acc.is_empty() { r.machine } else { r.acc },
            r.size.0,
            r.size.1,
            if r.per_step {
                "per step".to_string()
            } else {
                r.steps.to_string()
            },
            r.images,
            r.how,
            r.published_s,
            p,
            err * 100.0,
            match (count, ok) {
                (false, _) => " (not counted)",
                (true, true) => "",
                (true, false) => " ✗",
            }
        );
    }
    println!("within ±35 %: {hits} of {counted}");
    // The count this model reaches (docs/diffusion.md); a change that loses a row fails here.
    assert!(counted >= 35);
    assert!(hits >= HITS, "{hits} of {counted} within ±35 %");
}

/// Rows within ±35 % today (see the printed table).
const HITS: usize = 44;

/// A FLUX.1-dev step at 1024² on an H100 SXM in eager Diffusers, BF16, by hand: the Linear
/// GEMMs at 0.5 of 989 TFLOP/s (the transformers profile's GEMM efficiency), the attention at
/// 0.35 (FlashAttention-2 on Hopper), the eager element-wise passes (`eager_elements` × 2 bytes)
/// at 0.85 × 3,350 GB/s and 1.55 µs per kernel (31 µs ÷ 20 nodes). GPU-bound: the host's 57
/// blocks × 0.86 ms is less. The 512 text tokens' GEMMs fill 91 % of the SMs (waves), the
/// 4,096 image tokens' all of them, so the whole is within 2 % of the sum. Row 19 (12 s for
/// 50 steps, text encoders and VAE included) is then within 10 %.
#[test]
fn a_flux_step_on_an_h100_by_hand() {
    let cat = builtin();
    let st = FitSettings::default();
    let i = ImageInputs::new(find("flux.1-dev").unwrap());
    let e = estimate(&i, PipelineOffload::None);
    let a = cat.accelerator("h100-sxm").unwrap();
    let m = Machine {
        gpu: Some(a.id.clone()),
        ..Machine::bare("a", "a", MachineKind::Desktop)
    };
    let s = seconds_per_image(&i, &e, &m, Some(a), &st);
    let d = &e.denoiser;
    let linear = d.flops - d.conv_flops - d.attn_flops;
    assert_eq!(d.conv_flops, 0.0);
    let hand = linear / (989e12 * 0.5)
        + d.attn_flops / (989e12 * 0.35)
        + d.eager_elements * 2.0 / (3350e9 * 0.85)
        + d.kernels * 31e-6 / 20.0;
    assert!(d.blocks as f64 * 860e-6 < hand);
    assert!(
        (s.step_s / hand - 1.0).abs() < 0.02,
        "{} vs {hand}",
        s.step_s
    );
    assert!((s.call_s / 12.0 - 1.0).abs() < 0.1, "{}", s.call_s);
    // The element-wise passes are a real share of the eager step (RoPE and RMSNorm in FP32,
    // the modulations, the concatenations): more than a fifth, and a compiler fuses most away.
    let mem = d.eager_elements * 2.0 / (3350e9 * 0.85);
    assert!(mem / s.step_s > 0.2, "{mem} of {}", s.step_s);
    assert!(d.fused_elements < d.eager_elements / 3.0);
}

/// What each runtime and format changes, against eager Diffusers on the same GPU: a compiled
/// step moves fewer bytes and launches nothing from the host; bitsandbytes LLM.int8 and
/// Diffusers' sub-8-bit GGUF dequantisation synchronise every layer (slower than BF16, and
/// Q4 slower than Q8_0); FP8 storage costs its casts, an FP8 matmul gains on an H100; FP32
/// matmuls run at the vector rate unless TF32 is allowed; offload costs copies.
#[test]
fn runtimes_and_formats_move_the_step_the_way_their_kernels_do() {
    let cat = builtin();
    let st = FitSettings::default();
    let a = cat.accelerator("h100-sxm").unwrap();
    let m = Machine {
        gpu: Some(a.id.clone()),
        ..Machine::bare("a", "a", MachineKind::Desktop)
    };
    let run = |f: &dyn Fn(&mut ImageInputs), place: PipelineOffload| {
        let mut i = ImageInputs::new(find("flux.1-dev").unwrap());
        f(&mut i);
        let e = estimate(&i, place);
        seconds_per_image(&i, &e, &m, Some(a), &st)
    };
    let none = PipelineOffload::None;
    let base = run(&|_| {}, none);
    let compiled = run(&|i| i.runtime_choice = Some(ImageRuntime::Compiled), none);
    let trt = run(&|i| i.runtime_choice = Some(ImageRuntime::TensorRt), none);
    assert!(
        compiled.step_s < base.step_s * 0.85,
        "{compiled:?} {base:?}"
    );
    assert_eq!(compiled.step_s, trt.step_s);
    let int8 = run(&|i| i.weights = W::Int8, none);
    let q8 = run(
        &|i| {
            i.weights = W::Q8_0;
            i.runtime_choice = Some(ImageRuntime::Diffusers);
        },
        none,
    );
    let q4 = run(
        &|i| {
            i.weights = W::Q4KM;
            i.runtime_choice = Some(ImageRuntime::Diffusers);
        },
        none,
    );
    assert!(int8.step_s > base.step_s * 1.3);
    assert!(q8.step_s > base.step_s && q4.step_s > q8.step_s * 1.3);
    let fp8 = run(&|i| i.weights = W::Fp8, none);
    let fp8_mm = run(
        &|i| {
            i.weights = W::Fp8;
            i.fp8_matmul = true;
        },
        none,
    );
    assert!(fp8.step_s > base.step_s && fp8_mm.step_s < base.step_s);
    let fp32 = run(&|i| i.weights = W::Fp32, none);
    let tf32 = run(
        &|i| {
            i.weights = W::Fp32;
            i.tf32 = true;
        },
        none,
    );
    assert!(fp32.step_s > tf32.step_s * 3.0, "{fp32:?} {tf32:?}");
    let model = run(&|_| {}, PipelineOffload::Model);
    let seq = run(&|_| {}, PipelineOffload::Sequential);
    assert!(model.transfer_s > 0.0 && seq.transfer_s > model.transfer_s * 10.0);
    // Model offload moves 33.7 GB in and out from pageable memory: 2 × 33.7 GB at the staged
    // rate 1 / (1 / (64 GB/s × 0.8) + 1 / 10 GB/s) = 8.37 GB/s.
    let staged = 1.0 / (1.0 / (63.0e9 * 0.8) + 1.0 / 10e9);
    assert!(
        (model.transfer_s / (2.0 * 33_741_198_278.0 / staged) - 1.0).abs() < 0.02,
        "{}",
        model.transfer_s
    );
}

/// One image leaves most of a big GPU's SMs idle in the UNet's deep levels (few tiles per
/// GEMM): per image, a batch of 16 costs less than one image alone.
#[test]
fn a_batch_fills_the_gpu_better_than_one_image() {
    let cat = builtin();
    let st = FitSettings::default();
    let a = cat.accelerator("a100-80gb-sxm").unwrap();
    let m = Machine {
        gpu: Some(a.id.clone()),
        ..Machine::bare("a", "a", MachineKind::Desktop)
    };
    let per_image = |n: u32| {
        let mut i = ImageInputs::new(find("sd-1.5").unwrap());
        i.images = n;
        i.runtime_choice = Some(ImageRuntime::Compiled);
        let e = estimate(&i, PipelineOffload::None);
        seconds_per_image(&i, &e, &m, Some(a), &st).step_s / n as f64
    };
    assert!(per_image(1) > per_image(16) * 1.2);
}

/// The fit picks the fastest placement that fits: FLUX.1-dev BF16 (≈ 34 GiB on the GPU) runs
/// whole on an H100, with model offload on a 24 GB RTX 4090 desktop, and on the CPU path (or not
/// at all) without a GPU.
#[test]
fn the_fit_picks_the_placement_each_machine_needs() {
    let cat = builtin();
    let st = FitSettings::default();
    let i = ImageInputs::new(find("flux.1-dev").unwrap());
    let h100 = cat
        .machines
        .iter()
        .find(|m| m.gpu.as_deref() == Some("h100-sxm") && m.price.is_some())
        .unwrap();
    let f = fit_machine(&i, h100, cat, &st);
    assert_eq!(f.verdict, ImageVerdict::Gpu(PipelineOffload::None));
    assert!(f.usd_per_1000_images.is_some());
    let r4090 = cat
        .machines
        .iter()
        .find(|m| m.gpu.as_deref() == Some("rtx-4090") && m.gpu_count == 1)
        .unwrap();
    let f = fit_machine(&i, r4090, cat, &st);
    assert_eq!(
        f.verdict,
        ImageVerdict::Gpu(PipelineOffload::Model),
        "{f:?}"
    );
    let s = f.speed.unwrap();
    assert!(s.transfer_s > 0.0);
    // Asked to keep everything on the GPU, the 4090 does not fit.
    let mut none = i.clone();
    none.offload = PipelineOffload::None;
    assert_eq!(
        fit_machine(&none, r4090, cat, &st).verdict,
        ImageVerdict::DoesNotFit
    );
}

/// Every surface's GPU column comes from `ImageFit::gpu_use`: what the placement needs of one
/// GPU where it runs there, a dash on a machine without a GPU or when the pipeline runs on the CPU.
#[test]
fn the_gpu_column_is_a_dash_without_a_gpu_part() {
    let cat = builtin();
    let st = FitSettings::default();
    let i = ImageInputs::new(find("sd-1.5").unwrap());
    let cpu_only = cat.machines.iter().find(|m| m.gpu.is_none()).unwrap();
    let f = fit_machine(&i, cpu_only, cat, &st);
    assert_eq!(f.gpu_use(), None, "{f:?}");
    assert_eq!(headroom::core::format::image_gpu_use(&f), "—");
    let h100 = cat
        .machines
        .iter()
        .find(|m| m.gpu.as_deref() == Some("h100-sxm"))
        .unwrap();
    let f = fit_machine(&i, h100, cat, &st);
    let (needed, capacity) = f.gpu_use().unwrap();
    assert!(needed.0 > 0 && needed < capacity, "{f:?}");
    assert_eq!(
        headroom::core::format::image_gpu_use(&f),
        format!(
            "{} / {}",
            headroom::core::format::bytes(needed),
            headroom::core::format::bytes(capacity)
        )
    );
    let (per, hour) = headroom::core::format::image_rates(&f);
    assert!(per.ends_with(" s") || per.ends_with("ms"), "{per}");
    assert_ne!(hour, "—");
}

fn headroom(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .output()
        .unwrap()
}

/// The command line: the JSON contract's numbers are the core's, and bad input is one line
/// naming the flag, exit 2.
#[test]
fn the_command_line_sizes_and_refuses() {
    let o = headroom(&["estimate", "--mode", "image", "--model", "sdxl", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["weights"], 6_937_675_734u64);
    assert_eq!(
        v["gpu_peak"],
        6_937_675_734u64 + 896 * 1024 * 1024 * 2 + 768 * 1024 * 1024
    );
    assert_eq!(v["image"]["steps"], 50);
    assert_eq!(v["components"][0]["params"], 2_567_463_684u64);
    let o = headroom(&[
        "fit",
        "--mode",
        "image",
        "--model",
        "flux.1-schnell",
        "--resolution",
        "512",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = &v.as_array().unwrap()[0];
    assert_eq!(first["image"]["width"], 512);
    assert!(first["speed"]["seconds_per_image"].as_f64().unwrap() > 0.0);
    for (args, needle) in [
        (
            &[
                "estimate",
                "--mode",
                "image",
                "--model",
                "flux.1-dev",
                "--resolution",
                "1000x1024",
            ][..],
            "--resolution",
        ),
        (
            &["estimate", "--mode", "image", "--model", "gpt-2"][..],
            "--model gpt-2",
        ),
        (&["estimate", "--mode", "image"][..], "needs --model"),
        (
            &["estimate", "--steps", "20"][..],
            "--steps needs --mode image",
        ),
        (
            &["serve", "--mode", "image", "--model", "sdxl"][..],
            "--mode image",
        ),
        (
            &[
                "estimate", "--mode", "image", "--model", "sdxl", "--steps", "0",
            ][..],
            "--steps",
        ),
    ] {
        let o = headroom(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(needle) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// One pipeline per GPU (Diffusers runs a pipeline on one device): an 8-GPU cloud instance runs
/// eight, and its images per hour are eight times one pipeline's; under offload only as many
/// run as the RAM holds copies of the offloaded weights.
#[test]
fn a_multi_gpu_machine_runs_one_pipeline_per_gpu() {
    let cat = builtin();
    let st = FitSettings::default();
    let i = ImageInputs::new(find("sdxl").unwrap());
    let p5 = cat.machine("aws-p5-48xlarge").unwrap();
    assert_eq!(p5.gpu_count, 8);
    let f = fit_machine(&i, p5, cat, &st);
    assert_eq!(f.verdict, ImageVerdict::Gpu(PipelineOffload::None));
    assert_eq!(f.pipelines, 8);
    let one = f.speed.as_ref().unwrap().images_per_hour;
    assert!((f.machine_images_per_hour / one - 8.0).abs() < 1e-9);
    // $ per 1000 images = $/h ÷ (8 × images per hour) × 1000.
    let usd = f.usd_per_hour.unwrap() / (8.0 * one) * 1000.0;
    assert!((f.usd_per_1000_images.unwrap() / usd - 1.0).abs() < 1e-9);
    // Nothing offloaded: no RAM per pipeline.
    assert_eq!(f.machine_ram_needed.0, 0);
    // A two-4090 machine under model offload with FLUX.1-dev (31.4 GiB of weights in RAM per
    // pipeline): as many pipelines as its RAM holds copies, at most 2.
    let flux = ImageInputs::new(find("flux.1-dev").unwrap());
    let two = cat
        .machines
        .iter()
        .find(|m| m.gpu.as_deref() == Some("rtx-4090") && m.gpu_count == 2)
        .expect("a 2x RTX 4090 machine");
    let f = fit_machine(&flux, two, cat, &st);
    assert_eq!(
        f.verdict,
        ImageVerdict::Gpu(PipelineOffload::Model),
        "{f:?}"
    );
    let copies = f.ram_capacity.0 / f.ram_needed.0;
    assert_eq!(f.pipelines, copies.clamp(1, 2));
    assert_eq!(f.machine_ram_needed.0, f.ram_needed.0 * f.pipelines);
}

/// `recommend --mode image` and `report --mode image`: the picks are the fits' own figures, a
/// budget is respected, and a text-only constraint is refused in one line.
#[test]
fn recommend_and_report_for_a_pipeline() {
    let o = headroom(&[
        "recommend",
        "--mode",
        "image",
        "--model",
        "sdxl",
        "--kind",
        "desktop",
        "--budget",
        "2000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["group"], "desktop");
    let picks = groups[0]["picks"].as_array().unwrap();
    assert!(!picks.is_empty());
    for p in picks {
        assert!(p["price_usd"].as_f64().unwrap() <= 2000.0, "{p}");
        assert!(p["verdict"].as_str().unwrap().starts_with("gpu"));
    }
    // The cheapest is no dearer than the one with the most images per hour.
    let price = |r: &str| {
        picks.iter().find(|p| p["role"] == r).unwrap()["price_usd"]
            .as_f64()
            .unwrap()
    };
    assert!(price("cheapest") <= price("fastest"));
    // The report lists the named machine with the fit's numbers.
    let o = headroom(&[
        "report",
        "--mode",
        "image",
        "--model",
        "flux.1-dev",
        "--machine",
        "aws-p5-48xlarge",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["fits"][0]["pipelines"], 8);
    assert_eq!(r["components"][0]["params"], 11_901_408_320u64);
    let o = headroom(&[
        "report",
        "--mode",
        "image",
        "--model",
        "sdxl",
        "--machine",
        "aws-p5-48xlarge",
    ]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("## Memory by component"), "{md}");
    assert!(md.contains("| UNet | 2,567,463,684 |"), "{md}");
    let o = headroom(&[
        "recommend",
        "--mode",
        "image",
        "--model",
        "sdxl",
        "--min-tokens-per-s",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("headroom: --min-tokens-per-s") || err.contains("--min-tokens-per-s:"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

/// Copies the fixture folder `name` (tests/fixtures/diffusers, configs only) into a temporary
/// folder the test may add files to.
fn fixture_copy(name: &str) -> tempfile::TempDir {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diffusers")
        .join(name);
    let dst = tempfile::tempdir().unwrap();
    for e in walk(&src) {
        let rel = e.strip_prefix(&src).unwrap();
        let to = dst.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&e, &to).unwrap();
    }
    dst
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A safetensors file holding one F16 tensor of `shape` (zeros): a header and its data.
fn write_safetensors(path: &std::path::Path, shape: &[u64]) {
    let n: u64 = shape.iter().product();
    let header = serde_json::json!({
        "w": {"dtype": "F16", "shape": shape, "data_offsets": [0, n * 2]}
    })
    .to_string();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(std::iter::repeat_n(0u8, (n * 2) as usize));
    std::fs::write(path, bytes).unwrap();
}

/// `--diffusers DIR`: a Diffusers folder's configs give the same pipeline as the preset (SDXL
/// base's architecture: the same exact counts), the folder's stored precision is the default,
/// its safetensors headers give exact parameters, and a bad folder is one line naming the file
/// and the key.
#[test]
fn a_diffusers_folder_is_read_from_its_configs_and_headers() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diffusers");
    let json = |args: &[&str]| -> serde_json::Value {
        let o = headroom(args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let sdxl = fixtures.join("sdxl");
    let folder = json(&[
        "estimate",
        "--mode",
        "image",
        "--diffusers",
        sdxl.to_str().unwrap(),
        "--json",
    ]);
    let preset = json(&["estimate", "--mode", "image", "--model", "sdxl", "--json"]);
    for k in [
        "weights",
        "gpu_peak",
        "denoiser_flops_per_sample_step",
        "vae_decode_flops_per_image",
    ] {
        assert_eq!(folder[k], preset[k], "{k}");
    }
    // StableDiffusionXLPipeline: 50 steps at the UNet's sample_size 128 × 8 = 1024.
    assert_eq!(folder["image"]["steps"], 50);
    assert_eq!(folder["image"]["width"], 1024);
    // FLUX.1-schnell saved in NF4 (bitsandbytes): the transformer is schnell's 11,891,178,560
    // parameters, sized at 4.5 bits (NF4 with its block scales) unless --weights says otherwise;
    // FluxPipeline's 28 steps.
    let flux = fixtures.join("flux-schnell-nf4");
    let f = json(&[
        "estimate",
        "--mode",
        "image",
        "--diffusers",
        flux.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(f["components"][0]["params"], 11_891_178_560u64);
    assert_eq!(f["image"]["weights"], "nf4");
    assert_eq!(f["image"]["steps"], 28);
    assert_eq!(f["image"]["classifier_free_guidance"], false);
    let f16 = json(&[
        "estimate",
        "--mode",
        "image",
        "--diffusers",
        flux.to_str().unwrap(),
        "--weights",
        "bf16",
        "--json",
    ]);
    assert_eq!(f16["components"][0]["bytes"], 11_891_178_560u64 * 2);
    // Weights files: the VAE's header says 3 × 5 = 15 parameters (a variant file beside it is
    // not loaded by from_pretrained and not counted).
    let dir = fixture_copy("sdxl");
    write_safetensors(
        &dir.path().join("vae/diffusion_pytorch_model.safetensors"),
        &[3, 5],
    );
    write_safetensors(
        &dir.path()
            .join("vae/diffusion_pytorch_model.fp16.safetensors"),
        &[7, 7],
    );
    let d = dir.path().to_str().unwrap();
    let v = json(&["estimate", "--mode", "image", "--diffusers", d, "--json"]);
    let vae = v["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "vae")
        .unwrap();
    assert_eq!(vae["params"], 15);
    assert_eq!(vae["bytes"], 30);
    // A bitsandbytes-quantized transformer's packed tensors are not its parameters: the config's
    // count stands.
    let nf4 = fixture_copy("flux-schnell-nf4");
    write_safetensors(
        &nf4.path()
            .join("transformer/diffusion_pytorch_model.safetensors"),
        &[4, 4],
    );
    let q = json(&[
        "estimate",
        "--mode",
        "image",
        "--diffusers",
        nf4.path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(q["components"][0]["params"], 11_891_178_560u64);
    // Bad folders: one line naming the file and the key (or line:column), exit 2.
    let unet = dir.path().join("unet/config.json");
    let text = std::fs::read_to_string(&unet).unwrap();
    std::fs::write(
        &unet,
        text.replace("\"block_out_channels\"", "\"block_out_channelz\""),
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let broken = fixture_copy("flux-schnell-nf4");
    std::fs::write(
        broken.path().join("vae/config.json"),
        "{\n  \"block_out_channels\": [128,\n",
    )
    .unwrap();
    for (folder, needle) in [
        (d, "unet/config.json: block_out_channels: missing"),
        (empty.path().to_str().unwrap(), "no model_index.json"),
        (broken.path().to_str().unwrap(), "vae/config.json: line 3:"),
    ] {
        let o = headroom(&["estimate", "--mode", "image", "--diffusers", folder]);
        assert_eq!(o.status.code(), Some(2), "{folder}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle) && err.lines().count() == 1, "{err}");
    }
    let o = headroom(&["estimate", "--diffusers", d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--diffusers needs --mode image"));
}

/// A scenario the window saved in image mode runs on the command line as saved (its pipeline,
/// size, steps, images, offload and precision), the flags over it; `--mode inference` makes it
/// a text scenario again.
#[test]
fn a_saved_image_scenario_runs_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("image.ron");
    std::fs::write(
        &file,
        "(mode: Image, weights: Fp16, image: (pipeline: \"flux.1-schnell\", width: 768, height: 512, steps: 4, images: 2, offload: Model, vae_tiling: true))",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let o = headroom(&["estimate", "--scenario", f, "--steps", "8", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let im = &v["image"];
    assert_eq!(im["pipeline"], "flux.1-schnell");
    assert_eq!(
        (im["width"].as_u64(), im["height"].as_u64()),
        (Some(768), Some(512))
    );
    assert_eq!(
        (im["steps"].as_u64(), im["images_per_batch"].as_u64()),
        (Some(8), Some(2))
    );
    assert_eq!(im["weights"], "fp16");
    assert_eq!(v["placement"], "model");
    let o = headroom(&["estimate", "--scenario", f, "--mode", "inference", "--json"]);
    assert!(o.status.success());
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(t.get("image").is_none() && t["params"].as_u64().is_some());
    // A file whose image inputs are out of range is refused naming the field (exit 3: a file
    // refused, as for every scenario file).
    std::fs::write(&file, "(mode: Image, image: (width: 20000))").unwrap();
    let o = headroom(&["estimate", "--scenario", f]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("image.width 20,000 is outside 64"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `estimate --mode image --save-scenario FILE` writes the image scenario (it was ignored in
/// image mode), and the file opens again as the same pipeline and settings.
#[test]
fn an_image_estimate_saves_its_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("saved.ron");
    let f = file.to_str().unwrap();
    let o = headroom(&[
        "estimate",
        "--mode",
        "image",
        "--model",
        "flux.1-dev",
        "--resolution",
        "768x512",
        "--steps",
        "20",
        "--image-runtime",
        "compiled",
        "--save-scenario",
        f,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = headroom(&["estimate", "--scenario", f, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let im = &v["image"];
    assert_eq!(im["pipeline"], "flux.1-dev");
    assert_eq!(
        (
            im["width"].as_u64(),
            im["height"].as_u64(),
            im["steps"].as_u64()
        ),
        (Some(768), Some(512), Some(20))
    );
    assert_eq!(im["image_runtime"], "compiled", "{im}");
}

/// The picks are the fit rows' own extremes: the cloud group's "cheapest" has the lowest $ per
/// 1000 images of every cloud instance that runs the pipeline on its GPU, "fastest" the most
/// images per hour, and no machine that only runs it on its CPU is ever picked.
#[test]
fn the_picks_are_the_extremes_of_the_fit_rows() {
    use headroom::core::diffusion::fit_all;
    use headroom::core::diffusion::picks::{ImageRole, picks};
    use headroom::core::recommend::{Constraints, Group};
    let cat = builtin();
    let st = FitSettings::default();
    let i = ImageInputs::new(find("flux.1-dev").unwrap());
    let all: Vec<_> = cat.machines.iter().collect();
    let fits = fit_all(&i, &all, cat, &st);
    let groups = picks(&fits, &all, cat, &Constraints::default());
    assert_eq!(groups.len(), 4);
    let cloud_gpu: Vec<_> = fits
        .iter()
        .filter(|f| {
            matches!(f.verdict, ImageVerdict::Gpu(_))
                && cat.machine(&f.machine).unwrap().kind == MachineKind::Cloud
        })
        .collect();
    let min_usd = cloud_gpu
        .iter()
        .filter_map(|f| f.usd_per_1000_images)
        .fold(f64::INFINITY, f64::min);
    let max_rate = cloud_gpu
        .iter()
        .map(|f| f.machine_images_per_hour)
        .fold(0.0, f64::max);
    let cloud = groups.iter().find(|g| g.group == Group::Cloud).unwrap();
    let of = |r: ImageRole| cloud.picks.iter().find(|p| p.role == r).unwrap();
    assert_eq!(of(ImageRole::Cheapest).usd_per_1000_images, Some(min_usd));
    assert_eq!(of(ImageRole::Fastest).machine_images_per_hour, max_rate);
    for g in &groups {
        for p in &g.picks {
            assert!(matches!(p.verdict, ImageVerdict::Gpu(_)), "{p:?}");
        }
    }
}
