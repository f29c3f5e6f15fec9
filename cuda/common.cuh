// Shared by every kernel header: integer types and the qualifiers that let the field and curve
// arithmetic compile both for the device (NVRTC) and for the host (the C++ compiler of the
// `cuda-check` crate, which tests these headers against blst on machines without a GPU).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define PS_DEVICE 1
#define PS_FN __device__ __forceinline__
// The curve operations: each is thousands of instructions, so one copy that every kernel
// calls (ptxas time and code size fall several-fold; a call costs little beside the body).
#define PS_BIG __device__ __noinline__
#define PS_CONST __device__ __constant__
#define PS_UNROLL _Pragma("unroll")
#else
#define PS_FN static inline
#define PS_BIG static
#define PS_CONST static const
#define PS_UNROLL
#endif
