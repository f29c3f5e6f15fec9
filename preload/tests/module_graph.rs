//! The crate's modules form no import cycle at any level (a rule of the house: each module one
//! job, and a dependency direction you can draw), read off the sources by `module-graph`.

#[test]
fn the_modules_form_no_import_cycle() {
    module_graph::assert_acyclic(
        concat!(env!("CARGO_MANIFEST_DIR"), "/src"),
        ("fds", "output"),
    );
}
