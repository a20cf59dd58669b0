//! The little HTTP/1.1 this adapter needs: `GET` to a loopback port, a bounded response,
//! and a streamed (chunked or close-delimited) body for the event stream.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Longest a connect may take; the plugin is one thread and must not hang on a dead port.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1500);
/// Longest a blocking read of a status response may wait for more bytes.
pub const READ_TIMEOUT: Duration = Duration::from_millis(1500);
/// Longest a whole status response may take, however the server trickles it.
pub const RESPONSE_DEADLINE: Duration = Duration::from_secs(3);
/// A response head larger than this is refused.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot connect: {0}")]
    Connect(io::Error),
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("server asked for credentials (HTTP 401)")]
    Unauthorized,
    #[error("HTTP status {0}")]
    Status(u16),
    #[error("{0} over its {1}-byte limit")]
    TooLarge(&'static str, usize),
    #[error("malformed response: {0}")]
    Malformed(&'static str),
    #[error("connection closed")]
    Closed,
    #[error("no answer in time")]
    TimedOut,
}

/// Where and how to ask: the pane's loopback address, optional Basic credentials.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// Value of the `Authorization` header, when the plugin env has a password.
    pub authorization: Option<String>,
}

impl Endpoint {
    pub fn new(addr: SocketAddr, user: Option<&str>, password: Option<&str>) -> Endpoint {
        use base64::Engine as _;
        let authorization = password.map(|password| {
            let user = user.unwrap_or("opencode");
            let token =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            format!("Basic {token}")
        });
        Endpoint {
            addr,
            authorization,
        }
    }

    fn connect(&self) -> Result<TcpStream, HttpError> {
        TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT).map_err(HttpError::Connect)
    }

    /// The request bytes for `path` (which already carries its query).
    pub fn request(&self, path: &str, accept: &str) -> String {
        let mut request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: {accept}\r\nConnection: close\r\n",
            self.addr
        );
        if let Some(authorization) = &self.authorization {
            request.push_str("Authorization: ");
            request.push_str(authorization);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        request
    }

    /// `GET path` and the whole body, at most `max_body` bytes; only status 200 is a body.
    pub fn get(&self, path: &str, max_body: usize) -> Result<Vec<u8>, HttpError> {
        let started = Instant::now();
        let mut stream = self.connect()?;
        stream.write_all(self.request(path, "application/json").as_bytes())?;
        let mut reader = BodyReader::new(max_body, "status body");
        let mut body = Vec::new();
        let mut buf = [0u8; 8192];
        while !reader.done {
            let left = RESPONSE_DEADLINE.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(HttpError::TimedOut);
            }
            // A platform without socket timeouts still has the connect timeout; the status
            // poll then relies on the server answering.
            let _ = stream.set_read_timeout(Some(left.min(READ_TIMEOUT)));
            let read = match stream.read(&mut buf) {
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(HttpError::TimedOut);
                }
                Err(error) => return Err(error.into()),
            };
            if read == 0 {
                return reader.finish(body);
            }
            reader.feed(&buf[..read], &mut body)?;
        }
        Ok(body)
    }

    /// Opens a streamed `GET` (the SSE endpoint) in non-blocking mode.
    pub fn open_stream(&self, path: &str) -> Result<Stream, HttpError> {
        let mut stream = self.connect()?;
        stream.write_all(self.request(path, "text/event-stream").as_bytes())?;
        stream.set_nonblocking(true)?;
        Ok(Stream {
            stream,
            reader: BodyReader::new(usize::MAX, "event stream"),
        })
    }
}

/// An open streamed response; read what has arrived without waiting.
pub struct Stream {
    stream: TcpStream,
    reader: BodyReader,
}

impl Stream {
    /// Whether the server answered 200 and the body has begun.
    pub fn accepted(&self) -> bool {
        self.reader.framing.is_some()
    }

