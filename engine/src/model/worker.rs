//! Who a prover is across its restarts: the *worker* name the exporter's series and the black
//! box's captures go under. A pid would start new series on every restart and collide across
//! hosts; this name stays while the prover is started alike.
//!
//! The name is the prover's `PROOFSCOPE_INSTANCE` (Hello `instance`), else its prover name and
//! a short hash of its command line (`prover-1f3a9c04`) — the program's file name, not the
//! path it was started by (one prover started through `PATH` and by its absolute path became
//! two workers), and its arguments.

use probe_protocol::Hello;

/// The worker name a prover's Hello asks for, before any clash with another live prover.
pub fn worker_name(h: &Hello) -> String {
    let instance = h.instance.trim();
    if !instance.is_empty() {
        return instance.to_owned();
    }
    format!(
        "{}-{:08x}",
        h.prover_name,
        command_line_hash(&h.command_line) as u32
    )
}

/// FNV-1a (64 bit) over the program's file name and its arguments, each ended by a NUL:
/// stable across builds and platforms, unlike std's hasher, so a worker keeps its name across
/// exporter upgrades.
fn command_line_hash(args: &[String]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let program = args
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a.as_str()));
    program
        .into_iter()
        .chain(args.iter().skip(1).map(String::as_str))
        .flat_map(|a| a.bytes().chain(std::iter::once(0)))
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(instance: &str, args: &[&str]) -> Hello {
        Hello {
            prover_name: "prover".into(),
            instance: instance.into(),
            command_line: args.iter().map(|a| (*a).to_owned()).collect(),
            ..Hello::default()
        }
    }

    #[test]
    fn the_instance_names_the_worker_else_its_command_line() {
        assert_eq!(worker_name(&hello(" c2-gpu0 ", &["prover"])), "c2-gpu0");
        let a = worker_name(&hello("", &["prover", "serve", "--gpu", "0"]));
        let b = worker_name(&hello("", &["prover", "serve", "--gpu", "1"]));
        assert_ne!(a, b);
        assert!(
            a.starts_with("prover-") && a.len() == "prover-".len() + 8,
            "{a}"
        );
        // Arguments are kept apart: "ab" + "c" is not "a" + "bc".
        assert_ne!(
            worker_name(&hello("", &["ab", "c"])),
            worker_name(&hello("", &["a", "bc"]))
        );
        // Stable across builds: the FNV-1a of "prover\0serve\0".
        assert_eq!(
            worker_name(&hello("", &["prover", "serve"])),
            "prover-352940f2"
        );
        // However the program was found.
        for by in ["/usr/local/bin/prover", "./prover", "bin/prover"] {
            assert_eq!(
                worker_name(&hello("", &[by, "serve"])),
                "prover-352940f2",
                "{by}"
            );
        }
    }
}
