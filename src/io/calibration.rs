//! `headroom calibrate`: read llama-bench output (`-o json`, `-o csv`, or its default Markdown
//! table), and store this machine's fitted efficiency multipliers in the config directory.
//!
//! The fit itself is pure (`core::speed::bench::calibrate`); this module reads the run, stores
//! the result and says what it changed ([`calibrate_file`]), for the CLI and the window alike.

use crate::core::catalog::{Catalog, Machine};
use crate::core::speed::bench::{
    BenchRun, Calibration, calibrate, predict_llama_bench, scenario_of_run,
};
use crate::core::speed::{Backend, SpeedConstants, Tuning};
use crate::io::export::atomic::write_atomic;
use std::path::{Path, PathBuf};

/// What [`calibrate_file`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibrated {
    /// The calibration, as stored.
    pub calibration: Calibration,
    /// Where it was stored.
    pub path: PathBuf,
    /// The llama-bench file, as shown in messages.
    pub file: String,
    /// The run's first model predicted with the default constants and with the calibrated ones.
    pub check: Option<BeforeAfter>,
}

/// Predicted (decode, prefill) tokens/s of one llama-bench model before and after calibrating.
#[derive(Clone, Debug, PartialEq)]
pub struct BeforeAfter {
    /// The model as llama-bench names it ("llama 7B Q4_0").
    pub model_type: String,
    pub before: (f64, f64),
    pub after: (f64, f64),
}

/// Calibrates `m` (in `cat`) from the llama-bench output in `file` and stores the result in
/// `dir`. Errors are one line naming the file (or the store that failed).
pub fn calibrate_file(
    file: &Path,
    m: &Machine,
    cat: &Catalog,
    dir: &Path,
    today: &str,
) -> Result<Calibrated, String> {
    let shown = file.display().to_string();
    let text = crate::io::read_text_limited(file, crate::io::limits::LLAMA_BENCH_FILE)
        .map_err(|e| format!("{shown}: {e}"))?;
    let runs = parse_llama_bench(&text).map_err(|e| format!("{shown}: {e}"))?;
    calibrate_runs(&runs, &shown, m, cat, dir, today)
}

/// [`calibrate_file`] of runs already read (`headroom verify --save-calibration`: the run it
/// made); `shown` names where they came from.
pub fn calibrate_runs(
    runs: &[BenchRun],
    shown: &str,
    m: &Machine,
    cat: &Catalog,
    dir: &Path,
    today: &str,
) -> Result<Calibrated, String> {
    let shown = shown.to_string();
    let constants = SpeedConstants::default();
    let calibration =
        calibrate(runs, m, cat, &constants, &shown, today).map_err(|e| format!("{shown}: {e}"))?;
    let path = save(dir, &calibration).map_err(|e| format!("cannot store the calibration: {e}"))?;
    // Before and after on the run's own first model.
    let check = runs.first().and_then(|run| {
        let s = scenario_of_run(run, cat)?;
        let predict = |tuning| predict_llama_bench(&s, m, cat, run.backend, tuning, &constants);
        Some(BeforeAfter {
            model_type: run.model_type.clone(),
            before: predict(Tuning::default()),
            after: predict(calibration.tuning),
        })
    });
    Ok(Calibrated {
        calibration,
        path,
        file: shown,
        check,
    })
}

/// File name of the stored calibration inside the config directory.
pub const FILE_NAME: &str = "calibration.json";

/// The config directory: `$HEADROOM_CONFIG_DIR` when set (tests, portable installs), else the
/// platform's (`~/.config/headroom` on Linux).
pub fn config_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("HEADROOM_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    directories::ProjectDirs::from("", "", "headroom").map(|d| d.config_dir().to_path_buf())
}

