//! The HTTP side: one `ureq` agent (rustls, certificates verified against the webpki roots),
//! range requests with their checks, the token, and a count of what came over the wire.

use super::{HubError, HubErrorKind};
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A Hugging Face access token. Its `Debug` never shows it, and it is only ever sent in an
/// `Authorization` header to the endpoint's host.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token from its text (trimmed); `None` when empty.
    pub fn new(s: &str) -> Option<Token> {
        let t = s.trim();
        (!t.is_empty()).then(|| Token(t.to_string()))
    }
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

/// What one request returned.
pub(crate) struct Response {
    pub body: Vec<u8>,
    /// The whole file's length from `Content-Range: bytes a-b/TOTAL` (range requests).
    pub total: Option<u64>,
    pub etag: Option<String>,
}

pub(crate) struct Http {
    agent: ureq::Agent,
    /// For loopback addresses: never through a proxy.
    direct: ureq::Agent,
    token: Option<Token>,
    /// The host (and port) the token may be sent to.
    token_authority: Option<String>,
    cancel: Option<Arc<AtomicBool>>,
    offline: bool,
    timeout: Duration,
    /// When the first request was made, and how long all of them may take.
    started: std::time::Instant,
    deadline: Option<Duration>,
    /// Body bytes received and requests sent.
    pub bytes: u64,
    pub requests: u64,
}

/// `https://host:port/path` → `host:port` (lower case), without user info.
pub(crate) fn authority(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let auth = rest.split(['/', '?', '#']).next()?;
    let auth = auth.rsplit('@').next()?;
    (!auth.is_empty()).then(|| auth.to_ascii_lowercase())
}

/// The host of a URL for messages (never user info, path or query).
pub(crate) fn host_of(url: &str) -> String {
    authority(url).unwrap_or_else(|| "the server".into())
}

