//! Device-side timing: each kernel or copy is bracketed by CUDA events on its stream; after the
//! work is done the pairs are resolved against an anchor event whose session time was taken on
//! the host when it completed ([`DeviceClock`], the probe's GPU-timeline helper), giving each
//! operation a start and end on the session clock — the "CUDA internal timing" next to the
//! host's wrapper timer.

use super::GpuError;
use crate::probe::DeviceClock;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// One timed device operation on the session clock.
#[derive(Debug, Clone)]
pub struct TimedOp {
    pub name: &'static str,
    pub stream: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl TimedOp {
    pub fn ms(&self) -> f64 {
        (self.end_ns - self.start_ns) as f64 / 1e6
    }
}

/// Events recorded during a piece of GPU work, resolved after the work synchronised.
#[derive(Debug)]
pub struct GpuTimeline {
    ctx: Arc<CudaContext>,
    anchor: CudaEvent,
    clock: DeviceClock,
    pending: Vec<(&'static str, u32, CudaEvent, CudaEvent)>,
}

/// A timeline when `on`; without one, operations run untimed (no events at all).
pub fn start_if(
    on: bool,
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
) -> Result<Option<GpuTimeline>, GpuError> {
    on.then(|| GpuTimeline::start(ctx, stream)).transpose()
}

/// Brackets one device operation with events when a timeline is kept.
pub fn timed<T>(
    tl: &mut Option<GpuTimeline>,
    name: &'static str,
    stream_id: u32,
    s: &CudaStream,
    f: impl FnOnce() -> Result<T, GpuError>,
) -> Result<T, GpuError> {
    let m = tl.as_ref().map(|x| x.mark(s)).transpose()?;
    let r = f()?;
    if let (Some(x), Some(m)) = (tl.as_mut(), m) {
        x.done(name, stream_id, s, m)?;
    }
    Ok(r)
}

/// The operations of a timeline kept by `start_if` (none when untimed).
pub fn finish(tl: Option<GpuTimeline>) -> Result<Vec<TimedOp>, GpuError> {
    tl.map_or(Ok(Vec::new()), GpuTimeline::resolve)
}

impl GpuTimeline {
    /// Records the anchor on `stream` and waits for it, so its host time is known.
    pub fn start(ctx: &Arc<CudaContext>, stream: &CudaStream) -> Result<GpuTimeline, GpuError> {
        let anchor = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(GpuError::driver)?;
        anchor.record(stream).map_err(GpuError::driver)?;
        anchor.synchronize().map_err(GpuError::driver)?;
        Ok(GpuTimeline {
            ctx: ctx.clone(),
            anchor,
            clock: DeviceClock::anchor_now(),
            pending: Vec::new(),
        })
    }

    /// An event recorded now on `stream` (the start of an operation).
    pub fn mark(&self, stream: &CudaStream) -> Result<CudaEvent, GpuError> {
        let e = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(GpuError::driver)?;
        e.record(stream).map_err(GpuError::driver)?;
        Ok(e)
    }

    /// Closes an operation started with `mark`.
    pub fn done(
        &mut self,
        name: &'static str,
        stream_id: u32,
        stream: &CudaStream,
        start: CudaEvent,
    ) -> Result<(), GpuError> {
        let end = self.mark(stream)?;
        self.pending.push((name, stream_id, start, end));
        Ok(())
    }

    /// Resolves every pair (the work must have completed).
    pub fn resolve(self) -> Result<Vec<TimedOp>, GpuError> {
        let mut out = Vec::with_capacity(self.pending.len());
        for (name, stream, s, e) in &self.pending {
            let a = self.anchor.elapsed_ms(s).map_err(GpuError::driver)?;
            let b = self.anchor.elapsed_ms(e).map_err(GpuError::driver)?;
            let (start_ns, end_ns) = self.clock.span_ns(a, b);
            out.push(TimedOp {
                name,
                stream: *stream,
                start_ns,
                end_ns,
            });
        }
        Ok(out)
    }
}
