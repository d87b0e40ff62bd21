//! Sizes and rates as newtypes. Memory is counted in bytes (`u64`), shown in GiB (2^30) or GB (10^9).
//!
//! All arithmetic saturates: an absurd input (10^13 parameters × 10^7 tokens) gives `Bytes::MAX`,
//! never a wrap-around or a panic.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign};

/// A size in bytes.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const GB: u64 = 1_000_000_000;

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    pub const MAX: Bytes = Bytes(u64::MAX);

    pub const fn new(b: u64) -> Self {
        Bytes(b)
    }
    pub const fn mib(n: u64) -> Self {
        Bytes(n.saturating_mul(MIB))
    }
    pub const fn gib(n: u64) -> Self {
        Bytes(n.saturating_mul(GIB))
    }
    pub const fn gb(n: u64) -> Self {
        Bytes(n.saturating_mul(GB))
    }
    /// From a floating value (e.g. `params × bits / 8`): rounds up; NaN and negatives give 0,
    /// values beyond `u64::MAX` saturate.
    pub fn from_f64(x: f64) -> Self {
        if x.is_nan() || x <= 0.0 {
            Bytes(0)
        } else if x >= u64::MAX as f64 {
            Bytes::MAX
        } else {
            Bytes(x.ceil() as u64)
        }
    }
    /// GiB from a float (catalog values such as 10.67 GiB).
    pub fn from_gib_f64(x: f64) -> Self {
        Self::from_f64(x * GIB as f64)
    }
    pub fn from_gb_f64(x: f64) -> Self {
        Self::from_f64(x * GB as f64)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }
    pub fn as_gib(self) -> f64 {
        self.0 as f64 / GIB as f64
    }
    pub fn as_gb(self) -> f64 {
        self.0 as f64 / GB as f64
    }
    pub const fn saturating_add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
    pub const fn saturating_sub(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(o.0))
    }
    pub const fn saturating_mul(self, k: u64) -> Bytes {
        Bytes(self.0.saturating_mul(k))
    }
    /// Division rounding up; dividing by 0 gives the value unchanged (callers pass counts ≥ 1).
    pub const fn div_ceil(self, k: u64) -> Bytes {
        if k == 0 {
            self
        } else {
            Bytes(self.0.div_ceil(k))
        }
    }
    /// Scale by a non-negative factor (e.g. an efficiency or fraction), saturating.
    pub fn scale(self, f: f64) -> Bytes {
        Bytes::from_f64(self.0 as f64 * f)
    }
    /// Signed difference `self − other`, saturating at the i64 range.
    pub fn signed_sub(self, other: Bytes) -> i64 {
        let d = self.0 as i128 - other.0 as i128;
        d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
    /// Short human form in binary units: "14.0 GiB", "512 MiB" ([`crate::core::format::bytes`]).
    pub fn display_gib(self) -> String {
        super::format::bytes(self)
    }
    /// Short human form in decimal units: "14.0 GB".
    pub fn display_gb(self) -> String {
        super::format::bytes_gb(self)
    }
}

/// Formats a signed headroom: "+3.20 GiB" / "−1.50 GiB" (see [`crate::core::format`]).
pub fn display_signed_gib(b: i64) -> String {
    super::format::signed_bytes(b)
}

impl fmt::Display for Bytes {
    /// Binary units (GiB), the way memory is shown throughout headroom.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_gib())
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        self.saturating_add(o)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        *self = self.saturating_add(o);
    }
}
impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes::ZERO, |a, b| a + b)
    }
}

/// A bandwidth in GB/s (10^9 bytes per second), as vendors print it.
#[derive(Copy, Clone, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GbPerSec(pub f64);

impl GbPerSec {
    pub fn bytes_per_sec(self) -> f64 {
        if self.0.is_finite() && self.0 > 0.0 {
            self.0 * 1e9
        } else {
            0.0
        }
    }
}

impl fmt::Display for GbPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&super::format::bandwidth(*self))
    }
}

/// Multiply counts without overflow, returning `u64::MAX` when the product is out of range.
pub fn mul_sat(xs: &[u64]) -> u64 {
    xs.iter().fold(1u64, |a, &b| a.saturating_mul(b))
}

