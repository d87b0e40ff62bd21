//! Messages in the status bar: one constructor per kind, so every message is built the same way.

/// A message in the status bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub text: String,
    pub error: bool,
}

impl Status {
    /// Something that happened as asked ("Report saved to ...").
    pub fn info(text: impl Into<String>) -> Self {
        Status {
            text: text.into(),
            error: false,
        }
    }
    /// Something that failed, with the reason ("Cannot open the scenario: ...").
    pub fn error(text: impl Into<String>) -> Self {
        Status {
            text: text.into(),
            error: true,
        }
    }
    /// "{what} failed: {why}" or "{what}: {why}" as an error.
    pub fn failed(what: &str, why: impl std::fmt::Display) -> Self {
        Status::error(format!("{what}: {why}"))
    }
}
