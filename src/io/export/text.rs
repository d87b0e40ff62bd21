//! Escaping and number formatting shared by the report renderers and the launch settings.
//! Text from model files and catalogs is untrusted: every renderer escapes it for its format.

use crate::core::estimate::group_digits;
use crate::core::units::Bytes;

/// Escape text for HTML element content and attribute values.
pub(crate) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Escape text for Markdown (inline and inside table cells): characters that start emphasis,
/// links, code, raw HTML or a cell boundary are backslash-escaped; line breaks become spaces so
/// a name cannot start a new block. Underscores inside a word (`Q4_K_M`) never start emphasis
/// in CommonMark and are left alone.
pub(crate) fn md(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            '_' => {
                let prev = i
                    .checked_sub(1)
                    .and_then(|j| chars.get(j))
                    .is_some_and(|p| p.is_alphanumeric());
                let next = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
                if !(prev && next) {
                    out.push('\\');
                }
                out.push('_');
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    // GitHub turns bare URLs into links: "://" written as ":\/\/" renders the same but is no
    // longer a URL.
    out.replace("://", ":\\/\\/")
}

/// Quote a word for a POSIX shell when it holds anything but safe characters.
pub(crate) fn shell(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | '.' | '/' | ':' | '=' | '@' | '+' | ',')
        });
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A Python string literal (double quotes, escaped).
pub(crate) fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32 & 0xff)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// "14.96 GiB (16,060,522,496 B)".
pub(crate) fn gib_exact(b: Bytes) -> String {
    if b.0 < 1024 {
        return format!("{} B", b.0);
    }
    format!("{} ({} B)", b.display_gib(), group_digits(b.0))
}

/// A rate with sensible precision: "1,234", "56.7", "3.21", "0.012"; "–" when zero or not finite.
pub(crate) fn rate(x: f64) -> String {
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

/// Seconds as "850 ms", "2.40 s", "3.5 min", "5.2 h", "3.1 days"; "–" when zero.
pub(crate) fn duration(s: f64) -> String {
    if !s.is_finite() || s <= 0.0 {
        "–".into()
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 120.0 {
        format!("{s:.2} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 72.0 * 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86400.0)
    }
}

/// Dollars: "$0.0123", "$1.23", "$1,234".
pub(crate) fn usd(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => {
            if v >= 1000.0 {
                format!("${}", group_digits(v.round() as u64))
            } else if v >= 1.0 {
                format!("${v:.2}")
            } else {
                format!("${v:.4}")
            }
        }
        _ => "–".into(),
    }
}

/// A short slug of a model name for placeholder file names: "Llama 3 8B" → "Llama-3-8B".
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let t = out.trim_matches(|c| c == '-' || c == '.').to_string();
    if t.is_empty() {
        "model".into()
    } else {
        t.chars().take(64).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(html("<b a=\"x\">&'"), "&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(
            md("a|b <i>*x*</i> Q4_K_M _y_"),
            r"a\|b \<i\>\*x\*\</i\> Q4_K_M \_y\_"
        );
        assert_eq!(md("line\n# head & ~x~"), r"line # head \& \~x\~");
        assert_eq!(md("see http://x.y"), r"see http:\/\/x.y");
        assert_eq!(shell("model.gguf"), "model.gguf");
        assert_eq!(
            shell("my model's $(rm).gguf"),
            r"'my model'\''s $(rm).gguf'"
        );
        assert_eq!(py_str("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(slug("Llama 3 8B (Instruct)"), "Llama-3-8B-Instruct");
        assert_eq!(slug("../../"), "model");
    }

    #[test]
    fn numbers() {
        assert_eq!(rate(1234.4), "1,234");
        assert_eq!(rate(56.71), "56.7");
        assert_eq!(rate(0.0), "–");
        assert_eq!(duration(0.25), "250 ms");
        assert_eq!(duration(3.0 * 3600.0), "3.0 h");
        assert_eq!(usd(Some(0.01234)), "$0.0123");
        assert_eq!(usd(None), "–");
    }
}
