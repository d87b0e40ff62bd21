//! `headroom verify`'s outside world: where llama-bench is, the command line it runs with the
//! settings headroom recommends, running it (bounded in time, its log streamed as progress), and
//! reading the buffers llama.cpp logged. The comparison is `core::verify`'s.
//!
//! Ctrl-C stops both: a terminal sends SIGINT to the whole foreground process group, llama-bench
//! included, so nothing is left running.

use crate::core::fit::{FitResult, Verdict};
use crate::core::scenario::{LaunchInputs, Scenario};
use crate::core::units::Bytes;
use crate::core::verify::LoggedBuffers;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Tokens the tg test generates (llama-bench's default `-n`, tools/llama-bench/README.md).
pub const N_GEN: u64 = 128;
/// Times each test runs when not asked (`-r`; llama-bench's own default is 5).
pub const DEFAULT_REPETITIONS: u32 = 3;
/// Seconds llama-bench may run when not asked (`headroom verify --timeout`, the window).
pub const DEFAULT_TIMEOUT_S: u64 = 600;

/// Most bytes of llama-bench's JSON and log kept (a run prints a few KiB; `-v` a few hundred).
const OUTPUT_LIMIT: usize = 16 << 20;

/// The llama-bench to run: `given`, or `llama-bench` on `PATH`. One line naming what is missing.
pub fn find_llama_bench(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = given {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("--llama-bench {}: no such file", p.display()))
        };
    }
    let names: &[&str] = if cfg!(windows) {
        &["llama-bench.exe"]
    } else {
        &["llama-bench"]
    };
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "llama-bench is not on PATH: install llama.cpp (its tools include llama-bench) or give --llama-bench PATH".into()
        })
}

/// What llama-bench is asked to run.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchPlan {
    /// Its arguments (without the program).
    pub args: Vec<String>,
    pub n_prompt: u64,
    pub n_gen: u64,
    /// The split the arguments ask for (`-ngl`, `--n-cpu-moe`), for the prediction.
    pub launch: LaunchInputs,
}

/// llama-bench with the settings of `fit` (the scenario `s` on this machine): the layers on the
/// GPU (`-ngl`, and `-ncmoe` for an expert split), FlashAttention, the KV cache types, the
/// ubatch and threads; a pp test of the scenario's prompt (at most its context) and a tg test of
/// `n_gen` tokens, `repetitions` times each, JSON on stdout and llama.cpp's log (`-v`, with the
/// buffer sizes) on stderr. Flags as tools/llama-bench/README.md lists them.
pub fn plan(
    s: &Scenario,
    fit: &FitResult,
    model: &Path,
    n_gen: u64,
    repetitions: u32,
) -> BenchPlan {
    let sc = s.clamped();
    let n_prompt = sc.prompt_tokens.clamp(1, sc.context.max(1));
    let (ngl, ncmoe) = match (&fit.expert_split, fit.verdict) {
        (Some(x), Verdict::Offload) => (999, Some(x.cpu_moe_layers)),
        (_, Verdict::Cpu) => (0, None),
        _ if fit.gpu_layers >= fit.total_layers => (999, None),
        _ => (fit.gpu_layers, None),
    };
    let launch = LaunchInputs {
        gpu_layers: ncmoe.is_none().then_some(ngl),
        n_cpu_moe: ncmoe,
        threads: sc.launch.threads,
        tensor_split: sc.launch.tensor_split.clone(),
        prefill_step: None,
    };
    let ctk = super::export::launch::llama_cache_type(sc.kv.k);
    let ctv = super::export::launch::llama_cache_type(sc.kv.v);
    let mut args: Vec<String> = vec![
        "-m".into(),
        model.display().to_string(),
        "-p".into(),
        n_prompt.to_string(),
        "-n".into(),
        n_gen.to_string(),
        "-ngl".into(),
        ngl.to_string(),
    ];
    if let Some(n) = ncmoe {
        args.extend(["-ncmoe".into(), n.to_string()]);
    }
    args.extend([
        "-fa".into(),
        if sc.flash_attention { "1" } else { "0" }.into(),
        "-ctk".into(),
        ctk.into(),
        "-ctv".into(),
        ctv.into(),
        "-ub".into(),
        sc.ubatch.to_string(),
    ]);
    if let Some(t) = sc.launch.threads {
        args.extend(["-t".into(), t.to_string()]);
    }
    if !sc.launch.tensor_split.is_empty() {
        let ts: Vec<String> = sc
            .launch
            .tensor_split
            .iter()
            .map(ToString::to_string)
            .collect();
        args.extend(["-ts".into(), ts.join("/")]);
    }
    args.extend([
        "-r".into(),
        repetitions.max(1).to_string(),
        "-o".into(),
        "json".into(),
        "-v".into(),
    ]);
    BenchPlan {
        args,
        n_prompt,
        n_gen,
        launch,
    }
}