impl Http {
    pub fn new(opts: &super::Options) -> Http {
        let timeout = opts.timeout;
        // Proxies from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY and NO_PROXY (ureq `Proxy::try_from_env`).
        let config = |proxy: Option<ureq::Proxy>| {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(timeout))
                .user_agent(concat!("headroom/", env!("CARGO_PKG_VERSION")))
                // The Hub redirects large files to a CDN with a signed URL: the token stays behind.
                .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
                .max_redirects(10)
                .proxy(proxy)
                .build()
                .new_agent()
        };
        Http {
            agent: config(ureq::Proxy::try_from_env()),
            direct: config(None),
            token: opts.token.clone(),
            token_authority: authority(&opts.endpoint),
            cancel: opts.cancel.clone(),
            offline: opts.offline,
            timeout,
            started: std::time::Instant::now(),
            deadline: opts.deadline,
            bytes: 0,
            requests: 0,
        }
    }

    pub fn check_cancel(&self) -> Result<(), HubError> {
        match &self.cancel {
            Some(c) if c.load(Ordering::Relaxed) => Err(HubError::new(
                HubErrorKind::Cancelled,
                "cancelled".to_string(),
            )),
            _ => Ok(()),
        }
    }

    /// Time left before the overall deadline (`None`: no deadline); an error once it passed.
    fn remaining(&self, what: &str, host: &str) -> Result<Option<Duration>, HubError> {
        let Some(d) = self.deadline else {
            return Ok(None);
        };
        let left = d.saturating_sub(self.started.elapsed());
        if left.is_zero() {
            return Err(HubError::new(
                HubErrorKind::Timeout,
                format!(
                    "{what}: reading the headers from {host} took longer than {} s in all ({} requests; HEADROOM_HUB_DEADLINE_S sets the bound)",
                    format_secs(d),
                    self.requests
                ),
            ));
        }
        Ok(Some(left))
    }

    /// GET `url`, the whole body (at most `max` bytes), for small JSON files.
    pub fn get_small(&mut self, url: &str, what: &str, max: u64) -> Result<Response, HubError> {
        self.request(url, None, what, max)
    }

    /// GET bytes `start..start+len` of `url`. Refuses a server that answers with the whole file.
    pub fn get_range(
        &mut self,
        url: &str,
        start: u64,
        len: u64,
        what: &str,
    ) -> Result<Response, HubError> {
        let r = self.request(url, Some((start, len)), what, len)?;
        // The last range of a file may be shorter than asked for.
        let expected = r.total.map_or(len, |t| len.min(t.saturating_sub(start)));
        if (r.body.len() as u64) < expected {
            return Err(HubError::new(
                HubErrorKind::Truncated,
                format!(
                    "{what}: the server sent {} of the {expected} bytes asked for at offset {start} (truncated response)",
                    r.body.len()
                ),
            ));
        }
        Ok(r)
    }

    fn request(
        &mut self,
        url: &str,
        range: Option<(u64, u64)>,
        what: &str,
        max: u64,
    ) -> Result<Response, HubError> {
        self.check_cancel()?;
        let host = host_of(url);
        if self.offline {
            return Err(HubError::new(
                HubErrorKind::Network,
                format!("{what}: not in the cache, and HF_HUB_OFFLINE forbids asking {host}"),
            ));
        }
        let h = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
        let loopback = h.starts_with("127.") || h == "localhost" || h == "[::1]";
        let agent = if loopback { &self.direct } else { &self.agent };
        let left = self.remaining(what, &host)?;
        let mut req = agent.get(url);
        if let Some(left) = left.filter(|l| *l < self.timeout) {
            req = req.config().timeout_global(Some(left)).build();
        }
        if let Some((start, len)) = range {
            req = req.header("Range", format!("bytes={start}-{}", start + len - 1));
        }
        if let (Some(t), Some(a)) = (&self.token, &self.token_authority)
            && authority(url).as_deref() == Some(a.as_str())
        {
            req = req.header("Authorization", format!("Bearer {}", t.secret()));
        }
        self.requests += 1;
        let resp = req
            .call()
            .map_err(|e| self.transport_error(url, &host, what, e))?;
        let status = resp.status().as_u16();
        let header = |k: &str| {
            resp.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let etag = header("etag")
            .or_else(|| header("x-linked-etag"))
            .map(|e| e.trim().to_string());
        if !(200..300).contains(&status) {
            return Err(status_error(
                status,
                header("x-error-code").as_deref(),
                what,
                &host,
                self.token.is_some(),
            ));
        }
        let total = if range.is_some() {
            if status != 206 {
                return Err(HubError::new(
                    HubErrorKind::RangeIgnored,
                    format!(
                        "{what}: {host} ignored the Range request (status {status}, the whole file): headroom reads headers only and will not download a weight file"
                    ),
                ));
            }
            let cr = header("content-range").unwrap_or_default();
            let total = cr
                .rsplit('/')
                .next()
                .and_then(|t| t.trim().parse::<u64>().ok());
            let start_ok = cr
                .trim()
                .strip_prefix("bytes ")
                .and_then(|r| r.split('-').next())
                .and_then(|s| s.trim().parse::<u64>().ok())
                == range.map(|r| r.0);
            if total.is_none() || !start_ok {
                return Err(HubError::new(
                    HubErrorKind::RangeIgnored,
                    format!(
                        "{what}: {host} answered the Range request without a usable Content-Range (\"{}\")",
                        cr.chars().take(60).collect::<String>()
                    ),
                ));
            }
            total
        } else {
            None
        };
        let mut body = Vec::new();
        let mut reader = resp.into_body().into_reader().take(max.saturating_add(1));
        let mut buf = [0u8; 64 * 1024];
        loop {
            self.check_cancel()?;
            self.remaining(what, &host)?;
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.bytes += n as u64;
                    body.extend_from_slice(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.body_error(&host, what, body.len(), e)),
            }
        }
        if body.len() as u64 > max {
            return Err(HubError::new(
                HubErrorKind::Invalid,
                format!("{what}: {host} sent more than the {max} bytes headroom accepts for it"),
            ));
        }
        Ok(Response { body, total, etag })
    }

    fn transport_error(&self, url: &str, host: &str, what: &str, e: ureq::Error) -> HubError {
        use ureq::Error as E;
        let https = url.starts_with("https://");
        match e {
            E::Timeout(_) => self.timeout_error(host, what),
            E::HostNotFound => HubError::new(
                HubErrorKind::Network,
                format!("{what}: cannot resolve {host} (no network?)"),
            ),
            E::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                self.timeout_error(host, what)
            }
            E::Io(io) if not_tls(&io) => HubError::new(
                HubErrorKind::Network,
                format!(
                    "{what}: the TLS handshake with {host} failed: the server does not speak TLS (is the endpoint http://, not https://?)"
                ),
            ),
            E::Io(io) if https && io.kind() == std::io::ErrorKind::UnexpectedEof => HubError::new(
                HubErrorKind::Network,
                format!(
                    "{what}: {host} closed the connection during the TLS handshake (does it speak TLS? is the endpoint http://, not https://?)"
                ),
            ),
            E::Io(io) => HubError::new(
                HubErrorKind::Network,
                // The OS's own words ("Network is unreachable"), not the kind's name ("uncategorized
                // error").
                format!(
                    "{what}: cannot reach {host} ({io}). Is this computer offline? A model read before opens from the cache without the network."
                ),
            ),
            E::ConnectionFailed => HubError::new(
                HubErrorKind::Network,
                format!("{what}: cannot connect to {host} (no network?)"),
            ),
            E::Tls(m) => HubError::new(
                HubErrorKind::Network,
                format!("{what}: TLS with {host} failed ({m}): the certificate is not trusted"),
            ),
            E::Rustls(r) if tls_garbage(&r.to_string()) => HubError::new(
                HubErrorKind::Network,
                format!(
                    "{what}: the TLS handshake with {host} failed: the server does not speak TLS (is the endpoint http://, not https://?)"
                ),
            ),
            E::Rustls(r) => HubError::new(
                HubErrorKind::Network,
                format!(
                    "{what}: TLS with {host} failed: {}",
                    one_line(&r.to_string())
                ),
            ),
            E::TooManyRedirects | E::RedirectFailed => HubError::new(
                HubErrorKind::Network,
                format!("{what}: {host} redirected too often or to a bad address"),
            ),
            other => HubError::new(
                HubErrorKind::Network,
                format!(
                    "{what}: request to {host} failed: {}",
                    one_line(&other.to_string())
                ),
            ),
        }
    }

    fn body_error(&self, host: &str, what: &str, got: usize, e: std::io::Error) -> HubError {
        let timed_out = e.kind() == std::io::ErrorKind::TimedOut
            || e.get_ref()
                .and_then(|inner| inner.downcast_ref::<ureq::Error>())
                .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
        if timed_out {
            return self.timeout_error(host, what);
        }
        HubError::new(
            HubErrorKind::Truncated,
            format!(
                "{what}: the connection to {host} ended after {got} bytes of the response (truncated response)"
            ),
        )
    }

    fn timeout_error(&self, host: &str, what: &str) -> HubError {
        if let Some(d) = self.deadline
            && self.started.elapsed() >= d
            && let Err(e) = self.remaining(what, host)
        {
            return e;
        }
        HubError::new(
            HubErrorKind::Timeout,
            format!(
                "{what}: {host} did not answer within {} s (timeout; no network?)",
                format_secs(self.timeout)
            ),
        )
    }
}

