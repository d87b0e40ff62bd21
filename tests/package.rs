//! Packaging: `headroom --version` (the version and the built-in catalogs' date from build.rs),
//! the desktop entry, and the files the Debian package takes from the repository.

use headroom::core::catalog::Price;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// ISO dates (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`) in a string, e.g. "undated, read 2026-11-30".
fn iso_dates(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .map(|t| t.trim_matches('-'))
        .filter(|t| {
            let parts: Vec<&str> = t.split('-').collect();
            matches!(parts.len(), 1..=3)
                && parts[0].len() == 4
                && parts[1..].iter().all(|p| p.len() == 2)
                && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn version_prints_the_crate_version_and_the_catalog_date() {
    let out = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .arg("--version")
        .output()
        .expect("run headroom --version");
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let prefix = format!("headroom {} (catalog ", env!("CARGO_PKG_VERSION"));
    let date = line
        .trim_end()
        .strip_prefix(&prefix)
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version line: {line:?}"));
    assert_eq!(iso_dates(date), [date], "not an ISO date: {date}");

    // Not older than any price date of the parsed built-in catalog...
    let newest_price = headroom::io::catalog::builtin()
        .machines
        .iter()
        .filter_map(|m| m.price.as_ref())
        .flat_map(|p| match p {
            Price::Hourly { price_date, .. } | Price::Purchase { price_date, .. } => {
                iso_dates(price_date)
            }
        })
        .max()
        .expect("the built-in catalog has dated prices");
    assert!(date >= newest_price.as_str(), "{date} < {newest_price}");
    // ...and written in one of the catalog files (a date field, not the build day).
    let written = std::fs::read_dir(Path::new(ROOT).join("catalogs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "ron"))
        .any(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .contains(&format!("{date}\""))
        });
    assert!(written, "{date} is in no catalogs/*.ron date field");
}

#[test]
fn desktop_entry_runs_the_binary_with_the_packaged_icon() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("assets/headroom.desktop")).unwrap();
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k}= in headroom.desktop"))
    };
    assert_eq!(text.lines().next(), Some("[Desktop Entry]"));
    assert_eq!(field("Type"), "Application");
    assert_eq!(field("Exec"), env!("CARGO_PKG_NAME"));
    assert_eq!(field("Terminal"), "false");
    // The window's X11 class (eframe's app id) is what StartupWMClass must match.
    assert_eq!(field("StartupWMClass"), "headroom");
    let icon = field("Icon");
    let cargo = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    for size in [
        "16x16", "32x32", "48x48", "64x64", "128x128", "256x256", "512x512",
    ] {
        let dest = format!("usr/share/icons/hicolor/{size}/apps/{icon}.png");
        assert!(cargo.contains(&dest), "Cargo.toml's deb assets lack {dest}");
    }
    assert!(cargo.contains(&format!("usr/share/icons/hicolor/scalable/apps/{icon}.svg")));
}

#[test]
fn deb_assets_exist_in_the_repository() {
    let cargo = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let block = cargo
        .split("[package.metadata.deb]")
        .nth(1)
        .expect("Cargo.toml has [package.metadata.deb]");
    let mut n = 0;
    for line in block
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("[\""))
    {
        let src = line[2..].split('"').next().unwrap();
        n += 1;
        if src.starts_with("target/") {
            continue; // built by cargo
        }
        let p = Path::new(ROOT).join(src);
        assert!(
            p.metadata().is_ok_and(|m| m.len() > 0),
            "{src} is missing or empty"
        );
        if let Some(size) = src
            .strip_prefix("assets/icon/headroom-")
            .and_then(|s| s.strip_suffix(".png"))
        {
            // A PNG of the size its hicolor folder says (IHDR width and height, big-endian).
            let png = std::fs::read(&p).unwrap();
            let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
            let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
            assert_eq!((w.to_string(), h), (size.to_string(), w), "{src}");
        }
    }
    assert!(n >= 12, "only {n} assets");
}