/// What a finished run printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// stdout: the JSON results.
    pub stdout: String,
    /// stderr: llama.cpp's log.
    pub log: String,
}

/// Whether a log line is worth showing as progress: what llama.cpp allocated, how many layers it
/// offloaded, llama-bench's own messages and errors.
fn is_progress(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    l.contains("buffer size")
        || l.contains("offloaded")
        || l.starts_with("llama-bench")
        || l.contains("error")
        || l.contains("failed")
}

/// How long the log is read after llama-bench exits (the pipe normally ends at once).
const LOG_DRAIN: Duration = Duration::from_secs(5);

/// One stderr line: handed to `progress` when it is one, kept in the log up to the limit.
fn take_line(line: String, log: &mut String, progress: &mut impl FnMut(&str)) {
    if is_progress(&line) {
        progress(line.trim());
    }
    if log.len() + line.len() < OUTPUT_LIMIT {
        log.push_str(&line);
        log.push('\n');
    }
}

/// Runs `program args`, at most `timeout`: stdout collected, each stderr line collected and the
/// progress lines handed to `progress`, with a line every `tick` saying how long it has run.
/// One-line errors: it could not start, it ran past the timeout (it is then stopped), it failed.
pub fn run(
    program: &Path,
    args: &[String],
    timeout: Duration,
    tick: Duration,
    progress: impl FnMut(&str),
) -> Result<RunOutput, String> {
    run_cancellable(program, args, timeout, tick, None, progress)
}

/// What a run stopped by its `cancel` flag returns (the window's Cancel).
pub const CANCELLED: &str = "llama-bench was cancelled: stopped";

/// [`run`], also stopped (within about 50 ms) once `cancel` is set: the window's Cancel, where
/// no terminal sends SIGINT.
pub fn run_cancellable(
    program: &Path,
    args: &[String],
    timeout: Duration,
    tick: Duration,
    cancel: Option<&AtomicBool>,
    mut progress: impl FnMut(&str),
) -> Result<RunOutput, String> {
    let shown = program.display().to_string();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{shown}: cannot start it ({e})"))?;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let err = child.stderr.take().ok_or("no stderr")?;
    let stdout = std::thread::Builder::new()
        .name("llama-bench stdout".into())
        .spawn(move || {
            let mut buf = Vec::new();
            let _ = out.by_ref().take(OUTPUT_LIMIT as u64).read_to_end(&mut buf);
            // Whatever is past the limit is drained so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut out, &mut std::io::sink());
            String::from_utf8_lossy(&buf).into_owned()
        })
        .map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::channel::<String>();
    let _stderr = std::thread::Builder::new()
        .name("llama-bench stderr".into())
        .spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut next_tick = tick;
    let mut log = String::new();
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => take_line(line, &mut log, &mut progress),
            // stderr closed but the process still running: wait without spinning.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(st) = child.try_wait().map_err(|e| format!("{shown}: {e}"))? {
            break st;
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CANCELLED.into());
        }
        let ran = start.elapsed();
        if ran >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "llama-bench did not finish within {} (--timeout): stopped",
                crate::core::format::duration(timeout.as_secs_f64())
            ));
        }
        if ran >= next_tick {
            progress(&format!(
                "running for {} of at most {}",
                crate::core::format::duration(ran.as_secs_f64()),
                crate::core::format::duration(timeout.as_secs_f64())
            ));
            next_tick += tick;
        }
    };
    // The rest of the log, after the exit: every line until the reader reaches the end of the
    // pipe (a loaded machine may deliver them well after the exit), shown like the earlier ones;
    // at most a few seconds, in case something the child started still holds the pipe open.
    let drain_until = Instant::now() + LOG_DRAIN;
    while let Some(left) = drain_until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => take_line(line, &mut log, &mut progress),
            Err(_) => break,
        }
    }
    let stdout = stdout.join().unwrap_or_default();
    if !status.success() {
        let last = log
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(format!(
            "llama-bench failed ({status}): {}",
            crate::core::format::one_line(last.trim())
        ));
    }
    Ok(RunOutput { stdout, log })
}

