//! Compiles `cuda/host/check.cpp` (which includes the kernel headers) with the host's C++
//! compiler: the headers' plain-C++ arithmetic is what runs on the GPU.

fn main() {
    let cuda = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cuda");
    for f in [
        "common.cuh",
        "carry.cuh",
        "mont.cuh",
        "fr.cuh",
        "fp.cuh",
        "fp2.cuh",
        "curve.cuh",
        "g1.cuh",
        "g2.cuh",
        "msm.cuh",
        "host/check.cpp",
    ] {
        println!("cargo:rerun-if-changed={}", cuda.join(f).display());
    }
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .warnings(true)
        .file(cuda.join("host/check.cpp"))
        .compile("ps_cuda_check");
}
