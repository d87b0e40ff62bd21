//! Reading headers: safetensors lengths and JSON headers, GGUF headers by growing ranges, and
//! the cached copies of both.

use super::*;

/// The cache file name of file `i`'s header.
pub(super) fn prefix_name(i: usize) -> String {
    format!("header-{i:05}.bin")
}

pub(super) fn fetch_json(
    http: &mut Http,
    dir: &Path,
    url: &str,
    name: &str,
) -> Result<String, HubError> {
    let r = http.get_small(url, name, MAX_JSON)?;
    let text = String::from_utf8(r.body)
        .map_err(|_| HubError::new(HubErrorKind::Invalid, format!("{name}: not UTF-8 text")))?;
    cache::write(dir, name, text.as_bytes())?;
    Ok(text)
}

/// A weight file's header as read over the network, before it is cached.
pub(super) struct Header {
    /// The whole file's size, from the server.
    size: u64,
    etag: Option<String>,
    bytes: Vec<u8>,
}

/// Caches a header read over the network as file `i`'s (see [`prefix_name`]).
pub(super) fn cache_header(
    dir: &Path,
    i: usize,
    name: &str,
    h: Header,
) -> Result<CachedFile, HubError> {
    let prefix = prefix_name(i);
    cache::write(dir, &prefix, &h.bytes)?;
    Ok(CachedFile {
        name: name.to_string(),
        size: h.size,
        etag: h.etag,
        prefix,
    })
}

/// A safetensors header: the 8-byte length, then the JSON header, with the local reader's bounds
/// checked before the second request.
pub(super) fn fetch_safetensors(
    http: &mut Http,
    url: &str,
    name: &str,
) -> Result<Header, HubError> {
    let first = http.get_range(url, 0, 8, name)?;
    let size = first.total.unwrap_or(0);
    let n = match <[u8; 8]>::try_from(first.body.get(..8).unwrap_or(&[])) {
        Ok(b) => u64::from_le_bytes(b),
        Err(_) => 0,
    };
    let in_bounds = size >= 8 && n <= size - 8 && (2..=safetensors::MAX_HEADER).contains(&n);
    if !in_bounds {
        // The local reader's own message for this length.
        let e = safetensors::read_header(std::io::Cursor::new(&first.body), size)
            .err()
            .unwrap_or_else(|| ImportError::invalid_at(0, "bad header length"));
        return Err(HubError::import(name, e));
    }
    let second = http.get_range(url, 8, n, name)?;
    if second.etag.is_some() && first.etag.is_some() && second.etag != first.etag {
        return Err(changed(name));
    }
    let mut bytes = first.body;
    bytes.extend_from_slice(&second.body[..n as usize]);
    Ok(Header {
        size,
        etag: first.etag,
        bytes,
    })
}

pub(super) fn changed(name: &str) -> HubError {
    HubError::new(
        HubErrorKind::Invalid,
        format!(
            "{name}: the file changed on the server while it was read (its ETag changed); try again"
        ),
    )
}

/// Reads a remote file front to back in growing ranges, keeping what it read.
pub(super) struct RangeReader<'a> {
    http: &'a mut Http,
    url: &'a str,
    name: &'a str,
    size: u64,
    data: Vec<u8>,
    pos: usize,
    next: u64,
    etag: Option<String>,
    error: Option<HubError>,
}

impl RangeReader<'_> {
    pub(super) fn fetch(&mut self) -> Result<(), HubError> {
        let start = self.data.len() as u64;
        if start >= GGUF_MAX_HEADER {
            return Err(HubError::new(
                HubErrorKind::Invalid,
                format!(
                    "{}: the GGUF header runs past {} MiB: not a model header",
                    self.name,
                    GGUF_MAX_HEADER >> 20
                ),
            ));
        }
        let len = self.next.min(self.size - start);
        let r = self.http.get_range(self.url, start, len, self.name)?;
        if (self.etag.is_some() && r.etag.is_some() && r.etag != self.etag)
            || r.total != Some(self.size)
        {
            return Err(changed(self.name));
        }
        if (r.body.len() as u64) < len {
            return Err(HubError::new(
                HubErrorKind::Truncated,
                format!(
                    "{}: the server sent {} of {len} bytes (truncated response)",
                    self.name,
                    r.body.len()
                ),
            ));
        }
        self.data.extend_from_slice(&r.body[..len as usize]);
        self.next = (self.next * 2).min(GGUF_MAX_RANGE);
        Ok(())
    }
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.data.len() {
            if self.data.len() as u64 >= self.size {
                return Ok(0);
            }
            if let Err(e) = self.fetch() {
                let msg = e.message.clone();
                self.error = Some(e);
                return Err(std::io::Error::other(msg));
            }
        }
        let n = buf.len().min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// A GGUF header by growing range requests; the header is parsed by the local reader as it
/// arrives, so reading stops where the tensor infos end.
pub(super) fn fetch_gguf(http: &mut Http, url: &str, name: &str) -> Result<Header, HubError> {
    let first = http.get_range(url, 0, GGUF_FIRST_RANGE, name)?;
    let size = first.total.unwrap_or(0);
    let mut rd = RangeReader {
        http,
        url,
        name,
        size,
        data: first.body,
        pos: 0,
        next: (GGUF_FIRST_RANGE * 2).min(GGUF_MAX_RANGE),
        etag: first.etag,
        error: None,
    };
    let parsed = gguf::read_header(&mut rd, size);
    if let Some(e) = rd.error.take() {
        return Err(e);
    }
    parsed.map_err(|e| HubError::import(name, e))?;
    Ok(Header {
        size,
        etag: rd.etag,
        bytes: rd.data,
    })
}

pub(super) fn read_cached_gguf(dir: &Path, f: &CachedFile) -> Result<GgufHeader, HubError> {
    let bytes = read_prefix(dir, f)?;
    gguf::read_header(std::io::Cursor::new(bytes), f.size).map_err(|e| HubError::import(&f.name, e))
}

pub(super) fn read_cached_safetensors(
    dir: &Path,
    f: &CachedFile,
) -> Result<SafetensorsHeader, HubError> {
    let bytes = read_prefix(dir, f)?;
    safetensors::read_header(std::io::Cursor::new(bytes), f.size)
        .map_err(|e| HubError::import(&f.name, e))
}

/// A cached header's bytes: at most what a header read over the network could have been.
pub(super) fn read_prefix(dir: &Path, f: &CachedFile) -> Result<Vec<u8>, HubError> {
    // The manifest names a file of its own entry folder, nothing else.
    if f.prefix.is_empty() || f.prefix.starts_with('.') || f.prefix.contains(['/', '\\']) {
        return Err(HubError::new(
            HubErrorKind::Cache,
            format!(
                "cache {}: the manifest names '{}', not a file of the entry",
                dir.display(),
                crate::core::format::one_line(&f.prefix)
            ),
        ));
    }
    let p = dir.join(&f.prefix);
    let max = GGUF_MAX_HEADER.max(safetensors::MAX_HEADER.saturating_add(8));
    crate::io::read_limited(&p, max).map_err(|e| cache::cache_err(&p, &e))
}
