//! The `/metrics` server, built to keep serving whatever clients do: hyper's HTTP/1 on one
//! named thread's tokio runtime, at most [`Limits::connections`] connections at once (one
//! more closes the connection idle longest, waiting for a request, to take its place — closing
//! the newcomer instead let 260 idle clients that reconnected when closed fail 23 of 25
//! scrapes; a scrape sends its request at once, so it is never the one idle longest), a deadline
//! for a request's headers (an idle or slow client is closed after it) and a bound on their
//! size, and an `accept` that runs out of file descriptors backs off and tries again (it
//! used to end the process with status 0). Only an error the listener cannot recover from
//! ends [`serve`], with that error, so that a supervisor restarts the exporter.
//!
//! The answer itself is a plain function of the request ([`Asked`] → [`Answer`]): no HTTP
//! type leaves this file.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::web_config::{Access, Users};

/// What a request asks, as the answer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// `GET`, `HEAD`, … as sent.
    pub method: String,
    /// The path, without a query.
    pub path: String,
    pub accept: Option<String>,
    pub accept_encoding: Option<String>,
}

/// What is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub content_encoding: Option<&'static str>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(status: u16, body: impl Into<String>) -> Answer {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            content_encoding: None,
            body: body.into().into_bytes(),
        }
    }
}

/// How much the server takes.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// A client has this long to send a request's headers (the first and each next one).
    pub header_timeout: Duration,
    /// The most a request's headers may take, in bytes (hyper answers 431 beyond).
    pub header_bytes: usize,
    /// A connection lives at most this long, whatever it does.
    pub connection_lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 256,
            // Prometheus sends its request at once; 5 s is generous on a loaded host.
            header_timeout: Duration::from_secs(5),
            header_bytes: 16 << 10,
            connection_lifetime: Duration::from_secs(300),
        }
    }
}

/// One connection being served.
struct Conn {
    /// When it last finished answering (or opened): idle since.
    idle_since: Instant,
    /// Answering a request now.
    busy: bool,
    /// Closes it.
    stop: Arc<tokio::sync::Notify>,
}

/// The connections being served, for making room for a new one.
#[derive(Default)]
struct Open {
    next: u64,
    conns: HashMap<u64, Conn>,
}

impl Open {
    fn add(&mut self, stop: Arc<tokio::sync::Notify>) -> u64 {
        self.next += 1;
        self.conns.insert(
            self.next,
            Conn {
                idle_since: Instant::now(),
                busy: false,
                stop,
            },
        );
        self.next
    }

    fn set_busy(&mut self, id: u64, busy: bool) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.busy = busy;
            c.idle_since = Instant::now();
        }
    }

    /// Closes the connection idle longest; whether there was one.
    fn close_idlest(&mut self) -> bool {
        let idlest = self
            .conns
            .iter()
            .filter(|(_, c)| !c.busy)
            .min_by_key(|(id, c)| (c.idle_since, **id))
            .map(|(id, _)| *id);
        match idlest.and_then(|id| self.conns.remove(&id)) {
            Some(c) => {
                c.stop.notify_one();
                true
            }
            None => false,
        }
    }
}

/// How long a new connection waits for the slot of the one it closed.
const TAKE_OVER: Duration = Duration::from_millis(200);

/// Serves `answer` on `listener` until the listener fails for good; what failed.
pub fn serve(
    listener: std::net::TcpListener,
    limits: Limits,
    access: Access,
    answer: impl Fn(&Asked) -> Answer + Send + Sync + 'static,
) -> std::io::Error {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return e,
    };
    rt.block_on(accept_loop(listener, limits, access, Arc::new(answer)))
}

async fn accept_loop(
    listener: std::net::TcpListener,
    limits: Limits,
    access: Access,
    answer: Arc<dyn Fn(&Asked) -> Answer + Send + Sync>,
) -> std::io::Error {
    if let Err(e) = listener.set_nonblocking(true) {
        return e;
    }
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    let open = Arc::new(Mutex::new(Open::default()));
    let mut said = RateLimited::new(Duration::from_secs(10));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if transient(&e) => {
                said.say(&format!(
                    "accepting a connection: {e}; trying again (raise the file limit, LimitNOFILE=, if this persists)"
                ));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(e) => return e,
        };
        let Some(slot) = take_slot(&slots, &open, limits.connections, &mut said).await else {
            drop(stream);
            continue;
        };
        serve_connection(stream, slot, &access, answer.clone(), open.clone(), limits);
    }
}