/// A finished llama-bench run beside the prediction.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// llama-bench's tests, as `headroom calibrate` reads them.
    pub runs: Vec<crate::core::speed::bench::BenchRun>,
    pub logged: LoggedBuffers,
    /// The context memory is predicted at: the log's largest `n_ctx`, else the larger test.
    pub n_ctx: u64,
    /// Speeds, then memory.
    pub rows: Vec<crate::core::verify::Row>,
    /// llama.cpp's build, as the JSON names it.
    pub build: String,
}

/// Reads a finished run of `plan` (its JSON and log) and puts the prediction for `s` on machine
/// `m` beside it (`st`: the model's own constants; a stored calibration would compare the run
/// with itself). Shared by `headroom verify` and the window's Verify. One-line error when the
/// JSON cannot be read.
pub fn compare(
    s: &Scenario,
    m: &crate::core::catalog::Machine,
    cat: &crate::core::catalog::Catalog,
    st: &crate::core::fit::FitSettings,
    plan: &BenchPlan,
    out: &RunOutput,
) -> Result<Compared, String> {
    use crate::core::verify::{bench_estimate, predicted_speeds, rows};
    let runs = super::calibration::parse_llama_bench(&out.stdout)
        .map_err(|e| format!("llama-bench's JSON output: {e}"))?;
    let logged = parse_log(&out.log);
    let n_ctx = logged.n_ctx.unwrap_or(plan.n_prompt.max(plan.n_gen)).max(1);
    let est = bench_estimate(s, &plan.launch, n_ctx);
    let predicted = predicted_speeds(s, m, cat, st, &plan.launch, plan.n_prompt, plan.n_gen);
    let table = rows(predicted, &runs, &est, &logged);
    let build = runs.first().map(|r| r.build.clone()).unwrap_or_default();
    Ok(Compared {
        runs,
        logged,
        n_ctx,
        rows: table,
        build,
    })
}

/// The number before "MiB" after the last `=` of a buffer line ("… buffer size =  4168.09 MiB").
fn mib_after_eq(line: &str) -> Option<Bytes> {
    let (_, v) = line.rsplit_once('=')?;
    let v = v.trim();
    let num = v.strip_suffix("MiB").unwrap_or(v).trim();
    let x: f64 = num.parse().ok()?;
    (x.is_finite() && x >= 0.0).then(|| Bytes((x * (1u64 << 20) as f64).round() as u64))
}

/// The device before `what` in a buffer line ("load_tensors:   CUDA0 model buffer size = …").
fn device_before<'a>(line: &'a str, what: &str) -> Option<&'a str> {
    let head = &line[..line.find(what)?];
    head.split_whitespace().last().filter(|d| !d.ends_with(':'))
}

