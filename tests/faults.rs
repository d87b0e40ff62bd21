//! Faults from outside: NVML failing at each call, a GPU that disappears between two detections,
//! an unreadable catalog folder, a settings folder that cannot be written, malformed and huge
//! files dropped on the window. Each gives a clear message, loses nothing and never panics.
//!
//! The tests run as root in CI, where permission bits do not stop a write or a read: an
//! unwritable or unreadable folder is made as a path below a regular file (`ENOTDIR` for root
//! too); the permission-bit variant is checked as well where it takes effect.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use headroom::core::catalog::Catalog;
use headroom::core::fit::{FitSettings, Verdict, fit_all};
use headroom::core::scenario::Scenario;
use headroom::core::units::Bytes;
use headroom::gui::{Command, FileAction, HeadroomApp, State};
use headroom::io::detect::nvidia::{NvmlProbe, NvmlReading};
use headroom::io::detect::{
    DetectedMachine, Detector, FakeDetector, GpuProcess, LOCAL_MACHINE_ID, catalog_with_local,
    local_machine,
};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn catalog() -> Catalog {
    headroom::io::catalog::builtin().clone()
}

// ------------------------------------------------------------------------------------- NVML

/// An RTX 4090 as NVML reports it (driver 550.54.14).
fn rtx4090(index: u32) -> NvmlReading {
    NvmlReading {
        index,
        name: Ok("NVIDIA GeForce RTX 4090".into()),
        memory: Ok((25_757_220_864, 24_289_214_464, 1_048_182_784)),
        pcie_gen: Ok(1),
        pcie_width: Ok(16),
        pcie_max_gen: Ok(4),
        pcie_max_width: Ok(16),
        memory_bus_width: Ok(384),
        max_memory_clock_mhz: Ok(10501),
        processes: Ok(vec![GpuProcess {
            pid: 2211,
            name: Some("Xorg".into()),
            used: Some(Bytes::mib(405)),
        }]),
    }
}

fn devices(devices: Vec<Result<NvmlReading, String>>) -> NvmlProbe {
    NvmlProbe::Devices {
        driver: Some("550.54.14".into()),
        cuda: Some("12.4".into()),
        devices,
    }
}

/// Why NVML failed, as `nvml_reason` words it for `NVML_ERROR_GPU_IS_LOST`.
const LOST: &str = "the GPU fell off the bus (GPU lost)";

