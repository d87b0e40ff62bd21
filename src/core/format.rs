//! The one number formatter: every size, headroom, rate, time, count and price that the CLI,
//! the reports and the window show is written by a function here, so a value reads the same on
//! every surface. The rules (see also docs/architecture.md):
//!
//! - **Sizes** ([`bytes`]): binary units (KiB, MiB, GiB, TiB, PiB) with three significant
//!   figures: "512 MiB", "4.00 GiB", "14.0 GiB", "140 GiB"; below 1 KiB whole bytes ("900 B").
//!   [`bytes_gb`] is the same in decimal units (kB, MB, GB, …) for file sizes and vendor figures.
//! - **Headroom** ([`signed_bytes`]): a sign, then the size: "+13.0 GiB", "−1.50 GiB" (U+2212).
//! - **Rates** ([`rate`], [`tokens_per_s`]): "1,234", "123", "56.7", "3.21", "0.123".
//! - **Times** ([`duration`]): under 1 s in milliseconds ("250 ms"), under 10 s with two decimals
//!   ("2.40 s"), under 2 min with one ("31.5 s"), then minutes, hours and days with one decimal.
//! - **Counts** ([`group_digits`]): digits grouped by three, "1,234,567". Parameter magnitudes
//!   ([`params`]): "494M", "8.03B", "70.60B", "1.50T". Context lengths ([`tokens_short`]): "8K".
//! - **Prices** ([`usd`], [`usd_per_hour`]): "$1,234", "$12.34", then three significant figures
//!   below $1: "$0.526", "$0.0123"; purchases in whole dollars ([`usd_whole`]): "$1,999".
//! - **Bandwidth** ([`bandwidth`]): whole GB/s as vendors print them, "1008 GB/s".
//! - **Quality figures** ([`sig3`], [`signed_sig3`]): three significant figures, "KLD 0.0313",
//!   "ΔPPL +0.175"; top-token agreement ([`percent_tenths`]) "91.9 %".
//! - A value that does not exist or is not finite (NaN, ±∞, a rate of 0) is [`MISSING`], "—".

use super::units::{Bytes, GbPerSec};

/// What a table shows for a value that does not exist or is not a finite number.
pub const MISSING: &str = "—";

/// A size in binary units with three significant figures: "512 MiB", "4.00 GiB", "14.0 GiB".
pub fn bytes(b: Bytes) -> String {
    scaled(
        b.0 as f64,
        1024.0,
        &["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"],
    )
}

/// A used part of a capacity: "15.0 GiB / 24.0 GiB".
pub fn bytes_of(used: Bytes, capacity: Bytes) -> String {
    format!("{} / {}", bytes(used), bytes(capacity))
}

/// An image-generation row's GPU column: what the placement needs of one GPU, or a dash where
/// the pipeline runs on the CPU or the machine has no GPU.
pub fn image_gpu_use(f: &crate::core::diffusion::ImageFit) -> String {
    f.gpu_use()
        .map_or_else(|| MISSING.to_string(), |(used, cap)| bytes_of(used, cap))
}

/// An image-generation row's seconds per image and images per hour of the whole machine, or
/// dashes where the pipeline does not run there.
pub fn image_rates(f: &crate::core::diffusion::ImageFit) -> (String, String) {
    match &f.speed {
        Some(s) => (
            duration(s.seconds_per_image),
            rate(f.machine_images_per_hour),
        ),
        None => (MISSING.to_string(), MISSING.to_string()),
    }
}

/// A size in decimal units with three significant figures: "14.0 GB", "5.00 GB", "120 B".
pub fn bytes_gb(b: Bytes) -> String {
    scaled(
        b.0 as f64,
        1000.0,
        &["B", "kB", "MB", "GB", "TB", "PB", "EB"],
    )
}

