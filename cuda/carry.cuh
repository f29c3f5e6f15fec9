// Carry-chain primitives: on the device, PTX instructions whose carry flag (CC) flows from one
// to the next; on the host, the same operations with the flag in a thread-local word, so the
// arithmetic built on them is tested against blst by the `cuda-check` crate.
//
// Why PTX chains: on sm_90 ptxas fuses a `mad.lo.cc` / `madc.hi.cc` pair over an aligned
// register pair into one IMAD.WIDE.U32.X (carry in and out). A 64-bit-accumulation product in
// plain C costs three instructions per limb product instead (IMAD.WIDE, IADD3, IMAD.X).
// A chain must stay unbroken: nothing between its instructions may write CC — only these
// primitives appear inside one.
#pragma once
#include "common.cuh"

#ifdef PS_DEVICE
#define CC_ADD(d, a, b) asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define CC_ADDC(d, a, b) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define CC_ADDC_END(d, a, b) asm volatile("addc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define CC_SUB(d, a, b) asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define CC_SUBC(d, a, b) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define CC_SUBC_END(d, a, b) asm volatile("subc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
// d = lo/hi(a·b) + c, with carry out (MAD) or carry in and out (MADC) or carry in only (END).
#define CC_MAD_LO(d, a, b, c) asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define CC_MADC_LO(d, a, b, c) asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define CC_MADC_HI(d, a, b, c) asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define CC_MADC_HI_END(d, a, b, c) asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
// (hi:lo) += a·b as one two-instruction asm: carry out (MAD) or in and out (MADC); the _TO form
// adds (chi:clo) instead and writes (hi:lo). One statement for the pair, with the accumulator
// in place, measured better than the two halves apart: ptxas then fuses the 8-limb product
// into IMAD.WIDE.U32.X throughout (fr_mul 448 → 304 SASS instructions, NVRTC 12.9 and 13.0).
#define CC_MAD_WIDE(lo, hi, a, b) asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo), "+r"(hi) : "r"(a), "r"(b))
#define CC_MADC_WIDE(lo, hi, a, b) asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo), "+r"(hi) : "r"(a), "r"(b))
#define CC_MADC_WIDE_TO(lo, hi, a, b, clo, chi) asm volatile("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;" : "=r"(lo), "=r"(hi) : "r"(a), "r"(b), "r"(clo), "r"(chi))
#define MUL_LO(a, b) ((a) * (b))
#define MUL_HI(a, b) __umulhi((a), (b))
#else
static thread_local u32 ps_cc;
static inline u32 ps_cc_add(u32 a, u32 b, u32 cin) {
    const u64 s = (u64)a + b + cin;
    ps_cc = (u32)(s >> 32);
    return (u32)s;
}
static inline u32 ps_cc_sub(u32 a, u32 b, u32 bin) {
    const u64 s = (u64)a - b - bin;
    ps_cc = (u32)(s >> 63);
    return (u32)s;
}
#define MUL_LO(a, b) ((u32)((u64)(a) * (b)))
#define MUL_HI(a, b) ((u32)(((u64)(a) * (b)) >> 32))
#define CC_ADD(d, a, b) ((d) = ps_cc_add((a), (b), 0))
#define CC_ADDC(d, a, b) ((d) = ps_cc_add((a), (b), ps_cc))
#define CC_ADDC_END(d, a, b) ((d) = (u32)((u64)(a) + (b) + ps_cc))
#define CC_SUB(d, a, b) ((d) = ps_cc_sub((a), (b), 0))
#define CC_SUBC(d, a, b) ((d) = ps_cc_sub((a), (b), ps_cc))
#define CC_SUBC_END(d, a, b) ((d) = (u32)((u64)(a) - (b) - ps_cc))
#define CC_MAD_LO(d, a, b, c) ((d) = ps_cc_add(MUL_LO(a, b), (c), 0))
#define CC_MADC_LO(d, a, b, c) ((d) = ps_cc_add(MUL_LO(a, b), (c), ps_cc))
#define CC_MADC_HI(d, a, b, c) ((d) = ps_cc_add(MUL_HI(a, b), (c), ps_cc))
#define CC_MADC_HI_END(d, a, b, c) ((d) = (u32)((u64)MUL_HI(a, b) + (c) + ps_cc))
#define CC_MAD_WIDE(lo, hi, a, b) (CC_MAD_LO(lo, a, b, lo), CC_MADC_HI(hi, a, b, hi))
#define CC_MADC_WIDE(lo, hi, a, b) (CC_MADC_LO(lo, a, b, lo), CC_MADC_HI(hi, a, b, hi))
#define CC_MADC_WIDE_TO(lo, hi, a, b, clo, chi) (CC_MADC_LO(lo, a, b, clo), CC_MADC_HI(hi, a, b, chi))
#endif