/// One probe per NVML call, that call failing and the others answering.
fn each_call_failing() -> Vec<(&'static str, NvmlProbe)> {
    let mut out = vec![
        (
            "nvmlInit",
            NvmlProbe::InitFailed("the NVIDIA kernel driver is not loaded".into()),
        ),
        (
            "nvmlDeviceGetCount",
            NvmlProbe::CountFailed("permission denied talking to the NVIDIA driver".into()),
        ),
        (
            "nvmlDeviceGetHandleByIndex",
            devices(vec![Err(LOST.into())]),
        ),
        (
            "nvmlSystemGetDriverVersion and nvmlSystemGetCudaDriverVersion",
            NvmlProbe::Devices {
                driver: None,
                cuda: None,
                devices: vec![Ok(rtx4090(0))],
            },
        ),
        ("no GPU at all", devices(vec![])),
    ];
    type Breaker = fn(&mut NvmlReading);
    let per_device: [(&'static str, Breaker); 9] = [
        ("nvmlDeviceGetName", |r| r.name = Err(LOST.into())),
        ("nvmlDeviceGetMemoryInfo", |r| r.memory = Err(LOST.into())),
        ("nvmlDeviceGetCurrPcieLinkGeneration", |r| {
            r.pcie_gen = Err(LOST.into())
        }),
        ("nvmlDeviceGetCurrPcieLinkWidth", |r| {
            r.pcie_width = Err(LOST.into())
        }),
        ("nvmlDeviceGetMaxPcieLinkGeneration", |r| {
            r.pcie_max_gen = Err(LOST.into())
        }),
        ("nvmlDeviceGetMaxPcieLinkWidth", |r| {
            r.pcie_max_width = Err(LOST.into())
        }),
        ("nvmlDeviceGetMemoryBusWidth", |r| {
            r.memory_bus_width = Err(LOST.into())
        }),
        ("nvmlDeviceGetMaxClockInfo", |r| {
            r.max_memory_clock_mhz = Err(LOST.into())
        }),
        ("nvmlDeviceGetComputeRunningProcesses", |r| {
            r.processes = Err(LOST.into())
        }),
    ];
    for (call, brk) in per_device {
        let mut r = rtx4090(0);
        brk(&mut r);
        out.push((call, devices(vec![Ok(r)])));
    }
    // Every value of one device failing, and a second GPU that still answers.
    out.push((
        "every call of GPU 0",
        devices(vec![Ok(NvmlReading::failed(0, LOST)), Ok(rtx4090(1))]),
    ));
    out
}

/// What every detection must give, whatever failed: one NVML summary note, a local machine, a
/// fit on it, and `detect --json` with its contract fields.
fn check_detection(call: &str, d: &DetectedMachine, cat: &Catalog) {
    let summaries: Vec<&String> = d
        .notes
        .iter()
        .filter(|n| n.starts_with("NVML: ") && !n.starts_with("NVML: GPU"))
        .collect();
    assert_eq!(summaries.len(), 1, "{call}: {:?}", d.notes);
    assert!(
        d.notes.iter().all(|n| !n.contains('\n') && !n.is_empty()),
        "{call}: {:?}",
        d.notes
    );
    let (m, accs) = local_machine(d, cat);
    assert_eq!(&*m.id, LOCAL_MACHINE_ID);
    assert!(m.notes.as_deref().is_some_and(|n| !n.is_empty()), "{call}");
    let with_local = catalog_with_local(d, cat);
    let fits = fit_all(
        &Scenario::default(),
        with_local
            .machines
            .iter()
            .filter(|x| *x.id == *LOCAL_MACHINE_ID),
        &with_local,
        &FitSettings::default(),
    );
    assert_eq!(fits.len(), 1, "{call}");
    let f = &fits[0];
    assert!(
        f.decode_tokens_per_s.is_finite() && f.decode_tokens_per_s >= 0.0,
        "{call}: {f:?}"
    );
    // A GPU kept for sizing has a size.
    for a in &accs {
        assert!(
            a.memory.0 > 0 || a.memory_kind == headroom::core::catalog::MemoryKind::Unified,
            "{call}: {a:?}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&headroom::cli::detect::render(d, true)).expect("valid JSON");
    assert!(json["notes"].is_array(), "{call}: {json}");
}

#[test]
fn nvml_failing_at_each_call_gives_notes_and_a_usable_machine() {
    let cat = catalog();
    for (call, probe) in each_call_failing() {
        let det = FakeDetector::nvml(probe).matched(&cat);
        let d = det.detect();
        check_detection(call, &d, &cat);
        match call {
            "nvmlInit" | "nvmlDeviceGetCount" | "no GPU at all" => {
                assert!(d.gpus.is_empty(), "{call}");
                assert!(
                    d.notes
                        .iter()
                        .any(|n| n.starts_with("NVML: not detected: ")),
                    "{call}: {:?}",
                    d.notes
                );
            }
            "nvmlDeviceGetHandleByIndex" => {
                assert!(d.gpus.is_empty());
                assert!(
                    d.notes
                        .iter()
                        .any(|n| n == &format!("NVML: GPU 0: not readable: {LOST}")),
                    "{:?}",
                    d.notes
                );
            }
            "nvmlDeviceGetName" => {
                // Unnamed: cannot be matched, still sized from its memory.
                assert_eq!(d.gpus[0].name, "NVIDIA GPU 0");
                assert_eq!(d.gpus[0].vram_total, Bytes(25_757_220_864));
                assert!(
                    d.notes
                        .iter()
                        .any(|n| n.to_string().contains("name not readable"))
                );
            }
            "nvmlDeviceGetMemoryInfo" => {
                // The catalog's 24 GiB stands in for the unreadable memory.
                assert_eq!(d.gpus[0].matched.as_deref(), Some("rtx-4090"));
                let (_, accs) = local_machine(&d, &cat);
                assert_eq!(accs[0].memory, Bytes::gib(24));
                assert!(
                    d.notes
                        .iter()
                        .any(|n| n.to_string().contains("memory not readable"))
                );
            }
            "every call of GPU 0" => {
                assert_eq!(d.gpus.len(), 2);
                assert!(
                    d.notes
                        .iter()
                        .any(|n| n.to_string().starts_with("NVML: 2 GPUs"))
                );
            }
            "nvmlSystemGetDriverVersion and nvmlSystemGetCudaDriverVersion" => {
                assert_eq!(d.gpus[0].driver_version, None);
                assert!(d.notes.iter().any(|n| n == "NVML: 1 GPU"), "{:?}", d.notes);
            }
            _ => {
                assert_eq!(d.gpus.len(), 1, "{call}");
                assert_eq!(d.gpus[0].matched.as_deref(), Some("rtx-4090"), "{call}");
                assert!(
                    d.notes
                        .iter()
                        .any(|n| n.to_string().contains("not readable")),
                    "{call}: {:?}",
                    d.notes
                );
            }
        }
    }
}

/// Answers each detection with the next machine in the list (the last one repeats).
struct Sequence(Mutex<VecDeque<DetectedMachine>>);

impl Detector for Sequence {
    fn detect(&self) -> DetectedMachine {
        let mut q = self.0.lock().unwrap();
        if q.len() > 1 {
            q.pop_front().unwrap()
        } else {
            q.front().cloned().unwrap_or_default()
        }
    }
}

fn harness(detector: Arc<dyn Detector>, state: State) -> Harness<'static, HeadroomApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .build_eframe(move |_cc| HeadroomApp::new_with(detector, catalog(), state));
    h.state_mut().wait_for_jobs(Duration::from_secs(10));
    h.run();
    h
}

fn run_command(h: &mut Harness<'static, HeadroomApp>, c: Command) {
    h.state_mut().push_command(c);
    h.step();
    h.state_mut().wait_for_jobs(Duration::from_secs(10));
    h.run();
}

#[test]
fn a_gpu_that_disappears_between_two_detections() {
    let cat = catalog();
    let first = FakeDetector::nvml(devices(vec![Ok(rtx4090(0))]))
        .matched(&cat)
        .machine;
    // The card fell off the bus: NVML still counts it, but its handle cannot be had.
    let second = FakeDetector::nvml(devices(vec![Err(LOST.into())]))
        .matched(&cat)
        .machine;
    check_detection("before", &first, &cat);
    check_detection("after", &second, &cat);

    let det = Arc::new(Sequence(Mutex::new(VecDeque::from([
        first.clone(),
        second.clone(),
    ]))));
    let mut h = harness(det, State::default());
    assert_eq!(
        h.state_mut().fit_of(LOCAL_MACHINE_ID).unwrap().verdict,
        Verdict::Gpu
    );
    h.state_mut().state.scenario.context = 4096;
    let scenario = h.state().state.scenario.clone();
    let machines = h.state().catalog().machines.len();

    run_command(&mut h, Command::Redetect);
    // "This machine" is now the CPU-only box; the scenario and the other machines are untouched.
    let fit = h
        .state_mut()
        .fit_of(LOCAL_MACHINE_ID)
        .expect("this machine");
    assert!(
        matches!(fit.verdict, Verdict::Cpu | Verdict::None),
        "{fit:?}"
    );
    assert_eq!(fit.gpus, 0);
    assert_eq!(h.state().state.scenario, scenario);
    assert_eq!(h.state().catalog().machines.len(), machines);
    let status = h.state().status_text().unwrap_or_default().to_string();
    assert!(status.starts_with("Detected no usable GPU"), "{status}");
    // And back again.
    let det = Arc::new(Sequence(Mutex::new(VecDeque::from([second, first]))));
    let mut h = harness(det, State::default());
    run_command(&mut h, Command::Redetect);
    assert_eq!(
        h.state_mut().fit_of(LOCAL_MACHINE_ID).unwrap().verdict,
        Verdict::Gpu
    );
}

// ---------------------------------------------------------------------------------- catalog

/// A path that cannot be a folder, even for root: below a regular file.
fn under_a_file(dir: &Path) -> PathBuf {
    let file = dir.join("plain-file");
    std::fs::write(&file, "not a folder").unwrap();
    file.join("headroom")
}

#[test]
fn an_unreadable_catalog_folder_leaves_the_built_in_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let builtin = headroom::io::catalog::builtin();

    let bad = under_a_file(tmp.path());
    let (cat, warnings) = headroom::io::catalog::load(Some(&bad));
    assert_eq!(cat, *builtin);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "{}: cannot list the user catalog folder",
            bad.display()
        )),
        "{warnings:?}"
    );

    // A folder with one file that cannot be read (not UTF-8), one too large, one that is a
    // folder, and one good file: the good one loads, each bad one is one warning.
    let dir = tmp.path().join("catalogs");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a-binary.ron"), [0xff, 0xfe, 0x00, 0x81]).unwrap();
    let huge = std::fs::File::create(dir.join("b-huge.ron")).unwrap();
    huge.set_len(64 << 30).unwrap(); // sparse: 64 GiB on paper, nothing on disk
    std::fs::create_dir(dir.join("c-folder.ron")).unwrap();
    let good = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog/valid_user.ron");
    std::fs::copy(&good, dir.join("d-good.ron")).unwrap();
    let (cat, warnings) = headroom::io::catalog::load(Some(&dir));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("a-binary.ron: cannot read the file"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("b-huge.ron: cannot read the file: the file is 64"),
        "{warnings:?}"
    );
    let (want, _) = headroom::io::catalog::load(Some(good.parent().unwrap()));
    assert!(cat.machines.len() > builtin.machines.len());
    assert!(cat.machines.len() <= want.machines.len());

    // Permission bits, where they apply (not for root).
    let locked = tmp.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::copy(&good, locked.join("good.ron")).unwrap();
    set_mode(&locked, 0o000);
    let readable = std::fs::read_dir(&locked).is_ok();
    let (cat, warnings) = headroom::io::catalog::load(Some(&locked));
    set_mode(&locked, 0o755);
    if !readable {
        assert_eq!(cat, *builtin);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("Permission denied"), "{warnings:?}");
    }
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}
#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) {}