fn scaled(b: f64, step: f64, units: &[&str]) -> String {
    let mut v = b;
    let mut i = 0;
    while v >= step && i < units.len() - 1 {
        v /= step;
        i += 1;
    }
    // Rounding may carry to the next unit: 1023.9 MiB prints as "1.00 GiB", not "1024 MiB".
    if i < units.len() - 1 && v >= step - 0.5 {
        v /= step;
        i += 1;
    }
    let unit = units[i];
    // The precision follows the rounded value: 9.996 GiB is "10.0 GiB", not "10.00 GiB".
    if i == 0 || v >= 99.95 {
        format!("{v:.0} {unit}")
    } else if v >= 9.995 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A signed size (headroom): "+13.0 GiB", "−1.50 GiB", "+0 B".
pub fn signed_bytes(b: i64) -> String {
    let mag = bytes(Bytes(b.unsigned_abs()));
    if b < 0 {
        format!("−{mag}")
    } else {
        format!("+{mag}")
    }
}

/// A rate (tokens per second, steps per second): "1,234", "123", "56.7", "3.21", "0.123";
/// [`MISSING`] when zero, negative or not finite.
pub fn rate(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        MISSING.into()
    } else if x >= 999.5 {
        group_digits(x.round() as u64)
    } else if x >= 99.95 {
        format!("{x:.0}")
    } else if x >= 9.995 {
        format!("{x:.1}")
    } else if x >= 0.9995 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A token rate with its unit: "56.7 tok/s"; [`MISSING`] when there is none.
pub fn tokens_per_s(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        MISSING.into()
    } else {
        format!("{} tok/s", rate(x))
    }
}

/// A duration in seconds: "250 ms", "2.40 s", "31.5 s", "3.5 min", "5.2 h", "3.1 days";
/// [`MISSING`] when zero, negative or not finite.
pub fn duration(s: f64) -> String {
    if !s.is_finite() || s <= 0.0 {
        MISSING.into()
    } else if s < 0.9995 {
        format!("{:.0} ms", (s * 1000.0).max(1.0))
    } else if s < 9.995 {
        format!("{s:.2} s")
    } else if s < 119.95 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 72.0 * 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86_400.0)
    }
}

/// A count and its noun: "1 machine", "8 machines", "1,024 replicas".
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group_digits(n), if n == 1 { one } else { many })
}

/// An image's size in pixels: "560²" when square, else "1036 × 756" (width × height).
pub fn image_dims(width: u64, height: u64) -> String {
    if width == height {
        format!("{width}²")
    } else {
        format!("{width} × {height}")
    }
}

/// Digits grouped by three: "1,234,567".
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A parameter (or token) count by magnitude: "8.03B", "70.60B", "1.50T", "494M", "1234".
pub fn params(p: u64) -> String {
    let x = p as f64;
    if x >= 1e12 {
        format!("{:.2}T", x / 1e12)
    } else if x >= 1e9 {
        format!("{:.2}B", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.0}M", x / 1e6)
    } else {
        format!("{p}")
    }
}

/// A context length as it is usually written: "256", "8K", "128K", "1M" (binary K and M).
pub fn tokens_short(t: u64) -> String {
    if t >= 1 << 20 && t.is_multiple_of(1 << 20) {
        format!("{}M", t >> 20)
    } else if t >= 1024 && t.is_multiple_of(1024) {
        format!("{}K", t >> 10)
    } else if t >= 10_000 {
        format!("{:.0}K", t as f64 / 1024.0)
    } else {
        t.to_string()
    }
}

/// US dollars: "$1,234", "$12.34" (cents from $1 up), three significant figures below $1
/// ("$0.526", "$0.0123", "$0.00423"), "$0.00" for zero; [`MISSING`] when unknown, negative or
/// not finite.
pub fn usd(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => {
            if v >= 999.5 {
                format!("${}", group_digits(v.round() as u64))
            } else if v >= 0.9995 || v == 0.0 {
                format!("${v:.2}")
            } else {
                // Three significant figures, at most six decimals.
                let decimals = (2 - v.log10().floor() as i32).clamp(2, 6) as usize;
                format!("${v:.decimals$}")
            }
        }
        _ => MISSING.into(),
    }
}

/// A purchase price in whole dollars: "$999", "$1,999"; [`MISSING`] when unknown.
pub fn usd_whole(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => format!("${}", group_digits(v.round() as u64)),
        _ => MISSING.into(),
    }
}

