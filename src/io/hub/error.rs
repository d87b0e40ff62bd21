//! Hub errors: what went wrong, in one line.

use super::*;

/// What went wrong, for callers that branch on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HubErrorKind {
    /// 401/403: a gated or private repository.
    Gated,
    NotFound,
    /// No network, DNS, connection, TLS, another status.
    Network,
    Timeout,
    /// The server answered a range request with the whole file.
    RangeIgnored,
    /// Fewer bytes than asked for or announced.
    Truncated,
    /// A header the importers refuse (the same bounds as local files).
    Invalid,
    TooManyShards,
    /// Several GGUF files and nothing to pick one by.
    Ambiguous,
    /// A bad repo id, revision or URL.
    BadRequest,
    Cancelled,
    Cache,
}

/// One line, never holding the token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HubError {
    pub kind: HubErrorKind,
    pub message: String,
}

impl HubError {
    pub fn new(kind: HubErrorKind, message: String) -> HubError {
        // One line, and what a server or a file put in it cannot drive the terminal.
        let message = message.replace(['\n', '\r'], " ");
        HubError {
            kind,
            message: crate::core::format::one_line(&message).into_owned(),
        }
    }
    /// "status 403" from a refused request's message, else "access refused".
    pub(super) fn status_text(&self) -> String {
        self.message
            .find("(status ")
            .and_then(|i| {
                let rest = &self.message[i + 1..];
                rest.find(')').map(|j| rest[..j].to_string())
            })
            .unwrap_or_else(|| "access refused".into())
    }
    pub(super) fn bad(message: String) -> HubError {
        HubError::new(HubErrorKind::BadRequest, message)
    }
    /// A header the local reader refused, as it words it, naming the file.
    pub(super) fn import(file: &str, e: ImportError) -> HubError {
        let kind = match e.kind {
            crate::io::import::ErrorKind::Truncated { .. } => HubErrorKind::Truncated,
            _ => HubErrorKind::Invalid,
        };
        HubError::new(kind, e.in_file(Path::new(file)).to_string())
    }
    /// A model the importers refused, with where it came from.
    pub(super) fn built(source: &str, e: ImportError) -> HubError {
        HubError::new(HubErrorKind::Invalid, format!("{source}: {e}"))
    }
}
