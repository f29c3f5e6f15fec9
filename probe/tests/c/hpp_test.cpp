// proofscope.hpp from C++17: a session, a proof, nested spans across threads, an adopted
// parent, and vectors whose blocks the allocator reports. Run by probe/tests/c_api.rs.
#include "proofscope.hpp"

#include <cstdio>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
    proofscope_config cfg{"hpp-test", "1.0", "cpu", nullptr, nullptr, argc > 1 ? argv[1] : nullptr};
    proofscope::Session session(cfg);
    if (session.status() != PROOFSCOPE_OK) {
        std::fprintf(stderr, "start: %s\n", proofscope_last_error());
        return 1;
    }
    {
        proofscope::Proof proof({"toy", 1000, 1, "cpu", 0});
        std::vector<double, proofscope::allocator<double>> v;
        {
            PROOFSCOPE_SPAN("synthesis");
            v.assign(4u << 20, 1.5); // 32 MiB: an Alloc
        }
        std::thread worker([h = proofscope::current()] {
            PROOFSCOPE_SPAN_UNDER("prep_msm", h);
            proofscope::Adopt a(h);
            PROOFSCOPE_SPAN("nested");
        });
        worker.join();
        v = {}; // the release, inside the proof, outside every phase
        std::vector<double, proofscope::allocator<double>>().swap(v);
        proof.end(true, PROOFSCOPE_VALID);
    }
    std::puts("hpp ok");
    return 0;
}