/// An hourly price: "$55.04/h", "$0.526/h"; [`MISSING`] when unknown.
pub fn usd_per_hour(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => format!("{}/h", usd(Some(v))),
        _ => MISSING.into(),
    }
}

/// A bandwidth in whole GB/s (10^9 bytes per second), as vendors print it: "1008 GB/s".
pub fn bandwidth(b: GbPerSec) -> String {
    if b.0.is_finite() && b.0 >= 0.0 {
        format!("{:.0} GB/s", b.0)
    } else {
        MISSING.into()
    }
}

/// A fraction as a whole percentage: 0.75 → "75 %".
pub fn percent(f: f64) -> String {
    if f.is_finite() {
        format!("{:.0} %", f * 100.0)
    } else {
        MISSING.into()
    }
}

/// A relative error as a signed whole percentage: 0.138 → "+14 %", −0.05 → "−5 %"; [`MISSING`]
/// when not finite.
pub fn signed_percent(f: f64) -> String {
    if !f.is_finite() {
        return MISSING.into();
    }
    let p = (f * 100.0).round();
    let sign = if p < 0.0 { "\u{2212}" } else { "+" };
    format!("{sign}{} %", p.abs())
}

/// A quality figure (a mean KL divergence, a perplexity) with three significant figures:
/// "0.0313", "0.000980", "0.445", "1.39", "14.1"; "0" for zero, [`MISSING`] when not finite.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return MISSING.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let decimals = (2 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{x:.decimals$}")
}

/// A signed quality difference (ΔPPL) with three significant figures: "+0.175", "−0.0021".
pub fn signed_sig3(x: f64) -> String {
    if !x.is_finite() {
        return MISSING.into();
    }
    let sign = if x < 0.0 { "\u{2212}" } else { "+" };
    format!("{sign}{}", sig3(x.abs()))
}

/// A percentage already in percent, with one decimal: 91.901 → "91.9 %".
pub fn percent_tenths(p: f64) -> String {
    if p.is_finite() {
        format!("{p:.1} %")
    } else {
        MISSING.into()
    }
}

// ---- The recommendations' sentences ----
//
// `core::recommend` writes its rates and prices with coarser rules than [`rate`] and [`usd`]:
// the precision follows the unrounded value (99.97 tok/s is "100.0", not "100"), prices of $100
// and more are whole dollars ("$500", where [`usd`] writes "$500.00"), and a missing value is an
// en dash "–" (not [`MISSING`]). Both are kept as they are so that no shown sentence changes;
// making the recommendations use [`rate`] and [`usd`] is a visible change of its own.

