//! The local socket server: one named thread running a small tokio runtime. Each connection
//! is checked (same uid only, refusals logged), reads its `Subscribe`, and then gets its own
//! bounded queue from the collector and a writer task.

use crate::error::ProbeError;
use crate::log::{clean, log};
use crate::session::{Arrival, Session};
use crate::subscriber::SubQueue;
use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::tokio::Listener as _;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use probe_protocol::discovery::{self, SocketState};
use probe_protocol::{Event, FrameSplitter, decode_frame};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a client has to send its `Subscribe` after connecting.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long shutdown waits for subscribers to receive the goodbye.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug)]
pub(crate) struct Server {
    path: PathBuf,
    stop: Arc<tokio::sync::Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn my_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Creates the socket directory 0700, or checks an existing default directory is ours.
fn prepare_dir(dir: &Path, strict: bool) -> Result<(), ProbeError> {
    let err = |source| ProbeError::SocketDir {
        path: dir.to_owned(),
        source,
    };
    match std::fs::metadata(dir) {
        Ok(meta) => {
            if strict {
                if meta.uid() != my_uid() {
                    return Err(ProbeError::DirOwner {
                        path: dir.to_owned(),
                        owner: meta.uid(),
                        me: my_uid(),
                    });
                }
                if meta.mode() & 0o077 != 0 {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                        .map_err(err)?;
                }
            }
            Ok(())
        }
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(err),
    }
}

/// A socket file left by a dead prover is replaced; a live one is never stolen.
fn clear_stale(path: &Path) -> Result<(), ProbeError> {
    match discovery::socket_state(path) {
        SocketState::Missing => Ok(()),
        SocketState::NotASocket => Err(ProbeError::NotASocket {
            path: path.to_owned(),
        }),
        SocketState::Live => Err(ProbeError::SocketInUse {
            path: path.to_owned(),
        }),
        SocketState::Stale => {
            log(&format!("replacing stale socket {}", path.display()));
            std::fs::remove_file(path).map_err(|source| ProbeError::Bind {
                path: path.to_owned(),
                source,
            })
        }
    }
}

impl Server {
    pub fn start(
        session: Arc<Session>,
        path: PathBuf,
        default_dir: bool,
    ) -> Result<Server, ProbeError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            prepare_dir(dir, default_dir)?;
        }
        clear_stale(&path)?;
        let bind_err = |source| ProbeError::Bind {
            path: path.clone(),
            source,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(bind_err)?;
        let listener = {
            let _enter = rt.enter();
            let name = path
                .as_path()
                .to_fs_name::<GenericFilePath>()
                .map_err(bind_err)?;
            ListenerOptions::new()
                .name(name)
                .mode(0o600)
                .reclaim_name(true)
                .try_overwrite(false)
                .create_tokio()
                .map_err(|e| {
                    if e.kind() == std::io::ErrorKind::AddrInUse {
                        ProbeError::SocketInUse { path: path.clone() }
                    } else {
                        bind_err(e)
                    }
                })?
        };
        // Belt and braces where the platform ignored the mode.
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        let stop = Arc::new(tokio::sync::Notify::new());
        let stop2 = stop.clone();
        let thread = crate::observer::spawn("probe-server", move || {
            rt.block_on(accept_loop(listener, session, stop2));
        })
        .map_err(|source| ProbeError::Thread {
            what: "server",
            source,
        })?;
        Ok(Server {
            path,
            stop,
            thread: Some(thread),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits (bounded) for every subscriber to receive what is queued, then stops listening
    /// and removes the socket file. Call after the collector has closed the queues.
    pub fn shutdown(mut self) {
        self.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The listener removes its file on drop; make sure even if it could not.
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn accept_loop(
    listener: interprocess::local_socket::tokio::Listener,
    session: Arc<Session>,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut clients = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            conn = listener.accept() => match conn {
                Ok(stream) => {
                    clients.spawn(serve_client(stream, session.clone()));
                }
                Err(e) => {
                    log(&format!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = stop.notified() => break,
        }
    }
    drop(listener);
    // Let writers deliver the goodbye; then cut whoever is still stuck.
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while clients.join_next().await.is_some() {}
    })
    .await;
    clients.abort_all();
}

/// Why a client got no subscription.
enum NoSubscribe {
    /// It connected and closed without a byte: a liveness check (`proofscope list`, a stale
    /// socket test). Not worth a log line.
    Looked,
    Bad(String),
}

async fn read_subscribe(stream: &Stream) -> Result<(bool, String), NoSubscribe> {
    let mut splitter = FrameSplitter::new();
    let mut buf = [0u8; 4096];
    let mut got_any = false;
    loop {
        let bad = |e: String| NoSubscribe::Bad(e);
        if let Some(body) = splitter.next_body().map_err(|e| bad(e.to_string()))? {
            let frame = decode_frame(body).map_err(|e| bad(e.to_string()))?;
            return frame
                .events
                .into_iter()
                .find_map(|e| match e {
                    Event::Subscribe(s) => Some((s.history, s.client)),
                    _ => None,
                })
                .ok_or_else(|| bad("first frame holds no Subscribe".to_string()));
        }
        let mut r = stream;
        let n = r.read(&mut buf).await.map_err(|e| bad(e.to_string()))?;
        if n == 0 {
            return Err(if got_any {
                bad("closed before subscribing".into())
            } else {
                NoSubscribe::Looked
            });
        }
        got_any = true;
        splitter.extend(&buf[..n]);
    }
}

/// Tells a refused client why, in the only way a client can read before `Hello`: a frame
/// holding one `Goodbye` (the protocol's refusal), then the connection closes.
async fn refuse(stream: &Stream, session: &Session, why: &str) {
    let bye = Event::Goodbye {
        ts: session.clock.now_ns(),
        reason: format!("refused: {why}"),
    };
    if let Ok(frame) = probe_protocol::encode_frame(0, &[bye]) {
        let mut w = stream;
        let _ = w.write_all(&frame).await;
    }
}

async fn serve_client(stream: Stream, session: Arc<Session>) {
    use interprocess::local_socket::traits::StreamCommon;
    match stream.peer_creds() {
        Ok(c) => {
            let uid = c.euid();
            if uid != Some(my_uid()) {
                let why = format!(
                    "only uid {} may attach to this prover, and this viewer runs as uid {}",
                    my_uid(),
                    uid.map_or("?".into(), |u| u.to_string()),
                );
                log(&format!(
                    "refused a connection (pid {}): {why}",
                    c.pid().map_or("?".into(), |p| p.to_string()),
                ));
                refuse(&stream, &session, &why).await;
                return;
            }
        }
        Err(e) => {
            log(&format!(
                "refused a connection: cannot read peer credentials: {e}"
            ));
            return;
        }
    }
    let (history, client) =
        match tokio::time::timeout(SUBSCRIBE_TIMEOUT, read_subscribe(&stream)).await {
            Ok(Ok(s)) => s,
            Ok(Err(NoSubscribe::Looked)) => return,
            Ok(Err(NoSubscribe::Bad(e))) => {
                log(&format!("dropped a client: {e}"));
                return;
            }
            Err(_) => {
                log("dropped a client that did not subscribe within 5 s");
                return;
            }
        };
    let sub = SubQueue::new(clean(&client), session.config.subscriber_bytes);
    session.arrivals.arrive(Arrival {
        queue: sub.clone(),
        history,
    });
    session.control.wake_collector();
    let writer = async {
        while let Some(f) = sub.pop().await {
            let mut w = &stream;
            if w.write_all(&f.bytes).await.is_err() {
                break;
            }
        }
    };
    let reader = async {
        let mut buf = [0u8; 256];
        loop {
            let mut r = &stream;
            match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    log(&format!("{} attached", sub.label));
    tokio::select! {
        _ = writer => {}
        _ = reader => {}
    }
    sub.close();
    let lost = sub.dropped_total();
    if lost > 0 {
        log(&format!(
            "{} detached; {lost} events were dropped for it (too slow)",
            sub.label
        ));
    }
}