/// Parses a count with an optional suffix: `7e9`, `7B`, `70b`, `1.5T`, `500M`, `7000000000`.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    if t.is_empty() {
        return Err("empty number".into());
    }
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('B') | Some('G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        _ => (t.as_str(), 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number (try 7B, 70e9, 1.5T)"))?;
    let x = v * mult;
    if !x.is_finite() || x < 0.0 {
        return Err(format!("'{s}' is out of range"));
    }
    if x >= u64::MAX as f64 {
        return Err(format!("'{s}' is too large"));
    }
    Ok(x.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_units() {
        assert_eq!(Bytes::gib(16).display_gib(), "16.0 GiB");
        assert_eq!(Bytes(14_000_000_000).display_gb(), "14.0 GB");
        assert_eq!(Bytes(14_000_000_000).display_gib(), "13.0 GiB");
        assert_eq!(Bytes(512 * MIB).display_gib(), "512 MiB");
        assert_eq!(display_signed_gib(-(GIB as i64) * 3 / 2), "−1.50 GiB");
    }

    #[test]
    fn saturates() {
        assert_eq!(Bytes::MAX + Bytes(1), Bytes::MAX);
        assert_eq!(Bytes(1).saturating_sub(Bytes(2)), Bytes::ZERO);
        assert_eq!(Bytes::from_f64(f64::NAN), Bytes::ZERO);
        assert_eq!(Bytes::from_f64(1e300), Bytes::MAX);
        assert_eq!(Bytes(5).signed_sub(Bytes(7)), -2);
        assert_eq!(Bytes::MAX.signed_sub(Bytes::ZERO), i64::MAX);
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("7B").unwrap(), 7_000_000_000);
        assert_eq!(parse_count("70b").unwrap(), 70_000_000_000);
        assert_eq!(parse_count("7e9").unwrap(), 7_000_000_000);
        assert_eq!(parse_count("1.5T").unwrap(), 1_500_000_000_000);
        assert_eq!(parse_count("500M").unwrap(), 500_000_000);
        assert!(parse_count("seven").is_err());
        assert!(parse_count("-3").is_err());
        assert!(parse_count("1e30").is_err());
    }
}

/// Parses a size written with its unit: "24 GiB", "80 GB", "512 MiB", "1.5 TB", or plain bytes.
pub fn parse_size(s: &str) -> Result<Bytes, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size (write e.g. \"24 GiB\" or \"80 GB\")"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => KIB as f64,
        "mib" => MIB as f64,
        "gib" => GIB as f64,
        "tib" => (GIB as f64) * 1024.0,
        other => {
            return Err(format!(
                "unknown unit '{other}' in '{s}' (use B, MB, GB, TB, MiB, GiB, TiB)"
            ));
        }
    };
    let x = v * mult;
    if !x.is_finite() || x < 0.0 || x >= u64::MAX as f64 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(Bytes(x.round() as u64))
}

/// Serde for sizes written as strings with units in catalog files ("24 GiB"); integers are bytes.
pub mod size_str {
    use super::{Bytes, parse_size};
    use serde::{Deserialize, Deserializer, Serializer, de};

    pub fn serialize<S: Serializer>(b: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        let gib = b.0 as f64 / super::GIB as f64;
        if b.0.is_multiple_of(super::GIB) {
            s.serialize_str(&format!("{} GiB", b.0 / super::GIB))
        } else if b.0.is_multiple_of(super::GB) {
            s.serialize_str(&format!("{} GB", b.0 / super::GB))
        } else {
            s.serialize_str(&format!("{gib} GiB"))
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        N(u64),
        S(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Bytes(n)),
            Raw::S(s) => parse_size(&s).map_err(de::Error::custom),
        }
    }

    /// The same for `Option<Bytes>`.
    pub mod option {
        use super::*;
        pub fn serialize<S: Serializer>(b: &Option<Bytes>, s: S) -> Result<S::Ok, S::Error> {
            match b {
                Some(b) => super::serialize(b, s),
                None => s.serialize_none(),
            }
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
            Ok(Some(super::deserialize(d)?))
        }
    }
}
