//! Compiles the stdio hooks (c/stdio.c) and `mremap`'s (c/mremap.c): variadic functions,
//! which stable Rust cannot define.
fn main() {
    println!("cargo:rerun-if-changed=c/stdio.c");
    println!("cargo:rerun-if-changed=c/mremap.c");
    cc::Build::new()
        .file("c/stdio.c")
        .file("c/mremap.c")
        .flag("-fvisibility=hidden")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("proofscope_stdio");
}
