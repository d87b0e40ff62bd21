//! The "one formatter" fence: every number that headroom shows as text is written by a function
//! of `src/core/format.rs`, so a value reads the same in the window, on the command line and in
//! the reports. This test reads every `src/**/*.rs` except `core/format.rs` itself and fails when a
//! formatting macro there writes a number on its own.
//!
//! What it catches, in the format string of `format!`, `write!`, `writeln!`, `print!`,
//! `println!`, `eprint!`, `eprintln!`, `format_args!`, `panic!` and the estimate's `formula!`:
//! - a **precision** (`{:.1}`, `{x:.2}`, `{:>8.1}`, `{:.*}`, `{:.prec$}`): only numbers have one
//!   that changes their digits (a string's "precision" truncates it, which nothing here does);
//! - an **exponent** type (`{:e}`, `{:E}`);
//! - a **sign** flag (`{:+}`, `{:+.1}`): a signed number;
//! - and, in the macro's arguments, a fraction scaled to a **percentage** inline (`x * 100.0`,
//!   `100.0 * x`), the number a `{} %` would then show.
//!
//! What it does not catch (it reads tokens, not types): a float written with a plain `{}` or
//! `{:>8}` (its shortest round-trip digits), `f64::to_string`, and integers in hexadecimal
//! (`{:08x}`, offsets and magic numbers in diagnostics). Comments, `#[cfg(test)]` items and
//! test-only module files are not read.
//!
//! [`PENDING`] lists the hits in files another branch is restructuring; each count may only go
//! down (and then must be lowered here).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files whose inline number formatting moves to `core/format.rs` with the restructuring of
/// placement and speed on another branch (they are not edited on this one), with their number of
/// hits today. Lower a count when the file loses a hit; remove the row at zero.
const PENDING: &[(&str, usize)] = &[("src/core/speed/bench.rs", 4)];

const MACROS: &[&str] = &[
    "format",
    "write",
    "writeln",
    "print",
    "println",
    "eprint",
    "eprintln",
    "format_args",
    "panic",
    // core::estimate's `formula!(explain, "…", …)`: `format!` when the formula is asked for.
    "formula",
];

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    Str(String),
    Num(String),
}