    /// Appends up to `budget` newly arrived body bytes to `out`. `Err(Closed)` when the
    /// server ended the stream.
    pub fn read_available(&mut self, budget: usize, out: &mut Vec<u8>) -> Result<(), HttpError> {
        let mut buf = [0u8; 8192];
        let mut taken = 0;
        while taken < budget {
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(HttpError::Closed),
                Ok(read) => {
                    taken += read;
                    self.reader.feed(&buf[..read], out)?;
                    if self.reader.done {
                        return Err(HttpError::Closed);
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }
}

/// Incremental response reader: head, then a body framed by length, chunks, or close.
struct BodyReader {
    head: Vec<u8>,
    framing: Option<Framing>,
    max_body: usize,
    body_bytes: usize,
    what: &'static str,
    done: bool,
}

#[derive(Debug)]
enum Framing {
    Length(usize),
    Chunked(Chunked),
    UntilClose,
}

impl BodyReader {
    fn new(max_body: usize, what: &'static str) -> BodyReader {
        BodyReader {
            head: Vec::new(),
            framing: None,
            max_body,
            body_bytes: 0,
            what,
            done: false,
        }
    }

    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), HttpError> {
        if self.framing.is_none() {
            let before = self.head.len();
            self.head.extend_from_slice(input);
            let Some(end) = find(&self.head, b"\r\n\r\n") else {
                if self.head.len() > MAX_HEAD_BYTES {
                    return Err(HttpError::TooLarge("response head", MAX_HEAD_BYTES));
                }
                return Ok(());
            };
            self.framing = Some(parse_head(&self.head[..end])?);
            input = &input[end + 4 - before..];
            self.head = Vec::new();
        }
        let start = out.len();
        match self.framing.as_mut().expect("parsed above") {
            Framing::Length(left) => {
                let take = input.len().min(*left);
                out.extend_from_slice(&input[..take]);
                *left -= take;
                self.done = *left == 0;
            }
            Framing::Chunked(chunked) => {
                chunked.feed(input, out)?;
                self.done = chunked.finished();
            }
            Framing::UntilClose => out.extend_from_slice(input),
        }
        self.body_bytes += out.len() - start;
        if self.body_bytes > self.max_body {
            return Err(HttpError::TooLarge(self.what, self.max_body));
        }
        Ok(())
    }

    /// End of input: `body` is complete only if its framing says so.
    fn finish(&self, body: Vec<u8>) -> Result<Vec<u8>, HttpError> {
        match &self.framing {
            Some(Framing::UntilClose) => Ok(body),
            Some(_) if self.done => Ok(body),
            _ => Err(HttpError::Closed),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Status line and the two headers that matter; a non-200 status is an error.
fn parse_head(head: &[u8]) -> Result<Framing, HttpError> {
    let text = std::str::from_utf8(head).map_err(|_| HttpError::Malformed("head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.split(' ');
    if !parts
        .next()
        .is_some_and(|version| version.starts_with("HTTP/1."))
    {
        return Err(HttpError::Malformed("not an HTTP/1.x status line"));
    }
    let status: u16 = parts
        .next()
        .and_then(|code| code.parse().ok())
        .ok_or(HttpError::Malformed("no status code"))?;
    match status {
        200 => {}
        401 => return Err(HttpError::Unauthorized),
        other => return Err(HttpError::Status(other)),
    }
    let mut framing = Framing::UntilClose;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::Malformed("header line without a colon"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(HttpError::Malformed("unsupported transfer-encoding"));
            }
            framing = Framing::Chunked(Chunked::default());
        } else if name.eq_ignore_ascii_case("content-length")
            && !matches!(framing, Framing::Chunked(_))
        {
            let length = value
                .parse()
                .map_err(|_| HttpError::Malformed("bad content-length"))?;
            framing = Framing::Length(length);
        }
    }
    Ok(framing)
}

/// The chunked transfer coding, decoded incrementally.
#[derive(Debug, Default)]
struct Chunked {
    state: ChunkState,
    size_line: Vec<u8>,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Data(usize),
    DataEnd(u8),
    Trailer(Vec<u8>),
    Finished,
}

impl Chunked {
    fn finished(&self) -> bool {
        self.state == ChunkState::Finished
    }

    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), HttpError> {
        while let Some((&byte, rest)) = input.split_first() {
            match &mut self.state {
                ChunkState::Size => {
                    input = rest;
                    if byte != b'\n' {
                        if self.size_line.len() >= 64 {
                            return Err(HttpError::Malformed("chunk size line too long"));
                        }
                        self.size_line.push(byte);
                        continue;
                    }
                    let line = std::str::from_utf8(&self.size_line)
                        .map_err(|_| HttpError::Malformed("chunk size"))?;
                    let digits = line.trim_end_matches('\r').split(';').next().unwrap_or("");
                    let size = usize::from_str_radix(digits.trim(), 16)
                        .map_err(|_| HttpError::Malformed("chunk size"))?;
                    self.size_line.clear();
                    self.state = if size == 0 {
                        ChunkState::Trailer(Vec::new())
                    } else {
                        ChunkState::Data(size)
                    };
                }
                ChunkState::Data(left) => {
                    let take = input.len().min(*left);
                    out.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    *left -= take;
                    if *left == 0 {
                        self.state = ChunkState::DataEnd(0);
                    }
                }
                ChunkState::DataEnd(seen) => {
                    input = rest;
                    match (byte, *seen) {
                        (b'\r', 0) => *seen = 1,
                        (b'\n', _) => self.state = ChunkState::Size,
                        _ => return Err(HttpError::Malformed("chunk not followed by CRLF")),
                    }
                }
                ChunkState::Trailer(line) => {
                    input = rest;
                    if byte != b'\n' {
                        line.push(byte);
                        if line.len() > MAX_HEAD_BYTES {
                            return Err(HttpError::TooLarge("trailer", MAX_HEAD_BYTES));
                        }
                        continue;
                    }
                    if line.iter().all(|&b| b == b'\r') {
                        self.state = ChunkState::Finished;
                    } else {
                        line.clear();
                    }
                }
                ChunkState::Finished => return Ok(()),
            }
        }
        Ok(())
    }
}

/// `?directory=<cwd>` with the cwd percent-encoded, for every request.
pub fn with_directory(path: &str, cwd: &str) -> String {
    let encoded = percent_encoding::utf8_percent_encode(cwd, QUERY_VALUE);
    format!("{path}?directory={encoded}")
}

/// Everything but RFC 3986 unreserved characters and `/` is escaped in the query value.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(port: u16) -> SocketAddr {
        SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port))
    }