/// A rate in a recommendation: "1,234", "123", "56.7", "3.21", "0.012"; "–" when zero, negative
/// or not finite. The precision follows the unrounded value.
pub fn rate_coarse(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        "–".into()
    } else if x >= 1000.0 {
        group_digits(x.round() as u64)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Dollars in a recommendation: "$1,599", "$500", "$12.50", "$0.43", "$0.0420"; "–" when
/// negative or not finite.
pub fn usd_coarse(x: f64) -> String {
    if !x.is_finite() || x < 0.0 {
        "–".into()
    } else if x >= 100.0 {
        format!("${}", group_digits(x.round() as u64))
    } else if x >= 0.1 {
        format!("${x:.2}")
    } else {
        format!("${x:.4}")
    }
}

// ---- Fixed-precision figures in explanations, notes and tooltips ----

/// Dollars with cents, whatever the amount: "$1.86", "$0.53", "$1234.00" (the Machines tab's
/// tooltip gives an hourly price so).
pub fn usd_cents(x: f64) -> String {
    format!("${x:.2}")
}

/// Whole dollars without digit grouping: "$1999" (the Machines tab's tooltip gives a purchase
/// price so; tables use [`usd_whole`], "$1,999").
pub fn usd_ungrouped(x: f64) -> String {
    format!("${x:.0}")
}

/// A dollar amount as given, with the digits it has: "$0.15" for 0.15 (a setting's value).
pub fn usd_as_given(x: f64) -> String {
    format!("${x}")
}

/// A size in GiB with one decimal, whatever its magnitude: "24.0 GiB", "0.5 GiB" (detection's
/// notes compare VRAM sizes so).
pub fn gib_one_decimal(b: Bytes) -> String {
    format!("{:.1} GiB", b.0 as f64 / super::units::GIB as f64)
}

/// A measured bandwidth with one decimal: "31.4 GB/s" (the memory probe's result).
pub fn bandwidth_tenths(gbs: f64) -> String {
    format!("{gbs:.1} GB/s")
}

/// Milliseconds, whole: "250 ms".
pub fn millis(ms: f64) -> String {
    format!("{ms:.0} ms")
}

/// Milliseconds with two decimals: "1.25 ms" (frame times).
pub fn millis_hundredths(ms: f64) -> String {
    format!("{ms:.2} ms")
}

/// An efficiency multiplier with three decimals: "0.758" (a calibration's factors).
pub fn factor(x: f64) -> String {
    format!("{x:.3}")
}

/// A ratio as a multiple, three significant digits: "2.22×", "0.85×".
pub fn times(x: f64) -> String {
    if x.is_finite() {
        format!("{}×", sig3(x))
    } else {
        MISSING.into()
    }
}

/// A rate with one decimal, without grouping: "182.4" (a calibration's before and after).
pub fn rate_tenths(x: f64) -> String {
    format!("{x:.1}")
}

/// A rate in whole units, without grouping: "12538" (a calibration's before and after).
pub fn rate_whole(x: f64) -> String {
    format!("{x:.0}")
}

/// Bits per weight with two decimals: "4.85".
pub fn bits(x: f64) -> String {
    format!("{x:.2}")
}

/// Bits per weight with three decimals, as formulas show them: "4.500".
pub fn bits_exact(x: f64) -> String {
    format!("{x:.3}")
}

/// Bits with at most three decimals and no trailing zeros: "4.5", "16", "8.5" (the report's
/// scenario table).
pub fn bits_trimmed(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A value typed into an input, as an error or a clamp note shows it: whole numbers grouped
/// ("10,000,000"), others with up to four decimals and no trailing zeros ("0.05", "1.5"); "NaN",
/// "inf" and "-inf" as they are.
pub fn input_value(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == x.trunc() && x.abs() < 1e18 {
        let g = group_digits(x.abs() as u64);
        return if x < 0.0 { format!("-{g}") } else { g };
    }
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A coefficient of a formula with one decimal: "34.0".
pub fn coefficient(x: f64) -> String {
    format!("{x:.1}")
}

/// A fraction as a command-line value with two decimals: "0.90" (vLLM's
/// `--gpu-memory-utilization`).
pub fn fraction(x: f64) -> String {
    format!("{x:.2}")
}

/// A chart's axis tick in GiB: whole from 10 up or when whole ("20", "3"), else one decimal
/// ("2.5").
pub fn tick(v: f64) -> String {
    if v >= 10.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A tick of a log axis at `10^exp`, three significant figures and no trailing zeros: "0.001",
/// "0.02", "0.5", "1".
pub fn log_tick(exp: f64) -> String {
    let s = sig3(10f64.powf(exp));
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A coordinate in an SVG drawing, to a tenth of a pixel: "12.5".
pub fn svg_coord(x: f64) -> String {
    format!("{x:.1}")
}

/// A short, file-name-safe slug of a name: "Llama 3 8B (Instruct)" → "Llama-3-8B-Instruct".
/// Keeps ASCII letters, digits, `.` and `_`; runs of anything else become one `-`; at most 64
/// characters; "model" when nothing is left.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let t: String = out
        .trim_matches(|c| c == '-' || c == '.')
        .chars()
        .take(64)
        .collect();
    let t = t.trim_end_matches(['-', '.']).to_string();
    if t.is_empty() { "model".into() } else { t }
}

/// Text from a file or the network made safe for a one-line message on a terminal: control
/// characters (a newline, a NUL, ESC starting a terminal escape sequence, BEL) and the Unicode
/// characters that reorder or hide text — the bidirectional embeddings, overrides and isolates
/// U+202A–U+202E and U+2066–U+2069, the marks U+200E, U+200F and U+061C (Unicode Standard Annex
/// #9, "Explicit Directional Formatting Characters"; the "Trojan Source" attack, CVE-2021-42574)
/// and the line and paragraph separators U+2028, U+2029 — are written as escapes (`\n`,
/// `\u{1b}`, `\u{202e}`); everything else is kept. Every string from a file or a server that
/// is printed goes through this one function.
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(
                c,
                '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
                    | '\u{200e}'
                    | '\u{200f}'
                    | '\u{061c}'
                    | '\u{2028}'
                    | '\u{2029}'
            )
    }
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.extend(c.escape_unicode());
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A machine's network: "EFA 3,200 Gb/s (32 NICs)", "10 GbE-class Ethernet 10 Gb/s".
pub fn network(n: &crate::core::catalog::Network) -> String {
    let gbps = if n.gbps.fract() == 0.0 {
        group_digits(n.gbps.max(0.0) as u64)
    } else {
        format!("{:.1}", n.gbps)
    };
    if n.nics > 1 {
        format!("{} {gbps} Gb/s ({} NICs)", n.kind.label(), n.nics)
    } else {
        format!("{} {gbps} Gb/s", n.kind.label())
    }
}

/// A training run's length: "3.2 h", "4.5 days", "12 min", "40 s".
pub fn hours(h: f64) -> String {
    if !h.is_finite() || h <= 0.0 {
        "—".to_string()
    } else if h * 60.0 < 0.5 {
        format!("{:.0} s", (h * 3600.0).max(1.0))
    } else if h < 1.0 {
        format!("{:.0} min", h * 60.0)
    } else if h < 48.0 {
        format!("{h:.1} h")
    } else {
        format!("{:.1} days", h / 24.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::units::{GIB, MIB};

    #[test]
    fn hours_never_read_zero() {
        assert_eq!(hours(0.2), "12 min");
        assert_eq!(hours(0.005), "18 s");
        assert_eq!(hours(1e-6), "1 s");
        assert_eq!(hours(3.2), "3.2 h");
        assert_eq!(hours(0.0), "—");
    }

    #[test]
    fn one_line_escapes_control_characters_only() {
        assert_eq!(one_line("'24 GiB' is fine"), "'24 GiB' is fine");
        assert_eq!(
            one_line("'0\u{1}\0\n' is not a size"),
            "'0\\u{1}\\u{0}\\n' is not a size"
        );
        assert!(!one_line("a\r\nb\tc").contains(['\n', '\r', '\t']));
        assert_eq!(one_line("Grüße 8×H100"), "Grüße 8×H100");
        // Terminal escapes and text reordering.
        assert_eq!(one_line("a\u{1b}[31mb\u{7}"), "a\\u{1b}[31mb\\u{7}");
        for c in [
            '\u{202e}', '\u{202a}', '\u{2066}', '\u{2069}', '\u{200f}', '\u{2028}',
        ] {
            let t = one_line(&format!("x{c}y")).into_owned();
            assert!(!t.contains(c) && t.starts_with("x\\u{"), "{t}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(bytes(Bytes::ZERO), "0 B");
        assert_eq!(bytes(Bytes(1023)), "1023 B");
        assert_eq!(bytes(Bytes(512 * MIB)), "512 MiB");
        assert_eq!(bytes(Bytes::gib(4)), "4.00 GiB");
        assert_eq!(bytes(Bytes::gib(16)), "16.0 GiB");
        assert_eq!(bytes(Bytes(14_000_000_000)), "13.0 GiB");
        assert_eq!(bytes(Bytes::gib(140)), "140 GiB");
        // Rounding carries into the next unit instead of printing "1024 MiB".
        assert_eq!(bytes(Bytes(GIB - 1)), "1.00 GiB");
        // The largest value still has a unit.
        assert_eq!(bytes(Bytes::MAX), "16.0 EiB");
        assert_eq!(bytes_gb(Bytes(14_000_000_000)), "14.0 GB");
        assert_eq!(bytes_gb(Bytes(120)), "120 B");
    }

    #[test]
    fn headroom() {
        assert_eq!(signed_bytes(13 * GIB as i64), "+13.0 GiB");
        assert_eq!(signed_bytes(-(GIB as i64) * 3 / 2), "−1.50 GiB");
        assert_eq!(signed_bytes(0), "+0 B");
        assert_eq!(signed_bytes(i64::MIN), "−8.00 EiB");
    }

    #[test]
    fn rates() {
        assert_eq!(rate(1234.4), "1,234");
        assert_eq!(rate(123.4), "123");
        assert_eq!(rate(56.71), "56.7");
        assert_eq!(rate(3.214), "3.21");
        assert_eq!(rate(0.1234), "0.123");
        // On a boundary the rounded value picks the precision: 99.97 is "100", not "100.0".
        assert_eq!(rate(99.97), "100");
        assert_eq!(rate(9.999), "10.0");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(rate(bad), MISSING, "{bad}");
        }
        assert_eq!(tokens_per_s(56.71), "56.7 tok/s");
        assert_eq!(tokens_per_s(0.0), MISSING);
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0.25), "250 ms");
        assert_eq!(duration(0.0001), "1 ms");
        assert_eq!(duration(0.9999), "1.00 s");
        assert_eq!(duration(2.4), "2.40 s");
        assert_eq!(duration(31.47), "31.5 s");
        assert_eq!(duration(90.0), "90.0 s");
        assert_eq!(duration(210.0), "3.5 min");
        assert_eq!(duration(3.0 * 3600.0), "3.0 h");
        assert_eq!(duration(96.0 * 3600.0), "4.0 days");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(duration(bad), MISSING, "{bad}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1234), "1,234");
        assert_eq!(group_digits(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(params(8_030_261_248), "8.03B");
        assert_eq!(params(70_600_000_000), "70.60B");
        assert_eq!(params(1_500_000_000_000), "1.50T");
        assert_eq!(params(494_000_000), "494M");
        assert_eq!(params(1234), "1234");
        assert_eq!(tokens_short(8192), "8K");
        assert_eq!(tokens_short(1 << 20), "1M");
        assert_eq!(tokens_short(300), "300");
        assert_eq!(tokens_short(12_345), "12K");
    }

    #[test]
    fn prices() {
        assert_eq!(usd(Some(1234.4)), "$1,234");
        assert_eq!(usd(Some(12.344)), "$12.34");
        assert_eq!(usd(Some(0.5264)), "$0.526");
        assert_eq!(usd(Some(0.01234)), "$0.0123");
        assert_eq!(usd(Some(0.00423)), "$0.00423");
        assert_eq!(usd(Some(1e-9)), "$0.000000");
        assert_eq!(usd(Some(0.9996)), "$1.00");
        assert_eq!(usd(Some(0.0)), "$0.00");
        assert_eq!(usd(None), MISSING);
        assert_eq!(usd(Some(f64::NAN)), MISSING);
        assert_eq!(usd(Some(-1.0)), MISSING);
        assert_eq!(usd_per_hour(Some(55.04)), "$55.04/h");
        assert_eq!(usd_whole(Some(999.0)), "$999");
        assert_eq!(usd_whole(Some(1999.4)), "$1,999");
        assert_eq!(usd_whole(None), MISSING);
        assert_eq!(usd_per_hour(None), MISSING);
    }

    #[test]
    fn bandwidth_and_percent() {
        assert_eq!(bandwidth(GbPerSec(1008.0)), "1008 GB/s");
        assert_eq!(bandwidth(GbPerSec(f64::NAN)), MISSING);
        assert_eq!(percent(0.75), "75 %");
        assert_eq!(percent(f64::INFINITY), MISSING);
        assert_eq!(signed_percent(0.138), "+14 %");
        assert_eq!(signed_percent(-0.05), "\u{2212}5 %");
        assert_eq!(signed_percent(f64::NAN), MISSING);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Llama 3 8B (Instruct)"), "Llama-3-8B-Instruct");
        assert_eq!(slug("../../"), "model");
        assert_eq!(slug(""), "model");
        assert_eq!(slug(&"x".repeat(100)).len(), 64);
    }
}