/// Rust tokens (identifiers, punctuation, string and number literals) with their line numbers;
/// comments dropped, char literals and lifetimes skipped.
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some((text, end, lines)) = raw_string(&c, i) {
            out.push((Tok::Str(text), line));
            line += lines;
            i = end;
        } else if ch == '"' || (ch == 'b' && c.get(i + 1) == Some(&'"')) {
            let start_line = line;
            i += if ch == 'b' { 2 } else { 1 };
            let mut text = String::new();
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' && i + 1 < c.len() {
                    // Keep the escape as written: placeholders never contain one.
                    text.push(c[i]);
                    text.push(c[i + 1]);
                    if c[i + 1] == '\n' {
                        line += 1;
                    }
                    i += 2;
                    continue;
                }
                if c[i] == '\n' {
                    line += 1;
                }
                text.push(c[i]);
                i += 1;
            }
            i += 1;
            out.push((Tok::Str(text), start_line));
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{2212}') or a lifetime ('a): skip either.
            if c.get(i + 1) == Some(&'\\') {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_ascii_digit() {
            let mut text = String::new();
            while i < c.len()
                && (c[i].is_ascii_alphanumeric()
                    || c[i] == '_'
                    || (c[i] == '.' && c.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                text.push(c[i]);
                i += 1;
            }
            out.push((Tok::Num(text), line));
        } else if ch.is_alphabetic() || ch == '_' {
            let mut text = String::new();
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                text.push(c[i]);
                i += 1;
            }
            out.push((Tok::Ident(text), line));
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// A raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`: its text, the index after it and
/// the newlines inside.
fn raw_string(c: &[char], i: usize) -> Option<(String, usize, usize)> {
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    let start = j;
    loop {
        if j >= c.len() {
            return None;
        }
        if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
            let text: String = c[start..j].iter().collect();
            let lines = text.matches('\n').count();
            return Some((text, j + 1 + hashes, lines));
        }
        j += 1;
    }
}

/// The spec after `:` of every placeholder of a format string (`{{` and `}}` are literal braces).
fn placeholder_specs(fmt: &str) -> Vec<String> {
    let c: Vec<char> = fmt.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '{' if c.get(i + 1) == Some(&'{') => i += 2,
            '{' => {
                let end = (i..c.len()).find(|&j| c[j] == '}').unwrap_or(c.len());
                let inner: String = c[i + 1..end].iter().collect();
                if let Some((_, spec)) = inner.split_once(':') {
                    out.push(spec.to_string());
                }
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Why a placeholder spec formats a number, if it does (see the module docs).
fn number_spec(spec: &str) -> Option<&'static str> {
    let c: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let align = |x: Option<&char>| matches!(x, Some('<' | '^' | '>'));
    if align(c.get(1)) {
        i = 2;
    } else if align(c.first()) {
        i = 1;
    }
    if matches!(c.get(i), Some('+')) {
        return Some("a sign flag");
    }
    if matches!(c.get(i), Some('-')) {
        i += 1;
    }
    if c.get(i) == Some(&'#') {
        i += 1;
    }
    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '$') {
        i += 1;
    }
    if c.get(i) == Some(&'.') {
        return Some("a precision");
    }
    let ty: String = c[i..].iter().collect();
    if ty.ends_with('e') || ty.ends_with('E') {
        return Some("an exponent");
    }
    // A width or a name glued to the type (`{:8e}`) is read above; `x`, `?` and friends pass.
    let tail: String = spec.chars().skip_while(|ch| !ch.is_alphabetic()).collect();
    if tail == "e" || tail == "E" {
        return Some("an exponent");
    }
    None
}

/// The hits in one file's text: (line, why, the format string or argument).
fn hits(src: &str) -> Vec<(usize, String)> {
    let toks = tokens(src);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < toks.len() {
        let is_macro = matches!(&toks[i].0, Tok::Ident(n) if MACROS.contains(&n.as_str()))
            && toks[i + 1].0 == Tok::Punct('!')
            && matches!(toks[i + 2].0, Tok::Punct('(' | '[' | '{'))
            && !(i > 0 && toks[i - 1].0 == Tok::Punct('.'));
        if !is_macro {
            i += 1;
            continue;
        }
        // The macro's body, to the matching close.
        let mut depth = 0;
        let mut j = i + 2;
        let mut body = Vec::new();
        while j < toks.len() {
            match toks[j].0 {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            if j > i + 2 {
                body.push(&toks[j]);
            }
            j += 1;
        }
        let fmt = body.iter().position(|t| matches!(t.0, Tok::Str(_)));
        if let Some(f) = fmt {
            let (Tok::Str(text), line) = &body[f] else {
                unreachable!()
            };
            for spec in placeholder_specs(text) {
                if let Some(why) = number_spec(&spec) {
                    let shown: String = text.chars().take(60).collect();
                    out.push((*line, format!("{why} in {{:{spec}}} of \"{shown}…\"")));
                }
            }
            let args = &body[f + 1..];
            for w in args.windows(2) {
                let hundred = |t: &Tok| matches!(t, Tok::Num(n) if n == "100.0" || n == "100");
                if (w[0].0 == Tok::Punct('*') && hundred(&w[1].0))
                    || (hundred(&w[0].0) && w[1].0 == Tok::Punct('*'))
                {
                    out.push((w[0].1, "a percentage scaled inline (× 100)".to_string()));
                }
            }
        }
        i += 3;
    }
    out
}

/// The text of a file with its `#[cfg(test)]` items blanked (line numbers kept), and the names
/// of test-only module files it declares (`#[cfg(test)] mod tests;`).
fn without_tests(src: &str) -> (String, Vec<String>) {
    let lines: Vec<&str> = src.lines().collect();
    let mut keep = vec![true; lines.len()];
    let mut test_files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            i += 1;
            continue;
        }
        keep[i] = false;
        let mut j = i + 1;
        while j < lines.len() && lines[j].trim_start().starts_with("#[") {
            keep[j] = false;
            j += 1;
        }
        let Some(item) = lines.get(j) else { break };
        let indent = &item[..item.len() - item.trim_start().len()];
        let t = item.trim();
        if t.ends_with(';') {
            if let Some(name) = t
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .map(|n| n.trim_end_matches(';').trim())
            {
                test_files.push(name.to_string());
            }
            keep[j] = false;
            i = j + 1;
            continue;
        }
        let close = format!("{indent}}}");
        let mut k = j;
        while k < lines.len() {
            keep[k] = false;
            if k > j && lines[k] == close || (k == j && t.ends_with('}')) {
                break;
            }
            k += 1;
        }
        i = k + 1;
    }
    let text = lines
        .iter()
        .zip(&keep)
        .map(|(l, k)| if *k { *l } else { "" })
        .collect::<Vec<_>>()
        .join("\n");
    (text, test_files)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn numbers_are_formatted_only_in_core_format() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut test_only: Vec<PathBuf> = Vec::new();
    let mut found: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    let mut texts = Vec::new();
    for p in &files {
        let src = std::fs::read_to_string(p).unwrap();
        let (text, test_mods) = without_tests(&src);
        // `a/b.rs` declares its modules in `a/b/`, `a/mod.rs` and `lib.rs` in `a/`.
        let stem = p.file_stem().unwrap().to_string_lossy();
        let base = if stem == "mod" || stem == "lib" || stem == "main" {
            p.parent().unwrap().to_path_buf()
        } else {
            p.with_extension("")
        };
        for m in test_mods {
            test_only.push(base.join(format!("{m}.rs")));
            test_only.push(base.join(&m).join("mod.rs"));
        }
        texts.push((p.clone(), text));
    }
    assert!(texts.len() > 50, "only {} source files found", texts.len());
    for (p, text) in &texts {
        let rel = p
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "src/core/format.rs" || test_only.contains(p) {
            continue;
        }
        let h = hits(text);
        if !h.is_empty() {
            found.insert(rel, h);
        }
    }
    let mut report = Vec::new();
    for (file, h) in &found {
        let allowed = PENDING
            .iter()
            .find(|(f, _)| f == file)
            .map_or(0, |(_, n)| *n);
        if h.len() != allowed {
            for (line, why) in h {
                report.push(format!("{file}:{line}: {why}"));
            }
            if allowed > 0 {
                report.push(format!(
                    "{file}: {} hits, PENDING allows {allowed} (lower it when a hit goes)",
                    h.len()
                ));
            }
        }
    }
    for (file, n) in PENDING {
        if !found.contains_key(*file) {
            report.push(format!(
                "{file}: no hits left, PENDING allows {n}: remove its row"
            ));
        }
    }
    assert!(
        report.is_empty(),
        "numbers formatted outside src/core/format.rs (add or use a function there):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_fence_catches_each_rule() {
    let caught = |src: &str| hits(src).len();
    assert_eq!(caught(r#"let s = format!("{:.1} GiB", x);"#), 1);
    assert_eq!(caught(r#"let s = format!("{x:.2}");"#), 1);
    assert_eq!(caught(r#"write!(o, "{:>8.1} {:<6.0}", a, b);"#), 2);
    assert_eq!(caught(r#"format!("{:.*}", 2, x)"#), 1);
    assert_eq!(caught(r#"format!("{:.prec$}", x)"#), 1);
    assert_eq!(caught(r#"println!("{:e}", x)"#), 1);
    assert_eq!(caught(r#"println!("{x:E}")"#), 1);
    assert_eq!(caught(r#"eprintln!("{:+}", x)"#), 1);
    assert_eq!(caught(r#"format!("{} %", f * 100.0)"#), 1);
    assert_eq!(caught(r#"format!("{} %", (100.0 * f).round())"#), 1);
    assert_eq!(
        caught("writeln!(\n  o,\n  r##\"<x a=\"{:.1}\"/>\"##,\n  v\n)"),
        1
    );
    assert_eq!(hits("\n\nformat!(\"{:.1}\", x)")[0].0, 3);
}

#[test]
fn the_fence_passes_legit_code() {
    let caught = |src: &str| hits(src).len();
    assert_eq!(caught(r#"format!("{}", x)"#), 0);
    assert_eq!(caught(r#"format!("{:?} {:#?} {x:?}", a, b)"#), 0);
    assert_eq!(caught(r#"format!("{:<36} {:>8} {name:^5}", a, b)"#), 0);
    assert_eq!(caught(r#"format!("0x{v:08x} {:#x}", w)"#), 0);
    assert_eq!(caught(r#"format!("{{:.1}} is literal")"#), 0);
    assert_eq!(caught(r#"format!("{}", format::percent(f))"#), 0);
    assert_eq!(caught(r#"let v = x * 100.0;"#), 0);
    assert_eq!(
        caught("// format!(\"{:.1}\", x)\n/* write!(o, \"{:.2}\") */"),
        0
    );
    assert_eq!(caught(r#"let s = "{:.1}";"#), 0);
    assert_eq!(caught(r#"format!("{}-{}", 'a', '\'')"#), 0);
    assert_eq!(caught(r#"fn f<'a>(x: &'a str) { format!("{x}") }"#), 0);
    let (text, mods) = without_tests(
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { format!(\"{:.1}\", x); }\n}\n#[cfg(test)]\nmod more;\nfn c() {}",
    );
    assert_eq!(hits(&text).len(), 0);
    assert_eq!(mods, ["more"]);
    assert!(text.contains("fn c()") && text.contains("fn a()"));
}
