use std::path::PathBuf;

/// Why the probe could not start. The prover itself never depends on the probe: callers log
/// this and carry on without it, unless the user asked for the probe explicitly.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(
        "another prover is already serving on {path}; stop it, or pass another socket path (--socket / PROOFSCOPE_SOCKET)"
    )]
    SocketInUse { path: PathBuf },
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket { path: PathBuf },
    #[error("socket directory {path}: {source}")]
    SocketDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "socket directory {path} belongs to uid {owner}, not to this user (uid {me}); refusing to use it"
    )]
    DirOwner { path: PathBuf, owner: u32, me: u32 },
    #[error("could not listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not create recording {path}: {source}")]
    Record {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a probe session is already running in this process")]
    AlreadyRunning,
    #[error("could not start the probe's {what} thread: {source}")]
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
    #[error(
        "the program bounds its address space (RLIMIT_AS {limit_mib} MiB, {free_mib} MiB of it left) and the probe's threads would reserve about {need_mib} MiB of it (glibc's 64 MiB arena and a stack per thread, the history budget): no session, so as to leave the program its memory; raise the limit to profile it"
    )]
    AddressSpace {
        limit_mib: u64,
        free_mib: u64,
        need_mib: u64,
    },
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}