/// The buffers llama.cpp logged (llama-bench `-v`): the first model load's `model buffer size`
/// lines (`src/llama-model.cpp` `load_tensors`), and of the contexts llama-bench created (one
/// per test; `n_ctx` from `llama_context: n_ctx = N`) the largest one's `KV buffer size`
/// (`src/llama-kv-cache.cpp`; older builds: `KV self size`) and `compute buffer size`
/// (`src/llama-context.cpp`) lines, every device together.
pub fn parse_log(text: &str) -> LoggedBuffers {
    #[derive(Default, Clone, Copy)]
    struct Ctx {
        n_ctx: Option<u64>,
        kv: u64,
        kv_self: u64,
        compute: u64,
        computed: bool,
    }
    let mut out = LoggedBuffers::default();
    let mut model_done = false;
    let mut contexts: Vec<Ctx> = Vec::new();
    let mut cur = Ctx::default();
    let mut open = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        if line.contains("model buffer size") {
            let (Some(dev), Some(b)) =
                (device_before(line, "model buffer size"), mib_after_eq(line))
            else {
                continue;
            };
            // A device seen again: a later model load (llama-bench reloads for other settings).
            if out.model.iter().any(|(d, _)| d == dev) {
                model_done = true;
            }
            if !model_done {
                out.model.push((dev.to_string(), b));
            }
            continue;
        }
        let starts_context =
            line.contains("n_ctx ") && line.contains('=') && !line.contains("n_ctx_");
        let kv_line = line.contains("KV buffer size");
        // A new context: its n_ctx line, or KV lines after the last one's compute buffers.
        if starts_context || (kv_line && cur.computed) {
            if open {
                contexts.push(cur);
            }
            cur = Ctx::default();
            open = true;
        }
        if starts_context {
            cur.n_ctx = line
                .rsplit_once('=')
                .and_then(|(_, v)| v.trim().parse::<u64>().ok());
        } else if kv_line {
            cur.kv += mib_after_eq(line).map_or(0, |b| b.0);
            open = true;
        } else if line.contains("KV self size") {
            // "KV self size  =  256.00 MiB, K (f16): …": the total before the first comma.
            let head = line.split(',').next().unwrap_or(line);
            cur.kv_self += mib_after_eq(head).map_or(0, |b| b.0);
            open = true;
        } else if line.contains("compute buffer size") {
            cur.compute += mib_after_eq(line).map_or(0, |b| b.0);
            cur.computed = true;
            open = true;
        }
    }
    if open {
        contexts.push(cur);
    }
    let kv_of = |c: &Ctx| if c.kv > 0 { c.kv } else { c.kv_self };
    if let Some(c) = contexts
        .iter()
        .filter(|c| kv_of(c) > 0 || c.compute > 0)
        .max_by_key(|c| (c.n_ctx.unwrap_or(0), kv_of(c)))
    {
        out.n_ctx = c.n_ctx;
        out.kv = Bytes(kv_of(c));
        out.compute = Bytes(c.compute);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as llama.cpp prints them for Qwen2.5-7B Q4_K_M on one CUDA GPU at n_ctx 512 and 128
    /// (one context per llama-bench test).
    #[test]
    fn buffers_of_a_bench_log() {
        let log = "\
load_tensors: offloaded 29/29 layers to GPU
load_tensors:        CUDA0 model buffer size =  4168.09 MiB
load_tensors:   CPU_Mapped model buffer size =   292.36 MiB
llama_context: n_ctx         = 512
llama_context: n_ctx_seq     = 512
llama_kv_cache:      CUDA0 KV buffer size =    28.00 MiB
llama_context:      CUDA0 compute buffer size =   304.00 MiB
llama_context:  CUDA_Host compute buffer size =     8.01 MiB
llama_context: n_ctx         = 256
llama_kv_cache:      CUDA0 KV buffer size =    14.00 MiB
llama_context:      CUDA0 compute buffer size =   300.00 MiB
";
        let b = parse_log(log);
        let mib = |x: f64| Bytes((x * 1048576.0).round() as u64);
        assert_eq!(
            b.model,
            [
                ("CUDA0".to_string(), mib(4168.09)),
                ("CPU_Mapped".to_string(), mib(292.36))
            ]
        );
        assert_eq!(b.n_ctx, Some(512));
        assert_eq!(b.kv, mib(28.0));
        assert_eq!(b.compute, Bytes(mib(304.0).0 + mib(8.01).0));
    }

    /// Older builds: `llm_load_tensors: CUDA0 buffer size` (no "model") is not read; `KV self
    /// size` stands in for per-device KV lines only when there are none.
    #[test]
    fn older_log_lines() {
        let log = "\
llama_new_context_with_model: n_ctx      = 2048
llama_kv_cache_init:  CUDA_Host KV buffer size =   352.12 MiB
llama_kv_cache_init:      CUDA0 KV buffer size =   304.12 MiB
llama_new_context_with_model: KV self size  =  656.25 MiB, K (f16):  328.12 MiB, V (f16):  328.12 MiB
llama_new_context_with_model:      CUDA0 compute buffer size =   669.48 MiB
";
        let b = parse_log(log);
        assert_eq!(b.n_ctx, Some(2048));
        let mib = |x: f64| (x * 1048576.0).round() as u64;
        assert_eq!(b.kv.0, mib(352.12) + mib(304.12));
        assert_eq!(b.compute.0, mib(669.48));
        assert!(b.model.is_empty());
        let only_self = parse_log(
            "x: KV self size  =  256.00 MiB, K (f16):  128.00 MiB, V (f16):  128.00 MiB\n",
        );
        assert_eq!(only_self.kv, Bytes(256 << 20));
        assert!(parse_log("nothing here\n").is_empty());
    }
}