/// Seconds as given: "60", "0.5".
fn format_secs(d: Duration) -> String {
    d.as_secs_f64().to_string()
}

/// Whether an IO error is rustls refusing what came back as not TLS at all (a plain-HTTP
/// server answering a `https://` URL: rustls `InvalidMessage::InvalidContentType`, "received
/// corrupt message of type InvalidContentType").
fn not_tls(e: &std::io::Error) -> bool {
    tls_garbage(&e.to_string())
        || e.get_ref()
            .is_some_and(|inner| tls_garbage(&inner.to_string()))
}

fn tls_garbage(m: &str) -> bool {
    m.contains("InvalidContentType") || m.contains("corrupt message")
}

/// One line, terminal escapes escaped (a server's text is untrusted).
fn one_line(s: &str) -> String {
    crate::core::format::one_line(s).into_owned()
}

/// A non-2xx answer as one line. The Hub says what went wrong in `X-Error-Code`
/// (huggingface_hub `utils/_http.py` `hf_raise_for_status`: `RepoNotFound`, `GatedRepo`,
/// `RevisionNotFound`, `EntryNotFound`).
fn status_error(
    status: u16,
    code: Option<&str>,
    what: &str,
    host: &str,
    had_token: bool,
) -> HubError {
    match (code, status) {
        (Some("GatedRepo"), _) | (None, 401 | 403) => HubError::new(
            HubErrorKind::Gated,
            if had_token {
                format!("{what}: {host} refused access (status {status}) with the token given")
            } else {
                format!("{what}: {host} refused access (status {status})")
            },
        ),
        (Some("RepoNotFound"), _) => HubError::new(
            HubErrorKind::NotFound,
            format!("{what}: no such repository on {host} (a private one needs HF_TOKEN)"),
        ),
        (Some("RevisionNotFound"), _) => HubError::new(
            HubErrorKind::NotFound,
            format!("{what}: no such revision on {host}"),
        ),
        (_, 404) | (Some("EntryNotFound"), _) => HubError::new(
            HubErrorKind::NotFound,
            format!("{what}: not found on {host} (status {status})"),
        ),
        (_, 401 | 403) => HubError::new(
            HubErrorKind::Gated,
            format!("{what}: {host} refused access (status {status})"),
        ),
        (_, 416) => HubError::new(
            HubErrorKind::Truncated,
            format!("{what}: {host} says the range asked for is past the end of the file"),
        ),
        (_, 429) => HubError::new(
            HubErrorKind::Network,
            format!("{what}: {host} is rate-limiting requests (status 429): try again later"),
        ),
        _ => HubError::new(
            HubErrorKind::Network,
            format!("{what}: {host} answered with status {status}"),
        ),
    }
}