// --------------------------------------------------------------------------------- settings

#[test]
fn a_settings_folder_that_cannot_be_written_is_said_and_the_app_keeps_working() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = harness(
        Arc::new(FakeDetector::cpu_only(Bytes::gib(64), Bytes::gib(48))),
        State::default(),
    );
    // A writable folder: nothing to say, and the probe file is gone.
    let ok = tmp.path().join("ok");
    assert_eq!(h.state_mut().check_settings_dir(Some(&ok)), None);
    assert_eq!(std::fs::read_dir(&ok).unwrap().count(), 0);

    let bad = under_a_file(tmp.path());
    let msg = h
        .state_mut()
        .check_settings_dir(Some(&bad))
        .expect("a message");
    assert!(
        msg.starts_with("Settings will not be saved between runs ("),
        "{msg}"
    );
    assert!(msg.contains(&bad.display().to_string()), "{msg}");
    assert!(!msg.contains('\n'));
    h.run();
    assert!(
        h.query_by_label_contains("Settings will not be saved")
            .is_some()
    );
    assert_eq!(
        h.state_mut()
            .check_settings_dir(None)
            .as_deref()
            .map(|m| m.contains("no folder")),
        Some(true)
    );

    // Read-only by permission bits, where they apply.
    let ro = tmp.path().join("read-only");
    std::fs::create_dir(&ro).unwrap();
    set_mode(&ro, 0o555);
    let root = std::fs::write(ro.join("x"), "x").is_ok();
    if !root {
        assert!(h.state_mut().check_settings_dir(Some(&ro)).is_some());
    }
    set_mode(&ro, 0o755);

    // The app keeps working: inputs change the numbers, and saving the scenario into the same
    // unwritable place fails with one line, the state intact.
    let before = h.state().state.clone();
    h.state_mut().state.scenario.context = 2048;
    h.run();
    let file = bad.join("scenario.ron");
    run_command(
        &mut h,
        Command::AtPath(FileAction::SaveScenario, file.clone()),
    );
    let status = h.state().status_text().unwrap().to_string();
    assert!(status.starts_with("Scenario not saved: "), "{status}");
    assert!(!status.contains('\n'), "{status}");
    assert_eq!(h.state().state.scenario.context, 2048);
    assert_eq!(h.state().state.scenario.model, before.scenario.model);
    run_command(
        &mut h,
        Command::AtPath(FileAction::ExportReport, bad.join("r.md")),
    );
    assert!(
        h.state()
            .status_text()
            .unwrap()
            .starts_with("Report not saved: ")
    );
}

