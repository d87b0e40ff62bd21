//! Build script: the built-in catalogs' date for `headroom --version`.
//!
//! The catalog date is the newest calendar date written in any `*date` field (`price_date` on
//! machines, `date` on measured rows) of the RON files in `catalogs/`: the day the data was last
//! read from its sources. It is exported as `HEADROOM_CATALOG_DATE` (`unknown` when no file has a
//! date). Dates are ISO `YYYY`, `YYYY-MM` or `YYYY-MM-DD` anywhere in the field's string (e.g.
//! `"undated, read 2026-11-30"`); ISO strings compare in date order as text. See CONTRIBUTING.md.

use std::fs;
use std::path::Path;

fn main() {
    let dir = Path::new("catalogs");
    println!("cargo:rerun-if-changed=catalogs");
    let mut newest: Option<String> = None;
    let mut files: Vec<_> = fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
    {
        println!("cargo:rerun-if-changed={}", path.display());
        let Ok(text) = fs::read_to_string(path) else {
            continue;
        };
        for value in date_fields(&text) {
            for d in iso_dates(value) {
                if newest.as_ref().is_none_or(|n| d > *n) {
                    newest = Some(d);
                }
            }
        }
    }
    let date = newest.unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=HEADROOM_CATALOG_DATE={date}");
}

/// The string values of fields whose name ends in `date`: `price_date: "2025-06"` gives `2025-06`.
fn date_fields(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("date") {
        let after = rest[i + 4..].trim_start();
        rest = &rest[i + 4..];
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let Some(after) = after.trim_start().strip_prefix('"') else {
            continue;
        };
        if let Some(end) = after.find('"') {
            out.push(&after[..end]);
        }
    }
    out
}

/// ISO dates in a string: runs of `YYYY`, `YYYY-MM` or `YYYY-MM-DD` (years 1990-2099).
fn iso_dates(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| {
        from + n <= b.len() && b[from..from + n].iter().all(u8::is_ascii_digit)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !b[i - 1].is_ascii_digit();
        if boundary && digits(i, 4) && !digits(i + 4, 1) {
            let year: u32 = s[i..i + 4].parse().unwrap_or(0);
            if (1990..2100).contains(&year) {
                let mut end = i + 4;
                if b.get(end) == Some(&b'-') && digits(end + 1, 2) && !digits(end + 3, 1) {
                    end += 3;
                    if b.get(end) == Some(&b'-') && digits(end + 1, 2) && !digits(end + 3, 1) {
                        end += 3;
                    }
                }
                out.push(s[i..end].to_string());
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}