    fn body_of(response: &[u8], pieces: usize, max: usize) -> Result<Vec<u8>, HttpError> {
        let mut reader = BodyReader::new(max, "body");
        let mut body = Vec::new();
        let step = response.len().div_ceil(pieces).max(1);
        for piece in response.chunks(step) {
            reader.feed(piece, &mut body)?;
        }
        reader.finish(body)
    }

    #[test]
    fn length_chunked_and_close_delimited_bodies_decode_however_split() {
        let cases: [(&[u8], &[u8]); 3] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello"),
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n",
                b"hello, world",
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close", b"until close"),
        ];
        for (response, body) in cases {
            for pieces in [1, 2, 3, 7, response.len()] {
                assert_eq!(
                    body_of(response, pieces, 1024).unwrap(),
                    body,
                    "{pieces} pieces"
                );
            }
            for at in 0..=response.len() {
                let mut reader = BodyReader::new(1024, "body");
                let mut out = Vec::new();
                reader.feed(&response[..at], &mut out).unwrap();
                reader.feed(&response[at..], &mut out).unwrap();
                assert_eq!(reader.finish(out).unwrap(), body, "split at {at}");
            }
        }
    }

    #[test]
    fn status_other_than_200_and_oversize_bodies_are_errors() {
        let unauthorized = b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"Secure Area\"\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(
            body_of(unauthorized, 1, 10),
            Err(HttpError::Unauthorized)
        ));
        let missing = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(
            body_of(missing, 1, 10),
            Err(HttpError::Status(404))
        ));
        let big = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
        assert!(matches!(
            body_of(big, 3, 10),
            Err(HttpError::TooLarge("body", 10))
        ));
        let truncated = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello";
        assert!(matches!(body_of(truncated, 1, 100), Err(HttpError::Closed)));
        let endless_head = vec![b'x'; MAX_HEAD_BYTES + 1];
        assert!(matches!(
            body_of(&endless_head, 1, 10),
            Err(HttpError::TooLarge("response head", _))
        ));
    }

    #[test]
    fn a_silent_server_times_out_and_an_oversize_body_is_refused_over_a_real_socket() {
        use std::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            // Accepts, reads nothing, answers nothing; held open until the client gave up.
            let (silent, _) = listener.accept().unwrap();
            let (mut oversize, _) = listener.accept().unwrap();
            // Read the request first: closing with unread input would reset the connection.
            let mut request = [0u8; 1024];
            let _ = oversize.read(&mut request).unwrap();
            let body = vec![b' '; 256 * 1024 + 1];
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            // The client stops reading at its cap and closes: a failed write is expected.
            let _ = oversize.write_all(head.as_bytes());
            let _ = oversize.write_all(&body);
            let _ = oversize.read(&mut request);
            drop(silent);
        });
        let endpoint = Endpoint::new(addr, None, None);
        assert!(matches!(
            endpoint.get("/session/status", 256 * 1024),
            Err(HttpError::TimedOut)
        ));
        assert!(matches!(
            endpoint.get("/session/status", 256 * 1024),
            Err(HttpError::TooLarge("status body", _))
        ));
        server.join().unwrap();
    }

    #[test]
    fn requests_carry_directory_and_credentials() {
        let endpoint = Endpoint::new(loopback(4096), None, Some("secret"));
        let request = endpoint.request(
            &with_directory("/session/status", "/home/a/my repo"),
            "application/json",
        );
        assert!(request.starts_with(
            "GET /session/status?directory=/home/a/my%20repo HTTP/1.1\r\nHost: 127.0.0.1:4096\r\n"
        ), "{request}");
        // base64("opencode:secret")
        assert!(request.contains("Authorization: Basic b3BlbmNvZGU6c2VjcmV0\r\n"));
        assert!(request.ends_with("\r\n\r\n"));
        let alice = Endpoint::new(loopback(1), Some("alice"), Some("pw"));
        assert_eq!(alice.authorization.as_deref(), Some("Basic YWxpY2U6cHc="));
        assert_eq!(
            Endpoint::new(loopback(1), Some("alice"), None).authorization,
            None
        );
        let v6 = Endpoint::new("[::1]:4100".parse().unwrap(), None, None);
        assert!(
            v6.request("/event", "text/event-stream")
                .contains("\r\nHost: [::1]:4100\r\n")
        );
        assert_eq!(
            with_directory("/e", "C:\\r&x=1"),
            "/e?directory=C%3A%5Cr%26x%3D1"
        );
    }
}