// ------------------------------------------------------------------------------ dropped files

/// A file as the windowing integration hands it to egui: only its path is used.
#[derive(Debug)]
struct Dropped(PathBuf);

impl egui::DroppedFile for Dropped {
    fn path(&self) -> &Path {
        &self.0
    }
    fn bytes(&self) -> Result<Vec<u8>, String> {
        Err("headroom reads dropped files itself, by path".into())
    }
}

/// Drops `path` on the window as the OS would, and lets the job finish.
fn drop_file(h: &mut Harness<'static, HeadroomApp>, path: &Path) {
    h.input_mut()
        .dropped_files
        .push(Arc::new(Dropped(path.to_path_buf())));
    h.step(); // the drop becomes a command
    h.step(); // the command starts its job
    h.state_mut().wait_for_jobs(Duration::from_secs(20));
    h.run();
}

#[test]
fn malformed_and_huge_dropped_files_are_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = harness(
        Arc::new(FakeDetector::cpu_only(Bytes::gib(64), Bytes::gib(48))),
        State::default(),
    );
    h.state_mut().state.scenario.context = 3000;
    h.run();
    let scenario = h.state().state.scenario.clone();

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    // Each file in a folder of its own (a config.json reads the shards beside it).
    let own = |name: &str| {
        let d = tmp.path().join(format!("case-{name}"));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    };
    let sparse = |name: &str, head: &[u8], len: u64| {
        let p = own(name);
        std::fs::write(&p, head).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len)
            .unwrap();
        p
    };
    let huge_tensor_count = std::fs::read(fixtures.join("gguf_huge_tensor_count.gguf")).unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            {
                let p = own("garbage.gguf");
                std::fs::write(&p, b"GGUF\x03\x00\x00\x00 this is not a model").unwrap();
                p
            },
            "Import failed: garbage.gguf",
        ),
        (
            {
                let p = own("broken.ron");
                std::fs::write(&p, "(context: 4096, batch: \"many\"").unwrap();
                p
            },
            "Cannot open the scenario: ",
        ),
        (
            {
                let p = own("config.json");
                std::fs::write(&p, "{\"num_hidden_layers\": -3,").unwrap();
                p
            },
            "Import failed: config.json",
        ),
        (
            {
                let p = own("noise.bin");
                std::fs::write(&p, [0u8, 159, 146, 150, 7, 7, 7, 7, 7, 7]).unwrap();
                p
            },
            "Import failed: noise.bin",
        ),
        // 64 GiB on paper: a header claiming 2^60 tensors, then nothing.
        (
            sparse("huge.gguf", &huge_tensor_count, 64 << 30),
            "Import failed: huge.gguf",
        ),
        // 8 GiB of zeros that would be valid UTF-8: refused before it is read.
        (
            sparse("huge.ron", b"(", 8 << 30),
            "Cannot open the scenario: ",
        ),
        (
            sparse("huge-config.json", b"{", 8 << 30),
            "Import failed: huge-config.json",
        ),
        (
            sparse("huge.safetensors", &u64::MAX.to_le_bytes(), 64 << 30),
            "Import failed: huge.safetensors",
        ),
        (own("vanished.gguf"), "Import failed: vanished.gguf"),
    ];
    for (path, want) in cases {
        let t0 = std::time::Instant::now();
        drop_file(&mut h, &path);
        let status = h.state().status_text().unwrap_or_default().to_string();
        assert!(status.starts_with(want), "{}: {status}", path.display());
        assert!(!status.contains('\n'), "{status}");
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{}: {:?}",
            path.display(),
            t0.elapsed()
        );
        assert_eq!(h.state().state.scenario, scenario, "{}", path.display());
        if path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("huge")
        {
            assert!(
                status.contains("the file is")
                    || status.contains("2^")
                    || status.contains("exceeds"),
                "{status}"
            );
        }
    }
    // A good file dropped after all that still works.
    let good = tmp.path().join("good.ron");
    headroom::io::export::write_scenario(
        &good,
        &Scenario {
            context: 1234,
            ..Scenario::default()
        },
    )
    .unwrap();
    drop_file(&mut h, &good);
    assert_eq!(h.state().state.scenario.context, 1234);
}

