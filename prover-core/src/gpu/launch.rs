//! How launches are sized, in one place: grid-stride kernels get enough blocks to fill every
//! SM of *this* device a few times over, asked of the device at open (an H100 SXM has 132
//! SMs, a PCIe card 114, an L4 58), rather than a count fixed for one card.

use cudarc::driver::{CudaContext, LaunchConfig};

/// Blocks an SM of a grid-stride pass over field elements (NTT, scalar conversion, twiddles).
pub const ELEMENT_BLOCKS_PER_SM: u32 = 32;
/// Blocks an SM of a Pippenger pass (MSM and batch addition accumulation).
pub const BUCKET_BLOCKS_PER_SM: u32 = 64;
/// Threads a block of the element passes.
pub const ELEMENT_THREADS: u32 = 256;

/// The device's streaming multiprocessors, which every grid-stride launch is sized by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    sms: u32,
}

impl Grid {
    /// The SM count of `ctx`'s device; 132 (an H100 SXM, what the passes were tuned on) where
    /// the driver cannot say.
    pub fn of(ctx: &CudaContext) -> Grid {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let sms = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ok()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(132);
        Grid { sms }
    }

    /// A grid of `sms` SMs, as a device of that many would have.
    #[cfg(test)]
    fn with_sms(sms: u32) -> Grid {
        Grid { sms: sms.max(1) }
    }

    /// `blocks` of `threads`, capped at `per_sm` blocks an SM: the kernel strides over the rest.
    pub fn blocks(self, blocks: u64, threads: u32, per_sm: u32) -> LaunchConfig {
        let cap = u64::from(self.sms) * u64::from(per_sm);
        LaunchConfig {
            grid_dim: (blocks.clamp(1, cap) as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// One thread an item over `items`, in blocks of `threads`, capped at `per_sm` an SM.
    pub fn items(self, items: u64, threads: u32, per_sm: u32) -> LaunchConfig {
        self.blocks(items.div_ceil(u64::from(threads)), threads, per_sm)
    }

    /// A grid-stride pass over `n` field elements.
    pub fn elements(self, n: u64) -> LaunchConfig {
        self.items(n, ELEMENT_THREADS, ELEMENT_BLOCKS_PER_SM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_follows_the_sm_count() {
        let h100 = Grid::with_sms(132);
        let l4 = Grid::with_sms(58);
        assert_eq!(h100.elements(1 << 24).grid_dim.0, 132 * 32);
        assert_eq!(l4.elements(1 << 24).grid_dim.0, 58 * 32);
        assert_eq!(l4.items(1 << 24, 128, 64).grid_dim.0, 58 * 64);
        // Small work: one thread an item, at least one block.
        assert_eq!(h100.elements(1000).grid_dim.0, 4);
        assert_eq!(h100.elements(0).grid_dim.0, 1);
    }
}
