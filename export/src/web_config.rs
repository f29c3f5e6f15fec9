//! `--web.config.file`: TLS and basic auth in the exporter-toolkit's format, so that a
//! Prometheus deployment that already protects node_exporter protects this exporter with the
//! same file:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/proofscope/tls.crt
//!   key_file: /etc/proofscope/tls.key
//! basic_auth_users:
//!   prometheus: $2y$10$…   # a bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\n')
//! ```
//!
//! Only what is written above is supported; any other key is refused by name (a setting that
//! would be silently ignored, such as `client_auth_type`, is worse than none). The file is
//! read once, at start: a mistake stops the exporter with the reason, before it serves.

use base64::Engine;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

/// Why the web configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path}: {source} (supported: tls_server_config.cert_file, tls_server_config.key_file, basic_auth_users)"
    )]
    Parse {
        path: PathBuf,
        source: serde_norway::Error,
    },
    #[error("{path}: tls_server_config needs both cert_file and key_file")]
    TlsIncomplete { path: PathBuf },
    #[error("TLS certificate {path}: {why}")]
    Certificate { path: PathBuf, why: String },
    #[error("TLS key {path}: {why}")]
    Key { path: PathBuf, why: String },
    #[error("TLS: the certificate and key do not make a server configuration: {0}")]
    Tls(rustls::Error),
    #[error("basic_auth_users: {user}'s password is not a bcrypt hash ({why})")]
    Hash { user: String, why: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    #[serde(default)]
    cert_file: Option<PathBuf>,
    #[serde(default)]
    key_file: Option<PathBuf>,
}

/// What the server applies to every connection and request.
#[derive(Clone, Default)]
pub struct Access {
    /// TLS on every connection, when configured.
    pub tls: Option<TlsAcceptor>,
    /// Basic auth on every request, when users are configured.
    pub users: Option<Users>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.as_ref().map(|u| u.hashes.len()))
            .finish()
    }
}

/// Reads `path`; relative certificate and key paths are taken from the file's folder, as the
/// exporter-toolkit does.
pub fn load(path: &Path) -> Result<Access, WebConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| WebConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let file: File = if text.trim().is_empty() {
        File {
            tls_server_config: None,
            basic_auth_users: BTreeMap::new(),
        }
    } else {
        serde_norway::from_str(&text).map_err(|source| WebConfigError::Parse {
            path: path.to_owned(),
            source,
        })?
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let tls = match file.tls_server_config {
        None => None,
        Some(TlsFile {
            cert_file: Some(cert),
            key_file: Some(key),
        }) => Some(acceptor(&dir.join(cert), &dir.join(key))?),
        Some(_) => {
            return Err(WebConfigError::TlsIncomplete {
                path: path.to_owned(),
            });
        }
    };
    let users = if file.basic_auth_users.is_empty() {
        None
    } else {
        Some(Users::new(file.basic_auth_users)?)
    };
    Ok(Access { tls, users })
}

fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, WebConfigError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| WebConfigError::Certificate {
            path: cert.to_owned(),
            why: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(WebConfigError::Certificate {
            path: cert.to_owned(),
            why: "no certificate in it".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| WebConfigError::Key {
        path: key.to_owned(),
        why: e.to_string(),
    })?;
    // ring, not aws-lc-rs: no CMake and C build in the exporter's build; what rustls 0.23.48
    // deprecates it for is post-quantum key exchange, which a scrape on a private network
    // does without.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(WebConfigError::Tls)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(WebConfigError::Tls)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Who may scrape: user → bcrypt hash, and the credentials already verified (bcrypt at its
/// usual cost takes tens of milliseconds; a scrape every few seconds must not pay it each
/// time). What is remembered is a SHA-256 of the user, the password and the hash, never the
/// password, at most [`VERIFIED`] of them.
#[derive(Clone)]
pub struct Users {
    hashes: Arc<BTreeMap<String, String>>,
    verified: Arc<Mutex<HashSet<[u8; 32]>>>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users")
            .field("users", &self.hashes.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Credentials remembered as verified at most (then forgotten all at once).
const VERIFIED: usize = 64;

impl Users {
    fn new(hashes: BTreeMap<String, String>) -> Result<Users, WebConfigError> {
        for (user, hash) in &hashes {
            hash.parse::<bcrypt::HashParts>()
                .map_err(|e| WebConfigError::Hash {
                    user: user.clone(),
                    why: e.to_string(),
                })?;
        }
        Ok(Users {
            hashes: Arc::new(hashes),
            verified: Arc::default(),
        })
    }

    /// Whether an `Authorization` header's value names a user with its password.
    pub fn allows(&self, authorization: Option<&str>) -> bool {
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        let Some(hash) = self.hashes.get(&user) else {
            return false;
        };
        let digest: [u8; 32] = Sha256::new()
            .chain_update(user.as_bytes())
            .chain_update([0])
            .chain_update(password.as_bytes())
            .chain_update([0])
            .chain_update(hash.as_bytes())
            .finalize()
            .into();
        if self.verified.lock().is_ok_and(|v| v.contains(&digest)) {
            return true;
        }
        if !bcrypt::verify(&password, hash).unwrap_or(false) {
            return false;
        }
        if let Ok(mut v) = self.verified.lock() {
            if v.len() >= VERIFIED {
                v.clear();
            }
            v.insert(digest);
        }
        true
    }
}

/// `Basic base64(user:password)` → (user, password).
fn basic_credentials(header: &str) -> Option<(String, String)> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn basic(user: &str, password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    }

    #[test]
    fn users_are_checked_against_their_bcrypt_hash() {
        let dir = tempfile::tempdir().unwrap();
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let p = write(
            dir.path(),
            "web.yml",
            &format!("basic_auth_users:\n  prometheus: {hash}\n"),
        );
        let access = load(&p).unwrap();
        assert!(access.tls.is_none());
        let users = access.users.unwrap();
        assert!(users.allows(Some(&basic("prometheus", "s3cret"))));
        assert!(
            users.allows(Some(&basic("prometheus", "s3cret"))),
            "remembered"
        );
        assert!(!users.allows(Some(&basic("prometheus", "wrong"))));
        assert!(!users.allows(Some(&basic("someone", "s3cret"))));
        assert!(!users.allows(Some("Bearer x")));
        assert!(!users.allows(Some("Basic not-base64!")));
        assert!(!users.allows(None));
    }

    #[test]
    fn mistakes_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "tls_server_config:\n  cert_file: a.crt\n",
                "needs both cert_file and key_file",
            ),
            (
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_auth_type: RequireAndVerifyClientCert\n",
                "client_auth_type",
            ),
            ("http_server_config:\n  http2: true\n", "http_server_config"),
            (
                "basic_auth_users:\n  alice: plaintext\n",
                "alice's password is not a bcrypt hash",
            ),
            (
                "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n",
                "missing.crt",
            ),
        ];
        for (text, said) in cases {
            let p = write(dir.path(), "web.yml", text);
            let err = load(&p).unwrap_err().to_string();
            assert!(err.contains(said), "{text:?}: {err}");
        }
        let empty = write(dir.path(), "empty.yml", "");
        let access = load(&empty).unwrap();
        assert!(access.tls.is_none() && access.users.is_none());
    }
}
