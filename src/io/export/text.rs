//! Escaping shared by the report renderers and the launch settings; numbers go through
//! [`crate::core::format`], the one formatter of every surface.
//! Text from model files and catalogs is untrusted: every renderer escapes it for its format.

use crate::core::format::{self, group_digits};
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

/// A rate: [`crate::core::format::rate`].
pub(crate) fn rate(x: f64) -> String {
    format::rate(x)
}

/// Seconds: [`crate::core::format::duration`].
pub(crate) fn duration(s: f64) -> String {
    format::duration(s)
}

/// Dollars: [`crate::core::format::usd`].
pub(crate) fn usd(x: Option<f64>) -> String {
    format::usd(x)
}

/// A slug of a model name for placeholder file names: [`crate::core::format::slug`].
pub(crate) fn slug(s: &str) -> String {
    format::slug(s)
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
        assert_eq!(rate(0.0), "—");
        assert_eq!(duration(0.25), "250 ms");
        assert_eq!(duration(3.0 * 3600.0), "3.0 h");
        assert_eq!(usd(Some(0.01234)), "$0.0123");
        assert_eq!(usd(None), "—");
    }
}