/// The stored calibration in `dir`, `Ok(None)` when there is none.
pub fn load(dir: &Path) -> Result<Option<Calibration>, String> {
    let path = dir.join(FILE_NAME);
    let text = match crate::io::read_text_limited(&path, crate::io::limits::JSON_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{}: not a headroom calibration ({e})", path.display()))
}

/// The stored calibration from the default config directory, if any (errors are reported as a
/// warning by callers and the calibration ignored).
pub fn load_default() -> Result<Option<Calibration>, String> {
    match config_dir() {
        Some(d) => load(&d),
        None => Ok(None),
    }
}

/// Store `c` in `dir` atomically (the folder is created when missing).
pub fn save(dir: &Path, c: &Calibration) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the config directory {}: {e}", dir.display()))?;
    let path = dir.join(FILE_NAME);
    let text = serde_json::to_string_pretty(c).map_err(|e| e.to_string())?;
    write_atomic(&path, text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Parse llama-bench output in any of its three formats. The error is one line.
pub fn parse_llama_bench(text: &str) -> Result<Vec<BenchRun>, String> {
    let t = text.trim_start_matches('\u{feff}').trim();
    if t.is_empty() {
        return Err("the file is empty".into());
    }
    let runs = if t.starts_with('[') || t.starts_with('{') {
        parse_json(t)?
    } else if t.lines().any(|l| l.trim_start().starts_with('|')) {
        parse_markdown(t)?
    } else if t.lines().next().is_some_and(|h| h.contains(',')) {
        parse_csv(t)?
    } else {
        return Err("not llama-bench output (expected its JSON, CSV or Markdown table)".into());
    };
    if runs.is_empty() {
        return Err("no llama-bench results in it".into());
    }
    Ok(runs)
}

fn backend_of(s: &str) -> Result<Backend, String> {
    Backend::from_llama_bench(s).ok_or_else(|| format!("unknown llama-bench backend '{s}'"))
}

fn parse_json(t: &str) -> Result<Vec<BenchRun>, String> {
    let v: serde_json::Value =
        serde_json::from_str(t).map_err(|e| format!("not valid JSON ({e})"))?;
    let arr = match &v {
        serde_json::Value::Array(a) => a.clone(),
        o @ serde_json::Value::Object(_) => vec![o.clone()],
        _ => return Err("not llama-bench JSON (expected an array of results)".into()),
    };
    let mut out = Vec::new();
    for (i, r) in arr.iter().enumerate() {
        let str_of = |k: &str| r.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let num = |k: &str| r.get(k).and_then(|x| x.as_f64());
        let (Some(model_type), Some(avg_ts)) = (str_of("model_type"), num("avg_ts")) else {
            return Err(format!(
                "not llama-bench JSON (result {} has no model_type / avg_ts)",
                i + 1
            ));
        };
        // Newer builds write "backends": "CUDA"; older ones flags ("cuda": true, …).
        let backend = match str_of("backends") {
            Some(b) => backend_of(&b)?,
            None => ["cuda", "vulkan", "metal", "sycl", "kompute"]
                .into_iter()
                .find(|k| r.get(*k).and_then(|x| x.as_bool()) == Some(true))
                .map(backend_of)
                .transpose()?
                .unwrap_or(Backend::Cpu),
        };
        let backend = if r.get("n_gpu_layers").and_then(|x| x.as_u64()) == Some(0) {
            Backend::Cpu
        } else {
            backend
        };
        out.push(BenchRun {
            model_type,
            model_size: num("model_size").unwrap_or(0.0) as u64,
            model_n_params: num("model_n_params").unwrap_or(0.0) as u64,
            backend,
            n_prompt: num("n_prompt").unwrap_or(0.0) as u64,
            n_gen: num("n_gen").unwrap_or(0.0) as u64,
            n_depth: num("n_depth").unwrap_or(0.0) as u64,
            avg_ts,
            date: str_of("test_time").unwrap_or_default(),
            build: str_of("build_commit").unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Split one CSV line (llama-bench quotes every field: `"CUDA","llama 7B Q4_0",…`).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn parse_csv(t: &str) -> Result<Vec<BenchRun>, String> {
    let mut lines = t.lines().filter(|l| !l.trim().is_empty());
    let header = csv_fields(lines.next().unwrap_or_default());
    let col = |n: &str| header.iter().position(|h| h.trim() == n);
    let (Some(mt), Some(ts)) = (col("model_type"), col("avg_ts")) else {
        return Err("not llama-bench CSV (no model_type / avg_ts column)".into());
    };
    let mut out = Vec::new();
    for (i, l) in lines.enumerate() {
        let f = csv_fields(l);
        let get = |c: Option<usize>| c.and_then(|c| f.get(c)).map(|s| s.trim().to_string());
        let num = |c: Option<usize>| get(c).and_then(|s| s.parse::<f64>().ok());
        let avg_ts = num(Some(ts)).ok_or_else(|| {
            format!(
                "not llama-bench CSV (row {}: avg_ts is not a number)",
                i + 2
            )
        })?;
        let backend = match get(col("backends")) {
            Some(b) if !b.is_empty() => backend_of(&b)?,
            _ => Backend::Cpu,
        };
        let backend = if num(col("n_gpu_layers")) == Some(0.0) {
            Backend::Cpu
        } else {
            backend
        };
        out.push(BenchRun {
            model_type: get(Some(mt)).unwrap_or_default(),
            model_size: num(col("model_size")).unwrap_or(0.0) as u64,
            model_n_params: num(col("model_n_params")).unwrap_or(0.0) as u64,
            backend,
            n_prompt: num(col("n_prompt")).unwrap_or(0.0) as u64,
            n_gen: num(col("n_gen")).unwrap_or(0.0) as u64,
            n_depth: num(col("n_depth")).unwrap_or(0.0) as u64,
            avg_ts,
            date: get(col("test_time")).unwrap_or_default(),
            build: get(col("build_commit")).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// "3.56 GiB" → bytes; "6.74 B" → count.
fn scaled(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let x: f64 = it.next()?.parse().ok()?;
    let m = match it.next().unwrap_or("") {
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        "K" => 1e3,
        "M" => 1e6,
        "B" | "G" => 1e9,
        "T" => 1e12,
        "" => 1.0,
        _ => return None,
    };
    Some(x * m)
}

fn parse_markdown(t: &str) -> Result<Vec<BenchRun>, String> {
    let rows: Vec<Vec<String>> = t
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    let Some(header) = rows.first() else {
        return Err("not a llama-bench table".into());
    };
    let col = |n: &str| header.iter().position(|h| h == n);
    let (Some(mc), Some(tc), Some(sc)) = (col("model"), col("test"), col("t/s")) else {
        return Err("not a llama-bench table (no model / test / t/s columns)".into());
    };
    let mut out = Vec::new();
    for r in rows.iter().skip(1) {
        if r.iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        {
            continue; // the separator line
        }
        let get = |c: Option<usize>| c.and_then(|c| r.get(c)).cloned().unwrap_or_default();
        let test = get(Some(tc));
        let avg_ts: f64 = get(Some(sc))
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| format!("not a llama-bench table (t/s '{}')", get(Some(sc))))?;
        // "pp512", "tg128", "pp512 @ d4096".
        let (kind, depth) = match test.split_once('@') {
            Some((a, b)) => (
                a.trim().to_string(),
                b.trim().trim_start_matches('d').parse().unwrap_or(0),
            ),
            None => (test.trim().to_string(), 0),
        };
        let n = |p: &str| kind.strip_prefix(p).and_then(|x| x.parse::<u64>().ok());
        let (n_prompt, n_gen) = match (n("pp"), n("tg")) {
            (Some(p), _) => (p, 0),
            (_, Some(g)) => (0, g),
            _ => continue, // pg tests and others: not used
        };
        let backend_s = get(col("backend"));
        let backend = if get(col("ngl")) == "0" {
            Backend::Cpu
        } else {
            backend_of(&backend_s)?
        };
        out.push(BenchRun {
            model_type: get(Some(mc)),
            model_size: scaled(&get(col("size"))).unwrap_or(0.0) as u64,
            model_n_params: scaled(&get(col("params"))).unwrap_or(0.0) as u64,
            backend,
            n_prompt,
            n_gen,
            n_depth: depth,
            avg_ts,
            date: String::new(),
            build: String::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_table() {
        let t = "| model                          |       size |     params | backend    | ngl |          test |                  t/s |\n| ------------------------------ | ---------: | ---------: | ---------- | --: | ------------: | -------------------: |\n| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         pp512 |      4849.53 ± 10.2 |\n| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         tg128 |        190.88 ± 0.5 |\n\nbuild: 9c35706 (1234)\n";
        let r = parse_llama_bench(t).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].n_prompt, 512);
        assert_eq!(r[1].n_gen, 128);
        assert_eq!(r[1].avg_ts, 190.88);
        assert_eq!(r[0].backend, Backend::Cuda);
        assert!((r[0].model_size as f64 - 3.56 * 1024f64.powi(3)).abs() < 1e6);
        assert_eq!(r[0].model_n_params, 6_740_000_000);
    }

    #[test]
    fn csv_table() {
        let t = "\"build_commit\",\"backends\",\"model_type\",\"model_size\",\"model_n_params\",\"n_gpu_layers\",\"n_prompt\",\"n_gen\",\"test_time\",\"avg_ts\"\n\"9c35706\",\"Metal,BLAS\",\"llama 7B Q4_0\",\"3825065984\",\"6738415616\",\"99\",\"512\",\"0\",\"2025-08-01T10:00:00Z\",\"1238.480000\"\n";
        let r = parse_llama_bench(t).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].backend, Backend::Metal);
        assert_eq!(r[0].date, "2025-08-01T10:00:00Z");
        assert_eq!(r[0].model_size, 3_825_065_984);
    }

    #[test]
    fn foreign_files_are_one_line_errors() {
        for t in [
            "",
            "hello world",
            "{\"a\": 1}",
            "[1, 2]",
            "a,b\n1,2",
            "| x | y |\n|---|---|\n| 1 | 2 |",
        ] {
            let e = parse_llama_bench(t).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
