//! Prints each crate's import cycles, or its top-level graph with `--edges`:
//! `cargo run -p module-graph --example print -- [--edges] DIR…`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let edges = args.iter().any(|a| a == "--edges");
    for dir in args.iter().filter(|a| *a != "--edges") {
        let path = std::path::Path::new(dir);
        if edges {
            let scopes = module_graph::scopes(&module_graph::read(path));
            for (from, to) in scopes.get(&Vec::new()).into_iter().flatten() {
                println!(
                    "{dir}: {from} → {}",
                    to.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
        for c in module_graph::cycles(path) {
            println!("{dir}: cycle {c}");
        }
    }
}