/// A slot for a new connection: a free one, else the one of the connection idle longest
/// (closed for it); none when every connection is answering.
async fn take_slot(
    slots: &Arc<tokio::sync::Semaphore>,
    open: &Arc<Mutex<Open>>,
    connections: usize,
    said: &mut RateLimited,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    if let Ok(slot) = slots.clone().try_acquire_owned() {
        return Some(slot);
    }
    let closed = open.lock().is_ok_and(|mut o| o.close_idlest());
    let taken = if closed {
        tokio::time::timeout(TAKE_OVER, slots.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
    } else {
        None
    };
    said.say(&if taken.is_some() {
        format!("{connections} connections open: closing the one idle longest for a new one")
    } else {
        format!("{connections} connections open, every one answering: closing a new one")
    });
    taken
}

/// Serves one connection on its own task, holding `slot` until it closes (its lifetime is
/// up, or a newer connection took it over while idle); over TLS when `access` says so (the
/// handshake within the header deadline).
fn serve_connection(
    stream: tokio::net::TcpStream,
    slot: tokio::sync::OwnedSemaphorePermit,
    access: &Access,
    answer: Arc<dyn Fn(&Asked) -> Answer + Send + Sync>,
    open: Arc<Mutex<Open>>,
    limits: Limits,
) {
    let stop = Arc::new(tokio::sync::Notify::new());
    let id = open.lock().map(|mut o| o.add(stop.clone())).unwrap_or(0);
    let (tls, users) = (access.tls.clone(), access.users.clone());
    tokio::spawn(async move {
        let _slot = slot;
        let served = async {
            match tls {
                None => http(stream, id, users, answer, open.clone(), limits).await,
                Some(tls) => {
                    let handshake =
                        tokio::time::timeout(limits.header_timeout, tls.accept(stream)).await;
                    if let Ok(Ok(stream)) = handshake {
                        http(stream, id, users, answer, open.clone(), limits).await;
                    }
                }
            }
        };
        tokio::select! {
            _ = tokio::time::timeout(limits.connection_lifetime, served) => {}
            _ = stop.notified() => {}
        }
        if let Ok(mut o) = open.lock() {
            o.conns.remove(&id);
        }
    });
}

/// HTTP/1 on `io` until the client is done; each request checked against `users` first.
async fn http<Io>(
    io: Io,
    id: u64,
    users: Option<Users>,
    answer: Arc<dyn Fn(&Asked) -> Answer + Send + Sync>,
    open: Arc<Mutex<Open>>,
    limits: Limits,
) where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let asked = asked(&req);
        let authorization = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (users, answer, open) = (users.clone(), answer.clone(), open.clone());
        async move {
            if let Some(users) = users {
                // bcrypt takes tens of milliseconds: off the thread that serves everyone.
                let allowed =
                    tokio::task::spawn_blocking(move || users.allows(authorization.as_deref()))
                        .await
                        .unwrap_or(false);
                if !allowed {
                    return Ok::<_, std::convert::Infallible>(unauthorized());
                }
            }
            let mark = |busy| {
                if let Ok(mut o) = open.lock() {
                    o.set_busy(id, busy);
                }
            };
            mark(true);
            let a = answer(&asked);
            mark(false);
            Ok(response(a))
        }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.header_bytes.max(8192))
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// 401 with the challenge a client answers with its user and password.
fn unauthorized() -> hyper::Response<Full<Bytes>> {
    let mut r = response(Answer::text(401, "Unauthorized\n"));
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Basic realm=\"proofscope export\""),
    );
    r
}

/// Errors `accept` recovers from: out of descriptors or memory, or a connection the peer
/// abandoned before it was taken.
fn transient(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EMFILE
                | libc::ENFILE
                | libc::ENOBUFS
                | libc::ENOMEM
                | libc::ECONNABORTED
                | libc::EINTR
                | libc::EPROTO
        )
    ) || e.kind() == std::io::ErrorKind::ConnectionAborted
        || e.kind() == std::io::ErrorKind::Interrupted
}

fn asked(req: &hyper::Request<Incoming>) -> Asked {
    let header = |name: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let some = |v: String| (!v.is_empty()).then_some(v);
    Asked {
        method: req.method().as_str().to_owned(),
        path: req.uri().path().to_owned(),
        accept: some(header("accept")),
        accept_encoding: some(header("accept-encoding")),
    }
}

fn response(a: Answer) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from(a.body)));
    *r.status_mut() =
        hyper::StatusCode::from_u16(a.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(a.content_type),
    );
    if let Some(enc) = a.content_encoding {
        h.insert(
            hyper::header::CONTENT_ENCODING,
            hyper::header::HeaderValue::from_static(enc),
        );
    }
    r
}

/// A line on stderr at most once per interval, with how many were held back.
struct RateLimited {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl RateLimited {
    fn new(every: Duration) -> RateLimited {
        RateLimited {
            every,
            last: None,
            held: 0,
        }
    }

    fn say(&mut self, line: &str) {
        if self.last.is_some_and(|t| t.elapsed() < self.every) {
            self.held += 1;
            return;
        }
        crate::log::log(
            crate::log::Level::Warn,
            line,
            &[("held_back", &self.held.to_string())],
        );
        self.last = Some(Instant::now());
        self.held = 0;
    }
}

/// Raises this process's soft limit on open files to its hard limit: each idle client and
/// each watched prover holds one, and the default soft limit (1024) is the usual cause of
/// EMFILE. What it is now.
pub fn raise_file_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we own; no other effect.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    lim.rlim_cur
}
