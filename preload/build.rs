//! Compiles the stdio hooks (c/stdio.c: variadic functions, which stable Rust cannot define).
fn main() {
    println!("cargo:rerun-if-changed=c/stdio.c");
    cc::Build::new()
        .file("c/stdio.c")
        .flag("-fvisibility=hidden")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("proofscope_stdio");
}