// ------------------------------------------------------------------------------ calibration

#[test]
fn a_calibration_that_cannot_be_stored_or_read_is_one_line_and_changes_nothing() {
    use headroom::io::calibration::{FILE_NAME, load};
    let tmp = tempfile::tempdir().unwrap();
    let cat = headroom::io::catalog::builtin();
    let m = cat.machine("desktop-rtx4090-64gb").unwrap();
    let bench = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/llama-bench/rtx4090-llama2-7b-q4_0.json");
    // The config folder cannot be created (below a regular file): one line, nothing stored.
    let bad = under_a_file(tmp.path());
    let e =
        headroom::io::calibration::calibrate_file(&bench, m, cat, &bad, "2026-01-01").unwrap_err();
    assert!(e.starts_with("cannot store the calibration: "), "{e}");
    assert!(
        e.contains(&bad.display().to_string()) && !e.contains('\n'),
        "{e}"
    );
    // A stored file that is not a calibration, or is huge: an error naming it, never a panic.
    let dir = tmp.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(FILE_NAME), "{\"machine\": 3").unwrap();
    let e = load(&dir).unwrap_err();
    assert!(e.contains(FILE_NAME) && !e.contains('\n'), "{e}");
    let f = std::fs::File::create(dir.join(FILE_NAME)).unwrap();
    f.set_len(8 << 30).unwrap(); // 8 GiB of zeros on paper
    let t0 = std::time::Instant::now();
    let e = load(&dir).unwrap_err();
    assert!(e.contains(FILE_NAME) && e.contains("the file is"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
}
